"""Collectives as compiled programs over a mesh of a group's devices (one per process).

Each collective is one ``jax.jit`` of a ``shard_map`` over the 1-D mesh of the group members'
devices (axis ``"r"``, in group-rank order); JAX runs its cross-process parts with gloo on CPU
(``jax_cpu_collectives_implementation``) and NCCL on GPU. A call wraps this rank's array as its
shard of a global array (no copy), runs the cached executable and returns this rank's piece —
one dispatch per collective; ``jit`` caches one executable per shape, dtype and static argument.

Measured on the 2-core CPU box (2 processes, medians): ``all_gather`` of a small array and
``psum`` cost about the same (~0.35 ms for (8, 128) f32), and up to a few MiB the all-gather
moves little more data, so reductions gather and then fold the contributions **in rank order**
— every rank, and the thread backend, computes bit-for-bit the same result for every
``ReduceOp``. For large arrays (``LARGE_BYTES``) SUM/AVG/MIN/MAX use ``psum``/``pmin``/``pmax``
instead (ring algorithms: the traffic no longer grows with the group; any rank order then).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from spx._tensor.tensor import Tensor
from spx.distributed.reduce_op import _BINARY, ReduceOp

AXIS = "r"
# Reductions switch to XLA's ring collectives when bytes x (ranks - 1)^2 exceeds this: measured
# crossovers on the 2-core box were ~3-4 MiB per rank for 2 processes and ~256-512 KiB for 4
# (gathering moves (n - 1) x the bytes and folds n arrays; a ring moves ~2x, in 2(n - 1) hops).
LARGE_BYTES = 3 << 20


try:  # Private JAX API, used only by the two helpers below, each with a public fallback.
    from jax._src.array import ArrayImpl as _ArrayImpl
    from jax._src.core import ShapedArray as _ShapedArray
except ImportError:  # pragma: no cover - a JAX that moved them: take the public paths
    _ArrayImpl = _ShapedArray = None


@functools.lru_cache(maxsize=4096)
def _aval(shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return _ShapedArray(shape, dtype)


def _wrap_shard(shape: tuple[int, ...], sharding: NamedSharding, x: jax.Array) -> jax.Array:
    """``x`` as this process's shard of a global array of ``shape`` (no copy).

    ``jax.make_array_from_single_device_arrays`` re-validates the shard on every call (~30 µs
    here); the arguments are right by construction, so the array is built directly (~5 µs).
    """
    if _ArrayImpl is not None:
        try:
            aval = _aval(shape, x.dtype)
            return _ArrayImpl(aval, sharding, [x], committed=True, _skip_checks=True)
        except TypeError:  # pragma: no cover - signature changed
            pass
    return jax.make_array_from_single_device_arrays(shape, sharding, [x])


def _my_shard(out: jax.Array) -> jax.Array:
    """This process's (only) shard of a global array (``addressable_data(0)`` minus checks)."""
    arrays = getattr(out, "_arrays", None)
    return arrays[0] if arrays else out.addressable_data(0)


def _fold(rows: Any, op: ReduceOp, n: int) -> Any:
    """``rows[0] op rows[1] op ...`` left to right, as :func:`spx.distributed.reduce_op.
    reduce_arrays` does (same dtype rules), so results match the thread backend exactly."""
    acc = rows[0]
    for i in range(1, n):
        acc = _BINARY[op](acc, rows[i]).astype(acc.dtype)
    if op is ReduceOp.AVG and n > 1:
        acc = (acc / n).astype(rows.dtype)
    return acc


def _gathered(x: Any, n: int) -> Any:
    """Inside the mesh program: this rank's block ``x`` -> every rank's, stacked ``(n, ...)``."""
    return jax.lax.all_gather(x, AXIS, tiled=True).reshape((n, *x.shape))


def _ring_worth_it(dtype: Any, size: int, n: int) -> bool:
    """Whether a SUM/AVG/MIN/MAX of ``size`` elements per rank should use XLA's ring."""
    dtype = np.dtype(dtype)
    return dtype != np.bool_ and dtype.itemsize * size * (n - 1) ** 2 > LARGE_BYTES


