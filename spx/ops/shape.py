"""torch's joining, splitting and shape functions (``spx.cat``, ``spx.stack``, ``spx.split``,
``spx.meshgrid``, ``spx.tril``, ...).

Functions that mirror a Tensor method (``spx.transpose(x, 0, 1)`` is ``x.transpose(0, 1)``)
return the same views: writing into a piece of ``spx.split(x, 2)`` writes into ``x``, as in
torch. ``cat``/``stack`` copy, promoting mixed dtypes as torch does (int + float -> float).

Example:
    >>> import spx
    >>> a, b = spx.ones(2, 3), spx.zeros(2, 3)
    >>> spx.cat([a, b], dim=1).shape
    spx.Size([2, 6])
    >>> spx.stack([a, b]).shape
    spx.Size([2, 2, 3])
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx import _user_code
from spx._tensor import _dims, numpy_names
from spx._tensor._dims import Size
from spx._tensor.dispatch import apply
from spx._tensor.tensor import Tensor
from spx.ops._args import tensor_arg, tensor_list

__all__ = [
    "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes", "broadcast_tensors",
    "broadcast_to", "cartesian_prod", "cat", "chunk", "clone", "column_stack", "combinations",
    "concat", "concatenate", "diag", "diag_embed", "diagflat", "diagonal", "diagonal_scatter",
    "dsplit", "dstack", "flatten", "flip", "fliplr", "flipud", "hsplit", "hstack", "meshgrid",
    "moveaxis", "movedim", "narrow", "narrow_copy", "numel", "permute", "ravel",
    "repeat_interleave", "reshape", "roll", "rot90", "row_stack", "select", "select_scatter",
    "slice_scatter", "split", "squeeze", "stack", "swapaxes", "swapdims", "t", "tensor_split",
    "tile", "trace", "transpose", "tril", "triu", "unbind", "unflatten", "unsafe_chunk",
    "unsafe_split", "unsqueeze", "vsplit", "vstack",
]  # fmt: skip


def _concatenate(*args: Any) -> Any:
    """torch's cat: 1-D empty tensors skipped; shapes checked here, while shapes are inferred
    (once per signature), so a well-shaped call pays nothing for the checks."""
    *xs, dim = args
    kept = [x for x in xs if x.shape != (0,)] or xs[:1]
    first = kept[0].shape
    for i, x in enumerate(kept):
        if not x.shape:
            raise RuntimeError(
                f"zero-dimensional tensor (at position {i}) cannot be concatenated; make it "
                "1-D first: t.reshape(1) or t.unsqueeze(0)"
            )
        if x.ndim != len(first):
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {len(first)} and {x.ndim}"
            )
    d = _dims.dim(dim, len(first))
    for i, x in enumerate(kept):
        for k, (a, b) in enumerate(zip(first, x.shape, strict=True)):
            if k != d and a != b:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size {a} "
                    f"but got size {b} for tensor number {i} in the list."
                )
    return jnp.concatenate(kept, axis=d)


def _stack(*args: Any) -> Any:
    *xs, dim = args
    first = xs[0].shape
    for i, x in enumerate(xs):
        if x.shape != first:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(first)} at entry 0 "
                f"and {list(x.shape)} at entry {i}"
            )
    return jnp.stack(xs, axis=_dims.dim(dim, len(first) + 1))


def cat(tensors: Sequence[Any], dim: int = 0) -> Tensor:
    """Join tensors along an existing dimension ``dim`` (mirrors ``torch.cat``).

    All tensors need the same number of dimensions and equal sizes except in ``dim``; 1-D
    empty tensors are skipped, as torch does.

    Args:
        tensors: a list or tuple of tensors (arrays, numpy arrays).
        dim: the dimension to join along.

    Example:
        >>> import spx
        >>> spx.cat([spx.zeros(1, 2), spx.ones(2, 2)]).shape
        spx.Size([3, 2])
    """
    return _cat(tensors, dim, "cat")


concat = cat
concatenate = cat


def _cat(tensors: Any, dim: int, fn: str) -> Tensor:
    ts = tensor_list(tensors, fn)
    if not ts:
        raise RuntimeError(f"torch.{fn}(): expected a non-empty list of Tensors")
    return apply(_concatenate, (int(dim),), tuple(ts))


def stack(tensors: Sequence[Any], dim: int = 0) -> Tensor:
    """Join tensors of equal shape along a new dimension ``dim`` (mirrors ``torch.stack``).

    Example:
        >>> import spx
        >>> spx.stack([spx.ones(3), spx.zeros(3)], dim=1).shape
        spx.Size([3, 2])
    """
    ts = tensor_list(tensors, "stack")
    if not ts:
        raise RuntimeError("stack expects a non-empty TensorList")
    return apply(_stack, (int(dim),), tuple(ts))


def hstack(tensors: Sequence[Any]) -> Tensor:
    """Join along dim 1 (dim 0 for 1-D tensors); mirrors ``torch.hstack``."""
    ts = atleast_1d(tensor_list(tensors, "hstack"))
    return _cat(ts, 0 if ts[0].ndim == 1 else 1, "hstack")


def row_stack(tensors: Sequence[Any]) -> Tensor:
    """:func:`vstack` under its other name (mirrors ``torch.row_stack``)."""
    return vstack(tensors)


def vstack(tensors: Sequence[Any]) -> Tensor:
    """Join along dim 0, 1-D tensors as rows (mirrors ``torch.vstack``)."""
    return _cat(atleast_2d(tensor_list(tensors, "vstack")), 0, "vstack")


def dstack(tensors: Sequence[Any]) -> Tensor:
    """Join along dim 2, after making each tensor at least 3-D (mirrors ``torch.dstack``)."""
    return _cat(atleast_3d(tensor_list(tensors, "dstack")), 2, "dstack")


def column_stack(tensors: Sequence[Any]) -> Tensor:
    """Join along dim 1, 0-D and 1-D tensors as columns (mirrors ``torch.column_stack``)."""
    ts = tensor_list(tensors, "column_stack")
    return _cat([t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in ts], 1, "column_stack")


def _atleast(tensors: tuple, n: int, fn: str) -> Any:
    many = len(tensors) != 1 or isinstance(tensors[0], list | tuple)
    items = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], list | tuple) else tensors
    out = []
    for i, x in enumerate(items):
        t = tensor_arg(x, fn, f"tensors[{i}]")
        shape = t._aval.shape
        if len(shape) < n:
            if n == 3 and len(shape) == 2:
                t = t.unsqueeze(-1)
            elif n == 3 and len(shape) == 1:
                t = t.reshape(1, shape[0], 1)
            else:
                t = t.reshape(*([1] * (n - len(shape))), *shape)
        out.append(t)
    return tuple(out) if many else out[0]


def atleast_1d(*tensors: Any) -> Any:
    """Each tensor with at least 1 dimension (one tensor, or a tuple for several or a list)."""
    return _atleast(tensors, 1, "atleast_1d")


def atleast_2d(*tensors: Any) -> Any:
    """Each tensor with at least 2 dimensions (new dimensions in front, as torch)."""
    return _atleast(tensors, 2, "atleast_2d")


def atleast_3d(*tensors: Any) -> Any:
    """Each tensor with at least 3 dimensions (``(n,)`` -> ``(1, n, 1)``, as torch)."""
    return _atleast(tensors, 3, "atleast_3d")


def broadcast_shapes(*shapes: Any) -> Size:
    """The shape tensors of these shapes broadcast to (mirrors ``torch.broadcast_shapes``)."""
    norm = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    try:
        return Size(np.broadcast_shapes(*norm))
    except ValueError:
        raise RuntimeError(
            f"Shape mismatch: objects cannot be broadcast to a single shape: {norm}"
        ) from None


def broadcast_tensors(*tensors: Any) -> tuple[Tensor, ...]:
    """Views of the tensors expanded to their common shape (mirrors torch)."""
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    ts = [tensor_arg(t, "broadcast_tensors", f"tensors[{i}]") for i, t in enumerate(tensors)]
    shape = broadcast_shapes(*[t._aval.shape for t in ts])
    return tuple(t if t._aval.shape == shape else t.expand(*shape) for t in ts)


def broadcast_to(input: Any, size: Any) -> Tensor:
    """``input`` expanded to ``size`` (a view; mirrors ``torch.broadcast_to``)."""
    return tensor_arg(input, "broadcast_to").broadcast_to(size)


def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors (mirrors ``torch.meshgrid``).

    Args:
        tensors: 0-D or 1-D tensors (or one list of them).
        indexing: ``"ij"`` (matrix, torch's default) or ``"xy"`` (Cartesian: the first two
            output dimensions swapped).

    Example:
        >>> import spx
        >>> gx, gy = spx.meshgrid(spx.arange(3), spx.arange(2), indexing="ij")
        >>> gx.shape
        spx.Size([3, 2])
    """
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    if indexing is None:
        _user_code.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
            "argument.",
            UserWarning,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(
            f"torch.meshgrid: indexing must be one of 'xy' or 'ij', but received: {indexing}"
        )
    ts = [tensor_arg(t, "meshgrid", f"tensors[{i}]") for i, t in enumerate(tensors)]
    for t in ts:
        if t.ndim > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.ndim}D"
            )
    sizes = [t.numel() for t in ts]
    where = list(range(len(ts)))
    if indexing == "xy" and len(ts) >= 2:
        where[0], where[1] = 1, 0
    shape = [0] * len(ts)
    for i, p in enumerate(where):
        shape[p] = sizes[i]
    out = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[where[i]] = sizes[i]
        out.append(t.reshape(*view).expand(*shape))
    return tuple(out)


