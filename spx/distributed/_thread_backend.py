"""The thread backend: ranks are threads of one process, one JAX device each.

Collectives meet in a *rendezvous*: the k-th collective a rank issues on a group lands in slot k,
every rank deposits its contribution, and each rank then takes what it needs and moves it to its
own device with ``jax.device_put`` (reductions run there, in rank order). Slots are keyed by issue
order, so ``async_op=True`` collectives running in helper threads still pair up correctly.

Point-to-point uses per-(src, tag) channels in the receiver's mailbox: a send moves the array to
the receiver's device and appends it; a recv claims the next ticket of its channel when it is
posted (so several ``irecv`` in flight complete in posting order) and waits for that message.
The hot path is one ``device_put``, one lock and a dict insert per side.

Nothing here polls: waits block on condition variables that are notified by senders, by the last
rank to reach a rendezvous, and by :meth:`World.abort`/:meth:`World.mark_exited` when a rank
fails or ends, so a rank blocked on a dead peer wakes at once and raises.
"""

from __future__ import annotations

import contextlib
import pickle
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax

from spx.distributed.backend import Backend, DistBackendError, Work, run_async
from spx.distributed.reduce_op import ReduceOp, reduce_arrays

# Key of the spawned rank's seat in ``RankContext.extras``.
SEAT_KEY = "spx.distributed.seat"
# Waits are woken explicitly; this bounds the damage of a missed notification.
_BACKSTOP_WAKE = 1.0
_MISSING = object()


@dataclass(frozen=True)
class RankSeat:
    """What ``spawn`` leaves in a rank thread's context for ``init_process_group`` to find."""

    world: World
    rank: int


class _GroupState:
    """State one group's member threads share: the rendezvous slots and the mailboxes."""

    def __init__(self, world: World, members: Sequence[int], name: str) -> None:
        self.world = world
        self.members = tuple(members)
        self.size = len(self.members)
        self.name = name
        self.devices = tuple(world.devices[m] for m in self.members)
        self.cond = threading.Condition()
        self.slots: dict[int, _Slot] = {}
        self.boxes = tuple(_Mailbox() for _ in self.members)


class _Slot:
    __slots__ = ("arrived", "combined", "error", "first", "key", "left", "values")

    def __init__(self, key: tuple, first: int, size: int) -> None:
        self.key = key
        self.first = first
        self.values: list[Any] = [_MISSING] * size
        self.arrived = 0
        self.left = size  # ranks that have not taken their results yet
        self.combined: Any = None
        self.error: str | None = None


class _Channel:
    __slots__ = ("claimed", "msgs", "sent")

    def __init__(self) -> None:
        self.msgs: dict[int, jax.Array] = {}
        self.sent = 0  # tickets handed to senders
        self.claimed = 0  # tickets handed to receivers


class _Mailbox:
    __slots__ = ("channels", "cond")

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.channels: dict[tuple[int, int], _Channel] = {}

    def channel(self, key: tuple[int, int]) -> _Channel:
        """The (src, tag) channel; call with ``cond`` held."""
        ch = self.channels.get(key)
        if ch is None:
            ch = self.channels[key] = _Channel()
        return ch

    def retire(self, key: tuple[int, int], ch: _Channel) -> None:
        """Drop a drained channel (``cond`` held) so that many distinct tags do not pile up.

        Safe because nobody holds a ticket of it: every ticket handed out was delivered and
        taken, and a new channel starts both counters at zero again.
        """
        if not ch.msgs and ch.claimed == ch.sent and self.channels.get(key) is ch:
            del self.channels[key]


