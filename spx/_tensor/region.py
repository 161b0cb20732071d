"""A region of recorded operations collapsed into one node run under ``jax.checkpoint``.

``spx.utils.checkpoint`` (torch's activation checkpointing) calls a function while
:class:`Recorder` notes every node created on this thread, then :func:`collapse` replaces the
nodes between the region's inputs and its outputs by one node. That node's function replays
them inside ``jax.checkpoint``: the backward pass keeps only the region's inputs and computes
the activations inside again, which is what torch's checkpoint does with its saved tensors.

What is an input of the region: anything its nodes read that was not created inside it —
parameters (their grad-leaf nodes), values computed before, tensors the function closed over,
Python scalars. Nodes are noted through the thread's pending list (every new storage is
appended there), so recording costs nothing outside a region.
"""

from __future__ import annotations

from typing import Any

import jax

from spx._tensor import graph, program
from spx._tensor.graph import LEAF, Node


class _Noting(list):
    """The thread's pending list while a region records: also keeps each storage's node."""

    def __init__(self) -> None:
        super().__init__()
        self.nodes: list[Node] = []  # strong: temporaries die with their Tensors, not here

    def append(self, ref: Any) -> None:
        super().append(ref)
        storage = ref()
        if storage is not None:
            self.nodes.append(storage.node)


class Recorder:
    """``with Recorder() as r:`` notes the nodes created inside; ``r.nodes`` after the block.

    ``r.complete`` is False when something inside computed the pending values (``.item()``,
    printing): the pending list was taken and noting stopped there.
    """

    def __enter__(self) -> Recorder:
        state = graph.STATE
        self._outer = state.pending
        self._noting = _Noting()
        state.pending = self._noting
        return self

    def __exit__(self, *exc: Any) -> None:
        state = graph.STATE
        current = state.pending
        self.complete = current is self._noting
        self.nodes = self._noting.nodes if self.complete else []
        state.pending = self._outer
        for ref in current:  # what is still pending joins the outer list (and its noting)
            self._outer.append(ref)


def collapse(outputs: list[tuple[Node, int]], nodes: list[Node]) -> Node | None:
    """One node computing ``outputs`` from the region's inputs under ``jax.checkpoint``.

    Args:
        outputs: ``(node, idx)`` of each output tensor.
        nodes: the nodes created in the region, in creation order (a topological order).

    Returns:
        The new node (output ``k`` is ``outputs[k]``), or None when no output was computed in
        the region (nothing to checkpoint). Give it only outputs that require grad: the new
        node requires grad as a whole.
    """
    inside_ids = {id(n) for n in nodes if n.values is None and n.fn is not LEAF}
    reached: set[int] = set()
    stack = [n for n, _ in outputs if id(n) in inside_ids]
    while stack:
        n = stack.pop()
        if id(n) in reached:
            continue
        reached.add(id(n))
        for inp in n.inputs:
            if type(inp) is tuple and id(inp[0]) in inside_ids:
                stack.append(inp[0])
    if not reached:
        return None
    order = [n for n in nodes if id(n) in reached]
    # Slots: the region's inputs first (deduplicated; each Python scalar its own), then each
    # replayed node's outputs.
    boundary: list[Any] = []
    seen: dict[tuple[int, int], int] = {}
    input_slots: list[list[int]] = []
    for n in order:
        slots = []
        for ref in n.inputs:
            if type(ref) is tuple and id(ref[0]) in reached:
                slots.append(-1)  # filled below, once every input has its slot
                continue
            key = (id(ref[0]), ref[1]) if type(ref) is tuple else None
            if key is not None and key in seen:
                slots.append(seen[key])
                continue
            slots.append(len(boundary))
            if key is not None:
                seen[key] = len(boundary)
            boundary.append(ref)
        input_slots.append(slots)
    first: dict[int, int] = {}
    cursor = len(boundary)
    for n in order:
        first[id(n)] = cursor
        cursor += len(n.avals)

    def slot(ref: Any) -> int:
        if type(ref) is tuple and id(ref[0]) in first:
            return first[id(ref[0])] + ref[1]
        return seen[(id(ref[0]), ref[1])]

    entries = []
    for n, slots in zip(order, input_slots, strict=True):
        ins = tuple(s if s >= 0 else slot(r) for s, r in zip(slots, n.inputs, strict=True))
        # A node recorded without grad (under no_grad inside the function) is a constant for
        # autograd, as in torch: its outputs are cut from the gradient when replayed.
        entries.append((n.fn, n.static, ins, first[id(n)], len(n.avals), not n.requires_grad))
    plan = (tuple(entries), tuple(slot(o) for o in outputs), cursor)
    avals = tuple(n.avals[idx] for n, idx in outputs)
    requires_grad = any(type(r) is tuple and r[0].requires_grad for r in boundary)
    return Node(_checkpointed, (plan,), tuple(boundary), avals, None, requires_grad)


def _checkpointed(*values_and_plan: Any) -> Any:
    """The region's outputs from its inputs, under ``jax.checkpoint`` (recomputed in the
    backward pass instead of kept)."""
    *values, plan = values_and_plan
    entries, out_slots, n_slots = plan

    def replay(*inputs: Any) -> tuple:
        env: list[Any] = [None] * n_slots
        env[: len(inputs)] = inputs
        for fn, static, ins, at, n_out, constant in entries:
            out = fn(*[env[s] for s in ins], *static)
            if constant:
                out = jax.tree_util.tree_map(jax.lax.stop_gradient, out)
            if n_out == 1:
                env[at] = out
            else:
                env[at : at + n_out] = out
        return tuple(env[s] for s in out_slots)

    outs = jax.checkpoint(replay)(*values)
    return outs[0] if len(outs) == 1 else outs


# A checkpointed region is one node whose outputs torch's graph connects to inputs separately:
# a backward through some of them leaves .grad None for inputs feeding only the others.
program.COARSE.add(_checkpointed)
