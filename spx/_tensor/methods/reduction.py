"""Reductions and scans of :class:`spx.Tensor` with torch's ``dim``/``keepdim``.

``dim`` is an int or a tuple (a 0-d tensor takes 0 or -1). ``max``/``min``/``cummax``/``cummin``
with a dimension return named pairs ``(values, indices)`` as torch's ``torch.return_types`` do;
``max()`` without a dimension returns a 0-d tensor. ``std``/``var`` take ``correction``
(default 1) or torch's older ``unbiased``. Sorting and order statistics: :mod:`.ordering`.
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from spx._tensor import _dims
from spx._tensor.dispatch import apply
from spx._tensor.methods._dtypes import canonical, half_in_float32
from spx._tensor.methods.ordering import OrderingMethods, ValuesIndices, _index_zero


class MinMax(NamedTuple):
    """``(min, max)`` of ``aminmax`` (torch's ``return_types.aminmax``)."""

    min: Any
    max: Any


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


@half_in_float32
def _var(x: Any, axis: tuple | None, correction: float, keepdims: bool) -> Any:
    n = math.prod(x.shape) if axis is None else math.prod(x.shape[a] for a in axis)
    if n - correction <= 0:
        # torch divides by max(0, N - correction): inf (NaN for constant data); jnp.var would
        # divide by a negative count.
        var = jnp.var(x, axis=axis, keepdims=keepdims) * n
        return var / jnp.zeros((), var.dtype)
    return jnp.var(x, axis=axis, ddof=correction, keepdims=keepdims)


@half_in_float32
def _std(x: Any, axis: tuple | None, correction: float, keepdims: bool) -> Any:
    # The root of the variance with torch's zero gradient where it is 0 (constant rows), where
    # jnp.std's derivative is 0 / 0 = NaN.
    return _safe_root(_var.__wrapped__(x, axis, correction, keepdims), 2)


def _amax(x: Any, axis: tuple | None, keepdims: bool) -> Any:
    return jnp.max(x, axis=axis, keepdims=keepdims)


def _amin(x: Any, axis: tuple | None, keepdims: bool) -> Any:
    return jnp.min(x, axis=axis, keepdims=keepdims)


def _all(x: Any, axis: tuple | None, keepdims: bool) -> Any:
    out = jnp.all(x, axis=axis, keepdims=keepdims)
    return out.astype(jnp.uint8) if x.dtype == jnp.uint8 else out  # torch keeps uint8


def _any(x: Any, axis: tuple | None, keepdims: bool) -> Any:
    out = jnp.any(x, axis=axis, keepdims=keepdims)
    return out.astype(jnp.uint8) if x.dtype == jnp.uint8 else out


def _count_nonzero(x: Any, axis: tuple | None) -> Any:
    return jnp.count_nonzero(x, axis=axis)


def _logsumexp(x: Any, axis: tuple, keepdims: bool) -> Any:
    return jax.nn.logsumexp(x, axis=axis, keepdims=keepdims)


def _argmax(x: Any, axis: int | None, keepdims: bool) -> Any:
    if axis is None or x.ndim == 0:
        return jnp.argmax(x.reshape(-1)).reshape((1,) * x.ndim if keepdims else ())
    return jnp.argmax(x, axis=axis, keepdims=keepdims)


def _argmin(x: Any, axis: int | None, keepdims: bool) -> Any:
    if axis is None or x.ndim == 0:
        return jnp.argmin(x.reshape(-1)).reshape((1,) * x.ndim if keepdims else ())
    return jnp.argmin(x, axis=axis, keepdims=keepdims)


def _max_dim(x: Any, axis: int, keepdims: bool) -> tuple:
    if x.ndim == 0:
        return _index_zero(x)
    idx = jnp.argmax(x, axis=axis, keepdims=True)
    vals = jnp.take_along_axis(x, idx, axis=axis)
    if not keepdims:
        idx, vals = jnp.squeeze(idx, axis), jnp.squeeze(vals, axis)
    return vals, idx


def _min_dim(x: Any, axis: int, keepdims: bool) -> tuple:
    if x.ndim == 0:
        return _index_zero(x)
    idx = jnp.argmin(x, axis=axis, keepdims=True)
    vals = jnp.take_along_axis(x, idx, axis=axis)
    if not keepdims:
        idx, vals = jnp.squeeze(idx, axis), jnp.squeeze(vals, axis)
    return vals, idx


def _cumsum(x: Any, axis: int, dtype: Any) -> Any:
    if x.ndim == 0:
        return x if dtype is None else x.astype(dtype)
    return jnp.cumsum(x, axis=axis, dtype=dtype)


def _cumprod(x: Any, axis: int, dtype: Any) -> Any:
    if x.ndim == 0:
        return x if dtype is None else x.astype(dtype)
    return jnp.cumprod(x, axis=axis, dtype=dtype)


def _cum_extreme(x: Any, axis: int, is_max: bool) -> tuple:
    if x.ndim == 0:
        return _index_zero(x)
    pos = lax.broadcasted_iota(jnp.int32, x.shape, axis)

    def combine(a: tuple, b: tuple) -> tuple:
        va, ia = a
        vb, ib = b
        # torch: a NaN wins and stays (NaN as the extreme, ties to the later position).
        take_b = (vb >= va) if is_max else (vb <= va)
        if jnp.issubdtype(x.dtype, jnp.inexact):
            take_b = jnp.isnan(vb) | (take_b & ~jnp.isnan(va))
        return jnp.where(take_b, vb, va), jnp.where(take_b, ib, ia)

    return lax.associative_scan(combine, (x, pos), axis=axis)


def _logcumsumexp(x: Any, axis: int) -> Any:
    if x.ndim == 0:
        return x
    return lax.cumlogsumexp(x, axis=axis)


def _safe_root(total: Any, p: Any) -> Any:
    """``total ** (1/p)`` with torch's zero gradient where ``total`` is 0 (not NaN)."""
    zero = total == 0
    root = jnp.sqrt if p == 2 else (lambda t: t ** (1.0 / p))
    return jnp.where(zero, 0, root(jnp.where(zero, 1, total)))


@half_in_float32
def _norm(x: Any, p: Any, axis: tuple | None, keepdims: bool) -> Any:
    if p == "nuc":
        axes = (x.ndim - 2, x.ndim - 1) if axis is None else axis
        moved = jnp.moveaxis(x, axes, (-2, -1))
        out = jnp.sum(jnp.linalg.svd(moved, compute_uv=False), axis=-1)
        if keepdims:
            out = jnp.expand_dims(out, tuple(sorted(a % x.ndim for a in axes)))
        return out
    p = 2 if p == "fro" else p
    if jnp.issubdtype(x.dtype, jnp.floating):
        return _real_norm(x, p, axis, keepdims)
    return _norm_value(x, p, axis, keepdims)


def _norm_value(x: Any, p: Any, axis: tuple | None, keepdims: bool) -> Any:
    a = jnp.abs(x)
    if p == float("inf"):
        return jnp.max(a, axis=axis, keepdims=keepdims)
    if p == float("-inf"):
        return jnp.min(a, axis=axis, keepdims=keepdims)
    if p == 0:
        return jnp.sum(x != 0, axis=axis, keepdims=keepdims).astype(x.dtype)
    if p == 1:
        return jnp.sum(a, axis=axis, keepdims=keepdims)
    if p == 2:
        sq = a * a if jnp.issubdtype(x.dtype, jnp.complexfloating) else x * x
        return _safe_root(jnp.sum(sq, axis=axis, keepdims=keepdims), 2)
    return _safe_root(jnp.sum(a**p, axis=axis, keepdims=keepdims), p)


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3))
def _real_norm(x: Any, p: Any, axis: tuple | None, keepdims: bool) -> Any:
    """A p-norm of a real tensor with torch's gradient (``norm_backward``): zero where an
    element or the norm is zero, and shared evenly between ties for +-inf, where JAX's
    derivatives of abs/max/pow give 1, the first tie, inf or NaN."""
    return _norm_value(x, p, axis, keepdims)


