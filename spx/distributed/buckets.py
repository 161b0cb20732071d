"""Flat buckets: several arrays reduced as one buffer (torch's coalesced collectives).

A bucket is a list of indices into a list of arrays. :func:`pack` flattens and concatenates a
bucket's arrays into one 1-D buffer, :func:`unpack` splits a buffer back into arrays of the
given shapes, scaled. Both are jitted programs cached by shapes (inlined when traced), and
:func:`all_reduce_buckets` is the portable coalesced SUM built on them: one all-reduce per
bucket. Backends with compiled collectives fuse the three steps into one program instead
(:meth:`spx.distributed.multiprocess.mesh.MeshCollectives.all_reduce_buckets`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp


@jax.jit
def pack(arrays: list[Any]) -> Any:
    """``arrays`` flattened and concatenated: shapes ``(s_0, ...), (s_1, ...)`` -> ``(n,)``."""
    return jnp.concatenate([a.reshape(-1) for a in arrays])


@functools.partial(jax.jit, static_argnums=(1,))
def unpack(flat: Any, shapes: tuple[tuple[int, ...], ...], scale: Any) -> list[Any]:
    """``flat * scale`` split into arrays of ``shapes`` (the inverse of :func:`pack`).

    ``scale`` is cast to the buffer's dtype before multiplying, as torch's in-bucket division.
    """
    out, start = [], 0
    flat = flat * scale.astype(flat.dtype)
    for shape in shapes:
        n = math.prod(shape)
        out.append(flat[start : start + n].reshape(shape))
        start += n
    return out


def all_reduce_buckets(
    arrays: Sequence[Any],
    buckets: Sequence[Sequence[int]],
    scale: float,
    all_reduce_sum: Callable[[Any], Any],
) -> list[Any]:
    """Every bucket of ``arrays`` summed over ranks and multiplied by ``scale``.

    ``all_reduce_sum(flat) -> flat`` runs one SUM all-reduce; it is called once per bucket, in
    bucket order. Arrays in no bucket are returned unchanged.

    Example:
        >>> all_reduce_buckets([a, b, c], [[2, 1], [0]], 0.5, lambda f: f)  # doctest: +SKIP
    """
    out = list(arrays)
    factor = jnp.float32(scale)
    for bucket in buckets:
        members = [arrays[i] for i in bucket]
        summed = all_reduce_sum(pack(members))
        shapes = tuple(tuple(a.shape) for a in members)
        for i, a in zip(bucket, unpack(summed, shapes, factor), strict=True):
            out[i] = a
    return out