class World:
    """State shared by the rank threads of one spawn: devices, groups, failure and exit flags.

    Args:
        devices: one device per rank, in rank order.
    """

    def __init__(self, devices: Sequence[jax.Device]) -> None:
        self.devices = tuple(devices)
        self.size = len(self.devices)
        self.abort_reason: str | None = None
        self.abort_origin: int | None = None  # the rank whose failure aborted the world
        self.exited: set[int] = set()
        self._lock = threading.Lock()
        self._conds: list[threading.Condition] = []
        self._joins = [0] * self.size
        self._defaults: dict[int, _GroupState] = {}
        self._next_group = 0

    def new_state(self, members: Sequence[int]) -> _GroupState:
        """A fresh group over the given global ranks."""
        with self._lock:
            state = _GroupState(self, members, str(self._next_group))
            self._next_group += 1
            self._conds.append(state.cond)
            self._conds.extend(box.cond for box in state.boxes)
        return state

    def join(self, rank: int, timeout: float) -> ThreadBackend:
        """Rank ``rank``'s backend for its next default group (a re-init after destroy gets a
        new group, matched across ranks by how many times each has joined)."""
        with self._lock:
            generation = self._joins[rank]
            self._joins[rank] += 1
            state = self._defaults.get(generation)
        if state is None:
            fresh = self.new_state(range(self.size))
            with self._lock:
                state = self._defaults.setdefault(generation, fresh)
        return ThreadBackend(state, rank, timeout)

    def abort(self, reason: str, origin: int | None = None) -> None:
        """Make every current and future wait of this world raise (first reason wins).

        Args:
            reason: what the waits report.
            origin: the global rank whose failure caused the abort, if a rank's.
        """
        with self._lock:
            if self.abort_reason is None:
                self.abort_reason = reason
                self.abort_origin = origin
        self._wake_all()

    def mark_exited(self, rank: int) -> None:
        """Record that ``rank``'s thread ended; waits that need it raise instead of hanging."""
        with self._lock:
            self.exited.add(rank)
        self._wake_all()

    def _wake_all(self) -> None:
        with self._lock:
            conds = list(self._conds)
        for cond in conds:
            with cond:
                cond.notify_all()


