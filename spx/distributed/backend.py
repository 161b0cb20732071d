"""The backend interface behind a process group, and async handles.

A :class:`Backend` is what a process group needs from a transport, one instance per (rank,
group). Five methods are required — ``all_gather``, ``all_gather_object``, ``send``, ``recv`` and
``split`` — and the other collectives have correct (if not fastest) defaults built on them;
``send_tree``/``recv_tree`` carry pipeline transfers. :class:`Work` is the handle of an
asynchronous operation (``async_op=True``, ``isend``/``irecv``).
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import jax
import jax.numpy as jnp

from spx.distributed import buckets as _buckets
from spx.distributed.reduce_op import ReduceOp, reduce_arrays


class DistBackendError(RuntimeError):
    """A collective or p2p operation failed: peer failure, abort, mismatch or timeout."""


def timeout_seconds(timeout: timedelta | float | None, default: float) -> float:
    """Seconds from a torch-style ``timedelta`` (or a number of seconds); ``default`` for None."""
    if timeout is None:
        return default
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    if not seconds > 0:
        raise ValueError(f"timeout must be positive, got {timeout!r}")
    return seconds


class Work:
    """Handle on an operation started with ``async_op=True``, ``isend`` or ``irecv``.

    At the backend level (arrays in, arrays out) :meth:`wait` returns the operation's result
    array(s). The public collectives wrap it so that, as ``torch.distributed.Work``, ``wait()``
    completes the in-place write into the caller's tensors and returns True. This base class
    is an already-completed operation; backends subclass it and override ``_finish``/``_poll``.

    Example:
        >>> buf = spx.zeros(4)  # doctest: +SKIP
        >>> work = dist.irecv(buf, src=0)  # doctest: +SKIP
        >>> work.wait()  # buf now holds the message  # doctest: +SKIP
        True
    """

    __slots__ = ("_done", "_error", "_result")

    def __init__(self, result: Any = None) -> None:
        self._done = True
        self._result = result
        self._error: BaseException | None = None

    def wait(self, timeout: timedelta | float | None = None) -> Any:
        """Block until the operation finishes and return its result; re-raise its error."""
        if not self._done:
            self._finish(None if timeout is None else timeout_seconds(timeout, 0.0))
        if self._error is not None:
            raise self._error
        return self._result

    def is_completed(self) -> bool:
        """Whether the operation has finished (never blocks)."""
        if not self._done:
            self._poll()
        return self._done

    def is_success(self) -> bool:
        """Whether the operation finished without error."""
        return self.is_completed() and self._error is None

    def exception(self) -> BaseException | None:
        """The error the operation ended with, if any (does not block)."""
        return self._error if self.is_completed() else None

    def result(self) -> Any:
        """Same as :meth:`wait`."""
        return self.wait()

    def _finish(self, timeout: float | None) -> None:
        raise NotImplementedError

    def _poll(self) -> None:
        pass


class _ThreadWork(Work):
    """Runs ``fn`` in a helper thread; used for collectives with ``async_op=True``."""

    __slots__ = ("_event",)

    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__()
        self._done = False
        self._event = threading.Event()
        threading.Thread(target=self._run, args=(fn,), daemon=True).start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self._result = fn()
        except BaseException as e:  # delivered to whoever waits
            self._error = e
        self._event.set()

    def _finish(self, timeout: float | None) -> None:
        if not self._event.wait(timeout):
            raise DistBackendError(f"Work.wait timed out after {timeout} s")
        self._done = True

    def _poll(self) -> None:
        self._done = self._event.is_set()


class _LazyWork(Work):
    """Runs ``fn`` in the thread that calls ``wait``."""

    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__()
        self._done = False
        self._fn = fn

    def _finish(self, timeout: float | None) -> None:
        try:
            self._result = self._fn()
        except BaseException as e:
            self._error = e
        self._done = True


def run_async(fn: Callable[[], Any]) -> Work:
    """Start ``fn`` in a helper thread and return its :class:`Work`.

    A backend must take everything that fixes the operation's order (e.g. a sequence number) in
    the calling thread *before* calling this, so that async collectives still match up by issue
    order.
    """
    return _ThreadWork(fn)


class Backend(abc.ABC):
    """What a process group needs from a transport. One instance per (rank, group).

    Ranks below are *group* ranks. Every method returning :class:`Work` may complete before it
    returns (then it returns a completed ``Work``); the async variants must take their place in
    the group's operation order before returning. Results live on ``self.device``.

    Attributes:
        rank: this rank's index in the group.
        size: number of ranks in the group.
        device: this rank's device; every result is placed there.
        ranks: the global rank of each group rank.
        group_name: the group's name, the same on every member.
        timeout: seconds a blocking wait may take before raising :class:`DistBackendError`.
    """

    name: str = "base"
    # torch's ``dist.Backend`` names (``init_process_group(dist.Backend.GLOO)``).
    UNDEFINED, GLOO, NCCL, UCC, MPI, XCCL = "undefined", "gloo", "nccl", "ucc", "mpi", "xccl"

    @property
    def default_name(self) -> str:
        """What ``get_backend`` reports when ``init_process_group`` got no backend name."""
        return self.name

    def __init__(
        self,
        rank: int,
        size: int,
        device: jax.Device,
        ranks: Sequence[int],
        timeout: float,
        group_name: str = "0",
    ) -> None:
        self.rank = rank
        self.size = size
        self.device = device
        self.ranks = tuple(ranks)
        self.timeout = timeout
        self.group_name = group_name

    # --- required -------------------------------------------------------------------------
    @abc.abstractmethod
    def all_gather(self, x: jax.Array, async_op: bool = False) -> Work:
        """Every rank's ``x`` (same shape on all ranks), in rank order."""

    @abc.abstractmethod
    def all_gather_object(self, obj: Any) -> list[Any]:
        """Every rank's picklable ``obj``, each rank getting its own copies."""

    @abc.abstractmethod
    def send(self, x: jax.Array, dst: int, tag: int) -> Work:
        """Deliver ``x`` to rank ``dst``'s matching :meth:`recv` (FIFO per (src, dst, tag))."""

    @abc.abstractmethod
    def recv(self, template: Any, src: int | None, tag: int) -> Work:
        """Receive the next array from ``src`` (any rank if None); its shape/dtype must match."""

    @abc.abstractmethod
    def split(self, ranks: Sequence[int], timeout: float) -> Backend | None:
        """Collective over this group: a backend for the subgroup ``ranks`` (None if not in it)."""

    # --- defaults built on the above --------------------------------------------------------
    def all_reduce(self, x: jax.Array, op: ReduceOp, async_op: bool = False) -> Work:
        """Reduction of every rank's ``x``, on every rank."""
        return Work(reduce_arrays(self.all_gather(x).wait(), op))

    def all_reduce_buckets(
        self,
        arrays: Sequence[jax.Array],
        buckets: Sequence[Sequence[int]],
        scale: float,
        async_op: bool = False,
    ) -> Work:
        """Each bucket of ``arrays`` (a list of indices) summed over ranks as one flat buffer
        and multiplied by ``scale``; the result lists every array (those in no bucket as given).

        DDP's gradient averaging (``scale`` = 1 / world size): one collective per bucket.
        """
        total = lambda flat: self.all_reduce(flat, ReduceOp.SUM).wait()  # noqa: E731
        return Work(_buckets.all_reduce_buckets(arrays, buckets, scale, total))

    def reduce(self, x: jax.Array, dst: int, op: ReduceOp, async_op: bool = False) -> Work:
        """Reduction on ``dst``; other ranks get ``x`` back."""
        out = self.all_reduce(x, op).wait()
        return Work(out if self.rank == dst else x)

    def broadcast(self, x: jax.Array, src: int, async_op: bool = False) -> Work:
        """``src``'s ``x`` on every rank (``x`` is a same-shaped template elsewhere)."""
        return Work(self.all_gather(x).wait()[src])

    def reduce_scatter(self, xs: Sequence[jax.Array], op: ReduceOp, async_op: bool = False) -> Work:
        """Rank ``r`` gets the reduction over ranks of ``xs[r]``."""
        outs = [self.all_reduce(x, op).wait() for x in xs]
        return Work(outs[self.rank])

    def all_to_all(self, xs: Sequence[jax.Array], async_op: bool = False) -> Work:
        """Rank ``r`` gets ``[xs_q[r] for q in ranks]``: ``xs[j]`` goes to rank ``j``."""
        rows = self.all_gather(jnp.stack(list(xs))).wait()
        return Work([row[self.rank] for row in rows])

    def gather(self, x: jax.Array, dst: int, async_op: bool = False) -> Work:
        """Every rank's ``x`` on ``dst`` (a list); None elsewhere."""
        xs = self.all_gather(x).wait()
        return Work(xs if self.rank == dst else None)

    def scatter(
        self, template: jax.Array, xs: Sequence[jax.Array] | None, src: int, async_op: bool = False
    ) -> Work:
        """Rank ``r`` gets ``xs[r]`` from ``src``."""
        outs = [
            self.broadcast(xs[r] if xs is not None else template, src).wait()
            for r in range(self.size)
        ]
        return Work(outs[self.rank])

    def barrier(self, async_op: bool = False) -> Work:
        """Returns once every rank of the group has called it."""
        self.all_gather_object(None)
        return Work()

    # --- pipeline transfers (optional) --------------------------------------------------------
    def send_tree(self, tree: Any, dst: int, tag: Any) -> None:
        """Start moving a pytree of arrays to rank ``dst`` under a hashable ``tag``; no block.

        The pipeline runtime's transport. FIFO per (src, dst, tag); the receiver gets the arrays
        on its own device.
        """
        raise NotImplementedError(
            f"the {self.name!r} process-group backend cannot carry pipeline transfers"
        )

    def recv_tree(self, src: int, tag: Any) -> Any:
        """Block until the pytree rank ``src`` sent under ``tag`` arrives; return it."""
        raise NotImplementedError(
            f"the {self.name!r} process-group backend cannot carry pipeline transfers"
        )

    def irecv_tree(self, src: int, tag: Any) -> Work:
        """Post the receive of the next pytree ``src`` sends under ``tag``; ``wait()`` returns it.

        The pipeline runtime posts receives early (torch's RECV actions) and waits right before
        the compute that needs them. This default receives at ``wait()``; backends that can
        start the transfer early override it.
        """
        return _LazyWork(lambda: self.recv_tree(src, tag))

    def abort(self, reason: str) -> None:  # noqa: B027 - optional hook
        """Make every rank's pending and future waits of this group raise ``reason``.

        Called when a rank fails mid-pipeline so that its peers stop at once instead of
        waiting out the timeout. The default does nothing (peers then time out).
        """

    def shutdown(self) -> None:  # noqa: B027 - optional hook
        """Release resources (called by ``destroy_process_group``)."""