def _real_norm_fwd(x: Any, p: Any, axis: tuple | None, keepdims: bool) -> tuple:
    norm = _norm_value(x, p, axis, keepdims)
    return norm, (x, norm)


def _real_norm_bwd(p: Any, axis: tuple | None, keepdims: bool, res: tuple, g: Any) -> tuple:
    x, norm = res
    if not keepdims:
        dims = tuple(range(x.ndim)) if axis is None else tuple(sorted(a % x.ndim for a in axis))
        g, norm = jnp.expand_dims(g, dims), jnp.expand_dims(norm, dims)
    sgn, a = jnp.sign(x), jnp.abs(x)
    if p == 0:
        grad = jnp.zeros_like(x)
    elif p == 1:
        grad = sgn * g
    elif p == 2:
        grad = g * jnp.where(norm == 0, 0, x / jnp.where(norm == 0, 1, norm))
    elif math.isinf(p):
        mask = (a == norm) | jnp.isnan(a)
        count = jnp.sum(mask, axis=axis, keepdims=True)
        grad = sgn * (g / count) * mask
    elif p < 1:
        scaled = sgn * jnp.where(x == 0, 0, a ** (p - 1))
        grad = scaled * g * norm ** (1 - p)
    else:
        scaled = sgn * a ** (p - 1) if p < 2 else x * a ** (p - 2)
        scale = jnp.where(norm == 0, 0, g / jnp.where(norm == 0, 1, norm) ** (p - 1))
        grad = scaled * scale
    return (grad.astype(x.dtype),)


