"""How activations and gradients travel between pipeline ranks.

A transport moves one pytree of arrays from this rank to another, keyed by a tag both sides
compute from the schedule (``("F", stage, microbatch)``: the input of ``stage`` for that
microbatch; ``("B", stage, microbatch)``: the output gradient of ``stage``). Sends never block;
a receive blocks until the matching send arrived (or the group failed). The pipeline runtime
needs nothing else, so every process-group backend that implements ``send_tree`` /
``recv_tree`` (the thread backend: a ``jax.device_put`` to the receiver's device and a
mailbox; a multi-process backend: ``jax.experimental.transfer``) carries pipelines.
"""

from __future__ import annotations

from typing import Any


class Transport:
    """Moves pytrees between the ranks of one pipeline group.

    Args:
        group: the ``spx.distributed`` process group of the pipeline ranks, or None for a
            single-rank pipeline (every stage local; nothing is ever sent).
    """

    def __init__(self, group: Any) -> None:
        self.group = group
        self._backend = None if group is None else group.backend

    def send(self, tree: Any, dst: int, tag: tuple) -> None:
        """Start sending ``tree`` to group rank ``dst``; returns at once."""
        self._backend.send_tree(tree, dst, tag)

    def recv(self, src: int, tag: tuple) -> Any:
        """Block until the pytree sent by group rank ``src`` under ``tag`` arrives."""
        return self._backend.recv_tree(src, tag)
