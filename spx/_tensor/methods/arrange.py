"""Copies that rearrange elements (``repeat``, ``tile``, ``flip``, ``roll``, ``rot90``), triangles
and diagonals (``tril``, ``triu``, ``diag``, ``trace``), differences and scatters into slices of
:class:`spx.Tensor`. Unlike the views of :mod:`.shape`, their results have their own storage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from spx._tensor import _dims
from spx._tensor.dispatch import apply


def _tile(x: Any, reps: tuple) -> Any:
    return jnp.tile(x, reps)


def _repeat_interleave(x: Any, repeats: int, axis: int | None) -> Any:
    return jnp.repeat(x, repeats, axis=axis)


def _repeat_interleave_counts(x: Any, counts: tuple, axis: int | None) -> Any:
    return jnp.repeat(x, np.asarray(counts), axis=axis, total_repeat_length=sum(counts))


def _flip(x: Any, dims: tuple) -> Any:
    return jnp.flip(x, dims)


def _roll(x: Any, shifts: tuple, dims: tuple | None) -> Any:
    return jnp.roll(x, shifts, dims)


def _tril(x: Any, k: int) -> Any:
    return jnp.tril(x, k)


def _triu(x: Any, k: int) -> Any:
    return jnp.triu(x, k)


def _diag(x: Any, k: int) -> Any:
    return jnp.diag(x, k)


def _diag_embed(x: Any, offset: int, d1: int, d2: int) -> Any:
    n_in = x.shape[-1]
    n = n_in + abs(offset)
    idx = jnp.arange(n_in)
    rows, cols = idx + max(-offset, 0), idx + max(offset, 0)
    out = jnp.zeros((*x.shape[:-1], n, n), x.dtype).at[..., rows, cols].set(x)
    return jnp.moveaxis(out, (-2, -1), (d1, d2))


def _trace(x: Any) -> Any:
    # torch: integer (uint8 too) and bool traces are int64 (int32 here without x64).
    integral = x.dtype == jnp.bool_ or jnp.issubdtype(x.dtype, jnp.integer)
    return jnp.trace(x, dtype=jax.dtypes.canonicalize_dtype(jnp.int64) if integral else None)


def _rot90(x: Any, k: int, d0: int, d1: int) -> Any:
    return jnp.rot90(x, k, (d0, d1))


def _sum_to(x: Any, shape: tuple) -> Any:
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and x.shape[lead + i] != 1
    )
    return jnp.sum(x, axis=axes, keepdims=True).reshape(shape)


def _diff(x: Any, *rest: Any) -> Any:
    *edges, n, axis, where = rest
    it = iter(edges)
    prepend = next(it) if where[0] else None
    append = next(it) if where[1] else None
    if x.dtype == jnp.bool_:  # torch: consecutive bools differ by logical xor
        out = x
        for _ in range(n):
            parts = [p for p in (prepend, out, append) if p is not None]
            full = jnp.concatenate(parts, axis=axis) if len(parts) > 1 else out
            out = jnp.logical_xor(
                lax.slice_in_dim(full, 1, full.shape[axis], axis=axis),
                lax.slice_in_dim(full, 0, full.shape[axis] - 1, axis=axis),
            )
            prepend = append = None
        return out
    return jnp.diff(x, n, axis=axis, prepend=prepend, append=append)


class ArrangeMethods:
    """Rearranging copies, triangles and diagonals."""

    __slots__ = ()

    # -- triangles and diagonals -------------------------------------------------------------
    def _matrix_check(self, what: str) -> None:
        if self.ndim < 2:
            raise RuntimeError(
                f"{what}: input tensor must have at least 2 dimensions (got {self.ndim}-D)"
            )

    def tril(self, diagonal: int = 0) -> Any:
        """The lower triangle of the last two dimensions, at and below ``diagonal``."""
        self._matrix_check("tril")
        return apply(_tril, (int(diagonal),), (self,))

    def triu(self, diagonal: int = 0) -> Any:
        """The upper triangle of the last two dimensions, at and above ``diagonal``."""
        self._matrix_check("triu")
        return apply(_triu, (int(diagonal),), (self,))

    def tril_(self, diagonal: int = 0) -> Any:
        return self._assign(self.tril(diagonal))

    def triu_(self, diagonal: int = 0) -> Any:
        return self._assign(self.triu(diagonal))

    def diag(self, diagonal: int = 0) -> Any:
        """1-D: a matrix with it on ``diagonal``; 2-D: that diagonal, copied (as torch)."""
        if self.ndim not in (1, 2):
            raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.ndim}D")
        return apply(_diag, (int(diagonal),), (self,))

    def diag_embed(self, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Any:
        """Matrices with the last dimension on their ``offset`` diagonal (in ``dim1, dim2``)."""
        n = self.ndim + 1
        d1, d2 = _dims.dim(dim1, n), _dims.dim(dim2, n)
        if d1 == d2:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        return apply(_diag_embed, (int(offset), d1, d2), (self,))

    def trace(self) -> Any:
        """Sum of the main diagonal of a matrix."""
        if self.ndim != 2:
            raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.ndim}")
        return apply(_trace, (), (self,))

    # -- copies ------------------------------------------------------------------------------
    def rot90(self, k: int = 1, dims: Sequence[int] = (0, 1)) -> Any:
        """Rotate by 90 degrees ``k`` times, from ``dims[0]`` towards ``dims[1]``."""
        if len(dims) != 2:
            raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
        d0, d1 = _dims.dim(dims[0], self.ndim), _dims.dim(dims[1], self.ndim)
        if d0 == d1:
            raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} "
                               f"and dim1 = {d1}")  # fmt: skip
        return apply(_rot90, (int(k) % 4, d0, d1), (self,))

    def sum_to_size(self, *size: Any) -> Any:
        """Sum ``self`` down to ``size``, a shape it broadcasts from (mirrors torch)."""
        shape = _dims.shape_args(size, "sum_to_size")
        mine = self._aval.shape
        lead = len(mine) - len(shape)
        if lead < 0 or any(s not in (1, m) for s, m in zip(shape, mine[lead:], strict=True)):
            raise RuntimeError(
                f"size {{{list(shape)}}} is not expandable to size {{{list(mine)}}}."
            )
        return apply(_sum_to, (shape,), (self,))

    def repeat(self, *sizes: Any) -> Any:
        """Tile the tensor ``sizes`` times along each dimension (torch's ``repeat``)."""
        reps = _dims.shape_args(sizes, "repeat")
        if len(reps) < self.ndim:
            raise RuntimeError(
                "Number of dimensions of repeat dims can not be smaller than number of "
                "dimensions of tensor"
            )
        return apply(_tile, (reps,), (self,))

    def tile(self, *dims: Any) -> Any:
        reps = _dims.shape_args(dims, "tile")
        return apply(_tile, ((1,) * (self.ndim - len(reps)) + reps,), (self,))

    def repeat_interleave(self, repeats: Any, dim: int | None = None, *, output_size=None) -> Any:
        d = None if dim is None else _dims.dim(dim, self.ndim)
        if isinstance(repeats, int):
            return apply(_repeat_interleave, (repeats, d), (self,))
        counts = tuple(int(c) for c in np.asarray(repeats).reshape(-1))
        return apply(_repeat_interleave_counts, (counts, d), (self,))

    def flip(self, *dims: Any) -> Any:
        ds = _dims.dims(_dims.shape_args(dims, "flip"), self.ndim)
        return apply(_flip, (ds,), (self,))

    def fliplr(self) -> Any:
        return self.flip(1)

    def flipud(self) -> Any:
        return self.flip(0)

    def roll(self, shifts: Any, dims: Any = None) -> Any:
        sh = tuple(int(s) for s in shifts) if isinstance(shifts, list | tuple) else (int(shifts),)
        if not sh:
            raise RuntimeError("`shifts` required")
        if dims is None:
            if len(sh) != 1:  # without dims, one shift of the flattened tensor
                raise RuntimeError(
                    f"shifts and dimensions must align. shifts: {len(sh)}, dims:0 (pass one "
                    "dim per shift, e.g. roll((1, 2), (0, 1)))"
                )
            return apply(_roll, (sh[0], None), (self.flatten(),)).view(self.shape)
        listed = tuple(dims) if isinstance(dims, list | tuple) else (dims,)
        ds = tuple(_dims.dim(d, self.ndim) for d in listed)
        if len(sh) != len(ds):  # jnp.roll would broadcast them, or ignore the extra shifts
            raise RuntimeError(
                f"shifts and dimensions must align. shifts: {len(sh)}, dims:{len(ds)} (pass "
                "one shift per dim)"
            )
        # A dim named twice rolls by the sum of its shifts, as torch's successive rolls do.
        total: dict[int, int] = {}
        for s, d in zip(sh, ds, strict=True):
            total[d] = total.get(d, 0) + s
        return apply(_roll, (tuple(total.values()), tuple(total)), (self,))

    def diff(self, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None) -> Any:
        """``n``-th forward difference along ``dim``, after joining ``prepend``/``append``."""
        if self.ndim == 0:
            raise RuntimeError("diff expects input to be at least one-dimensional")
        d = _dims.dim(dim, self.ndim)
        edges = tuple(e for e in (prepend, append) if e is not None)
        where = (prepend is not None, append is not None)
        return apply(_diff, (int(n), d, where), (self, *edges))

    def diagflat(self, offset: int = 0) -> Any:
        """The flattened tensor as the ``offset`` diagonal of a matrix."""
        return self.reshape(-1).diag(offset)

    def narrow_copy(self, dim: int, start: Any, length: int) -> Any:
        return self.narrow(dim, start, length).clone()

    # -- copies with a slice replaced (functional forms of writing into a view) ----------------
    def select_scatter(self, src: Any, dim: int, index: int) -> Any:
        """A copy of ``self`` with ``src`` at ``index`` along ``dim``."""
        out = self.clone()
        out.select(dim, index).copy_(src)
        return out

    def slice_scatter(
        self, src: Any, dim: int = 0, start: int | None = None, end: int | None = None, step=1
    ) -> Any:
        """A copy of ``self`` with ``src`` in ``[start:end:step]`` along ``dim``."""
        out = self.clone()
        d = _dims.dim(dim, self.ndim)
        out[(slice(None),) * d + (slice(start, end, step),)].copy_(src)
        return out

    def diagonal_scatter(self, src: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
        """A copy of ``self`` with ``src`` on the given diagonal."""
        out = self.clone()
        out.diagonal(offset, dim1, dim2).copy_(src)
        return out
