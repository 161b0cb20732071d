"""Shape methods: sizes and views (``view``, ``transpose``, ``split``, ...); copies that
rearrange elements are in :mod:`.arrange`.

View methods record how the result derives from its base (``Tensor._make_view``), so in-place
writes through a view reach the base, as torch's shared storage does. The pure functions below
are the recorded operations; their identity is part of the program cache key.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from spx._tensor import _dims
from spx._tensor._dims import Size
from spx._tensor.dispatch import apply
from spx._tensor.methods import _layout
from spx._tensor.methods._dtypes import canonical
from spx._tensor.methods.arrange import ArrangeMethods
from spx.constants import check_memory_format


def _reshape(x: Any, shape: tuple) -> Any:
    return x.reshape(shape)


def _swap(x: Any, d0: int, d1: int) -> Any:
    return jnp.swapaxes(x, d0, d1)


def _permute(x: Any, dims: tuple) -> Any:
    return jnp.transpose(x, dims)


def _expand_dims(x: Any, d: int) -> Any:
    return jnp.expand_dims(x, d)


def _squeeze(x: Any, dims: tuple) -> Any:
    return jnp.squeeze(x, dims)


def _broadcast(x: Any, shape: tuple) -> Any:
    return jnp.broadcast_to(x, shape)


def _slice(x: Any, start: Any, length: int, axis: int) -> Any:
    return lax.dynamic_slice_in_dim(x, start, length, axis)


def _select(x: Any, index: Any, axis: int) -> Any:
    return lax.dynamic_index_in_dim(x, index, axis, keepdims=False)


def _split(x: Any, sizes: tuple, axis: int) -> tuple:
    return tuple(jnp.split(x, np.cumsum(sizes[:-1]).tolist(), axis=axis))


def _split_part(x: Any, start: int, length: int, axis: int) -> Any:
    return lax.slice_in_dim(x, start, start + length, axis=axis)


def _unbind(x: Any, axis: int) -> tuple:
    return tuple(jnp.moveaxis(x, axis, 0))


def _unbind_part(x: Any, i: int, axis: int) -> Any:
    return lax.index_in_dim(x, i, axis, keepdims=False)


def _diagonal(x: Any, offset: int, d1: int, d2: int) -> Any:
    return jnp.diagonal(x, offset, d1, d2)


def _unfold(x: Any, dim: int, size: int, step: int) -> Any:
    n = (x.shape[dim] - size) // step + 1
    idx = np.arange(n)[:, None] * step + np.arange(size)[None, :]
    out = jnp.take(x, idx.reshape(-1), axis=dim)
    out = out.reshape(*x.shape[:dim], n, size, *x.shape[dim + 1 :])
    return jnp.moveaxis(out, dim + 1, -1)


def _bitcast(x: Any, dtype: Any) -> Any:
    # XLA bitcasts no bools: a bool is one byte, 0 or 1, so go through uint8.
    if x.dtype == jnp.bool_:
        x = x.astype(jnp.uint8)
    if dtype == jnp.bool_:
        return lax.bitcast_convert_type(x, jnp.uint8) != 0
    return lax.bitcast_convert_type(x, dtype)


_TARGETS: dict[tuple, tuple] = {}


def _target(args: tuple, shape: tuple, what: str) -> tuple:
    """The shape ``view(*args)``/``reshape(*args)`` resolves to for a tensor of ``shape``.

    Plain int arguments (the common ``x.view(b, t, -1)``) are resolved once per shape: the
    check and the ``-1`` inference cost more than recording the operation.
    """
    if all(type(a) is int for a in args):
        key = (args, shape)
        found = _TARGETS.get(key)
        if found is None:
            found = _TARGETS[key] = _dims.infer_shape(args, math.prod(shape), what)
        return found
    return _dims.infer_shape(_dims.shape_args(args, what), math.prod(shape), what)


class ShapeMethods(ArrangeMethods):
    """Sizes, views and shape-changing copies of :class:`spx.Tensor`."""

    __slots__ = ()

    # -- sizes -------------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._aval.shape)

    def size(self, dim: int | None = None) -> Size | int:
        """The shape (a :class:`Size`), or the size of dimension ``dim``."""
        shape = self._aval.shape
        if dim is None:
            return Size(shape)
        return shape[_dims.dim(dim, len(shape))]

    def dim(self) -> int:
        return len(self._aval.shape)

    ndimension = dim

    @property
    def ndim(self) -> int:
        return len(self._aval.shape)

    def numel(self) -> int:
        return math.prod(self._aval.shape)

    nelement = numel

    def __len__(self) -> int:
        shape = self._aval.shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    # -- views -------------------------------------------------------------------------------
    def view(self, *shape: Any) -> Any:
        """The same data with another shape (``-1`` inferred); ``view(dtype)`` reinterprets.

        As in torch, a view must be expressible with strides: ``x.t().view(-1)`` raises
        (use ``reshape``, or ``contiguous()`` first).
        """
        if len(shape) == 1 and not isinstance(shape[0], int | Sequence):
            return self._view_dtype(shape[0])
        target = _target(shape, self._aval.shape, "view")
        if self._view is not None:
            old, strides = _layout.layout(self)
            if _layout.view_strides(old, strides, target) is None:
                raise RuntimeError(
                    "view size is not compatible with input tensor's size and stride (at least "
                    "one dimension spans across two contiguous subspaces). Use .reshape(...) "
                    "instead."
                )
        return self._make_view(apply(_reshape, (target,), (self,)), _reshape, (target,))

    def _view_dtype(self, dtype: Any) -> Any:
        dt = canonical(dtype)
        if dt.itemsize != self.dtype.itemsize:
            raise RuntimeError(
                f"view(dtype={dt}): spx supports views between dtypes of the same size only "
                f"({self.dtype} is {self.dtype.itemsize} bytes, {dt} is {dt.itemsize})"
            )
        return self._make_view(apply(_bitcast, (dt,), (self,)), _bitcast, (dt,))

    def reshape(self, *shape: Any) -> Any:
        """Another shape (``-1`` inferred): a view when strides allow one, else a copy (so
        writes into ``x.t().reshape(-1)`` do not reach ``x``, as in torch)."""
        target = _target(shape, self._aval.shape, "reshape")
        if self._view is not None:
            old, strides = _layout.layout(self)
            if _layout.view_strides(old, strides, target) is None:
                return apply(_reshape, (target,), (self,))
        return self._make_view(apply(_reshape, (target,), (self,)), _reshape, (target,))

    def view_as(self, other: Any) -> Any:
        return self.reshape(other.shape)

    def reshape_as(self, other: Any) -> Any:
        return self.reshape(other.shape)

    def transpose(self, dim0: int, dim1: int) -> Any:
        """Swap two dimensions (torch's ``transpose``; not numpy's permutation)."""
        n = self.ndim
        d0, d1 = _dims.dim(dim0, n), _dims.dim(dim1, n)
        return self._make_view(apply(_swap, (d0, d1), (self,)), _swap, (d0, d1))

    swapaxes = transpose
    swapdims = transpose

    def t(self) -> Any:
        if self.ndim > 2:
            raise RuntimeError(
                f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D"
            )
        return self if self.ndim < 2 else self.transpose(0, 1)

    @property
    def T(self) -> Any:
        n = len(self._aval.shape)
        if n == 2:
            return self._make_view(apply(_swap, (0, 1), (self,)), _swap, (0, 1))
        return self.permute(*reversed(range(n)))

    @property
    def mT(self) -> Any:
        if self.ndim < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices")
        return self.transpose(-2, -1)

    def permute(self, *dims: Any) -> Any:
        n = self.ndim
        order = _dims.dims(_dims.shape_args(dims, "permute"), n)
        if len(order) != n:
            raise RuntimeError(
                f"permute(sparse_coo): number of dimensions in the tensor input does not match "
                f"the length of the desired ordering of dimensions i.e. input.dim() = {n} is not "
                f"equal to len(dims) = {len(order)}"
            )
        return self._make_view(apply(_permute, (order,), (self,)), _permute, (order,))

    def movedim(self, source: Any, destination: Any) -> Any:
        n = self.ndim
        src = _dims.dims(source, n)
        dst = _dims.dims(destination, n)
        if len(src) != len(dst):
            raise RuntimeError("movedim: Invalid source or destination dims")
        order = [d for d in range(n) if d not in src]
        for d, s in sorted(zip(dst, src, strict=True)):
            order.insert(d, s)
        return self.permute(*order)

    moveaxis = movedim

    def unsqueeze(self, dim: int) -> Any:
        d = _dims.dim(dim, self.ndim + 1)
        return self._make_view(apply(_expand_dims, (d,), (self,)), _expand_dims, (d,))

    def squeeze(self, dim: Any = None) -> Any:
        """Remove size-1 dimensions (all, or those of ``dim`` that have size 1)."""
        shape = self._aval.shape
        if dim is None:
            ds = tuple(i for i, s in enumerate(shape) if s == 1)
        else:
            ds = tuple(d for d in _dims.dims(dim, len(shape)) if shape and shape[d] == 1)
        if not ds:
            return self._make_view(apply(_reshape, (shape,), (self,)), _reshape, (shape,))
        return self._make_view(apply(_squeeze, (ds,), (self,)), _squeeze, (ds,))

    # -- in-place view changes (torch's t_, transpose_, squeeze_, unsqueeze_) ------------------
    def _become(self, make: Any) -> Any:
        """``self`` becomes ``make(self)``, a view of its own former value (in place, as torch
        changes a tensor's sizes and strides): aliases such as ``.data`` keep the old shape
        and still share the values, so later in-place writes are seen by both."""
        self._check_inplace()
        out = make(self if self._view is not None else self._alias())
        self._s, self._view = out._s, out._view
        return self

    def t_(self) -> Any:
        """In-place :meth:`t`."""
        return self._become(lambda x: x.t())

    def transpose_(self, dim0: int, dim1: int) -> Any:
        """In-place :meth:`transpose`."""
        return self._become(lambda x: x.transpose(dim0, dim1))

    swapaxes_ = transpose_
    swapdims_ = transpose_

    def squeeze_(self, dim: Any = None) -> Any:
        """In-place :meth:`squeeze`."""
        return self._become(lambda x: x.squeeze(dim))

    def unsqueeze_(self, dim: int) -> Any:
        """In-place :meth:`unsqueeze`."""
        return self._become(lambda x: x.unsqueeze(dim))

    def expand(self, *sizes: Any) -> Any:
        """Broadcast size-1 dimensions to ``sizes`` (``-1`` keeps a dimension)."""
        target = list(_dims.shape_args(sizes, "expand"))
        shape = self._aval.shape
        if len(target) < len(shape):
            raise RuntimeError(
                f"expand: the number of sizes provided ({len(target)}) must be greater or equal "
                f"to the number of dimensions in the tensor ({len(shape)})"
            )
        offset = len(target) - len(shape)
        for i, s in enumerate(shape):
            t = target[offset + i]
            if t == -1:
                target[offset + i] = s
            elif s != 1 and s != t:
                raise RuntimeError(
                    f"The expanded size of the tensor ({t}) must match the existing size ({s}) "
                    f"at non-singleton dimension {offset + i}.  Target sizes: {list(sizes)}.  "
                    f"Tensor sizes: {list(shape)}"
                )
        target_t = tuple(target)
        return self._make_view(apply(_broadcast, (target_t,), (self,)), _broadcast, (target_t,))

    def expand_as(self, other: Any) -> Any:
        return self.expand(*other.shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Any:
        shape = self._aval.shape
        if not shape:
            return self.reshape(1)
        s, e = _dims.dim(start_dim, len(shape)), _dims.dim(end_dim, len(shape))
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        return self.reshape(*shape[:s], math.prod(shape[s : e + 1]), *shape[e + 1 :])

    def unflatten(self, dim: int, sizes: Sequence[int]) -> Any:
        shape = self._aval.shape
        d = _dims.dim(dim, len(shape))
        inner = _dims.infer_shape(tuple(sizes), shape[d], "unflatten")
        return self.reshape(*shape[:d], *inner, *shape[d + 1 :])

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Whether the elements are in row-major order (torch's strides rule)."""
        if self._view is None:
            return True
        return _layout.is_contiguous(*_layout.layout(self))

    def stride(self, dim: int | None = None) -> Any:
        """Element strides torch would give this tensor (views included)."""
        shape, strides = _layout.layout(self)
        return strides if dim is None else strides[_dims.dim(dim, len(shape))]

    def contiguous(self, memory_format: Any = None) -> Any:
        """``self`` when its elements are in row-major order, else a copy (as torch)."""
        check_memory_format(memory_format, "contiguous()")
        return self if self.is_contiguous() else self.clone()

    def narrow(self, dim: int, start: Any, length: int) -> Any:
        n = self._aval.shape
        d = _dims.dim(dim, len(n))
        start = int(start)
        if start < 0:
            start += n[d]
        if not (start >= 0 and length >= 0 and start + length <= n[d]):
            raise RuntimeError(
                f"start ({start}) + length ({length}) exceeds dimension size ({n[d]})."
            )
        return self._sliced(d, start, length)

    def _sliced(self, d: int, start: int, length: int) -> Any:
        # The start is an input of the program (a changing batch offset never recompiles).
        out = apply(_slice, (length, d), (self, start))
        return self._make_view(out, _slice, (length, d), (start,))

    def select(self, dim: int, index: int) -> Any:
        shape = self._aval.shape
        d = _dims.dim(dim, len(shape))
        i = int(index)
        if not -shape[d] <= i < shape[d]:
            raise IndexError(
                f"select(): index {i} out of range for tensor of size {list(shape)} at "
                f"dimension {d}"
            )
        i %= shape[d]
        return self._make_view(apply(_select, (d,), (self, i)), _select, (d,), (i,))

    def split(self, split_size_or_sections: Any, dim: int = 0) -> tuple:
        """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or given sizes."""
        shape = self._aval.shape
        d = _dims.dim(dim, len(shape))
        n = shape[d]
        if isinstance(split_size_or_sections, int):
            size = split_size_or_sections
            if size <= 0:
                raise RuntimeError(f"split_size can only be a positive integer, got {size}")
            sizes = [size] * (n // size) + ([n % size] if n % size else [])
            sizes = sizes or [0]
        else:
            sizes = [int(s) for s in split_size_or_sections]
            if sum(sizes) != n:
                raise RuntimeError(
                    f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                    f"size at dimension {d}), but got split_sizes={sizes}"
                )
        return self._split_views(tuple(sizes), d)

    def _split_views(self, sizes: tuple, d: int) -> tuple:
        if len(sizes) == 1:
            return (self._sliced(d, 0, sizes[0]),)
        outs = apply(_split, (sizes, d), (self,), n_out=len(sizes))
        start = 0
        for out, size in zip(outs, sizes, strict=True):
            self._make_view(out, _split_part, (start, size, d))
            start += size
        return outs

    def chunk(self, chunks: int, dim: int = 0) -> tuple:
        """At most ``chunks`` pieces of equal size ``ceil(n / chunks)`` along ``dim``."""
        if chunks <= 0:
            raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
        n = self.size(dim)
        size = max(-(-n // chunks), 1) if n else 1
        return self.split(size, dim) if n else self.split([0] * chunks, dim)

    def tensor_split(self, indices_or_sections: Any, dim: int = 0) -> tuple:
        n = self.size(dim)
        if isinstance(indices_or_sections, int):
            k = indices_or_sections
            base, extra = divmod(n, k)
            sizes = [base + 1] * extra + [base] * (k - extra)
        else:
            bounds = [0, *[min(max(int(i), 0), n) for i in indices_or_sections], n]
            sizes = [max(b - a, 0) for a, b in itertools.pairwise(bounds)]
        return self._split_views(tuple(sizes), _dims.dim(dim, self.ndim))

    def unbind(self, dim: int = 0) -> tuple:
        d = _dims.dim(dim, self.ndim)
        n = self._aval.shape[d]
        outs = apply(_unbind, (d,), (self,), n_out=n)
        for i, out in enumerate(outs):
            self._make_view(out, _unbind_part, (i, d))
        return outs

    def __iter__(self):
        if not self._aval.shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
        n = self.ndim
        static = (offset, _dims.dim(dim1, n), _dims.dim(dim2, n))
        return self._make_view(apply(_diagonal, static, (self,)), _diagonal, static)

    def unfold(self, dimension: int, size: int, step: int) -> Any:
        d = _dims.dim(dimension, self.ndim)
        if size > self._aval.shape[d] or step <= 0:
            raise RuntimeError(
                f"unfold: size ({size}) must be <= dimension size ({self._aval.shape[d]}) and "
                f"step ({step}) > 0"
            )
        static = (d, size, step)
        return self._make_view(apply(_unfold, static, (self,)), _unfold, static)

    def ravel(self) -> Any:
        """The elements as a 1-D tensor (a view when possible, as torch)."""
        return self.reshape(-1)

    def broadcast_to(self, size: Any) -> Any:
        """``expand`` to ``size`` (mirrors ``torch.broadcast_to``)."""
        return self.expand(*_dims.shape_args((size,), "broadcast_to"))

    def split_with_sizes(self, split_sizes: Sequence[int], dim: int = 0) -> tuple:
        return self.split(list(split_sizes), dim)

    # torch's unsafe_* variants skip autograd's view checks; spx's views need none.
    def unsafe_chunk(self, chunks: int, dim: int = 0) -> tuple:
        return self.chunk(chunks, dim)

    def unsafe_split(self, split_size: Any, dim: int = 0) -> tuple:
        return self.split(split_size, dim)

    def unsafe_split_with_sizes(self, split_sizes: Sequence[int], dim: int = 0) -> tuple:
        return self.split(list(split_sizes), dim)

    def _split_like_numpy(self, what: str, sections: Any, d: int) -> tuple:
        if isinstance(sections, int):
            n = self._aval.shape[d]
            if sections <= 0 or n % sections:
                raise RuntimeError(
                    f"torch.{what} attempted to split along dimension {d}, but the size of the "
                    f"dimension {n} is not divisible by the split_size {sections}!"
                )
        return self.tensor_split(sections, d)

    def hsplit(self, sections: Any) -> tuple:
        """Split columns: along dim 1 (dim 0 for a 1-D tensor); mirrors ``torch.hsplit``."""
        return self._split_like_numpy("hsplit", sections, 1 if self.ndim > 1 else 0)

    def vsplit(self, sections: Any) -> tuple:
        """Split rows: along dim 0 of a tensor with at least 2 dimensions."""
        if self.ndim < 2:
            raise RuntimeError(
                f"torch.vsplit requires a tensor with at least 2 dimension, but got a tensor "
                f"with {self.ndim} dimensions!"
            )
        return self._split_like_numpy("vsplit", sections, 0)

    def dsplit(self, sections: Any) -> tuple:
        """Split along dim 2 of a tensor with at least 3 dimensions."""
        if self.ndim < 3:
            raise RuntimeError(
                f"torch.dsplit requires a tensor with at least 3 dimension, but got a tensor "
                f"with {self.ndim} dimensions!"
            )
        return self._split_like_numpy("dsplit", sections, 2)

    def is_same_size(self, other: Any) -> bool:
        return tuple(self.shape) == tuple(other.shape)