def _wait(
    cond: threading.Condition,
    ready: Callable[[], bool],
    world: World,
    what: str,
    timeout: float,
    gone: Callable[[], list[int]],
) -> None:
    """Block (``cond`` held) until ``ready()``; raise on abort, on a needed peer's exit, or after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not ready():
        if world.abort_reason is not None:
            raise DistBackendError(f"{what} aborted: {world.abort_reason}")
        dead = gone()
        if dead:
            raise DistBackendError(
                f"{what} can never complete: rank(s) {dead} already exited without taking part"
            )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DistBackendError(
                f"{what} timed out after {timeout:g} s; check that every rank issues the "
                "matching call (or raise the timeout in init_process_group/new_group)"
            )
        cond.wait(min(remaining, _BACKSTOP_WAKE))


def _sig(x: Any) -> tuple:
    return tuple(x.shape), str(x.dtype)


def _describe(key: tuple) -> str:
    return f"{key[0]}{key[1:]}"


class ThreadBackend(Backend):
    """One rank's view of a thread-backend group. Created by :meth:`World.join` and ``split``."""

    name = "thread"

    def __init__(self, state: _GroupState, rank: int, timeout: float) -> None:
        super().__init__(rank, state.size, state.devices[rank], state.members, timeout, state.name)
        self._state = state
        self._world = state.world
        self._box = state.boxes[rank]
        self._seq = 0

    # --- rendezvous ---------------------------------------------------------------------------
    def _exchange(
        self, seq: int, key: tuple, value: Any, combine: Callable[[list], Any] | None
    ) -> tuple[list[Any], Any]:
        st, rank = self._state, self.rank
        with st.cond:
            slot = st.slots.get(seq)
            if slot is None:
                slot = st.slots[seq] = _Slot(key, rank, st.size)
            elif slot.key != key and slot.error is None:
                slot.error = (
                    f"collective mismatch in group {st.name!r} at operation #{seq}: rank "
                    f"{st.members[slot.first]} called {_describe(slot.key)} but rank "
                    f"{st.members[rank]} called {_describe(key)}; every rank must issue the same "
                    "collectives in the same order, with matching arguments and shapes"
                )
                st.cond.notify_all()
            values = slot.values
            values[rank] = value
            slot.arrived += 1
            # Count arrivals: ``x in values`` would compare arrays with ``==``.
            if slot.arrived == st.size:
                if combine is not None and slot.error is None:
                    try:
                        slot.combined = combine(values)
                    except Exception as e:
                        slot.error = f"{key[0]} failed: {type(e).__name__}: {e}"
                st.cond.notify_all()
            else:
                _wait(
                    st.cond,
                    lambda: slot.error is not None or slot.arrived == st.size,
                    self._world,
                    f"{key[0]} on rank {st.members[rank]} (group {st.name!r})",
                    self.timeout,
                    lambda: [
                        st.members[i]
                        for i, v in enumerate(values)
                        if v is _MISSING and st.members[i] in self._world.exited
                    ],
                )
            slot.left -= 1
            if slot.left == 0:
                del st.slots[seq]
            if slot.error is not None:
                raise DistBackendError(slot.error)
            return values, slot.combined

    def _collective(
        self,
        key: tuple,
        value: Any,
        finish: Callable[[list[Any], Any], Any],
        async_op: bool,
        combine: Callable[[list], Any] | None = None,
    ) -> Work:
        # The sequence number is taken here, in the issuing thread, so async ops keep their order.
        seq = self._seq
        self._seq += 1

        def run() -> Any:
            return finish(*self._exchange(seq, key, value, combine))

        return run_async(run) if async_op else Work(run())

    def _put(self, x: Any) -> jax.Array:
        return jax.device_put(x, self.device)

    # --- collectives --------------------------------------------------------------------------
    def all_gather(self, x: jax.Array, async_op: bool = False) -> Work:
        return self._collective(
            ("all_gather", *_sig(x)), x, lambda vs, _: [self._put(v) for v in vs], async_op
        )

    def all_gather_object(self, obj: Any) -> list[Any]:
        # Pickle as torch does, so ranks never share (and mutate) one Python object.
        blob = pickle.dumps(obj)
        finish = lambda vs, _: [pickle.loads(v) for v in vs]  # noqa: E731
        return self._collective(("all_gather_object",), blob, finish, False).wait()

    def all_reduce(self, x: jax.Array, op: ReduceOp, async_op: bool = False) -> Work:
        finish = lambda vs, _: reduce_arrays([self._put(v) for v in vs], op)  # noqa: E731
        return self._collective(("all_reduce", op.name, *_sig(x)), x, finish, async_op)

    def reduce(self, x: jax.Array, dst: int, op: ReduceOp, async_op: bool = False) -> Work:
        def finish(vs: list, _: Any) -> jax.Array:
            return reduce_arrays([self._put(v) for v in vs], op) if self.rank == dst else x

        return self._collective(("reduce", dst, op.name, *_sig(x)), x, finish, async_op)

    def broadcast(self, x: jax.Array, src: int, async_op: bool = False) -> Work:
        value = x if self.rank == src else None
        finish = lambda vs, _: self._put(vs[src])  # noqa: E731
        return self._collective(("broadcast", src, *_sig(x)), value, finish, async_op)

    def reduce_scatter(self, xs: Sequence[jax.Array], op: ReduceOp, async_op: bool = False) -> Work:
        def finish(vs: list, _: Any) -> jax.Array:
            return reduce_arrays([self._put(v[self.rank]) for v in vs], op)

        key = ("reduce_scatter", op.name, tuple(_sig(x) for x in xs))
        return self._collective(key, tuple(xs), finish, async_op)

    def all_to_all(self, xs: Sequence[jax.Array], async_op: bool = False) -> Work:
        def finish(vs: list, _: Any) -> list[jax.Array]:
            return [self._put(v[self.rank]) for v in vs]

        key = ("all_to_all", tuple(_sig(x) for x in xs))
        return self._collective(key, tuple(xs), finish, async_op)

    def gather(self, x: jax.Array, dst: int, async_op: bool = False) -> Work:
        def finish(vs: list, _: Any) -> list[jax.Array] | None:
            return [self._put(v) for v in vs] if self.rank == dst else None

        return self._collective(("gather", dst, *_sig(x)), x, finish, async_op)

    def scatter(
        self, template: jax.Array, xs: Sequence[jax.Array] | None, src: int, async_op: bool = False
    ) -> Work:
        value = tuple(xs) if self.rank == src else None
        finish = lambda vs, _: self._put(vs[src][self.rank])  # noqa: E731
        return self._collective(("scatter", src, *_sig(template)), value, finish, async_op)

    def barrier(self, async_op: bool = False) -> Work:
        return self._collective(("barrier",), True, lambda vs, _: None, async_op)

    def split(self, ranks: Sequence[int], timeout: float) -> ThreadBackend | None:
        ranks = tuple(ranks)
        members = [self.ranks[r] for r in ranks]

        def finish(_: list, state: _GroupState) -> ThreadBackend | None:
            return (
                ThreadBackend(state, ranks.index(self.rank), timeout)
                if self.rank in ranks
                else None
            )

        combine = lambda _: self._world.new_state(members)  # noqa: E731
        return self._collective(("new_group", ranks), True, finish, False, combine).wait()

    # --- point to point -----------------------------------------------------------------------
    def send(self, x: jax.Array, dst: int, tag: int) -> Work:
        # The sender starts the copy to the receiver's device: it overlaps the receiver's work.
        y = jax.device_put(x, self._state.devices[dst])
        box = self._state.boxes[dst]
        with box.cond:
            ch = box.channel((self.rank, tag))
            ch.msgs[ch.sent] = y
            ch.sent += 1
            box.cond.notify_all()
        return _SENT

    def recv(self, template: Any, src: int | None, tag: int) -> Work:
        if src is None:
            return _AnyRecvWork(self, template, tag)
        box = self._box
        with box.cond:
            ch = box.channel((src, tag))
            ticket = ch.claimed
            ch.claimed += 1
        return _RecvWork(self, template, src, tag, ch, ticket)

    # --- pipeline transfers -------------------------------------------------------------------
    def send_tree(self, tree: Any, dst: int, tag: Any) -> None:
        # One device_put for the whole pytree, started by the sender so the copy overlaps the
        # receiver's work; the channel keeps the arrays alive until they are taken.
        y = jax.device_put(tree, self._state.devices[dst])
        box = self._state.boxes[dst]
        with box.cond:
            ch = box.channel((self.rank, tag))
            ch.msgs[ch.sent] = y
            ch.sent += 1
            box.cond.notify_all()

    def recv_tree(self, src: int, tag: Any) -> Any:
        return self.irecv_tree(src, tag).wait()

    def irecv_tree(self, src: int, tag: Any) -> Work:
        # Claim the ticket now, so receives posted for one (src, tag) complete in posting order.
        box = self._box
        with box.cond:
            ch = box.channel((src, tag))
            ticket = ch.claimed
            ch.claimed += 1
        return _TreeRecvWork(self, src, tag, ch, ticket)

    def abort(self, reason: str) -> None:
        self._world.abort(reason, origin=self.ranks[self.rank])


