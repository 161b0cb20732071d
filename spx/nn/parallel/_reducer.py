"""Gradient buckets and their collectives for :class:`DistributedDataParallel`.

torch's ``Reducer`` groups gradients into buckets, flattens each bucket into one buffer and runs
one all-reduce per bucket. Here a bucket is a list of parameter indices; packing (flatten +
concatenate) and unpacking (split + reshape + divide by the world size) are small jitted
programs cached by the bucket's shapes, so a bucket costs three dispatches whatever its number
of tensors.

The same code runs eagerly (after ``loss.backward()``) and inside a compiled step
(``spx.compile``): there the gradients are tracers, and each bucket's collective is an ordered
``io_callback`` — the compiled program calls back into the host, which runs the eager
collective on the process group, so every rank's program issues the same collectives in the
same order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

MB = 1024 * 1024
DEFAULT_BUCKET_CAP_MB = 25
# torch's dist._DEFAULT_FIRST_BUCKET_BYTES: with the default cap, the first bucket (the last
# parameters, whose gradients are ready first) is kept small.
DEFAULT_FIRST_BUCKET_BYTES = 1 * MB


def assign_buckets(sizes: Sequence[tuple[int, Any]], caps: Sequence[int]) -> list[list[int]]:
    """Indices of ``sizes`` (``(nbytes, dtype)`` per tensor) grouped into buckets.

    Tensors are taken in reverse order (torch's approximation of the order gradients become
    ready in backward), one open bucket per dtype. A bucket closes before a tensor that would
    take it past its cap, so a bucket holds at most ``cap`` bytes unless one tensor alone is
    larger. The k-th bucket of a dtype has cap ``caps[min(k, len(caps) - 1)]``.
    """
    out: list[list[int]] = []
    open_: dict[Any, tuple[list[int], int, int]] = {}  # dtype -> (indices, bytes, bucket no.)
    for i in reversed(range(len(sizes))):
        nbytes, dtype = sizes[i]
        idx, size, k = open_.get(dtype, ([], 0, 0))
        cap = caps[min(k, len(caps) - 1)]
        if idx and size + nbytes > cap:
            out.append(idx)
            idx, size, k = [], 0, k + 1
        idx.append(i)
        open_[dtype] = (idx, size + nbytes, k)
    out.extend(idx for idx, _, _ in open_.values() if idx)
    return out


@jax.jit
def _pack(arrays: list[Any]) -> Any:
    return jnp.concatenate([a.reshape(-1) for a in arrays])


@functools.partial(jax.jit, static_argnums=(1,))
def _unpack(flat: Any, shapes: tuple[tuple[int, ...], ...], scale: Any) -> list[Any]:
    out, start = [], 0
    flat = flat * scale.astype(flat.dtype)
    for shape in shapes:
        n = int(np.prod(shape))
        out.append(flat[start : start + n].reshape(shape))
        start += n
    return out


def reduce_buckets(
    arrays: list[Any], buckets: list[list[int]], all_reduce: Callable[[Any], tuple[Any, float]]
) -> list[Any]:
    """``arrays`` reduced over ranks bucket by bucket, one ``all_reduce`` per bucket.

    ``all_reduce(flat) -> (result, scale)`` runs the collective and says what to multiply the
    result by (1 / world size to average; a host that skips the collective returns
    ``(flat, 1.0)``). Works on concrete arrays and on tracers: ``all_reduce`` then runs at
    execution time through an ordered ``io_callback``.
    """
    traced = any(isinstance(a, jax.core.Tracer) for a in arrays)
    out: list[Any] = list(arrays)
    for bucket in buckets:
        members = [arrays[i] for i in bucket]
        flat = _pack(members)
        if traced:
            specs = (
                jax.ShapeDtypeStruct(flat.shape, flat.dtype),
                jax.ShapeDtypeStruct((), jnp.float32),
            )
            summed, scale = io_callback(_host(all_reduce), specs, flat, ordered=True)
        else:
            summed, scale = all_reduce(flat)
            scale = jnp.float32(scale)
        shapes = tuple(tuple(a.shape) for a in members)
        for i, a in zip(bucket, _unpack(summed, shapes, scale), strict=True):
            out[i] = a
    return out


def _host(all_reduce: Callable[[Any], tuple[Any, float]]) -> Callable[[Any], tuple]:
    def run(flat: Any) -> tuple:
        y, scale = all_reduce(jnp.asarray(flat))
        return np.asarray(y), np.float32(scale)

    return run
