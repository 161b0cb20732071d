"""Sorting, order statistics and distinct values of :class:`spx.Tensor` (``sort``, ``topk``,
``median``, ``mode``, ``quantile``, ``kthvalue``, ``unique``, ``bincount``, ``histc``).

Functions of a dimension return named pairs ``(values, indices)`` as torch's
``torch.return_types`` do. Ties: ``sort`` is stable (torch's unstable sort may order ties
differently), ``median``/``kthvalue`` return the first index among equal values, ``mode`` the
last. ``unique``/``bincount`` need the values now (their shapes depend on them).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np
from jax import lax

from spx._tensor import _dims
from spx._tensor.dispatch import apply


class ValuesIndices(NamedTuple):
    """``(values, indices)`` of a reduction along a dimension (torch's ``return_types``)."""

    values: Any
    indices: Any


def _index_zero(x: Any) -> tuple:
    """``(values, indices)`` of a reduction of a 0-d tensor along its (only) dim 0."""
    return x, jnp.zeros((), jnp.int32)


def _kth_dim(x: Any, k: int, axis: int, keepdims: bool) -> tuple:
    """The k-th smallest (0-based) along ``axis`` and its index (stable: first occurrence)."""
    if x.ndim == 0:
        return _index_zero(x)
    order = jnp.argsort(x, axis=axis, stable=True)
    idx = lax.slice_in_dim(order, k, k + 1, axis=axis)
    vals = jnp.take_along_axis(x, idx, axis=axis)
    if not keepdims:
        idx, vals = jnp.squeeze(idx, axis), jnp.squeeze(vals, axis)
    return vals, idx


def _lowest(x: Any) -> Any:
    return jnp.iinfo(x.dtype).min if jnp.issubdtype(x.dtype, jnp.integer) else False


def _median_all(x: Any) -> Any:
    if x.size == 0:  # torch: NaN (an integer tensor's lowest value)
        return jnp.full(
            (), jnp.nan if jnp.issubdtype(x.dtype, jnp.inexact) else _lowest(x), x.dtype
        )
    flat = jnp.sort(x.reshape(-1))  # NaN sorts last; torch's median is NaN if any is
    out = flat[(flat.shape[0] - 1) // 2]
    if jnp.issubdtype(x.dtype, jnp.inexact):
        out = jnp.where(jnp.isnan(flat[-1]), flat[-1], out)
    return out


def _median_dim(x: Any, axis: int, keepdims: bool) -> tuple:
    """Lower median along ``axis``; NaN (at the first NaN's index) where a NaN is present."""
    if x.ndim == 0:
        return _index_zero(x)
    k = (x.shape[axis] - 1) // 2
    order = jnp.argsort(x, axis=axis, stable=True)
    idx = lax.slice_in_dim(order, k, k + 1, axis=axis)
    if jnp.issubdtype(x.dtype, jnp.inexact):
        nan = jnp.isnan(x)
        first_nan = jnp.argmax(nan, axis=axis, keepdims=True).astype(idx.dtype)
        idx = jnp.where(jnp.any(nan, axis=axis, keepdims=True), first_nan, idx)
    vals = jnp.take_along_axis(x, idx, axis=axis)
    if not keepdims:
        idx, vals = jnp.squeeze(idx, axis), jnp.squeeze(vals, axis)
    return vals, idx


def _nanmedian_dim(x: Any, axis: int | None, keepdims: bool) -> tuple:
    """Lower median of the non-NaN values along ``axis`` (all of ``x`` when None)."""
    if axis is None:
        x, axis = x.reshape(-1), 0
        if x.size == 0:  # torch: NaN (an integer tensor's lowest value)
            fill = jnp.nan if jnp.issubdtype(x.dtype, jnp.inexact) else _lowest(x)
            return jnp.full((), fill, x.dtype), jnp.zeros((), jnp.int32)
    if x.ndim == 0:
        return _index_zero(x)
    order = jnp.argsort(x, axis=axis, stable=True)  # NaN last
    count = jnp.sum(~jnp.isnan(x), axis=axis, keepdims=True)
    k = jnp.maximum(count - 1, 0) // 2
    idx = jnp.take_along_axis(order, k.astype(order.dtype), axis=axis)
    vals = jnp.take_along_axis(x, idx, axis=axis)
    if not keepdims:
        idx, vals = jnp.squeeze(idx, axis), jnp.squeeze(vals, axis)
    return vals, idx


def _mode_dim(x: Any, axis: int, keepdims: bool) -> tuple:
    """torch's mode: the smallest of the most frequent values, at its last index."""
    if x.ndim == 0:
        return _index_zero(x)
    moved = jnp.moveaxis(x, axis, -1)
    counts = jnp.sum(moved[..., :, None] == moved[..., None, :], axis=-1)
    top = jnp.max(counts, axis=-1, keepdims=True)
    big = jnp.inf if jnp.issubdtype(x.dtype, jnp.inexact) else _iinfo_max(x.dtype)
    best = jnp.min(jnp.where(counts == top, moved, big), axis=-1, keepdims=True)
    pos = lax.broadcasted_iota(jnp.int32, moved.shape, moved.ndim - 1)
    idx = jnp.max(jnp.where(moved == best, pos, -1), axis=-1, keepdims=True)
    vals = jnp.take_along_axis(moved, idx, axis=-1)  # the gradient goes to that one element
    vals, idx = jnp.moveaxis(vals, -1, axis), jnp.moveaxis(idx, -1, axis)
    if not keepdims:
        idx, vals = jnp.squeeze(idx, axis), jnp.squeeze(vals, axis)
    return vals.astype(x.dtype), idx


def _iinfo_max(dtype: Any) -> Any:
    return True if dtype == jnp.bool_ else jnp.iinfo(dtype).max


def _quantile(x: Any, q: Any, axis: int, keepdims: bool, method: str, nan: bool) -> Any:
    """torch's quantile along ``axis``: sort (NaN last), then pick or interpolate at rank
    ``q * (n - 1)`` (``n`` counts non-NaN values for nanquantile; "nearest" rounds half to
    even). A NaN in a slice makes quantile NaN; an all-NaN slice makes nanquantile NaN."""
    xs = jnp.moveaxis(jnp.sort(x, axis=axis), axis, -1)
    n = xs.shape[-1]
    q = jnp.asarray(q, x.dtype)
    count = jnp.sum(~jnp.isnan(xs), axis=-1, keepdims=True) if nan else jnp.full((1,), n)
    rank = q.reshape(-1) * (jnp.maximum(count, 1) - 1).astype(x.dtype)  # (..., k)
    lo = jnp.floor(rank)
    hi = jnp.ceil(rank)

    def at(r: Any) -> Any:
        idx = jnp.broadcast_to(r.astype(jnp.int32), (*xs.shape[:-1], r.shape[-1]))
        return jnp.take_along_axis(xs, idx, axis=-1)

    if method == "lower":
        out = at(lo)
    elif method == "higher":
        out = at(hi)
    elif method == "nearest":
        out = at(jnp.round(rank))
    elif method == "midpoint":
        out = (at(lo) + at(hi)) / 2
    else:
        low = at(lo)
        out = low + (at(hi) - low) * (rank - lo)
    bad = (count == 0) if nan else jnp.isnan(xs[..., -1:])
    out = jnp.where(bad, jnp.nan, out)
    if keepdims:
        out = jnp.expand_dims(out, axis)  # the k dimension is last, after the kept axis
    out = jnp.moveaxis(out, -1, 0)
    return out[0] if q.ndim == 0 else out


def _sort(x: Any, axis: int, descending: bool, stable: bool) -> tuple:
    if x.ndim == 0:
        return _index_zero(x)
    if descending:
        # The ascending order of the reversed input, reversed: ties keep their order and NaN
        # comes first, as in torch (negating the keys would sort NaN last).
        idx = jnp.flip(jnp.argsort(jnp.flip(x, axis), axis=axis, stable=True), axis)
        idx = x.shape[axis] - 1 - idx
    else:
        idx = jnp.argsort(x, axis=axis, stable=True)
    return jnp.take_along_axis(x, idx, axis=axis), idx


def _topk(x: Any, k: int, axis: int, largest: bool) -> tuple:
    if x.ndim == 0:
        return _index_zero(x)
    moved = jnp.moveaxis(x, axis, -1)
    if largest:
        vals, idx = lax.top_k(moved, k)
    else:
        vals, idx = lax.top_k(-moved, k)
        vals = -vals
    return jnp.moveaxis(vals, -1, axis), jnp.moveaxis(idx, -1, axis)


def _host_results(values: np.ndarray, *extra: np.ndarray | None) -> Any:
    """Tensors of eagerly computed results: ``values`` alone, or a tuple with the extras."""
    from spx._tensor.tensor import Tensor

    out = Tensor._of(jnp.asarray(values))
    rest = [Tensor._of(jnp.asarray(e.astype(np.int32))) for e in extra if e is not None]
    return (out, *rest) if rest else out


def _bincount(x: Any, length: int) -> Any:
    return jnp.bincount(x, length=length)


def _bincount_weighted(x: Any, weights: Any, length: int, dtype: Any) -> Any:
    return jnp.bincount(x, weights.astype(dtype), length=length)


def _histc(x: Any, lo: Any, hi: Any, bins: int, from_data: bool) -> Any:
    """torch's histc: ``bins`` equal bins over [lo, hi] (the data's range if ``from_data``;
    widened by 1 on each side if that range is empty); values outside are ignored."""
    if from_data:
        lo, hi = jnp.min(x), jnp.max(x)
    lo = jnp.asarray(lo, x.dtype)
    hi = jnp.asarray(hi, x.dtype)
    same = lo == hi
    lo, hi = jnp.where(same, lo - 1, lo), jnp.where(same, hi + 1, hi)
    idx = jnp.floor((x - lo) / (hi - lo) * bins).astype(jnp.int32)
    idx = jnp.where(x == hi, bins - 1, jnp.clip(idx, 0, bins - 1))
    inside = (x >= lo) & (x <= hi)
    counts = jnp.zeros(bins, x.dtype).at[idx.reshape(-1)].add(inside.reshape(-1).astype(x.dtype))
    return lax.stop_gradient(counts)


class OrderingMethods:
    """Sorting, order statistics, distinct values."""

    __slots__ = ()

    def median(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """The lower median (NaN if any element is NaN); with ``dim``: ``(values, indices)``."""
        if dim is None:
            return apply(_median_all, (), (self,))
        d = _dims.dim(dim, self.ndim)
        return ValuesIndices(*apply(_median_dim, (d, keepdim), (self,), n_out=2))

    def nanmedian(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """``median`` of the non-NaN values (NaN only where all are NaN)."""
        if dim is None:
            return apply(_nanmedian_dim, (None, False), (self,), n_out=2)[0]
        d = _dims.dim(dim, self.ndim)
        return ValuesIndices(*apply(_nanmedian_dim, (d, keepdim), (self,), n_out=2))

    def mode(self, dim: int = -1, keepdim: bool = False) -> Any:
        """The most frequent value along ``dim`` (the smallest on ties) and its last index."""
        d = _dims.dim(dim, self.ndim)
        return ValuesIndices(*apply(_mode_dim, (d, keepdim), (self,), n_out=2))

    def quantile(
        self, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation="linear"
    ) -> Any:
        """The ``q``-quantiles along ``dim`` (of everything when None); ``q`` a number or a
        1-D tensor in [0, 1], whose dimension comes first in the result (as torch)."""
        return self._quantile(q, dim, keepdim, interpolation, False)

    def nanquantile(
        self, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation="linear"
    ) -> Any:
        return self._quantile(q, dim, keepdim, interpolation, True)

    def _quantile(self, q: Any, dim: Any, keepdim: bool, method: str, nan: bool) -> Any:
        what = "nanquantile" if nan else "quantile"
        if method not in ("linear", "lower", "higher", "midpoint", "nearest"):
            raise ValueError(
                f"{what}() interpolation must be one of linear, lower, higher, midpoint or "
                f"nearest. Got {method!r}"
            )
        if not jnp.issubdtype(self.dtype, jnp.floating):
            raise RuntimeError(
                f"{what}() input tensor must be either float or double dtype, got "
                f"{self.dtype}; cast first: x.float().{what}(q)"
            )
        if isinstance(q, int | float) and not 0 <= q <= 1:
            raise RuntimeError(f"{what}() q must be in the range [0, 1] but got {q}")
        q_dims = getattr(q, "ndim", 0)
        if q_dims > 1:
            raise RuntimeError(f"{what}() q must be a scalar or 1D tensor, got {q_dims}-D")
        if dim is None:
            out = apply(_quantile, (0, False, method, nan), (self.reshape(-1), q))
            if keepdim:  # torch keeps every dimension, as size 1
                out = out.reshape(*out.shape[:q_dims], *([1] * self.ndim))
            return out
        d = _dims.dim(dim, self.ndim)
        return apply(_quantile, (d, keepdim, method, nan), (self, q))

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

    # -- distinct values: eager, the result's shape depends on the values --------------------
    def unique(
        self,
        sorted: bool = True,
        return_inverse: bool = False,
        return_counts: bool = False,
        dim: int | None = None,
    ) -> Any:
        """The distinct values, sorted (slices along ``dim`` if given), and optionally the
        inverse (where each element went) and counts. Computed now (a synchronization)."""
        host = np.asarray(self._value_for_host("unique"))
        if dim is None:
            # equal_nan=False: torch keeps each NaN (NaN != NaN), numpy merges them.
            values, inverse, counts = np.unique(
                host, return_inverse=True, return_counts=True, equal_nan=False
            )
            inverse = inverse.reshape(host.shape)
        else:
            d = _dims.dim(dim, host.ndim)
            values, inverse, counts = np.unique(
                host, return_inverse=True, return_counts=True, axis=d
            )
            inverse = inverse.reshape(-1)
        return _host_results(
            values, inverse if return_inverse else None, counts if return_counts else None
        )

    def unique_consecutive(
        self, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
    ) -> Any:
        """Collapse runs of equal consecutive elements (slices along ``dim`` if given)."""
        host = np.asarray(self._value_for_host("unique_consecutive"))
        if dim is None:
            flat, shape, d = host.reshape(-1), host.shape, 0
        else:
            d = _dims.dim(dim, host.ndim)
            flat, shape = np.moveaxis(host, d, 0), (host.shape[d],)
        n = flat.shape[0]
        if n:
            rows = flat.reshape(n, -1)
            change = np.concatenate([[True], np.any(rows[1:] != rows[:-1], axis=1)])
        else:
            change = np.zeros(0, bool)
        starts = np.flatnonzero(change)
        values = flat[starts]
        if dim is not None:
            values = np.moveaxis(values, 0, d)
        inverse = (np.cumsum(change) - 1).reshape(shape)
        counts = np.diff(np.append(starts, n))
        return _host_results(
            values, inverse if return_inverse else None, counts if return_counts else None
        )

    def bincount(self, weights: Any = None, minlength: int = 0) -> Any:
        """Occurrences of each value ``0..max`` of a 1-D non-negative integer tensor (sums of
        ``weights`` instead if given). The length depends on the values: they are read now."""
        if self.ndim != 1 or not jnp.issubdtype(self.dtype, jnp.integer):
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        host = np.asarray(self._value_for_host("bincount"))
        if host.size and host.min() < 0:
            raise RuntimeError(
                f"bincount only supports 1-d non-negative integral inputs (found {host.min()})."
            )
        length = max(int(host.max()) + 1 if host.size else 0, int(minlength))
        if weights is None:
            return apply(_bincount, (length,), (self,))
        w_dtype = np.dtype(getattr(weights, "dtype", np.float32))
        dtype = w_dtype if w_dtype == np.float32 else np.dtype(jnp.float32)
        return apply(_bincount_weighted, (length, dtype), (self, weights))

    def histc(self, bins: int = 100, min: Any = 0, max: Any = 0) -> Any:
        """Counts in ``bins`` equal bins over ``[min, max]`` (the data's range when both are
        0); elements outside are not counted. Not differentiable (as in torch)."""
        if not jnp.issubdtype(self.dtype, jnp.floating):
            raise RuntimeError(
                f"torch.histogram: input tensor must be floating point, got {self.dtype}"
            )
        if bins <= 0:
            raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins}")
        if isinstance(min, int | float) and isinstance(max, int | float) and min > max:
            raise RuntimeError(f"torch.histc: max must be larger than min (got {min} > {max})")
        from_data = (
            isinstance(min, int | float) and isinstance(max, int | float) and min == max == 0
        )
        return apply(_histc, (int(bins), from_data), (self, min, max))
