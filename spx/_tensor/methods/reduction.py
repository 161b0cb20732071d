"""Reductions, scans and sorting of :class:`spx.Tensor` with torch's ``dim``/``keepdim``.

``max``/``min``/``median``/``mode``/``kthvalue``/``sort``/``topk`` with a dimension return
named pairs ``(values, indices)`` as torch's ``torch.return_types`` do; ``max()`` without a
dimension returns a 0-d tensor. ``std``/``var`` take ``correction`` (default 1) or torch's older
``unbiased``. ``median`` returns the lower of the two middle values, as torch does.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from spx._tensor import _dims
from spx._tensor.dispatch import apply


class ValuesIndices(NamedTuple):
    """``(values, indices)`` of a reduction along a dimension (torch's ``return_types``)."""

    values: Any
    indices: Any


def _sum(x: Any, axis: tuple | None, keepdims: bool, dtype: Any) -> Any:
    return jnp.sum(x, axis=axis, keepdims=keepdims, dtype=dtype)


def _mean(x: Any, axis: tuple | None, keepdims: bool, dtype: Any) -> Any:
    return jnp.mean(x, axis=axis, keepdims=keepdims, dtype=dtype)


def _prod(x: Any, axis: tuple | None, keepdims: bool, dtype: Any) -> Any:
    return jnp.prod(x, axis=axis, keepdims=keepdims, dtype=dtype)


def _nansum(x: Any, axis: tuple | None, keepdims: bool, dtype: Any) -> Any:
    return jnp.nansum(x, axis=axis, keepdims=keepdims, dtype=dtype)


def _nanmean(x: Any, axis: tuple | None, keepdims: bool, dtype: Any) -> Any:
    return jnp.nanmean(x, axis=axis, keepdims=keepdims, dtype=dtype)


def _var(x: Any, axis: tuple | None, correction: float, keepdims: bool) -> Any:
    return jnp.var(x, axis=axis, ddof=correction, keepdims=keepdims)


def _std(x: Any, axis: tuple | None, correction: float, keepdims: bool) -> Any:
    return jnp.std(x, axis=axis, ddof=correction, keepdims=keepdims)


def _amax(x: Any, axis: tuple | None, keepdims: bool) -> Any:
    return jnp.max(x, axis=axis, keepdims=keepdims)


def _amin(x: Any, axis: tuple | None, keepdims: bool) -> Any:
    return jnp.min(x, axis=axis, keepdims=keepdims)


def _all(x: Any, axis: tuple | None, keepdims: bool) -> Any:
    return jnp.all(x, axis=axis, keepdims=keepdims)


def _any(x: Any, axis: tuple | None, keepdims: bool) -> Any:
    return jnp.any(x, axis=axis, keepdims=keepdims)


def _count_nonzero(x: Any, axis: tuple | None) -> Any:
    return jnp.count_nonzero(x, axis=axis)


def _logsumexp(x: Any, axis: tuple, keepdims: bool) -> Any:
    return jax.nn.logsumexp(x, axis=axis, keepdims=keepdims)


def _argmax(x: Any, axis: int | None, keepdims: bool) -> Any:
    if axis is None:
        return jnp.argmax(x.reshape(-1)).reshape((1,) * x.ndim if keepdims else ())
    return jnp.argmax(x, axis=axis, keepdims=keepdims)


def _argmin(x: Any, axis: int | None, keepdims: bool) -> Any:
    if axis is None:
        return jnp.argmin(x.reshape(-1)).reshape((1,) * x.ndim if keepdims else ())
    return jnp.argmin(x, axis=axis, keepdims=keepdims)


def _max_dim(x: Any, axis: int, keepdims: bool) -> tuple:
    idx = jnp.argmax(x, axis=axis, keepdims=True)
    vals = jnp.take_along_axis(x, idx, axis=axis)
    if not keepdims:
        idx, vals = jnp.squeeze(idx, axis), jnp.squeeze(vals, axis)
    return vals, idx


def _min_dim(x: Any, axis: int, keepdims: bool) -> tuple:
    idx = jnp.argmin(x, axis=axis, keepdims=True)
    vals = jnp.take_along_axis(x, idx, axis=axis)
    if not keepdims:
        idx, vals = jnp.squeeze(idx, axis), jnp.squeeze(vals, axis)
    return vals, idx


def _kth_dim(x: Any, k: int, axis: int, keepdims: bool) -> tuple:
    """The k-th smallest (0-based) along ``axis`` and its index (stable: first occurrence)."""
    order = jnp.argsort(x, axis=axis, stable=True)
    idx = lax.slice_in_dim(order, k, k + 1, axis=axis)
    vals = jnp.take_along_axis(x, idx, axis=axis)
    if not keepdims:
        idx, vals = jnp.squeeze(idx, axis), jnp.squeeze(vals, axis)
    return vals, idx


def _median_all(x: Any) -> Any:
    flat = jnp.sort(x.reshape(-1))
    return flat[(flat.shape[0] - 1) // 2]


def _sort(x: Any, axis: int, descending: bool, stable: bool) -> tuple:
    key = -x if descending and jnp.issubdtype(x.dtype, jnp.inexact) else x
    if descending and not jnp.issubdtype(x.dtype, jnp.inexact):
        idx = jnp.flip(jnp.argsort(jnp.flip(x, axis), axis=axis, stable=True), axis)
        idx = x.shape[axis] - 1 - idx
    else:
        idx = jnp.argsort(key, axis=axis, stable=True)
    return jnp.take_along_axis(x, idx, axis=axis), idx


def _topk(x: Any, k: int, axis: int, largest: bool) -> tuple:
    moved = jnp.moveaxis(x, axis, -1)
    if largest:
        vals, idx = lax.top_k(moved, k)
    else:
        vals, idx = lax.top_k(-moved, k)
        vals = -vals
    return jnp.moveaxis(vals, -1, axis), jnp.moveaxis(idx, -1, axis)


def _cumsum(x: Any, axis: int, dtype: Any) -> Any:
    return jnp.cumsum(x, axis=axis, dtype=dtype)


def _cumprod(x: Any, axis: int, dtype: Any) -> Any:
    return jnp.cumprod(x, axis=axis, dtype=dtype)


def _cum_extreme(x: Any, axis: int, is_max: bool) -> tuple:
    n = x.shape[axis]
    pos = lax.broadcasted_iota(jnp.int32, x.shape, axis)

    def combine(a: tuple, b: tuple) -> tuple:
        va, ia = a
        vb, ib = b
        take_b = (vb >= va) if is_max else (vb <= va)
        return jnp.where(take_b, vb, va), jnp.where(take_b, ib, ia)

    del n
    return lax.associative_scan(combine, (x, pos), axis=axis)


def _logcumsumexp(x: Any, axis: int) -> Any:
    return lax.cumlogsumexp(x, axis=axis)


def _norm(x: Any, p: Any, axis: tuple | None, keepdims: bool) -> Any:
    if p == "fro" or p == 2:
        return jnp.sqrt(jnp.sum(jnp.abs(x) ** 2, axis=axis, keepdims=keepdims))
    if p == float("inf"):
        return jnp.max(jnp.abs(x), axis=axis, keepdims=keepdims)
    if p == float("-inf"):
        return jnp.min(jnp.abs(x), axis=axis, keepdims=keepdims)
    if p == 0:
        return jnp.sum(x != 0, axis=axis, keepdims=keepdims).astype(x.dtype)
    if p == 1:
        return jnp.sum(jnp.abs(x), axis=axis, keepdims=keepdims)
    if p == "nuc":
        return jnp.sum(jnp.linalg.svd(x, compute_uv=False), axis=-1, keepdims=keepdims)
    return jnp.sum(jnp.abs(x) ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def _axes(dim: Any, ndim: int) -> tuple | None:
    if dim is None:
        return None
    return _dims.dims(dim, ndim)


def _dtype(dtype: Any) -> Any:
    return None if dtype is None else jnp.dtype(dtype)


def _correction(correction: Any, unbiased: Any) -> float:
    if correction is not None and unbiased is not None:
        raise RuntimeError("std/var: pass either correction= or unbiased=, not both")
    if correction is not None:
        return float(correction)
    return 1.0 if unbiased is None or unbiased else 0.0


class ReductionMethods:
    """Reductions, scans, sorting."""

    __slots__ = ()

    def sum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        return apply(_sum, (_axes(dim, self.ndim), keepdim, _dtype(dtype)), (self,))

    def nansum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        return apply(_nansum, (_axes(dim, self.ndim), keepdim, _dtype(dtype)), (self,))

    def mean(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        if dtype is None and not jnp.issubdtype(self.dtype, jnp.inexact):
            raise RuntimeError(
                f"mean(): could not infer output dtype. Input dtype must be either a floating "
                f"point or complex dtype. Got: {self.dtype}. Cast first: x.float().mean()"
            )
        return apply(_mean, (_axes(dim, self.ndim), keepdim, _dtype(dtype)), (self,))

    def nanmean(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        return apply(_nanmean, (_axes(dim, self.ndim), keepdim, _dtype(dtype)), (self,))

    def prod(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        return apply(_prod, (_axes(dim, self.ndim), keepdim, _dtype(dtype)), (self,))

    def var(self, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction=None):
        if isinstance(dim, bool):  # torch's var(unbiased) overload
            dim, unbiased = None, dim
        c = _correction(correction, unbiased)
        return apply(_var, (_axes(dim, self.ndim), c, keepdim), (self,))

    def std(self, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction=None):
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        c = _correction(correction, unbiased)
        return apply(_std, (_axes(dim, self.ndim), c, keepdim), (self,))

    def amax(self, dim: Any = (), keepdim: bool = False) -> Any:
        axes = None if dim == () or dim is None else _axes(dim, self.ndim)
        return apply(_amax, (axes, keepdim), (self,))

    def amin(self, dim: Any = (), keepdim: bool = False) -> Any:
        axes = None if dim == () or dim is None else _axes(dim, self.ndim)
        return apply(_amin, (axes, keepdim), (self,))

    def max(self, dim: Any = None, keepdim: bool = False) -> Any:
        """Largest element; with ``dim``: ``(values, indices)``; with a tensor: elementwise."""
        if dim is None:
            return apply(_amax, (None, False), (self,))
        if not isinstance(dim, int):
            return apply(jnp.maximum, (), (self, dim))
        d = _dims.dim(dim, self.ndim)
        return ValuesIndices(*apply(_max_dim, (d, keepdim), (self,), n_out=2))

    def min(self, dim: Any = None, keepdim: bool = False) -> Any:
        """Smallest element; with ``dim``: ``(values, indices)``; with a tensor: elementwise."""
        if dim is None:
            return apply(_amin, (None, False), (self,))
        if not isinstance(dim, int):
            return apply(jnp.minimum, (), (self, dim))
        d = _dims.dim(dim, self.ndim)
        return ValuesIndices(*apply(_min_dim, (d, keepdim), (self,), n_out=2))

    def aminmax(self, *, dim: int | None = None, keepdim: bool = False) -> tuple:
        return self.amin(dim, keepdim), self.amax(dim, keepdim)

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Any:
        d = None if dim is None else _dims.dim(dim, self.ndim)
        return apply(_argmax, (d, keepdim), (self,))

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Any:
        d = None if dim is None else _dims.dim(dim, self.ndim)
        return apply(_argmin, (d, keepdim), (self,))

    def all(self, dim: Any = None, keepdim: bool = False) -> Any:
        return apply(_all, (_axes(dim, self.ndim), keepdim), (self,))

    def any(self, dim: Any = None, keepdim: bool = False) -> Any:
        return apply(_any, (_axes(dim, self.ndim), keepdim), (self,))

    def count_nonzero(self, dim: Any = None) -> Any:
        return apply(_count_nonzero, (_axes(dim, self.ndim),), (self,))

    def logsumexp(self, dim: Any, keepdim: bool = False) -> Any:
        return apply(_logsumexp, (_axes(dim, self.ndim), keepdim), (self,))

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype=None) -> Any:
        x = self if dtype is None else self.to(dtype)
        return apply(_norm, (p, _axes(dim, self.ndim), keepdim), (x,))

    def median(self, dim: int | None = None, keepdim: bool = False) -> Any:
        if dim is None:
            return apply(_median_all, (), (self,))
        d = _dims.dim(dim, self.ndim)
        k = (self.shape[d] - 1) // 2
        return ValuesIndices(*apply(_kth_dim, (k, d, keepdim), (self,), n_out=2))

    def kthvalue(self, k: int, dim: int = -1, keepdim: bool = False) -> Any:
        d = _dims.dim(dim, self.ndim)
        n = self.shape[d] if self.ndim else 1
        if not 1 <= k <= n:
            raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
        return ValuesIndices(*apply(_kth_dim, (k - 1, d, keepdim), (self,), n_out=2))

    def sort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
        d = _dims.dim(dim, self.ndim)
        return ValuesIndices(*apply(_sort, (d, descending, stable), (self,), n_out=2))

    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
        return self.sort(dim, descending, stable).indices

    def msort(self) -> Any:
        return self.sort(0).values

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
        d = _dims.dim(dim, self.ndim)
        n = self.shape[d] if self.ndim else 1
        if not 0 <= k <= n:
            raise RuntimeError(f"selected index k out of range (k={k}, size={n} at dim {d})")
        return ValuesIndices(*apply(_topk, (k, d, largest), (self,), n_out=2))

    def cumsum(self, dim: int, *, dtype: Any = None) -> Any:
        return apply(_cumsum, (_dims.dim(dim, self.ndim), _dtype(dtype)), (self,))

    def cumprod(self, dim: int, *, dtype: Any = None) -> Any:
        return apply(_cumprod, (_dims.dim(dim, self.ndim), _dtype(dtype)), (self,))

    def cummax(self, dim: int) -> Any:
        d = _dims.dim(dim, self.ndim)
        return ValuesIndices(*apply(_cum_extreme, (d, True), (self,), n_out=2))

    def cummin(self, dim: int) -> Any:
        d = _dims.dim(dim, self.ndim)
        return ValuesIndices(*apply(_cum_extreme, (d, False), (self,), n_out=2))

    def logcumsumexp(self, dim: int) -> Any:
        return apply(_logcumsumexp, (_dims.dim(dim, self.ndim),), (self,))
