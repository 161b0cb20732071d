"""``ProcessBackend``: a process group whose ranks are processes of one JAX job.

Collectives run as compiled programs over a mesh of the members' devices
(:mod:`.mesh`), point-to-point and pipeline transfers as ``jax.experimental.transfer`` pulls
(:mod:`.p2p`), object collectives through the job's key-value store (:mod:`.kvstore`). Every
wait is supervised by the process's watchdog (:mod:`.lifecycle`).

Collectives are issued in the calling thread's order. XLA runs a cross-process collective
synchronously inside the dispatch, so ``async_op=True`` hands it to one worker thread per
group that runs queued collectives in issue order; a blocking collective issued while async
ones are queued waits its turn, and runs inline otherwise (no thread hop on the hot path).

Like torch's gloo and NCCL backends, mismatched collectives (different ops or shapes on
different ranks) are not detected by default — here they return wrong values or hang until the
watchdog's timeout. ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` (or ``SPX_DISTRIBUTED_DEBUG=DETAIL``)
checks every collective's signature across ranks first, through the key-value store (~1 ms per
collective), and raises ``DistBackendError("collective mismatch ...")`` on every rank.
"""

from __future__ import annotations

import os
import pickle
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from spx import _context
from spx.distributed.backend import Backend, DistBackendError, Work
from spx.distributed.multiprocess import runtime as _runtime
from spx.distributed.multiprocess.mesh import MeshCollectives
from spx.distributed.reduce_op import ReduceOp

# Where spx.device() finds this process's LOCAL_RANK ("cuda:{LOCAL_RANK}" is the rank's device).
LOCAL_RANK_KEY = "spx.distributed.local_rank"


# NCCL, which JAX's GPU collectives run on, refuses two ranks on one GPU ("Duplicate GPU
# detected"); point-to-point transfers (pipelining) work there, collectives do not.
_SHARED_GPU = (
    "{what} failed on rank {rank}: two or more ranks of the group share one GPU, and NCCL (which "
    "runs JAX's GPU collectives) needs one GPU per rank. Start at most one rank per GPU "
    "(spx-run --nproc-per-node gpu), or run this job's ranks on CPU (JAX_PLATFORMS=cpu). "
    "Pipeline-parallel jobs without collectives may share a GPU: their transfers are "
    "point-to-point."
)


def _debug_detail() -> bool:
    return any(
        os.environ.get(v, "").upper() == "DETAIL"
        for v in ("TORCH_DISTRIBUTED_DEBUG", "SPX_DISTRIBUTED_DEBUG")
    )


def _sig(x: Any) -> tuple:
    return tuple(x.shape), str(np.dtype(x.dtype))


class _QueuedWork(Work):
    __slots__ = ("_event", "_fn")

    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__()
        self._done = False
        self._fn = fn
        self._event = threading.Event()

    def _run(self) -> None:
        try:
            self._result = self._fn()
        except BaseException as e:  # delivered to whoever waits
            self._error = e
        self._event.set()

    def _finish(self, timeout: float | None) -> None:
        if not self._event.wait(timeout):
            raise DistBackendError(f"Work.wait timed out after {timeout} s")
        self._done = True

    def _poll(self) -> None:
        self._done = self._event.is_set()


