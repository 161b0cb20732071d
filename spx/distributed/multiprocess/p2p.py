"""Point-to-point between processes with ``jax.experimental.transfer``.

Every process runs one transfer server, bound to its local address (``ProcessRuntime.
local_addr``; loopback stays loopback), publishes the server's address once in the job's
key-value store and keeps one connection per peer it receives from. A message is a pytree of
arrays sent on a *channel* ``(group, src, dst, tag)``:

* The sender hands the arrays to its server (``await_pull``, non-blocking; the server keeps them
  alive) under a uuid both sides derive from ``(channel, sequence number, version)``: a 63-bit
  hash, deterministic, never exchanged. Messages on a channel keep their order.
* The receiver pulls that uuid with the message's shapes (``pull`` needs them up front). It
  learns them once per channel: the sender publishes the pytree structure, shapes and dtypes
  of each *version* (``spx/p2p/<channel>/v<k>``) the first time it sends something of that
  structure; the receiver reads version 0 on its first receive and caches it.
* Every message carries a one-element header. When a sender's structure changes, it publishes
  version k+1 and serves a *redirect* (header 1, zeros of version k's shapes) under the old
  uuid, then the data under the new one: a receiver that pulled with its cached shapes follows
  the redirect. So steady-state messages cost one pull and no key-value round trip, and a
  receiver never misreads a message with the wrong shapes.
* A ``recv`` with a template checks it against the message's true shapes and raises the same
  ``ValueError`` as the thread backend when they differ (the message is consumed).

Waits block in ``block_until_ready`` (no polling) under the watchdog (:mod:`.lifecycle`), which
ends a rank that waits on a peer that failed, exited or timed out. A receive from any source
(``src=None``) is not supported across processes.
"""

from __future__ import annotations

import contextlib
import hashlib
import pickle
import threading
from collections import deque
from typing import Any

import jax
import numpy as np
from jax.experimental import transfer
from jax.sharding import SingleDeviceSharding

from spx._tensor.tensor import Tensor
from spx.distributed.backend import Work

_HEADER_DATA, _HEADER_REDIRECT = 0, 1


