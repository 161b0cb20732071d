"""How activations and gradients travel between pipeline ranks.

The executor moves one pytree of arrays per hand-off, keyed by a tag both sides derive from the
table: ``("F", stage, mb)`` is the input of ``stage`` for microbatch ``mb``, ``("B", stage,
mb)`` the gradient of ``stage``'s output. A SEND starts the transfer and returns; a RECV
*posts* the receive and returns a handle, and the consuming F/B/I waits on it — as torch's
runtime posts ``irecv`` at RECV and waits right before the compute — so a transfer overlaps
whatever the rank computes between the two.

The bytes move through the pipeline group's process-group backend, which is where the two
transports live:

* **in-process** (ranks are threads, :mod:`spx.distributed._thread_backend`): the sender's
  ``jax.device_put`` to the receiver's device, handed over in the receiver's mailbox;
* **cross-process** (one rank per process, :mod:`spx.distributed.multiprocess.p2p`): a
  ``jax.experimental.transfer`` pull from the sender's transfer server, the pytree's shapes
  learned once per tag through the distributed key-value store.

This class adds what the pipeline needs on top of plain point-to-point: the tag namespace, the
posted-receive handles, and the abort that stops every rank when one fails mid-schedule.
"""

from __future__ import annotations

from typing import Any


class _Local:
    """A posted receive that is already complete (single-rank pipelines never receive)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def wait(self) -> Any:
        return self.value


class Transport:
    """Moves pytrees between the ranks of one pipeline group.

    Args:
        group: the ``spx.distributed`` process group of the pipeline ranks, or None for a
            single-rank pipeline (every stage is local; nothing is ever sent).

    Example:
        >>> t = Transport(None)
        >>> t.is_local
        True
    """

    def __init__(self, group: Any) -> None:
        self.group = group
        self._backend = None if group is None else group.backend
        self.is_local = group is None

    def _need_group(self, what: str) -> Any:
        if self._backend is None:
            raise RuntimeError(
                f"a single-rank pipeline was asked to {what}: its table names a stage on "
                "another rank; build the schedule inside an initialized process group"
            )
        return self._backend

    def send(self, tree: Any, dst: int, tag: tuple) -> None:
        """Start sending ``tree`` to group rank ``dst``; returns at once."""
        self._need_group("send").send_tree(tree, dst, ("pp", *tag))

    def post_recv(self, src: int, tag: tuple) -> Any:
        """Post the receive of the pytree group rank ``src`` sends under ``tag``.

        Returns:
            A handle whose ``wait()`` blocks until the pytree is here and returns it (on this
            rank's device), or raises if the group failed meanwhile.
        """
        return self._need_group("receive").irecv_tree(src, ("pp", *tag))

    def abort(self, reason: str) -> None:
        """Make every rank's pending and future pipeline transfers fail with ``reason``."""
        if self._backend is not None:
            self._backend.abort(reason)