_SENT = Work()  # sends complete on return (the channel holds the array); one shared handle


def _check_template(work: _RecvWork | _AnyRecvWork, y: jax.Array) -> None:
    """Fail ``work`` (and raise) when the received array does not fit its template."""
    template = work._template
    if y.shape != tuple(template.shape) or y.dtype != template.dtype:
        work._result = None
        work._error = ValueError(
            f"recv from rank {work.source_rank} (tag {work._tag}): the sender sent shape "
            f"{tuple(y.shape)} {y.dtype}, but the receive buffer is shape "
            f"{tuple(template.shape)} {template.dtype}; pass a template with the sent shape "
            "and dtype (the mismatched message is consumed)"
        )
        raise work._error


class _RecvWork(Work):
    """A posted receive: owns ticket ``ticket`` of channel (src, tag)."""

    __slots__ = ("_backend", "_ch", "_src", "_tag", "_template", "_ticket", "source_rank")

    def __init__(
        self, b: ThreadBackend, template: Any, src: int, tag: int, ch: _Channel, ticket: int
    ) -> None:
        super().__init__()
        self._done = False
        self._backend, self._template, self._src, self._tag = b, template, src, tag
        self._ch, self._ticket = ch, ticket
        self.source_rank = b.ranks[src]

    def _take(self) -> None:
        # Called with the mailbox lock held, once the message is there. A message that does not
        # fit the template is consumed all the same: its ticket belongs to this receive.
        ch = self._ch
        y = ch.msgs.pop(self._ticket)
        self._backend._box.retire((self._src, self._tag), ch)
        self._done = True
        self._result = y
        _check_template(self, y)

    def _finish(self, timeout: float | None) -> None:
        b, ch, ticket = self._backend, self._ch, self._ticket
        cond = b._box.cond
        with cond:
            if self._done:
                return
            if ticket not in ch.msgs:
                src = self.source_rank
                _wait(
                    cond,
                    lambda: ticket in ch.msgs,
                    b._world,
                    f"recv on rank {b.ranks[b.rank]} from rank {src} (tag {self._tag})",
                    b.timeout if timeout is None else timeout,
                    lambda: [src] if src in b._world.exited and ticket >= ch.sent else [],
                )
            self._take()

    def _poll(self) -> None:
        with self._backend._box.cond:
            if not self._done and self._ticket in self._ch.msgs:
                with contextlib.suppress(ValueError):  # kept in self._error for wait()
                    self._take()