class MeshCollectives:
    """The compiled collectives of one group; every member builds one with the same devices.

    Args:
        devices: the members' devices, in group-rank order (one per process).
        rank: this process's index in ``devices``.

    Example:
        >>> mc = MeshCollectives(devices, rank)  # doctest: +SKIP
        >>> total = mc.all_reduce(x, ReduceOp.SUM)  # doctest: +SKIP
    """

    def __init__(self, devices: Sequence[jax.Device], rank: int) -> None:
        self.devices = tuple(devices)
        self.n = len(self.devices)
        self.rank = rank
        self.device = self.devices[rank]
        self.mesh = Mesh(np.array(self.devices, dtype=object), (AXIS,))
        self._sharded = NamedSharding(self.mesh, P(AXIS))
        n = self.n

        def program(fn: Any, out_specs: Any, n_static: int = 0) -> Any:
            # fn(*statics, x): the static arguments (an op, a source rank) come first.
            def body(*args: Any) -> Any:
                statics, x = args[:n_static], args[n_static]
                mapped = jax.shard_map(
                    functools.partial(fn, *statics),
                    mesh=self.mesh,
                    in_specs=P(AXIS),
                    out_specs=out_specs,
                    check_vma=False,
                )
                return mapped(x)

            return jax.jit(body, static_argnums=tuple(range(n_static)))

        def gathered(x: Any) -> Any:
            # x: this rank's block (rows, ...) -> every rank's block, stacked (n, rows, ...).
            return _gathered(x, n)

        def gather_all(x: Any) -> Any:
            rows = gathered(x)
            return tuple(rows[i] for i in range(n))

        def fold(op: ReduceOp, x: Any) -> Any:
            return _fold(gathered(x), op, n)

        def ring(op: ReduceOp, x: Any) -> Any:
            if op is ReduceOp.MAX:
                return jax.lax.pmax(x, AXIS)
            if op is ReduceOp.MIN:
                return jax.lax.pmin(x, AXIS)
            total = jax.lax.psum(x, AXIS)
            return (total / n).astype(x.dtype) if op is ReduceOp.AVG else total

        def pick(src: int, x: Any) -> Any:
            return gathered(x)[src]

        def exchange(x: Any) -> Any:
            # x: (n, ...) one row per destination -> (n, ...) one row per source.
            return jax.lax.all_to_all(x, AXIS, 0, 0, tiled=True)

        def reduce_rows(op: ReduceOp, x: Any) -> Any:
            return _fold(exchange(x), op, n)

        def scatter_from(src: int, x: Any) -> Any:
            return exchange(x)[src]

        self._gather = program(gather_all, P())
        self._fold = program(fold, P(), n_static=1)
        self._ring = program(ring, P(), n_static=1)
        self._pick = program(pick, P(), n_static=1)
        self._exchange = program(exchange, P(AXIS))
        self._reduce_rows = program(reduce_rows, P(), n_static=1)
        self._scatter = program(scatter_from, P(), n_static=1)
        self._bucket_programs: dict[tuple, Any] = {}

    # -- plumbing -----------------------------------------------------------------------------
    def _global(self, x: Any) -> tuple[jax.Array, tuple[int, ...]]:
        """This rank's block as its shard of a global array (rows of every rank stacked)."""
        if isinstance(x, Tensor):
            x = x._data
        if not isinstance(x, jax.Array) or x.devices() != {self.device}:
            x = jax.device_put(x, self.device)
        shape = tuple(x.shape)
        if not shape:
            x = x.reshape(1)
        rows = (self.n * x.shape[0], *x.shape[1:])
        return _wrap_shard(rows, self._sharded, x), shape

    def _local(self, out: Any, shape: tuple[int, ...] | None = None) -> jax.Array:
        y = _my_shard(out)
        return y if shape is None or tuple(y.shape) == shape else y.reshape(shape)

    # -- collectives (every member calls each with the same shapes and static arguments) ------
    def all_gather(self, x: Any) -> list[jax.Array]:
        """Every member's ``x`` in group-rank order, on this rank's device."""
        g, shape = self._global(x)
        return [self._local(o, shape) for o in self._gather(g)]

    def all_reduce(self, x: Any, op: ReduceOp) -> jax.Array:
        """``op`` over the members' ``x``, on every member."""
        g, shape = self._global(x)
        ring_ops = (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MIN, ReduceOp.MAX)
        if op in ring_ops and _ring_worth_it(g.dtype, math.prod(shape), self.n):
            return self._local(self._ring(op, g), shape)
        return self._local(self._fold(op, g), shape)

    def all_reduce_buckets(
        self, xs: Sequence[Any], buckets: tuple[tuple[int, ...], ...], scale: float
    ) -> list[jax.Array]:
        """Each bucket of ``xs`` (indices) summed over members as one flat buffer, times
        ``scale``; arrays in no bucket come back as given.

        One program for all buckets: packing, one collective per bucket (chosen as
        :meth:`all_reduce` chooses it for the bucket's buffer, so results are the same bit for
        bit) and unpacking run as one dispatch instead of three per bucket.
        """
        wrapped = [self._global(x) for x in xs]
        members = [i for bucket in buckets for i in bucket]
        outs = self._bucket_program(buckets, float(scale))(*(wrapped[i][0] for i in members))
        result = list(xs)
        for i, out in zip(members, outs, strict=True):
            result[i] = self._local(out, wrapped[i][1])
        return result

    def _bucket_program(self, buckets: tuple[tuple[int, ...], ...], scale: float) -> Any:
        key = (buckets, scale)
        prog = self._bucket_programs.get(key)
        if prog is not None:
            return prog
        n = self.n
        sizes = [len(b) for b in buckets]

        def body(*blocks: Any) -> tuple:
            # blocks: the bucketed arrays in bucket order (this rank's own, scalars as (1,)).
            out, start = [], 0
            for size in sizes:
                members = blocks[start : start + size]
                start += size
                flat = jnp.concatenate([b.reshape(-1) for b in members])
                if _ring_worth_it(flat.dtype, flat.size, n):
                    total = jax.lax.psum(flat, AXIS)
                else:
                    total = _fold(_gathered(flat, n), ReduceOp.SUM, n)
                total = total * jnp.float32(scale).astype(total.dtype)
                offset = 0
                for b in members:
                    out.append(total[offset : offset + b.size].reshape(b.shape))
                    offset += b.size
            return tuple(out)

        def run(*arrays: Any) -> tuple:
            specs = (P(AXIS),) * len(arrays)
            out_specs = (P(),) * len(arrays)
            mapped = jax.shard_map(
                body, mesh=self.mesh, in_specs=specs, out_specs=out_specs, check_vma=False
            )
            return mapped(*arrays)

        prog = self._bucket_programs[key] = jax.jit(run)
        return prog

    def broadcast(self, x: Any, src: int) -> jax.Array:
        """Member ``src``'s ``x`` on every member."""
        g, shape = self._global(x)
        return self._local(self._pick(src, g), shape)

    def all_to_all(self, xs: Sequence[Any]) -> list[jax.Array]:
        """Member ``r`` gets ``[xs_q[r] for q in members]`` (``xs``: one array per member)."""
        g, _ = self._global(self._stack(xs))
        rows = self._local(self._exchange(g))
        return [rows[i] for i in range(self.n)]

    def reduce_scatter(self, xs: Sequence[Any], op: ReduceOp) -> jax.Array:
        """Member ``r`` gets ``op`` over members of ``xs[r]``, folded in rank order."""
        g, _ = self._global(self._stack(xs))
        return self._local(self._reduce_rows(op, g))

    def scatter(self, xs: Sequence[Any], src: int) -> jax.Array:
        """Member ``r`` gets ``xs[r]`` of member ``src`` (other members pass templates)."""
        g, _ = self._global(self._stack(xs))
        return self._local(self._scatter(src, g))

    def _stack(self, xs: Sequence[Any]) -> jax.Array:
        return jnp.stack([jax.device_put(x, self.device) for x in xs])
