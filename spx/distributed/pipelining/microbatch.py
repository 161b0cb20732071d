"""Splitting a batch into microbatches and merging outputs (mirrors torch's ``microbatch``).

Arrays split on dim 0 by default (``TensorChunkSpec(dim)`` to choose another); everything that
is not an array is replicated to every microbatch. Unlike torch, which accepts uneven chunks and
fails later inside a stage, spx requires the split dimension to divide evenly and says so up
front: every microbatch then has one shape, so each stage compiles once.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx._tensor.tensor import Tensor
from spx._validate import as_int


@dataclass(frozen=True)
class TensorChunkSpec:
    """Split an array argument along ``split_dim`` (mirrors torch's ``TensorChunkSpec``).

    Example:
        >>> TensorChunkSpec(1).split_dim
        1
    """

    split_dim: int

    def __repr__(self) -> str:
        return f"TensorChunkSpec({self.split_dim})"

    @staticmethod
    def from_tuple(chunk_dims: tuple[int, ...]) -> tuple[TensorChunkSpec, ...]:
        return tuple(TensorChunkSpec(d) for d in chunk_dims)

    @staticmethod
    def from_dict(chunk_dims: dict[str, int]) -> dict[str, TensorChunkSpec]:
        return {k: TensorChunkSpec(v) for k, v in chunk_dims.items()}


@functools.cache
def _splitter(n: int, dim: int):
    # One dispatch per array and step, instead of eager jnp.split's one per chunk.
    return jax.jit(lambda a: jnp.split(a, n, axis=dim))


class _Replicate:
    """Marker: pass the value to every microbatch unchanged."""


def _is_array(x: Any) -> bool:
    return isinstance(x, jax.Array | np.ndarray | Tensor)


def _split_value(value: Any, spec: Any, n: int, where: str) -> list[Any]:
    if spec is _Replicate or not _is_array(value):
        return [value] * n
    if isinstance(value, Tensor):  # chunks of a Tensor are Tensors
        return [Tensor._of(c) for c in _split_value(value._data, spec, n, where)]
    dim = spec.split_dim if isinstance(spec, TensorChunkSpec) else 0
    if value.ndim == 0:
        raise ValueError(f"{where}: cannot split a scalar array into {n} microbatches")
    size = value.shape[dim]
    if size % n:
        raise ValueError(
            f"{where}: dimension {dim} has size {size}, which does not divide into "
            f"n_microbatches={n} equal microbatches. Use a batch size that is a multiple of "
            f"{n} (e.g. {size - size % n or n}) or change n_microbatches."
        )
    return list(_splitter(n, dim % value.ndim)(value))


def split_args_kwargs_into_chunks(
    args: tuple[Any, ...],
    kwargs: dict[str, Any] | None,
    chunks: int,
    args_chunk_spec: tuple[Any, ...] | None = None,
    kwargs_chunk_spec: dict[str, Any] | None = None,
) -> tuple[list[tuple[Any, ...]], list[dict[str, Any]]]:
    """Split ``args``/``kwargs`` into ``chunks`` microbatches (torch's function of that name).

    Args:
        args: positional inputs; arrays (and arrays inside pytrees) split, others replicate.
        kwargs: keyword inputs, likewise.
        chunks: number of microbatches.
        args_chunk_spec: one spec per positional argument (TensorChunkSpec or None).
        kwargs_chunk_spec: a spec per keyword argument.

    Returns:
        ``(args_per_microbatch, kwargs_per_microbatch)``.

    Example:
        >>> import jax.numpy as jnp
        >>> a, k = split_args_kwargs_into_chunks((jnp.ones((4, 2)),), {}, 2)
        >>> a[0][0].shape
        (2, 2)
    """
    kwargs = kwargs or {}
    chunks = as_int(
        chunks, "n_microbatches", "split_args_kwargs_into_chunks", minimum=1, wrong_type=ValueError
    )
    if args_chunk_spec is not None and len(args_chunk_spec) != len(args):
        raise ValueError(
            f"args_chunk_spec has {len(args_chunk_spec)} entries but {len(args)} positional "
            "arguments were given; give one spec per argument"
        )
    out_args: list[list[Any]] = [[] for _ in range(chunks)]
    for i, value in enumerate(args):
        spec = args_chunk_spec[i] if args_chunk_spec is not None else None
        leaves, tree = jax.tree_util.tree_flatten(value)
        parts = [_split_value(x, spec, chunks, f"positional argument {i}") for x in leaves]
        for m in range(chunks):
            out_args[m].append(tree.unflatten([p[m] for p in parts]))
    out_kwargs: list[dict[str, Any]] = [{} for _ in range(chunks)]
    for name, value in kwargs.items():
        spec = (kwargs_chunk_spec or {}).get(name)
        leaves, tree = jax.tree_util.tree_flatten(value)
        parts = [_split_value(x, spec, chunks, f"keyword argument {name!r}") for x in leaves]
        for m in range(chunks):
            out_kwargs[m][name] = tree.unflatten([p[m] for p in parts])
    return [tuple(a) for a in out_args], out_kwargs


def split_target(target: Any, chunks: int) -> list[Any]:
    """Split the target like a positional argument (dim 0)."""
    if target is None:
        return [None] * chunks
    leaves, tree = jax.tree_util.tree_flatten(target)
    parts = [_split_value(x, None, chunks, "target") for x in leaves]
    return [tree.unflatten([p[m] for p in parts]) for m in range(chunks)]


def merge_chunks(chunks: list[Any], chunk_spec: Any = None) -> Any:
    """Concatenate per-microbatch outputs (dim 0, or each leaf's TensorChunkSpec dim).

    A leaf whose spec is None, and a non-array leaf, is not concatenated: the first
    microbatch's value is returned (torch's rule).

    Example:
        >>> import jax.numpy as jnp
        >>> merge_chunks([jnp.ones((2, 3)), jnp.zeros((2, 3))]).shape
        (4, 3)
    """
    if not chunks:
        raise ValueError("merge_chunks: no microbatch outputs to merge")
    first_leaves, tree = jax.tree_util.tree_flatten(chunks[0])
    per_chunk = [jax.tree_util.tree_leaves(c) for c in chunks]
    # None entries of the spec are leaves too (torch's tree_flatten keeps them), so a spec
    # such as ``(TensorChunkSpec(1), None)`` lines up with the outputs it describes.
    spec_leaves = (
        jax.tree_util.tree_leaves(
            chunk_spec, is_leaf=lambda x: x is None or isinstance(x, TensorChunkSpec)
        )
        if chunk_spec is not None
        else [TensorChunkSpec(0)] * len(first_leaves)
    )
    if len(spec_leaves) != len(first_leaves):
        raise ValueError(
            f"output_merge_spec has {len(spec_leaves)} entries for {len(first_leaves)} outputs"
        )
    merged = []
    for i, (x, spec) in enumerate(zip(first_leaves, spec_leaves, strict=True)):
        if isinstance(spec, TensorChunkSpec) and _is_array(x) and jnp.ndim(x) > 0:
            merged.append(jnp.concatenate([c[i] for c in per_chunk], axis=spec.split_dim))
        else:  # as torch: an output without a TensorChunkSpec is the first microbatch's value
            merged.append(x)
    return tree.unflatten(merged)
