"""Gradient buckets and their collectives for :class:`DistributedDataParallel`.

torch's ``Reducer`` groups gradients into buckets, flattens each bucket into one buffer and runs
one all-reduce per bucket. Here a bucket is a list of parameter indices, and the averaging of
all buckets is one call of the backend's ``all_reduce_buckets``: between processes that is one
compiled program (packing, one collective per bucket, unpacking and the division), so a
backward's whole reduction costs one dispatch.

The same code runs eagerly (after ``loss.backward()``) and inside a compiled step
(``spx.compile``): there the gradients are tracers, the buckets are packed inside the step's
program, and one ordered ``io_callback`` hands the packed buffers to the host, which runs the
eager reduction on the process group, so every rank's program issues the same collectives in
the same order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

from spx.distributed.buckets import pack, unpack

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


def average_buckets(
    arrays: list[Any],
    buckets: list[list[int]],
    average: Callable[[list[Any], list[list[int]]], list[Any]],
) -> list[Any]:
    """``arrays`` averaged over ranks by ``average(arrays, buckets) -> arrays``, which runs
    eagerly; inside a trace the buckets are packed in the program and ``average`` gets the
    packed buffers (one bucket each) through one ordered ``io_callback`` at execution time.
    """
    if not any(isinstance(a, jax.core.Tracer) for a in arrays):
        return average(arrays, buckets)
    flats = [pack([arrays[i] for i in bucket]) for bucket in buckets]
    specs = [jax.ShapeDtypeStruct(f.shape, f.dtype) for f in flats]
    singles = [[k] for k in range(len(flats))]

    def host(*packed: Any) -> list[Any]:
        return [np.asarray(a) for a in average([jnp.asarray(f) for f in packed], singles)]

    reduced = io_callback(host, specs, *flats, ordered=True)
    out: list[Any] = list(arrays)
    one = jnp.float32(1.0)
    for bucket, flat in zip(buckets, reduced, strict=True):
        shapes = tuple(tuple(arrays[i].shape) for i in bucket)
        for i, a in zip(bucket, unpack(flat, shapes, one), strict=True):
            out[i] = a
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
        flat = pack(members)
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
        for i, a in zip(bucket, unpack(summed, shapes, scale), strict=True):
            out[i] = a
    return out


def _host(all_reduce: Callable[[Any], tuple[Any, float]]) -> Callable[[Any], tuple]:
    def run(flat: Any) -> tuple:
        y, scale = all_reduce(jnp.asarray(flat))
        return np.asarray(y), np.float32(scale)

    return run