_real_norm.defvjp(_real_norm_fwd, _real_norm_bwd)


def _cov(x: Any, *rest: Any) -> Any:
    *weights, correction, which = rest
    it = iter(weights)
    fw = next(it) if which[0] else None
    aw = next(it) if which[1] else None
    return jnp.cov(x, rowvar=True, ddof=correction, fweights=fw, aweights=aw).astype(x.dtype)


def _corrcoef(x: Any) -> Any:
    return jnp.corrcoef(x, rowvar=True).astype(x.dtype)


def _renorm(x: Any, p: float, axis: int, maxnorm: float) -> Any:
    """Each slice ``x.select(axis, i)`` whose ``p``-norm exceeds ``maxnorm`` scaled to norm
    ``maxnorm`` (torch divides by ``norm + 1e-7``); the norm's gradient is torch's."""
    others = tuple(a for a in range(x.ndim) if a != axis)
    norm = _real_norm(x, p, others, True)
    factor = jnp.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0).astype(x.dtype)
    return x * factor


def _axes(dim: Any, ndim: int, empty_is_all: bool = True) -> tuple | None:
    if dim is None or (empty_is_all and isinstance(dim, list | tuple) and not dim):
        return None  # torch's sum/mean/std/... reduce every dimension for dim=[] (any/all none)
    axes = _dims.dims(dim, ndim)
    return axes if ndim else ()  # a 0-d tensor takes dim 0 or -1: nothing to reduce


def _dtype(dtype: Any) -> Any:
    return None if dtype is None else canonical(dtype)


def _accumulate_dtype(x: Any, dtype: Any) -> Any:
    """sum/nansum/prod/cumsum/cumprod's result dtype: as torch, bool and integer inputs (uint8
    too) accumulate in int64 (spx's default integer: int32 unless x64 is on) instead of
    overflowing their own type, or JAX's uint32 for unsigned ones (``- 1000`` would wrap)."""
    if dtype is None:
        return _integral_accumulator(x.dtype)
    return _dtype(dtype)


@functools.lru_cache(maxsize=64)
def _integral_accumulator(dtype: Any) -> Any:
    # Per dtype, once (jnp.issubdtype costs ~0.7 us, a third of a small sum's recording).
    if dtype == jnp.bool_ or jnp.issubdtype(dtype, jnp.integer):
        return jax.dtypes.canonicalize_dtype(jnp.int64)
    return None


def _correction(correction: Any, unbiased: Any) -> float:
    if correction is not None and unbiased is not None:
        raise RuntimeError("std/var: pass either correction= or unbiased=, not both")
    if correction is not None:
        return float(correction)
    return 1.0 if unbiased is None or unbiased else 0.0


