"""Lowering: turn a compute-only table into the table the runtime executes, as torch does.

Every schedule lowers its table at construction (``pipeline_order_with_comms``, and the eval
table) and :mod:`spx.distributed.pipelining.runtime.executor` runs the result: its SEND/RECV
actions decide where each transfer starts and where each receive is posted.

torch's ``_PipelineScheduleRuntime._prepare_schedule_with_comms`` lowers ``pipeline_order`` in
three passes, reproduced here so that `_lower_schedule` equals torch's
``pipeline_order_with_comms``:

1. `_add_unshard_reshard` (per rank): UNSHARD a stage before its compute and RESHARD it when it
   drops out of the next few stages used (FSDP prefetching; a no-op without FSDP).
2. `_add_reduce_grad` (per rank): drop bubbles and put ``REDUCE_GRAD`` right after each
   stage's last backward (where gradients get scaled by 1/n_microbatches).
3. `_add_send_recv` (global): after each F / B / I whose neighbour stage lives on another
   rank, add a SEND on this rank and the matching RECV on the neighbour's rank, at the point
   where a rank-by-rank replay reaches it. Neighbour stages on the same rank exchange locally,
   with no comm actions (the V turn, or one rank holding every stage).

Optionally `_defer_recv_ops` (torch's ``defer_pp_recv=True``) moves each RECV as late as
possible while keeping the lower rank's RECV before its SEND to the same peer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from spx.distributed.pipelining.tables.ir import (
    BACKWARD_INPUT,
    BACKWARD_WEIGHT,
    FORWARD,
    FULL_BACKWARD,
    RECV_B,
    RECV_F,
    REDUCE_GRAD,
    RESHARD,
    SEND_B,
    SEND_F,
    UNSHARD,
    PipelineOrder,
    _Action,
    _format_pipeline_order,
)
from spx.distributed.pipelining.tables.simulate import _validate_schedule

__all__ = [
    "_add_reduce_grad",
    "_add_send_recv",
    "_add_unshard_reshard",
    "_defer_recv_ops",
    "_lower_schedule",
    "_strip_backward",
]

StageToRank = Mapping[int, int] | Callable[[int], int]
# Which receive feeds a compute action.
_RECV_FOR = {FORWARD: RECV_F, FULL_BACKWARD: RECV_B, BACKWARD_INPUT: RECV_B}


def _as_fn(stage_to_rank: StageToRank) -> Callable[[int], int]:
    return stage_to_rank if callable(stage_to_rank) else stage_to_rank.__getitem__


def _add_reduce_grad(actions: Sequence[_Action | None], n_microbatches: int) -> list[_Action]:
    """Drop bubbles and add ``REDUCE_GRAD`` after each stage's ``n_microbatches``-th B or W.

    Example:
        >>> acts = [_Action(0, FORWARD, 0), None, _Action(0, FULL_BACKWARD, 0)]
        >>> [str(a) for a in _add_reduce_grad(acts, 1)]
        ['0F0', '0B0', '0REDUCE_GRAD']
    """
    counts: dict[int, int] = {}
    out: list[_Action] = []
    for action in actions:
        if action is None:
            continue
        out.append(action)
        for leaf in action.leaves():
            if leaf.computation_type in (FULL_BACKWARD, BACKWARD_WEIGHT):
                counts[leaf.stage_index] = counts.get(leaf.stage_index, 0) + 1
                if counts[leaf.stage_index] == n_microbatches:
                    out.append(_Action(leaf.stage_index, REDUCE_GRAD, None))
    return out


def _next_stages(count: int, actions: Sequence[_Action | None], start: int) -> list[int]:
    """The next ``count`` distinct stages to compute from ``actions[start]`` on, in order of
    first use (torch's rule: an OVERLAP_F_B contributes all its stages even past ``count``)."""
    found: list[int] = []
    for i in range(start, len(actions)):
        action = actions[i]
        if action is None:
            continue
        for leaf in action.leaves():
            if leaf.stage_index not in found:
                found.append(leaf.stage_index)
                if len(found) == count and action.sub_actions is None:
                    return found
        if len(found) >= count:
            return found
    return found


def _add_unshard_reshard(
    actions: Sequence[_Action | None], max_active_stages: int = 3
) -> list[_Action]:
    """Drop bubbles and keep at most ``max_active_stages`` stages unsharded (FSDP prefetch).

    Before each action, stages no longer among the next ``max_active_stages`` are resharded
    and upcoming ones unsharded; everything is resharded at the end.

    Example:
        >>> acts = [_Action(0, FORWARD, 0), _Action(2, FORWARD, 0)]
        >>> [str(a) for a in _add_unshard_reshard(acts)]
        ['0UNSHARD', '2UNSHARD', '0F0', '0RESHARD', '2F0', '2RESHARD']
    """
    # A set, like torch, so that evictions come out in the same order as torch's.
    active: set[int] = set()
    out: list[_Action] = []
    for i, action in enumerate(actions):
        if action is None:
            continue
        upcoming = _next_stages(max_active_stages, actions, i)
        fetch = [s for s in upcoming if s not in active]
        evict = [s for s in active if s not in upcoming]
        for s in evict:
            active.remove(s)
            out.append(_Action(s, RESHARD, None))
        for s in fetch:
            active.add(s)
            out.append(_Action(s, UNSHARD, None))
        out.append(action)
    for s in list(active):
        out.append(_Action(s, RESHARD, None))
    return out


def _add_send_recv(
    compute_actions: Mapping[int, Sequence[_Action | None]],
    stage_to_rank: StageToRank,
    num_stages: int,
) -> dict[int, list[_Action]]:
    """Insert SEND/RECV pairs for every cross-rank hand-off (torch's ``_add_send_recv``).

    The ranks are replayed round-robin; a rank's next compute is placed once its input is
    available on that rank (its RECV was placed, or the producing stage is local and ran).
    Placing an F/B/I whose neighbour is remote appends the SEND after it and the matching RECV
    to the neighbour's rank at that moment, so every RECV follows its SEND in a global order
    consistent with every rank's order: the result cannot deadlock.

    Args:
        compute_actions: rank -> compute (and bookkeeping) actions; bubbles are dropped.
        stage_to_rank: where each stage lives (mapping or function).
        num_stages: total stages (the last stage's B needs no gradient from the right).

    Returns:
        rank -> actions with SEND_F/RECV_F/SEND_B/RECV_B, no bubbles.

    Raises:
        ValueError: the compute order can never make progress (a rank needs an input that
            only comes after something it has not run yet).
    """
    rank_of = _as_fn(stage_to_rank)
    pending = {r: list(compute_actions[r]) for r in sorted(compute_actions)}
    out: dict[int, list[_Action]] = {r: [] for r in pending}
    have: dict[int, set[_Action]] = {r: set() for r in pending}

    def remote(stage: int, neighbour: int) -> bool:
        return 0 <= neighbour < num_stages and rank_of(neighbour) != rank_of(stage)

    def comms(a: _Action) -> tuple[_Action, _Action] | None:
        s, t, k = a.stage_index, a.computation_type, a.microbatch_index
        if t == FORWARD and remote(s, s + 1):
            return _Action(s, SEND_F, k), _Action(s + 1, RECV_F, k)
        if t in (FULL_BACKWARD, BACKWARD_INPUT) and remote(s, s - 1):
            return _Action(s, SEND_B, k), _Action(s - 1, RECV_B, k)
        return None

    def ready(a: _Action | None, seen: set[_Action]) -> bool:
        if a is None:
            return True
        s, t, k = a.stage_index, a.computation_type, a.microbatch_index
        if t == FORWARD and s != 0:
            return not seen.isdisjoint({_Action(s, RECV_F, k), _Action(s - 1, FORWARD, k)})
        if t in (FULL_BACKWARD, BACKWARD_INPUT) and s != num_stages - 1:
            inputs = {
                _Action(s, RECV_B, k),
                _Action(s + 1, BACKWARD_INPUT, k),
                _Action(s + 1, FULL_BACKWARD, k),
            }
            return not seen.isdisjoint(inputs)
        return True

    while pending:
        progress = False
        for rank in sorted(pending):
            action = pending[rank][0]
            leaves = action.leaves() if action is not None else ()
            # torch checks all sub-actions against what ran *before* this action.
            if not all(ready(a, have[rank]) for a in leaves):
                continue
            if action is not None:
                out[rank].append(action)
                for leaf in leaves:
                    have[rank].add(leaf)
                    pair = comms(leaf)
                    if pair is not None:
                        send, recv = pair
                        out[rank].append(send)
                        have[rank].add(send)
                        peer = rank_of(recv.stage_index)
                        out[peer].append(recv)
                        have[peer].add(recv)
            pending[rank].pop(0)
            if not pending[rank]:
                del pending[rank]
            progress = True
        if not progress:
            heads = {r: str(pending[r][0]) for r in sorted(pending)}
            raise ValueError(
                "Malformed compute schedule: cannot place sends/recvs, every rank's next action "
                f"waits for an input that is never produced first: {heads}.\n\n"
                f"Compute schedule:\n{_format_pipeline_order(compute_actions)}"
            )
    return out


def _defer_recv_ops(
    actions: Mapping[int, Sequence[_Action]], stage_to_rank: StageToRank
) -> dict[int, list[_Action]]:
    """Move each RECV down to just before its consumer (torch's ``defer_pp_recv=True``).

    To stay deadlock-free, a rank about to SEND to a higher-ranked peer first posts the RECVs
    it deferred from that peer (the lower rank receives first; pytorch/pytorch#172668).

    Raises:
        ValueError: a RECV has no later compute action consuming it.
    """
    rank_of = _as_fn(stage_to_rank)

    def recv_peer(a: _Action) -> int:
        return rank_of(a.stage_index - 1 if a.computation_type == RECV_F else a.stage_index + 1)

    def send_peer(a: _Action) -> int:
        return rank_of(a.stage_index + 1 if a.computation_type == SEND_F else a.stage_index - 1)

    out: dict[int, list[_Action]] = {}
    for rank, rank_actions in actions.items():
        new: list[_Action] = []
        deferred: dict[_Action, None] = {}  # insertion-ordered set
        for action in rank_actions:
            t = action.computation_type
            if t in (RECV_F, RECV_B):
                deferred[action] = None
                continue
            if t in (SEND_F, SEND_B) and rank < (peer := send_peer(action)):
                for recv in [r for r in deferred if recv_peer(r) == peer]:
                    new.append(recv)
                    del deferred[recv]
            for leaf in action.leaves():
                kind = _RECV_FOR.get(leaf.computation_type)
                wanted = kind and _Action(leaf.stage_index, kind, leaf.microbatch_index)
                if wanted in deferred:
                    new.append(wanted)
                    del deferred[wanted]
            new.append(action)
        if deferred:
            raise ValueError(
                f"Malformed schedule on rank {rank}: RECV ops {[str(r) for r in deferred]} have "
                "no later compute action consuming them. Every RECV must precede its F/B/I."
            )
        out[rank] = new
    return out


def _lower_schedule(
    pipeline_order: Mapping[int, Sequence[_Action | None]],
    num_stages: int,
    n_microbatches: int,
    *,
    forward_only: bool = False,
    unshard_reshard: bool = True,
    defer_recv: bool = False,
) -> dict[int, list[_Action]]:
    """Lower a compute-only table to the executable table with communication.

    Equals torch's ``pipeline_order_with_comms`` with the default arguments (and with
    ``defer_recv=True`` for ``defer_pp_recv=True``). Runtimes without FSDP may pass
    ``unshard_reshard=False`` to skip the UNSHARD/RESHARD no-ops.

    Args:
        pipeline_order: rank -> compute actions (None = bubble), e.g. from `tables.orders`.
        num_stages: total stages.
        n_microbatches: microbatches per step.
        forward_only: the table has no backward (eval / ForwardOnly).
        unshard_reshard: add torch's FSDP UNSHARD/RESHARD actions.
        defer_recv: post each RECV just before its consumer (torch's ``defer_pp_recv``).

    Returns:
        rank -> actions including SEND/RECV and REDUCE_GRAD, no bubbles.

    Raises:
        ValueError: the table fails `_validate_schedule`, or already contains SEND/RECV.

    Example:
        >>> from spx.distributed.pipelining.tables.orders import gpipe_order
        >>> lowered = _lower_schedule(gpipe_order(2, 2, 1), 2, 1, unshard_reshard=False)
        >>> ",".join(str(a) for a in lowered[0])
        '0F0,0SEND_F0,0RECV_B0,0B0,0REDUCE_GRAD'
        >>> ",".join(str(a) for a in lowered[1])
        '1RECV_F0,1F0,1B0,1SEND_B0,1REDUCE_GRAD'
    """
    stage_to_rank = _validate_schedule(
        pipeline_order, len(pipeline_order), num_stages, n_microbatches, forward_only=forward_only
    )
    for rank, rank_actions in pipeline_order.items():
        for step, action in enumerate(rank_actions):
            if action is not None and not action.is_compute_op:
                raise ValueError(
                    f"Expected a compute-only schedule but found '{action}' at rank {rank}, step "
                    f"{step}. Lowering adds SEND/RECV/REDUCE_GRAD itself; remove those cells, or "
                    "execute the table as it is if it is already lowered."
                )
    per_rank: dict[int, list[_Action | None]] = {}
    for rank in sorted(pipeline_order):
        actions: Sequence[_Action | None] = pipeline_order[rank]
        if unshard_reshard:
            actions = _add_unshard_reshard(actions)
        per_rank[rank] = list(_add_reduce_grad(actions, n_microbatches))
    lowered = _add_send_recv(per_rank, stage_to_rank, num_stages)
    if defer_recv:
        lowered = _defer_recv_ops(lowered, stage_to_rank)
    return lowered


def _strip_backward(pipeline_order: Mapping[int, Sequence[_Action | None]]) -> PipelineOrder:
    """The forward-only view of a table (for ``eval()``): drop B/I/W, SEND_B/RECV_B and
    REDUCE_GRAD, keep everything else in order. Forward dependencies never wait on backward
    ones, so a deadlock-free table stays deadlock-free. An OVERLAP_F_B keeps its forward.

    Example:
        >>> acts = {0: [_Action(0, FORWARD, 0), None, _Action(0, FULL_BACKWARD, 0)]}
        >>> [str(a) if a else "" for a in _strip_backward(acts)[0]]
        ['0F0', '']
    """
    drop = {FULL_BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, SEND_B, RECV_B, REDUCE_GRAD}
    out: PipelineOrder = {}
    for rank, actions in pipeline_order.items():
        kept: list[_Action | None] = []
        for a in actions:
            if a is not None and a.sub_actions is not None:
                forwards = [x for x in a.sub_actions if x.computation_type not in drop]
                kept.extend(forwards)
            elif a is None or a.computation_type not in drop:
                kept.append(a)
        out[rank] = kept
    return out
