"""``spx.func.vmap``: torch.func's vectorizing map on ``jax.vmap``.

``vmap(f, in_dims, out_dims)(*args)`` runs ``f`` as if once per slice of the mapped dimension
and stacks the results, in one batched computation. ``in_dims`` says, per input, which
dimension is mapped (``None``: the input is shared by every slice); it is an int for all
inputs or a tuple matching ``args``, nested to match pytree inputs (torch's prefix rule:
``in_dims=(None, 0)`` maps every Tensor of the second argument). ``out_dims`` does the same
for the outputs: where the mapped dimension goes, ``None`` for an output that does not depend
on the mapped inputs.

JAX sees only the mapped arrays, as a flat list; shared inputs reach ``f`` unchanged (closed
over), and the outputs come back in two groups, mapped (``out_axes=0``, then moved to their
``out_dim``) and unmapped (``out_axes=None``), so the output structure need not be known before
tracing.

The results are values: they carry no spx autograd history back to inputs that require grad
(torch's would, so ``loss.backward()`` through an ensemble's ``vmap`` reaches the stacked
parameters). Differentiate with :func:`spx.func.grad` around the ``vmap`` instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax._src.interpreters import batching

from spx import _context
from spx import random as spx_random
from spx._tensor.tensor import Tensor
from spx.func._pytree import TreeSpec, broadcast_prefix, tree_flatten
from spx.func._randomness import check_randomness, randomness_guard
from spx.func._wrap import (
    array_of,
    enter,
    guard_history,
    is_array,
    name_of,
    note_captured,
    tensor_of,
)

InDims = int | tuple | None


def vmap(
    func: Callable[..., Any],
    in_dims: InDims = 0,
    out_dims: InDims = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable[..., Any]:
    """Vectorize ``func`` over a dimension of its inputs (mirrors ``torch.func.vmap``).

    Args:
        func: takes Tensors (or pytrees of them) and returns Tensors (or pytrees of them).
        in_dims: the mapped dimension of each input: an int, or a tuple with one entry per
            positional argument (nested for pytree arguments); ``None`` for shared inputs.
            Keyword arguments are never mapped.
        out_dims: where the mapped dimension goes in each output (int, tuple, or ``None`` for
            an output that is the same for every slice).
        randomness: ``"error"`` (random draws inside raise), ``"same"`` (every slice shares
            one draw) or ``"different"`` (each slice draws its own numbers).
        chunk_size: map this many slices at a time (all at once when None), as torch's.

    Returns:
        The vectorized function.

    Example:
        >>> import spx
        >>> dot = spx.func.vmap(lambda a, b: (a * b).sum())
        >>> dot(spx.ones(3, 2), spx.ones(3, 2)).tolist()
        [2.0, 2.0, 2.0]
    """
    check_randomness(randomness)
    if chunk_size is not None and (isinstance(chunk_size, bool) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @guard_history("vmap")
    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        _check_out_dims(func, out_dims)
        flat_args, flat_in, size = _batched_inputs(func, in_dims, args)
        step = (size or 1) if chunk_size is None else chunk_size
        mapped = [i for i, d in enumerate(flat_in) if d is not None]
        spec = tree_flatten(args)[1]
        results = []
        for start in range(0, max(size, 1), step):  # one run even for an empty batch
            stop = min(start + step, size)
            arrays = [
                jax.lax.slice_in_dim(array_of(flat_args[i]), start, stop, axis=flat_in[i])
                if (start, stop) != (0, size)
                else array_of(flat_args[i])
                for i in mapped
            ]
            axes = [flat_in[i] for i in mapped]
            run = _Run(func, out_dims, randomness, flat_args, spec, mapped, kwargs)
            results.append(run(arrays, axes, stop - start))
        return _join(results)

    return wrapped


def _check_out_dims(func: Callable, out_dims: Any) -> None:
    """torch's check, before anything runs: ``out_dims`` is an int, None or a tree of them."""
    for d in tree_flatten(out_dims)[0]:
        if d is not None and (not isinstance(d, int) or isinstance(d, bool)):
            raise ValueError(
                f"vmap({name_of(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, "
                "None or a python collection of ints representing where in the outputs the "
                "vmapped dimension should appear."
            )


def _batched_inputs(func: Callable, in_dims: Any, args: tuple) -> tuple[list, list, int]:
    """The flat inputs, their in_dims and the batch size, checked with torch's messages."""
    name = name_of(func)
    if not isinstance(in_dims, int | tuple) or isinstance(in_dims, bool):
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
            f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}."
        )
    if not args:
        raise ValueError(
            f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
            "trying to vmap over a function with no inputs. The latter is unsupported."
        )
    flat_args, spec = tree_flatten(args)
    flat_in = broadcast_prefix(in_dims, spec)
    if flat_in is None:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
            f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but "
            f"inputs has structure {spec}."
        )
    sizes = []
    for arg, d in zip(flat_args, flat_in, strict=True):
        if d is None:
            continue
        where = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for "
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(
                where + "an input but in_dim must be either an integer dimension or None."
            )
        if not is_array(arg):
            raise ValueError(
                where + f"an input but the input is of type {type(arg)}. We cannot vmap over "
                "non-Tensor arguments, please use None as the respective in_dim"
            )
        ndim = len(arg.shape)
        if not -ndim <= d < ndim:
            raise ValueError(
                where + f"some input, but that input is a Tensor of dimensionality {ndim} so "
                f"expected in_dim to satisfy -{ndim} <= in_dim < {ndim}."
            )
        sizes.append(arg.shape[d])
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension"
        )
    return flat_args, flat_in, sizes[0]