class ReductionMethods(OrderingMethods):
    """Reductions, scans, sorting."""

    __slots__ = ()

    def sum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        static = (_axes(dim, self.ndim), keepdim, _accumulate_dtype(self, dtype))
        return apply(_sum, static, (self,))

    def nansum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        static = (_axes(dim, self.ndim), keepdim, _accumulate_dtype(self, dtype))
        return apply(_nansum, static, (self,))

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
        static = (_axes(dim, self.ndim), keepdim, _accumulate_dtype(self, dtype))
        return apply(_prod, static, (self,))

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

    def aminmax(self, *, dim: int | None = None, keepdim: bool = False) -> MinMax:
        """``(min, max)`` over everything or along ``dim`` (mirrors ``torch.aminmax``)."""
        return MinMax(self.amin(dim, keepdim), self.amax(dim, keepdim))

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Any:
        d = None if dim is None else _dims.dim(dim, self.ndim)
        return apply(_argmax, (d, keepdim), (self,))

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Any:
        d = None if dim is None else _dims.dim(dim, self.ndim)
        return apply(_argmin, (d, keepdim), (self,))

    def all(self, dim: Any = None, keepdim: bool = False) -> Any:
        return apply(_all, (_axes(dim, self.ndim, empty_is_all=False), keepdim), (self,))

    def any(self, dim: Any = None, keepdim: bool = False) -> Any:
        return apply(_any, (_axes(dim, self.ndim, empty_is_all=False), keepdim), (self,))

    def count_nonzero(self, dim: Any = None) -> Any:
        return apply(_count_nonzero, (_axes(dim, self.ndim),), (self,))

    def logsumexp(self, dim: Any, keepdim: bool = False) -> Any:
        return apply(_logsumexp, (_axes(dim, self.ndim), keepdim), (self,))

    def renorm(self, p: float, dim: int, maxnorm: float) -> Any:
        """Rescale each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` to that norm
        (mirrors ``torch.Tensor.renorm``)."""
        if not jnp.issubdtype(self.dtype, jnp.floating):
            raise RuntimeError(f"renorm: expected a floating point tensor, got {self.dtype}")
        if not p > 0:
            raise RuntimeError(f"renorm: non-positive-norm not supported (got p={p})")
        if maxnorm < 0:
            raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
        if self.ndim < 1:
            raise RuntimeError("renorm: input needs at least 1 dimension, got a 0-d tensor")
        return apply(_renorm, (float(p), _dims.dim(dim, self.ndim), float(maxnorm)), (self,))

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype=None) -> Any:
        x = self if dtype is None else self.to(dtype)
        return apply(_norm, (p, _axes(dim, self.ndim), keepdim), (x,))

    def cumsum(self, dim: int, *, dtype: Any = None) -> Any:
        return apply(_cumsum, (_dims.dim(dim, self.ndim), _accumulate_dtype(self, dtype)), (self,))

    def cumprod(self, dim: int, *, dtype: Any = None) -> Any:
        return apply(_cumprod, (_dims.dim(dim, self.ndim), _accumulate_dtype(self, dtype)), (self,))

    def cummax(self, dim: int) -> Any:
        d = _dims.dim(dim, self.ndim)
        return ValuesIndices(*apply(_cum_extreme, (d, True), (self,), n_out=2))

    def cummin(self, dim: int) -> Any:
        d = _dims.dim(dim, self.ndim)
        return ValuesIndices(*apply(_cum_extreme, (d, False), (self,), n_out=2))

    def logcumsumexp(self, dim: int) -> Any:
        return apply(_logcumsumexp, (_dims.dim(dim, self.ndim),), (self,))

    # -- statistics of variables (rows) over observations (columns) ---------------------------
    def cov(self, *, correction: int = 1, fweights: Any = None, aweights: Any = None) -> Any:
        """Covariance matrix of the rows (variables) over the columns (observations)."""
        if self.ndim > 2:
            raise RuntimeError(
                f"cov(): expected input to have two or fewer dimensions but got {self.ndim}"
            )
        weights = tuple(w for w in (fweights, aweights) if w is not None)
        which = (fweights is not None, aweights is not None)
        x = self if jnp.issubdtype(self.dtype, jnp.inexact) else self.float()
        return apply(_cov, (int(correction), which), (x, *weights))

    def corrcoef(self) -> Any:
        """Pearson correlation coefficients of the rows."""
        if self.ndim > 2:
            raise RuntimeError(
                f"corrcoef(): expected input to have two or fewer dimensions but got {self.ndim}"
            )
        x = self if jnp.issubdtype(self.dtype, jnp.inexact) else self.float()
        return apply(_corrcoef, (), (x,))