class _TreeRecvWork(Work):
    """A posted pipeline receive: owns ticket ``ticket`` of channel (src, tag)."""

    __slots__ = ("_backend", "_ch", "_src", "_tag", "_ticket")

    def __init__(self, b: ThreadBackend, src: int, tag: Any, ch: _Channel, ticket: int) -> None:
        super().__init__()
        self._done = False
        self._backend, self._src, self._tag, self._ch, self._ticket = b, src, tag, ch, ticket

    def _finish(self, timeout: float | None) -> None:
        b, ch, ticket = self._backend, self._ch, self._ticket
        box = b._box
        with box.cond:
            if ticket not in ch.msgs:
                src = b.ranks[self._src]
                _wait(
                    box.cond,
                    lambda: ticket in ch.msgs,
                    b._world,
                    f"pipeline recv on rank {b.ranks[b.rank]} from rank {src} ({self._tag})",
                    b.timeout if timeout is None else timeout,
                    lambda: [src] if src in b._world.exited and ticket >= ch.sent else [],
                )
            self._result = ch.msgs.pop(ticket)
            box.retire((self._src, self._tag), ch)
        self._done = True


class _AnyRecvWork(Work):
    """A receive from any source: takes the first waiting message with its tag at wait time."""

    __slots__ = ("_backend", "_tag", "_template", "source_rank")

    def __init__(self, b: ThreadBackend, template: Any, tag: int) -> None:
        super().__init__()
        self._done = False
        self._backend, self._template, self._tag = b, template, tag
        self.source_rank = -1

    def _ready(self) -> tuple[tuple[int, int], _Channel] | None:
        for key, ch in self._backend._box.channels.items():
            if key[1] == self._tag and ch.claimed < ch.sent:
                self.source_rank = self._backend.ranks[key[0]]
                return key, ch
        return None

    def _take(self, found: tuple[tuple[int, int], _Channel]) -> None:
        key, ch = found
        y = ch.msgs.pop(ch.claimed)
        ch.claimed += 1
        self._backend._box.retire(key, ch)
        self._done = True
        self._result = y
        _check_template(self, y)

    def _finish(self, timeout: float | None) -> None:
        b = self._backend
        cond = b._box.cond
        with cond:
            if self._done:
                return
            others = [r for r in b.ranks if r != b.ranks[b.rank]]
            _wait(
                cond,
                lambda: self._ready() is not None,
                b._world,
                f"recv on rank {b.ranks[b.rank]} from any rank (tag {self._tag})",
                b.timeout if timeout is None else timeout,
                lambda: others if others and all(r in b._world.exited for r in others) else [],
            )
            self._take(self._ready())

    def _poll(self) -> None:
        with self._backend._box.cond:
            found = None if self._done else self._ready()
            if found is not None:
                with contextlib.suppress(ValueError):  # kept in self._error for wait()
                    self._take(found)
