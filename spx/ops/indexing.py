"""torch's indexing functions (``spx.where``, ``spx.gather``, ``spx.scatter``,
``spx.index_select``, ``spx.masked_fill``, ``spx.nonzero``, ``spx.searchsorted``, ...).

Example:
    >>> import spx
    >>> x = spx.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> spx.gather(x, 1, spx.tensor([[1], [0]])).tolist()
    [[2.0], [3.0]]
    >>> spx.where(x > 2, x, 0.0).tolist()
    [[0.0, 0.0], [3.0, 4.0]]
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from spx._tensor import numpy_names
from spx._tensor.dispatch import apply
from spx._tensor.methods import math as _m
from spx._tensor.tensor import Tensor
from spx.ops._args import is_number, operand, tensor_arg

__all__ = [
    "argwhere", "bucketize", "gather", "index_add", "index_copy", "index_fill", "index_put",
    "index_reduce", "index_select", "masked_fill", "masked_scatter", "masked_select", "nonzero",
    "put", "scatter", "scatter_add", "scatter_reduce", "searchsorted", "take", "take_along_dim",
    "where",
]  # fmt: skip


def where(condition: Any, input: Any = None, other: Any = None) -> Any:
    """``input`` where ``condition`` is True, else ``other`` (broadcast; mirrors
    ``torch.where``). With only ``condition``: ``nonzero(condition, as_tuple=True)``.

    ``input`` and ``other`` may be Python numbers; a number next to a tensor keeps the
    tensor's dtype, as in torch.

    Example:
        >>> import spx
        >>> spx.where(spx.tensor([True, False]), 1.0, spx.tensor([5.0, 6.0])).tolist()
        [1.0, 6.0]
    """
    cond = tensor_arg(condition, "where", "condition")
    if input is None and other is None:
        return cond.nonzero(as_tuple=True)
    if input is None or other is None:
        raise TypeError("spx.where(condition, input, other): give both input and other, or neither")
    if is_number(input) and is_number(other):
        input = tensor_arg(input, "where")  # two numbers: a tensor of the default dtype
    if isinstance(input, Tensor):
        return input.where(cond, operand(other, "where"))
    if is_number(input):  # a number next to a tensor: it keeps the tensor's dtype
        return _where_number(cond, input, operand(other, "where"))
    return tensor_arg(input, "where").where(cond, operand(other, "where"))


def _where_number(cond: Tensor, x: Any, other: Any) -> Tensor:
    return apply(_m._where, (), (cond, x, other))


def gather(input: Any, dim: int, index: Any, *, sparse_grad: bool = False) -> Tensor:
    """Values of ``input`` at ``index`` along ``dim`` (mirrors ``torch.gather``).

    ``out[i][j] = input[index[i][j]][j]`` for ``dim=0``; ``index`` has ``input``'s rank.
    """
    return tensor_arg(input, "gather").gather(dim, tensor_arg(index, "gather", "index"))


def scatter(input: Any, dim: int, index: Any, src: Any = None, *, value=None, reduce=None):
    """A copy of ``input`` with ``src`` (or the number ``value``) written at ``index`` along
    ``dim`` (mirrors ``torch.scatter``; ``reduce`` "add"/"multiply" combines instead)."""
    x = tensor_arg(input, "scatter")
    idx = tensor_arg(index, "scatter", "index")
    if src is not None and not is_number(src):
        src = tensor_arg(src, "scatter", "src")
    return x.scatter(dim, idx, src, value=value, reduce=reduce)


def scatter_add(input: Any, dim: int, index: Any, src: Any) -> Tensor:
    """``scatter`` that adds into ``input`` (repeated indices accumulate)."""
    x = tensor_arg(input, "scatter_add")
    return x.scatter_add(
        dim, tensor_arg(index, "scatter_add", "index"), operand(src, "scatter_add")
    )


def scatter_reduce(
    input: Any, dim: int, index: Any, src: Any, reduce: str, *, include_self: bool = True
) -> Tensor:
    """``scatter`` combining with ``reduce``: "sum", "prod", "mean", "amax" or "amin"."""
    x = tensor_arg(input, "scatter_reduce")
    idx = tensor_arg(index, "scatter_reduce", "index")
    return x.scatter_reduce(dim, idx, tensor_arg(src, "scatter_reduce", "src"), reduce,
                            include_self=include_self)  # fmt: skip


def index_select(input: Any, dim: int, index: Any) -> Tensor:
    """The slices of ``input`` at the 1-D ``index`` along ``dim`` (a copy)."""
    x = tensor_arg(input, "index_select")
    return x.index_select(dim, tensor_arg(index, "index_select", "index"))


def index_add(input: Any, dim: int, index: Any, source: Any, *, alpha: Any = 1) -> Tensor:
    """A copy of ``input`` with ``alpha * source`` added at ``index`` along ``dim``."""
    x = tensor_arg(input, "index_add")
    idx = tensor_arg(index, "index_add", "index")
    return x.index_add(dim, idx, tensor_arg(source, "index_add", "source"), alpha=alpha)


def index_reduce(
    input: Any, dim: int, index: Any, source: Any, reduce: str, *, include_self: bool = True
) -> Tensor:
    """A copy of ``input`` with the slices of ``source`` combined into the slices ``index``
    along ``dim`` by ``reduce`` ("prod", "mean", "amax" or "amin")."""
    x = tensor_arg(input, "index_reduce")
    idx = tensor_arg(index, "index_reduce", "index")
    return x.index_reduce(dim, idx, tensor_arg(source, "index_reduce", "source"), reduce,
                          include_self=include_self)  # fmt: skip


def index_copy(input: Any, dim: int, index: Any, source: Any) -> Tensor:
    """A copy of ``input`` with the slices of ``source`` put at ``index`` along ``dim``."""
    x = tensor_arg(input, "index_copy")
    idx = tensor_arg(index, "index_copy", "index")
    return x.index_copy(dim, idx, tensor_arg(source, "index_copy", "source"))


def index_fill(input: Any, dim: int, index: Any, value: Any) -> Tensor:
    """A copy of ``input`` with the slices at ``index`` along ``dim`` set to ``value``."""
    x = tensor_arg(input, "index_fill")
    return x.index_fill(dim, tensor_arg(index, "index_fill", "index"), value)


def masked_fill(input: Any, mask: Any, value: Any) -> Tensor:
    """``value`` where the bool ``mask`` (broadcast) is True, else ``input``.

    Example:
        >>> import spx
        >>> x = spx.zeros(2, 2)
        >>> spx.masked_fill(x, spx.tensor([[True, False], [False, True]]), -1.0).tolist()
        [[-1.0, 0.0], [0.0, -1.0]]
    """
    x = tensor_arg(input, "masked_fill")
    return x.masked_fill(tensor_arg(mask, "masked_fill", "mask"), operand(value, "masked_fill"))


def masked_select(input: Any, mask: Any) -> Tensor:
    """The elements where ``mask`` is True, as a 1-D tensor (needs the mask's value now)."""
    x = tensor_arg(input, "masked_select")
    return x.masked_select(tensor_arg(mask, "masked_select", "mask"))


def take(input: Any, index: Any) -> Tensor:
    """Elements of the flattened ``input`` at ``index`` (shaped like ``index``)."""
    return tensor_arg(input, "take").take(tensor_arg(index, "take", "index"))


def take_along_dim(input: Any, indices: Any, dim: int | None = None) -> Tensor:
    """Values of ``input`` at ``indices`` along ``dim`` (of the flattened input without)."""
    x = tensor_arg(input, "take_along_dim")
    return x.take_along_dim(tensor_arg(indices, "take_along_dim", "indices"), dim)


def nonzero(input: Any, *, as_tuple: bool = False) -> Any:
    """Indices of the nonzero elements: ``(n, ndim)``, or a tuple of 1-D index tensors.

    Computed now (the number of nonzeros decides the shape): a synchronization.
    """
    return tensor_arg(input, "nonzero").nonzero(as_tuple=as_tuple)


def argwhere(input: Any) -> Tensor:
    """Indices of the nonzero elements, ``(n, ndim)`` (computed now; mirrors ``torch.argwhere``)."""
    return tensor_arg(input, "argwhere").argwhere()


def _searchsorted(seq: Any, values: Any, side: str, sorter: Any, dtype: Any) -> Any:
    """torch's binary search over the last dimension, step for step.

    torch moves right while ``!(mid >= value)`` (``!(mid > value)`` for the right side); with
    NaN in the sequence (where a sort puts it: last) that differs from a search by sort order
    (``jnp.searchsorted``: NaN largest), so a value past the finite entries, or a NaN value,
    lands after the NaNs as in torch. One gather per halving, ``ceil(log2(n + 1))`` of them.
    """
    if sorter is not None:
        seq = jnp.take_along_axis(seq, sorter, axis=-1)
    n = seq.shape[-1]
    lo = jnp.zeros(values.shape, jnp.int32)
    if n == 0:
        return lo.astype(dtype)
    hi = jnp.full(values.shape, n, jnp.int32)
    for _ in range(n.bit_length()):
        mid = lo + ((hi - lo) >> 1)
        at = jnp.minimum(mid, n - 1)
        pivot = seq[at] if seq.ndim == 1 else jnp.take_along_axis(seq, at, axis=-1)
        right = ~(pivot > values) if side == "right" else ~(pivot >= values)
        active = lo < hi
        lo = jnp.where(active & right, mid + 1, lo)
        hi = jnp.where(active & ~right, mid, hi)
    return lo.astype(dtype)


def _no_sorter(seq: Any, values: Any, side: str, dtype: Any) -> Any:
    return _searchsorted(seq, values, side, None, dtype)


def searchsorted(
    sorted_sequence: Any,
    values: Any,
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter: Any = None,
) -> Tensor:
    """Where ``values`` would be inserted in ``sorted_sequence`` (along its last dimension)
    to keep it sorted (mirrors ``torch.searchsorted``).

    Args:
        sorted_sequence: 1-D, or N-D with ``values`` sharing its leading dimensions.
        values: a tensor or a number.
        right: return the last such index (``side="right"``) instead of the first.

    Example:
        >>> import spx
        >>> spx.searchsorted(spx.tensor([1, 3, 5]), spx.tensor([3, 6])).tolist()
        [1, 3]
    """
    seq = tensor_arg(sorted_sequence, "searchsorted", "sorted_sequence")
    if side is not None and side not in ("left", "right"):
        raise RuntimeError(
            f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}"
        )
    if side == "left" and right:
        raise RuntimeError(
            "torch.searchsorted(): side and right can't be set to opposites, got side of left "
            "while right was True"
        )
    how = side or ("right" if right else "left")
    val = tensor_arg(values, "searchsorted", "values")
    if seq.ndim > 1 and (val.ndim != seq.ndim or val.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(seq.shape)} and input value tensor {list(val.shape)}"
        )
    dtype = jnp.dtype(jnp.int32)  # int64 (torch's default) needs jax_enable_x64
    if sorter is None:
        return apply(_no_sorter, (how, dtype), (seq, val))
    srt = tensor_arg(sorter, "searchsorted", "sorter")
    return apply(_with_sorter, (how, dtype), (seq, val, srt))