# -- functions that are one Tensor method ------------------------------------------------------


def chunk(input: Any, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """At most ``chunks`` views of equal size ``ceil(n / chunks)`` along ``dim``."""
    return tensor_arg(input, "chunk").chunk(chunks, dim)


def split(tensor: Any, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Views of size ``split_size`` along ``dim`` (the last may be smaller), or of the given
    sizes (mirrors ``torch.split``)."""
    return tensor_arg(tensor, "split", "tensor").split(split_size_or_sections, dim)


def tensor_split(input: Any, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """``n`` nearly equal views, or views split at the given indices (numpy's array_split)."""
    return tensor_arg(input, "tensor_split").tensor_split(indices_or_sections, dim)


def hsplit(input: Any, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split along dim 1, or dim 0 of a 1-D tensor (numpys ``hsplit``; views)."""
    return tensor_arg(input, "hsplit").hsplit(indices_or_sections)


def vsplit(input: Any, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split along dim 0 (numpys ``vsplit``; views)."""
    return tensor_arg(input, "vsplit").vsplit(indices_or_sections)


def dsplit(input: Any, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split along dim 2 (numpys ``dsplit``; views)."""
    return tensor_arg(input, "dsplit").dsplit(indices_or_sections)


def unbind(input: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim``, as views (mirrors ``torch.unbind``)."""
    return tensor_arg(input, "unbind").unbind(dim)


def reshape(input: Any, shape: Sequence[int]) -> Tensor:
    """``input`` with another shape (``-1`` inferred; mirrors ``torch.reshape``)."""
    return tensor_arg(input, "reshape").reshape(*_dims.shape_args((shape,), "reshape"))


def flatten(input: Any, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dimensions ``start_dim..end_dim`` into one (mirrors ``torch.flatten``)."""
    return tensor_arg(input, "flatten").flatten(start_dim, end_dim)


def unflatten(input: Any, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split dimension ``dim`` into ``sizes`` (mirrors ``torch.unflatten``)."""
    return tensor_arg(input, "unflatten").unflatten(dim, sizes)


def ravel(input: Any) -> Tensor:
    """The elements as a 1-D tensor (a view when possible)."""
    return tensor_arg(input, "ravel").ravel()


def squeeze(input: Any, dim: Any = None) -> Tensor:
    """Remove size-1 dimensions (those in ``dim`` only; others are left as they are)."""
    return tensor_arg(input, "squeeze").squeeze(dim)


def unsqueeze(input: Any, dim: int) -> Tensor:
    """A new size-1 dimension at ``dim`` (``-1`` appends; mirrors ``torch.unsqueeze``)."""
    return tensor_arg(input, "unsqueeze").unsqueeze(dim)


def transpose(input: Any, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions (a view; mirrors ``torch.transpose``)."""
    return tensor_arg(input, "transpose").transpose(dim0, dim1)


swapaxes = transpose
swapdims = transpose


def t(input: Any) -> Tensor:
    """Transpose a tensor of at most 2 dimensions (mirrors ``torch.t``)."""
    return tensor_arg(input, "t").t()


def permute(input: Any, dims: Sequence[int]) -> Tensor:
    """Reorder the dimensions (a view; mirrors ``torch.permute``)."""
    return tensor_arg(input, "permute").permute(*dims)


def movedim(input: Any, source: Any, destination: Any) -> Tensor:
    """Move dimensions ``source`` to positions ``destination`` (mirrors ``torch.movedim``)."""
    return tensor_arg(input, "movedim").movedim(source, destination)


moveaxis = movedim


def narrow(input: Any, dim: int, start: Any, length: int) -> Tensor:
    """The view ``input[..., start:start + length, ...]`` along ``dim``."""
    return tensor_arg(input, "narrow").narrow(dim, start, length)


def select(input: Any, dim: int, index: int) -> Tensor:
    """The view at ``index`` along ``dim``, which is removed (mirrors ``torch.select``)."""
    return tensor_arg(input, "select").select(dim, index)


def flip(input: Any, dims: Sequence[int]) -> Tensor:
    """Reverse the order along ``dims`` (a copy, as torch's)."""
    return tensor_arg(input, "flip").flip(dims)


def fliplr(input: Any) -> Tensor:
    """Reverse the order along dim 1 (a copy)."""
    return tensor_arg(input, "fliplr").fliplr()


def flipud(input: Any) -> Tensor:
    """Reverse the order along dim 0 (a copy)."""
    return tensor_arg(input, "flipud").flipud()


def roll(input: Any, shifts: Any, dims: Any = None) -> Tensor:
    """Shift elements cyclically along ``dims`` (of the flattened tensor without)."""
    return tensor_arg(input, "roll").roll(shifts, dims)


def rot90(input: Any, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (mirrors ``torch.rot90``)."""
    return tensor_arg(input, "rot90").rot90(k, dims)


def tile(input: Any, dims: Sequence[int]) -> Tensor:
    """Repeat ``input`` ``dims`` times along each dimension (numpy's ``tile``)."""
    return tensor_arg(input, "tile").tile(*dims)


def repeat_interleave(
    input: Any, repeats: Any = None, dim: int | None = None, *, output_size: int | None = None
) -> Tensor:
    """Repeat each element ``repeats`` times (numpy's ``repeat``). With only a 1-D integer
    tensor of counts, the indices repeated by those counts (as torch).

    Example:
        >>> import spx
        >>> spx.repeat_interleave(spx.tensor([1, 2]), 2).tolist()
        [1, 1, 2, 2]
        >>> spx.repeat_interleave(spx.tensor([1, 2])).tolist()
        [0, 1, 1]
    """
    x = tensor_arg(input, "repeat_interleave")
    if repeats is None:
        counts = x
        if counts.ndim != 1 or not jnp.issubdtype(counts.dtype, jnp.integer):
            raise RuntimeError("repeat_interleave: repeats must be a 1-D integer tensor")
        x = apply(_arange_like, (counts.numel(), counts.dtype), ())
        return x.repeat_interleave(counts, 0, output_size=output_size)
    return x.repeat_interleave(repeats, dim, output_size=output_size)


def _arange_like(n: int, dtype: Any) -> Any:
    return jnp.arange(n, dtype=dtype)


def tril(input: Any, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dimensions (mirrors ``torch.tril``).

    Example:
        >>> import spx
        >>> spx.tril(spx.ones(2, 2)).tolist()
        [[1.0, 0.0], [1.0, 1.0]]
    """
    return tensor_arg(input, "tril").tril(diagonal)


def triu(input: Any, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dimensions (mirrors ``torch.triu``)."""
    return tensor_arg(input, "triu").triu(diagonal)


def diag(input: Any, diagonal: int = 0) -> Tensor:
    """A 1-D tensor as a diagonal matrix, or a matrix's diagonal (mirrors ``torch.diag``)."""
    return tensor_arg(input, "diag").diag(diagonal)


def diag_embed(input: Any, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices with the last dimension of ``input`` on their ``offset`` diagonal."""
    return tensor_arg(input, "diag_embed").diag_embed(offset, dim1, dim2)


def diagonal(input: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of ``dim1, dim2`` as a view (its dimension goes last; mirrors torch)."""
    return tensor_arg(input, "diagonal").diagonal(offset, dim1, dim2)


def trace(input: Any) -> Tensor:
    """Sum of a matrix's main diagonal (mirrors ``torch.trace``)."""
    return tensor_arg(input, "trace").trace()


def numel(input: Any) -> int:
    """Number of elements (mirrors ``torch.numel``)."""
    return tensor_arg(input, "numel").numel()


def clone(input: Any, *, memory_format: Any = None) -> Tensor:
    """A copy with its own storage; gradients flow back to ``input`` (mirrors torch)."""
    return tensor_arg(input, "clone").clone()


unsafe_chunk = chunk
unsafe_split = split


def diagflat(input: Any, offset: int = 0) -> Tensor:
    """The flattened ``input`` as the ``offset`` diagonal of a matrix."""
    return tensor_arg(input, "diagflat").diagflat(offset)


def narrow_copy(input: Any, dim: int, start: Any, length: int) -> Tensor:
    """A copy of ``input.narrow(dim, start, length)``."""
    return tensor_arg(input, "narrow_copy").narrow_copy(dim, start, length)


def select_scatter(input: Any, src: Any, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``src`` at ``index`` along ``dim`` (differentiable in both)."""
    x = tensor_arg(input, "select_scatter")
    return x.select_scatter(tensor_arg(src, "select_scatter", "src"), dim, index)


def slice_scatter(
    input: Any, src: Any, dim: int = 0, start: int | None = None, end: int | None = None, step=1
) -> Tensor:
    """A copy of ``input`` with ``src`` in ``[start:end:step]`` along ``dim``."""
    x = tensor_arg(input, "slice_scatter")
    return x.slice_scatter(tensor_arg(src, "slice_scatter", "src"), dim, start, end, step)


def diagonal_scatter(input: Any, src: Any, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """A copy of ``input`` with ``src`` on the given diagonal."""
    x = tensor_arg(input, "diagonal_scatter")
    return x.diagonal_scatter(tensor_arg(src, "diagonal_scatter", "src"), offset, dim1, dim2)


def cartesian_prod(*tensors: Any) -> Tensor:
    """All combinations of one element of each 1-D tensor, as rows (itertools.product).

    Example:
        >>> import spx
        >>> spx.cartesian_prod(spx.tensor([1, 2]), spx.tensor([3, 4])).tolist()
        [[1, 3], [1, 4], [2, 3], [2, 4]]
    """
    ts = [tensor_arg(t, "cartesian_prod", f"tensors[{i}]") for i, t in enumerate(tensors)]
    for t in ts:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    return stack([g.reshape(-1) for g in grids], dim=1)


def _rows(x: Any, idx: tuple) -> Any:
    return x[np.asarray(idx, dtype=np.int32).reshape(-1, len(idx[0]) if idx else 0)]


def combinations(input: Any, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of a 1-D tensor's elements, as rows (itertools order).

    Example:
        >>> import spx
        >>> spx.combinations(spx.tensor([1, 2, 3])).tolist()
        [[1, 2], [1, 3], [2, 3]]
    """
    x = tensor_arg(input, "combinations")
    if x.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(x.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = tuple(pick(range(x.shape[0]), r))
    if not idx or r == 0:
        # torch's shapes: (0,) for r = 0, else no rows of r elements, (0, r).
        return apply(_empty_like_rows, (x.dtype, () if r == 0 else (r,)), ())
    return apply(_rows, (idx,), (x,))


def _empty_like_rows(dtype: Any, row: tuple) -> Any:
    return jnp.zeros((0, *row), dtype)


def _block_diag(*args: Any) -> Any:
    *blocks, _ = args
    return jax.scipy.linalg.block_diag(*blocks)


def block_diag(*tensors: Any) -> Tensor:
    """A block-diagonal matrix of the (at most 2-D) tensors (mirrors ``torch.block_diag``)."""
    ts = []
    for i, t in enumerate(tensors):
        x = tensor_arg(t, "block_diag", f"tensors[{i}]")
        if x.ndim > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} "
                f"has {x.ndim} dimensions"
            )
        ts.append(x.reshape(1, -1) if x.ndim < 2 else x)
    if not ts:
        return apply(_empty_matrix, (), ())
    return apply(_block_diag, (len(ts),), tuple(ts))


def _empty_matrix() -> Any:
    return jnp.zeros((1, 0), jnp.float32)


# numpy's axis=/keepdims= as torch accepts them (torch.sum(x, axis=0)).
numpy_names.accept(globals(), __all__)