class _Issuer:
    """Runs one group's collectives in issue order: inline, or on a worker thread while
    ``async_op=True`` collectives are queued."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._outstanding = 0
        self._queue: queue.SimpleQueue[_QueuedWork] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def submit(self, fn: Callable[[], Any], async_op: bool) -> Work:
        with self._lock:
            inline = not async_op and self._outstanding == 0
            if not inline:
                work = _QueuedWork(fn)
                self._outstanding += 1
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._loop, name=f"spx-collectives-{self.name}", daemon=True
                    )
                    self._thread.start()
                self._queue.put(work)
        if inline:
            return Work(fn())
        return work if async_op else Work(work.wait())

    def _loop(self) -> None:
        while True:
            work = self._queue.get()
            work._run()
            with self._lock:
                self._outstanding -= 1


class ProcessBackend(Backend):
    """One rank's view of a group of processes. Created by :func:`create_world_backend` and
    :meth:`split`.

    Args:
        rt: this process's runtime.
        members: the global rank of each group rank.
        timeout: seconds a wait may take.
        group_name: the group's name, the same on every member.
    """

    name = "process"

    @property
    def default_name(self) -> str:
        # What JAX runs the collectives with, as torch's default backend for the device.
        return "gloo" if self.device.platform == "cpu" else "nccl"

    def __init__(
        self, rt: _runtime.ProcessRuntime, members: Sequence[int], timeout: float, group_name: str
    ) -> None:
        members = tuple(members)
        super().__init__(
            members.index(rt.rank), len(members), rt.device, members, timeout, group_name
        )
        self._rt = rt
        self._peers = [g for g in members if g != rt.rank]
        self._mesh: MeshCollectives | None = None
        self._issuer = _Issuer(group_name)
        self._debug = _debug_detail()
        self._op_seq = 0
        self._obj_seq = 0
        self._splits = 0

    # -- plumbing -----------------------------------------------------------------------------
    def _collectives(self) -> MeshCollectives:
        if self._mesh is None:
            self._mesh = self._rt.collectives(tuple(self._rt.devices[g] for g in self.ranks))
        return self._mesh

    def _issue(
        self, key: tuple, fn: Callable[[MeshCollectives], Any], async_op: bool = False
    ) -> Work:
        seq = self._op_seq
        self._op_seq += 1
        watchdog = self._rt.watchdog

        def run() -> Any:
            if self._debug:
                self._check_signature(seq, key)
            what = f"{key[0]} #{seq} of group {self.group_name!r}"
            with watchdog.blocking(what, self._peers, self.timeout):
                mesh = self._collectives()
                try:
                    out = fn(mesh)
                    jax.block_until_ready(out)
                except Exception as e:
                    if "gloo" in str(e).lower() or "connection" in str(e).lower():
                        raise watchdog.explain(what, e) from e
                    if "Duplicate GPU detected" in str(e):
                        raise RuntimeError(_SHARED_GPU.format(what=what, rank=self._rt.rank)) from e
                    raise
            return out

        watchdog.check()
        return self._issuer.submit(run, async_op)

    def _exchange_objects(self, obj: Any, space: str, seq: int | None = None) -> list[Any]:
        """Every member's picklable ``obj`` through the key-value store (each rank gets its
        own copies, as torch's unpickling does). ``seq`` numbers the exchanges of ``space``
        (default: the group's object-collective counter)."""
        if seq is None:
            seq = self._obj_seq
            self._obj_seq += 1
        base = f"spx/{space}/{self.group_name}/"
        kv = self._rt.kv
        blob = pickle.dumps(obj)
        kv.set(f"{base}{seq}/{self.rank}", blob)
        out = []
        what = f"{space} #{seq} of group {self.group_name!r}"
        with self._rt.watchdog.blocking(what, self._peers, self.timeout):
            for r in range(self.size):
                data = blob if r == self.rank else kv.get(f"{base}{seq}/{r}", self.timeout, what)
                out.append(pickle.loads(data))
        if seq:
            # Every member wrote entry seq, so every member has read all of seq - 1.
            kv.delete(f"{base}{seq - 1}/{self.rank}")
        return out

    def _check_signature(self, seq: int, key: tuple) -> None:
        keys = self._exchange_objects(key, "signature", seq)
        for r, other in enumerate(keys):
            if other != keys[0]:
                raise DistBackendError(
                    f"collective mismatch in group {self.group_name!r} at operation #{seq}: rank "
                    f"{self.ranks[0]} called {keys[0][0]}{keys[0][1:]} but rank {self.ranks[r]} "
                    f"called {other[0]}{other[1:]}; every rank must issue the same collectives "
                    "in the same order, with matching arguments and shapes"
                )

    # -- collectives ---------------------------------------------------------------------------
    def all_gather(self, x: jax.Array, async_op: bool = False) -> Work:
        return self._issue(("all_gather", *_sig(x)), lambda m: m.all_gather(x), async_op)

    def all_gather_object(self, obj: Any) -> list[Any]:
        self._rt.watchdog.check()
        return self._exchange_objects(obj, "objects")

    def all_reduce(self, x: jax.Array, op: ReduceOp, async_op: bool = False) -> Work:
        key = ("all_reduce", op.name, *_sig(x))
        return self._issue(key, lambda m: m.all_reduce(x, op), async_op)

    def all_reduce_buckets(
        self,
        arrays: Sequence[jax.Array],
        buckets: Sequence[Sequence[int]],
        scale: float,
        async_op: bool = False,
    ) -> Work:
        groups = tuple(tuple(int(i) for i in b) for b in buckets)
        key = ("all_reduce_buckets", groups, float(scale), tuple(_sig(x) for x in arrays))
        arrays = list(arrays)
        return self._issue(key, lambda m: m.all_reduce_buckets(arrays, groups, scale), async_op)

    def reduce(self, x: jax.Array, dst: int, op: ReduceOp, async_op: bool = False) -> Work:
        def run(m: MeshCollectives) -> jax.Array:
            out = m.all_reduce(x, op)
            return out if self.rank == dst else x

        return self._issue(("reduce", dst, op.name, *_sig(x)), run, async_op)

    def broadcast(self, x: jax.Array, src: int, async_op: bool = False) -> Work:
        return self._issue(("broadcast", src, *_sig(x)), lambda m: m.broadcast(x, src), async_op)

    def reduce_scatter(self, xs: Sequence[jax.Array], op: ReduceOp, async_op: bool = False) -> Work:
        key = ("reduce_scatter", op.name, tuple(_sig(x) for x in xs))
        return self._issue(key, lambda m: m.reduce_scatter(xs, op), async_op)

    def all_to_all(self, xs: Sequence[jax.Array], async_op: bool = False) -> Work:
        key = ("all_to_all", tuple(_sig(x) for x in xs))
        return self._issue(key, lambda m: m.all_to_all(xs), async_op)

    def gather(self, x: jax.Array, dst: int, async_op: bool = False) -> Work:
        def run(m: MeshCollectives) -> list[jax.Array] | None:
            outs = m.all_gather(x)
            return outs if self.rank == dst else None

        return self._issue(("gather", dst, *_sig(x)), run, async_op)

    def scatter(
        self, template: jax.Array, xs: Sequence[jax.Array] | None, src: int, async_op: bool = False
    ) -> Work:
        items = list(xs) if xs is not None else [template] * self.size
        key = ("scatter", src, *_sig(template))
        return self._issue(key, lambda m: m.scatter(items, src), async_op)

    def barrier(self, async_op: bool = False) -> Work:
        # The coordinator's barrier, not a collective program: 0.3 instead of 2.5 ms between two
        # processes. Issued in order behind the group's earlier collectives, as a collective is.
        name = f"spx/barrier/{self.group_name}"
        members = None if len(self.ranks) == self._rt.world_size else list(self.ranks)
        return self._issue(
            ("barrier",), lambda m: self._rt.kv.barrier(name, members, self.timeout), async_op
        )

    def split(self, ranks: Sequence[int], timeout: float) -> ProcessBackend | None:
        ranks = tuple(ranks)
        seen = self._exchange_objects(("new_group", ranks), "objects")
        for r, other in enumerate(seen):
            if other != seen[0]:
                raise DistBackendError(
                    f"collective mismatch in group {self.group_name!r}: rank {self.ranks[0]} "
                    f"called new_group{seen[0][1:]} but rank {self.ranks[r]} called "
                    f"new_group{other[1:]}; every rank must create the same groups in the same "
                    "order"
                )
        name = f"{self.group_name}.{self._splits}"
        self._splits += 1
        if self.rank not in ranks:
            return None
        return ProcessBackend(self._rt, [self.ranks[r] for r in ranks], timeout, name)

    # -- point to point ------------------------------------------------------------------------
    def _channel(self, src: int, dst: int, tag: Any) -> str:
        return f"{self.group_name}|{self.ranks[src]}>{self.ranks[dst]}|{tag!r}"

    def send(self, x: jax.Array, dst: int, tag: int) -> Work:
        self._rt.watchdog.check()
        self._rt.p2p(self.timeout).send(x, self._channel(self.rank, dst, tag), self.ranks[dst])
        return _SENT

    def recv(self, template: Any, src: int | None, tag: int) -> Work:
        if src is None:
            raise NotImplementedError(
                "recv/irecv from any source (src=None) is not supported between processes: "
                "the receiver must know the sender to pull from it. Pass src=<rank>."
            )
        self._rt.watchdog.check()
        expected = (tuple(template.shape), str(np.dtype(template.dtype)))
        channel = self._channel(src, self.rank, tag)
        return self._rt.p2p(self.timeout).post(channel, self.ranks[src], expected)

    def send_tree(self, tree: Any, dst: int, tag: Any) -> None:
        self._rt.watchdog.check()
        self._rt.p2p(self.timeout).send(tree, self._channel(self.rank, dst, tag), self.ranks[dst])

    def recv_tree(self, src: int, tag: Any) -> Any:
        return self.irecv_tree(src, tag).wait()

    def irecv_tree(self, src: int, tag: Any) -> Work:
        self._rt.watchdog.check()
        channel = self._channel(src, self.rank, tag)
        return self._rt.p2p(self.timeout).post(channel, self.ranks[src])

    def abort(self, reason: str) -> None:
        self._rt.watchdog.abort(reason)

    def shutdown(self) -> None:
        # Not a collective (torch's destroy_process_group is not one either): finish this
        # rank's own receives; the exit handshake at interpreter exit keeps every transfer
        # server up until every rank is done.
        if self._rt.transfers is not None and self._rt.watchdog.reason is None:
            self._rt.transfers.drain()


_SENT = Work()


def create_world_backend(
    rank: int, world_size: int, timeout: float, init_method: str | None
) -> ProcessBackend:
    """The default group's backend for ``rank`` of ``world_size`` processes (the factory
    :func:`spx.distributed.process_group.init_process_group` calls across processes)."""
    rt = _runtime.start(rank, world_size, timeout, init_method)
    ctx = _context.current()
    ctx.device = rt.device
    ctx.extras[LOCAL_RANK_KEY] = rt.local_rank
    return ProcessBackend(rt, range(world_size), timeout, f"g{rt.generation}")