class _Run:
    """One ``jax.vmap`` over one chunk of the batch: trace, then rebuild the outputs."""

    def __init__(
        self,
        func: Callable,
        out_dims: Any,
        randomness: str,
        flat_args: list,
        spec: TreeSpec,
        mapped: list[int],
        kwargs: dict,
    ) -> None:
        self.func, self.out_dims, self.randomness = func, out_dims, randomness
        self.flat_args, self.spec, self.mapped, self.kwargs = flat_args, spec, mapped, kwargs

    def __call__(self, arrays: list[jax.Array], axes: list[int], size: int) -> Any:
        different = self.randomness == "different"
        keys = jax.random.split(spx_random.next_key(), size) if different else None
        with randomness_guard(self.randomness):
            mapped_out, shared_out = jax.vmap(
                self._inner, in_axes=(axes, 0 if different else None), out_axes=(0, None)
            )(arrays, keys)
        leaves = list(self.out_leaves)
        for i, a in zip(self.mapped_at, mapped_out, strict=True):
            leaves[i] = Tensor._of(jnp.moveaxis(a, 0, self.flat_out[i]))
        for i, a in zip(self.shared_at, shared_out, strict=True):
            leaves[i] = tensor_of(a)
        dims = [self.flat_out[i] if i in self.mapped_at else None for i in range(len(leaves))]
        return self.out_spec, leaves, dims

    def _inner(self, values: list[jax.Array], key: Any) -> tuple[list, list]:
        leaves = list(self.flat_args)
        for i, v in zip(self.mapped, values, strict=True):
            # A slice keeps its input's requires_grad (so detach() inside acts as outside).
            leaves[i] = enter(v, getattr(self.flat_args[i], "requires_grad", False))
        ctx = _context.current()
        saved = ctx.key
        if key is not None:
            # A traced rank key: each slice draws from its own key (spx treats a traced rank
            # key as bound state, so the draws are allowed), and the real key comes back after.
            ctx.key = key
        try:
            out = self.func(*self.spec.unflatten(leaves), **self.kwargs)
        finally:
            if key is not None:
                ctx.key = saved
        note_captured(out)
        return self._split_outputs(out, values[0])

    def _split_outputs(self, out: Any, ref: Any) -> tuple[list, list]:
        name = name_of(self.func)
        out_leaves, out_spec = tree_flatten(out)
        flat_out = _out_dims(name, self.out_dims, out_spec)
        mapped_at, shared_at, mapped, shared = [], [], [], []
        for i, (x, d) in enumerate(zip(out_leaves, flat_out, strict=True)):
            if not is_array(x):
                if d is not None:
                    raise ValueError(
                        f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                        f"{type(x)}. Did you mean to set out_dims= to None for output?"
                    )
                continue  # kept as it is, beside the trace
            a = array_of(x)
            if d is None:
                if _is_mapped(a, ref):
                    raise ValueError(
                        f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim "
                        "is None"
                    )
                shared_at.append(i)
                shared.append(a)
            else:
                mapped_at.append(i)
                mapped.append(a)
        self.out_leaves, self.out_spec, self.flat_out = out_leaves, out_spec, flat_out
        self.mapped_at, self.shared_at = mapped_at, shared_at
        return mapped, shared


def _out_dims(name: str, out_dims: Any, spec: TreeSpec) -> list[Any]:
    """``out_dims`` spread over the output leaves (torch's rules, its single-Tensor edge case)."""
    if spec.kind == "leaf":
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        if out_dims is None or isinstance(out_dims, int):
            return [out_dims]
        flat = None
    else:
        flat = broadcast_prefix(out_dims, spec)
    if flat is None:
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with "
            f"the structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but "
            f"outputs has structure {spec}."
        )
    return flat


def _is_mapped(a: Any, ref: Any) -> bool:
    # Mapped values inside this vmap are tracers of its own batch trace (the trace of the
    # mapped input ``ref``) with a batch dimension; anything else is the same for every slice.
    # (JAX's public API cannot ask this; BatchTracer is its internal batching type.)
    return (
        isinstance(a, batching.BatchTracer)
        and a._trace is getattr(ref, "_trace", None)
        and a.batch_dim is not None  # JAX's NotMapped
    )


def _join(results: list[tuple[TreeSpec, list[Any], list[int | None]]]) -> Any:
    """One output from the chunks' outputs: mapped leaves concatenated along their out_dim."""
    spec, leaves, dims = results[0]
    for i, d in enumerate(dims):
        if d is not None and len(results) > 1:
            parts = [r[1][i]._data for r in results]
            leaves[i] = Tensor._of(jnp.concatenate(parts, axis=d))
    return spec.unflatten(leaves)