def _uuid(channel: str, seq: int, version: int) -> int:
    digest = hashlib.blake2b(f"{channel}#{seq}#{version}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)


def _meta(leaves: list[jax.Array], treedef: Any) -> tuple:
    # numpy dtypes, not their names: ``dtype.name`` builds a string on every call, and this
    # runs for every message (a dtype equals its name, so templates of names still compare).
    return treedef, tuple((x.shape, x.dtype) for x in leaves)


def describe(meta: tuple) -> str:
    """``shape dtype`` of a single array message, else the tree and its leaves."""
    treedef, leaves = meta
    if treedef == jax.tree_util.tree_structure(0) and len(leaves) == 1:
        return f"shape {leaves[0][0]} {leaves[0][1]}"
    return f"{treedef} with leaves " + ", ".join(f"{s} {d}" for s, d in leaves)


class _SendState:
    __slots__ = ("meta", "seq", "version")

    def __init__(self) -> None:
        self.seq = 0
        self.version = -1
        self.meta: tuple | None = None


class _RecvState:
    __slots__ = ("local", "meta", "pending", "seq", "version")

    def __init__(self) -> None:
        self.seq = 0  # next sequence number to claim
        self.version = -1  # version of the last message received (-1: none yet)
        self.meta: tuple | None = None
        self.pending: deque[_PullWork] = deque()  # claimed, not yet received, in order
        self.local: dict[int, tuple] = {}  # messages this rank sent to itself, by seq


class Transfers:
    """This process's transfer server, its connections and its channels.

    Args:
        runtime: the process's :class:`~spx.distributed.multiprocess.runtime.ProcessRuntime`.
        timeout: how long a wait may take (a peer's address, a channel's shapes, a message).
    """

    def __init__(self, runtime: Any, timeout: float) -> None:
        self.runtime = runtime
        self.rank = runtime.rank
        self.device = runtime.device
        self.timeout = timeout
        self._sharding = SingleDeviceSharding(self.device)
        addr = runtime.local_addr
        host = f"[{addr}]" if ":" in addr else addr
        self.server = transfer.start_transfer_server(self.device.client, f"{host}:0", [f"{host}:0"])
        runtime.kv.set(f"spx/p2p/addr/{self.rank}", self.server.address())
        self._lock = threading.Lock()
        self._connect_lock = threading.Lock()  # held while looking up a peer (a blocking get)
        self._connections: dict[int, Any] = {}
        self._send: dict[str, _SendState] = {}
        self._recv: dict[str, _RecvState] = {}
        self._specs: dict[tuple, list[jax.ShapeDtypeStruct]] = {}
        self._headers = {
            h: jax.device_put(np.full((1,), h, np.int32), self.device)
            for h in (_HEADER_DATA, _HEADER_REDIRECT)
        }

    # -- sending ------------------------------------------------------------------------------
    def send(self, tree: Any, channel: str, dst: int) -> None:
        """Start sending ``tree`` to global rank ``dst`` on ``channel``; never blocks."""
        leaves, treedef = jax.tree_util.tree_flatten(tree)
        leaves = [self._place(x) for x in leaves]
        meta = _meta(leaves, treedef)
        with self._lock:
            state = self._send.get(channel)
            if state is None:
                state = self._send[channel] = _SendState()
            seq = state.seq
            state.seq += 1
            if dst == self.rank:  # to itself: no transfer, the message waits in the channel
                self._recv_state(channel).local[seq] = (meta, leaves)
                return
            if meta != state.meta:
                self._new_version(channel, state, meta, seq)
            uuid = _uuid(channel, seq, state.version)
        self.server.await_pull(uuid, [self._headers[_HEADER_DATA], *leaves])

    def _place(self, x: Any) -> jax.Array:
        if isinstance(x, Tensor):
            x = x._data
        if isinstance(x, jax.Array) and x.devices() == {self.device}:
            return x
        return jax.device_put(x, self.device)

    def _new_version(self, channel: str, state: _SendState, meta: tuple, seq: int) -> None:
        try:
            blob = pickle.dumps(meta)
        except Exception as e:
            raise TypeError(
                f"cannot send a pytree of structure {meta[0]} to another process: its "
                f"structure does not pickle ({type(e).__name__}: {e}); send lists, tuples or "
                "dicts of arrays"
            ) from None
        old_version, old_meta = state.version, state.meta
        state.version += 1
        state.meta = meta
        self.runtime.kv.set(f"spx/p2p/{channel}/v{state.version}", blob)
        if old_meta is not None:
            # The receiver pulls this message with the old shapes: point it to the new ones.
            zeros = [
                jax.device_put(np.zeros(shape, dtype), self.device) for shape, dtype in old_meta[1]
            ]
            self.server.await_pull(
                _uuid(channel, seq, old_version), [self._headers[_HEADER_REDIRECT], *zeros]
            )

    # -- receiving ----------------------------------------------------------------------------
    def _recv_state(self, channel: str) -> _RecvState:
        state = self._recv.get(channel)
        if state is None:
            state = self._recv[channel] = _RecvState()
        return state

    def post(self, channel: str, src: int, template: tuple | None = None) -> _PullWork:
        """Claim the next message of ``channel`` from global rank ``src``; start pulling it when
        its shapes are known. ``wait()`` returns the pytree (or raises).

        Args:
            channel: the channel id (group, src, dst, tag).
            src: the sender's global rank.
            template: ``(shape, dtype name)`` the message must have (``recv``), or None.
        """
        with self._lock:
            state = self._recv_state(channel)
            seq = state.seq
            state.seq += 1
            work = _PullWork(self, channel, src, state, seq, template)
            # With nothing before it in flight, the cached shapes are those of the message
            # before this one: pull now (a redirect corrects them if they changed).
            pull_now = src != self.rank and not state.pending and state.meta is not None
            state.pending.append(work)
            meta, version = state.meta, state.version
        if pull_now:
            work._pull(meta, version)
        return work

    def connection(self, src: int) -> Any:
        """The (one, cached) connection to global rank ``src``'s transfer server."""
        conn = self._connections.get(src)
        if conn is not None:
            return conn
        with self._connect_lock:
            conn = self._connections.get(src)
            if conn is None:
                what = f"looking up rank {src}'s transfer server"
                with self.runtime.watchdog.blocking(what, [src], self.timeout):
                    addr = self.runtime.kv.get(f"spx/p2p/addr/{src}", self.timeout, what)
                conn = self._connections[src] = self.server.connect(addr.decode())
        return conn

    def version_meta(self, channel: str, version: int, src: int) -> tuple:
        key = f"spx/p2p/{channel}/v{version}"
        what = f"the shapes of {channel} (version {version})"
        with self.runtime.watchdog.blocking(what, [src], self.timeout):
            blob = self.runtime.kv.get(key, self.timeout, f"rank {self.rank} waiting for {what}")
        return pickle.loads(blob)

    def specs(self, meta: tuple) -> list[jax.ShapeDtypeStruct]:
        """What ``pull`` allocates for a message of ``meta`` (cached: built once per shape)."""
        specs = self._specs.get(meta)
        if specs is None:
            specs = self._specs[meta] = [
                jax.ShapeDtypeStruct((1,), np.int32, sharding=self._sharding),
                *(
                    jax.ShapeDtypeStruct(s, np.dtype(d), sharding=self._sharding)
                    for s, d in meta[1]
                ),
            ]
        return specs

    def drain(self) -> None:
        """Finish every receive this process posted (before it announces its exit)."""
        with self._lock:
            works = [w for state in self._recv.values() for w in state.pending]
        for work in works:
            if not work._done and work._src != self.rank:
                with contextlib.suppress(Exception):
                    work.wait()


class _PullWork(Work):
    """A posted receive: message ``seq`` of a channel."""

    __slots__ = ("_arrays", "_channel", "_meta", "_owner", "_seq", "_src", "_state", "_template")
    __slots__ += ("_version", "source_rank")

    def __init__(
        self,
        owner: Transfers,
        channel: str,
        src: int,
        state: _RecvState,
        seq: int,
        template: tuple | None,
    ) -> None:
        super().__init__()
        self._done = False
        self._owner, self._channel, self._src, self._state = owner, channel, src, state
        self._seq, self._template = seq, template
        self._arrays: list[jax.Array] | None = None
        self._meta: tuple | None = None
        self._version = -1
        self.source_rank = src

    def _pull(self, meta: tuple, version: int) -> None:
        owner = self._owner
        conn = owner.connection(self._src)
        self._meta, self._version = meta, version
        self._arrays = conn.pull(_uuid(self._channel, self._seq, version), owner.specs(meta))

    def _poll(self) -> None:
        # Complete without blocking only if this is the channel's next message and it is here.
        state = self._state
        if not (state.pending and state.pending[0] is self):
            return
        if self._src == self._owner.rank:
            if self._seq in state.local:
                self._finish(None)
            return
        if self._arrays is None and state.meta is None:
            # The channel's first message: start pulling once its shapes are published.
            blob = self._owner.runtime.kv.try_get(f"spx/p2p/{self._channel}/v0")
            if blob is not None:
                self._pull(pickle.loads(blob), 0)
        if self._arrays is not None and all(a.is_ready() for a in self._arrays):
            self._finish(None)

    def _finish(self, timeout: float | None) -> None:
        owner, state = self._owner, self._state
        # Messages of a channel arrive in order: finish the ones posted before this one.
        while True:
            with owner._lock:
                first = state.pending[0] if state.pending else self
            if first is self:
                break
            first.wait()
        try:
            if self._src == owner.rank:
                meta, leaves = self._take_local()
            else:
                meta, leaves = self._receive()
            self._check(meta)
            self._result = meta[0].unflatten(leaves)
        except Exception as e:
            self._error = e
        finally:
            self._done = True
            with owner._lock:
                if state.pending and state.pending[0] is self:
                    state.pending.popleft()

    def _take_local(self) -> tuple[tuple, list[jax.Array]]:
        state = self._state
        with self._owner._lock:
            message = state.local.pop(self._seq, None)
        if message is None:
            raise RuntimeError(
                f"rank {self._src} waits for a message it sends to itself ({self._channel}) "
                "that it has not sent yet; call isend before waiting on the irecv"
            )
        return message

    def _receive(self) -> tuple[tuple, list[jax.Array]]:
        owner, state = self._owner, self._state
        if self._arrays is None:
            with owner._lock:
                meta, version = state.meta, state.version
            if meta is None:  # the channel's first message: read its shapes
                version = 0
                meta = owner.version_meta(self._channel, 0, self._src)
            self._pull(meta, version)
        what = f"a receive from rank {self._src} ({self._channel})"
        watchdog = owner.runtime.watchdog
        while True:
            with watchdog.blocking(what, [self._src], owner.timeout):
                try:
                    jax.block_until_ready(self._arrays)
                except Exception as e:  # the peer's connection closed: it failed or exited
                    raise watchdog.explain(what, e) from e
            header, *leaves = self._arrays
            self._arrays = None
            if int(np.asarray(header)[0]) == _HEADER_DATA:
                with owner._lock:
                    state.version, state.meta = self._version, self._meta
                return self._meta, leaves
            # A redirect: this message has the next version's shapes.
            version = self._version + 1
            self._pull(owner.version_meta(self._channel, version, self._src), version)

    def _check(self, meta: tuple) -> None:
        template = self._template
        if template is not None and (len(meta[1]) != 1 or meta[1][0] != template):
            raise ValueError(
                f"recv from rank {self._src} ({self._channel}): the sender sent "
                f"{describe(meta)}, but the receive buffer is shape {template[0]} "
                f"{template[1]}; pass a template with the sent shape and dtype (the "
                "mismatched message is consumed)"
            )