def _with_sorter(seq: Any, values: Any, sorter: Any, side: str, dtype: Any) -> Any:
    return _searchsorted(seq, values, side, sorter, dtype)


def bucketize(input: Any, boundaries: Any, *, out_int32: bool = False, right: bool = False):
    """The bucket of each element of ``input`` among the 1-D sorted ``boundaries``:
    ``boundaries[i-1] < x <= boundaries[i]`` (``<= x <`` with ``right=True``).

    Example:
        >>> import spx
        >>> spx.bucketize(spx.tensor([1, 4, 9]), spx.tensor([1, 5, 9])).tolist()
        [0, 1, 2]
    """
    b = tensor_arg(boundaries, "bucketize", "boundaries")
    if b.ndim != 1:
        raise RuntimeError(
            f"boundaries tensor must be 1 dimension, but got dim({b.ndim}); flatten it or use "
            "spx.searchsorted for N-D boundaries"
        )
    x = tensor_arg(input, "bucketize")
    return apply(_no_sorter, ("right" if right else "left", jnp.dtype(jnp.int32)), (b, x))


def index_put(input: Any, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """A copy with ``values`` at ``input[indices]`` (``indices`` a tuple of index tensors;
    added there, repeated positions summed, with ``accumulate``)."""
    ts = tuple(tensor_arg(i, "index_put", "indices") for i in indices)
    return tensor_arg(input, "index_put").index_put(ts, operand(values, "index_put"), accumulate)


def masked_scatter(input: Any, mask: Any, source: Any) -> Tensor:
    """A copy where the True positions of ``mask`` take ``source``'s elements in order."""
    x = tensor_arg(input, "masked_scatter")
    m = tensor_arg(mask, "masked_scatter", "mask")
    return x.masked_scatter(m, tensor_arg(source, "masked_scatter", "source"))


def put(input: Any, index: Any, source: Any, accumulate: bool = False) -> Tensor:
    """A copy with ``source`` written (or added) at the flat positions ``index``."""
    x = tensor_arg(input, "put")
    idx = tensor_arg(index, "put", "index")
    return x.put(idx, tensor_arg(source, "put", "source"), accumulate)


# numpy's axis=/keepdims= as torch accepts them (torch.sum(x, axis=0)).
numpy_names.accept(globals(), __all__)
