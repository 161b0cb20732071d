"""Looped (multi-stage, loop-placed) schedules: Interleaved1F1B, LoopedBFS, InterleavedZeroBubble.

Stage ``s`` lives on rank ``s % pp``; each rank holds ``n_stages // pp`` stages. The tables
equal torch 2.13's ``pipeline_order`` for ``ScheduleInterleaved1F1B``, ``ScheduleLoopedBFS`` and
``ScheduleInterleavedZeroBubble``.

Interleaved 1F1B and ZB1P share one recipe (torch's ``_get_1f1b_rank_ops``): microbatches go
through the pipeline in rounds of ``microbatches_per_round``; a rank runs a number of warm-up
forwards that grows by ``multiply_factor`` per hop from the last rank, then alternates one
forward with one backward, then drains the backwards. Forwards cycle through the rank's stages
every round in ascending order, backwards in descending order. The zero-bubble variant runs
backward-input (I) in place of the full backward and schedules each backward-weight (W) a few
steps later, once ``rank`` steady-state pairs have passed, to fill what would be bubbles.
"""

from __future__ import annotations

from collections import defaultdict

from spx.distributed.pipelining.tables.ir import (
    BACKWARD_INPUT,
    BACKWARD_WEIGHT,
    FORWARD,
    FULL_BACKWARD,
    PipelineOrder,
    _Action,
    _ComputationType,
)
from spx.distributed.pipelining.tables.orders.common import (
    check_microbatches,
    check_pp_size,
    stages_per_rank,
)

__all__ = ["interleaved_1f1b_order", "interleaved_zero_bubble_order", "looped_bfs_order"]


def _rounds(schedule: str, pp_size: int, n_microbatches: int) -> int:
    """Microbatches per round, with torch's divisibility rule (it relaxes ``n % pp == 0``)."""
    n_rounds = max(1, n_microbatches // pp_size)
    if n_microbatches % n_rounds != 0:
        nearest = next(m for m in range(n_microbatches, 0, -1) if m % max(1, m // pp_size) == 0)
        raise ValueError(
            f"{schedule} requires the number of microbatches to be a multiple of the number of "
            f"rounds ({n_rounds} = max(1, n_microbatches // pp_size) with pp_size={pp_size}), "
            f"but got {n_microbatches}. Use a multiple of pp_size, fewer than {2 * pp_size} "
            f"microbatches, or the nearest accepted count below, {nearest}."
        )
    return n_microbatches // n_rounds


def _interleaved_rank(
    rank: int,
    pp_size: int,
    n_local: int,
    n_microbatches: int,
    per_round: int,
    zero_bubble: bool,
) -> list[_Action | None]:
    """One rank of Interleaved1F1B (``zero_bubble=False``) or of ZB1P (``zero_bubble=True``)."""
    # Warm-up forwards: the last rank fills all but its last stage for one round; each hop
    # towards rank 0 adds 2 steps (1 for ZB, whose backward is cheaper to wait for).
    factor = 1 if zero_bubble else 2
    total = n_local * n_microbatches
    warmup = min((n_local - 1) * per_round + factor * (pp_size - 1 - rank), total)
    # Ops [0, warmup) are forwards, [warmup, total) forward+backward pairs, and
    # [total, total + warmup) the remaining backwards.
    backward_type = BACKWARD_INPUT if zero_bubble else FULL_BACKWARD

    def fwd_stage(op: int) -> int:
        return ((op // per_round) % n_local) * pp_size + rank

    def bwd_stage(op: int) -> int:
        return (n_local - 1 - ((op - warmup) // per_round) % n_local) * pp_size + rank

    next_mb: dict[tuple[int, _ComputationType], int] = defaultdict(int)

    def take(stage: int, ctype: _ComputationType) -> _Action:
        mb = next_mb[stage, ctype]
        next_mb[stage, ctype] = mb + 1
        return _Action(stage, ctype, mb)

    ops: list[_Action | None] = [None] * rank
    issued_backwards: list[_Action] = []
    weights_done = 0

    def maybe_weight(op: int) -> None:
        # ZB1P delays each W by `rank` backwards, then runs them in the order of their I's.
        nonlocal weights_done
        if zero_bubble and op - warmup >= rank:
            i_action = issued_backwards[weights_done]
            ops.append(take(i_action.stage_index, BACKWARD_WEIGHT))
            weights_done += 1

    for op in range(warmup + total):
        if op < warmup:
            ops.append(take(fwd_stage(op), FORWARD))
            if op == warmup - 1:
                # Wait for the first gradient: it leaves the last stage at step
                # n_local*pp and climbs 2 steps per hop (1F1B); ZB only waits its distance.
                if zero_bubble:
                    gap = pp_size - rank - 1
                else:
                    gap = n_local * pp_size + 2 * (pp_size - 1 - rank) - (warmup + rank)
                ops.extend([None] * max(gap, 0))
            continue
        if op < total:
            ops.append(take(fwd_stage(op), FORWARD))
        elif not zero_bubble:
            # Cool-down of 1F1B keeps its one-forward-one-backward rhythm with a bubble.
            ops.append(None)
        backward = take(bwd_stage(op), backward_type)
        ops.append(backward)
        issued_backwards.append(backward)
        maybe_weight(op)

    while zero_bubble and weights_done < len(issued_backwards):
        ops.append(take(issued_backwards[weights_done].stage_index, BACKWARD_WEIGHT))
        weights_done += 1
    return ops


def interleaved_1f1b_order(pp_size: int, n_stages: int, n_microbatches: int) -> PipelineOrder:
    """Interleaved 1F1B (Narayanan et al. 2021), depth-first over a rank's stages.

    Args:
        pp_size: number of pipeline ranks.
        n_stages: a multiple of ``pp_size``; stage ``s`` on rank ``s % pp_size``.
        n_microbatches: a multiple of ``rounds = max(1, n_microbatches // pp_size)`` (torch's
            relaxation of ``n % pp == 0``: e.g. pp=4 accepts 1..7, 8, 10, 12, 15, 16, ...).

    Returns:
        rank -> compute actions with bubbles, equal to torch's ``pipeline_order``.

    Raises:
        ValueError: on the divisibility rules above or a non-positive size.

    Example:
        >>> order = interleaved_1f1b_order(2, 4, 4)
        >>> ",".join(str(a) if a else "" for a in order[1])
        ',1F0,1F1,,3F0,3B0,3F1,3B1,1F2,1B0,1F3,1B1,3F2,3B2,3F3,3B3,,1B2,,1B3'
    """
    return _interleaved("Interleaved1F1B", pp_size, n_stages, n_microbatches, zero_bubble=False)


def interleaved_zero_bubble_order(
    pp_size: int, n_stages: int, n_microbatches: int
) -> PipelineOrder:
    """Interleaved zero bubble, ZB1P (Qi et al. 2024): 1F1B with backward split into I and W.

    After generating each rank's order, bubbles are inserted wherever a forward would run
    before the previous stage produced its input (torch's ``_add_bubbles_to_actions``, which
    only matters when there are few microbatches).

    Args:
        pp_size: number of pipeline ranks.
        n_stages: a multiple of ``pp_size``; stage ``s`` on rank ``s % pp_size``.
        n_microbatches: same rule as `interleaved_1f1b_order`.

    Returns:
        rank -> F/I/W actions with bubbles, equal to torch's ``pipeline_order``.

    Raises:
        ValueError: on the divisibility rules or a non-positive size.

    Example:
        >>> [str(a) if a else "" for a in interleaved_zero_bubble_order(2, 2, 2)[0]]
        ['0F0', '', '0F1', '0I0', '0W0', '0I1', '0W1']
    """
    order = _interleaved(
        "InterleavedZeroBubble", pp_size, n_stages, n_microbatches, zero_bubble=True
    )
    return _add_forward_bubbles(order, n_stages)


def _interleaved(
    schedule: str, pp_size: int, n_stages: int, n_microbatches: int, zero_bubble: bool
) -> PipelineOrder:
    check_pp_size(pp_size, schedule)
    n_local = stages_per_rank(pp_size, n_stages, schedule)
    check_microbatches(n_microbatches, schedule)
    per_round = _rounds(schedule, pp_size, n_microbatches)
    return {
        rank: _interleaved_rank(rank, pp_size, n_local, n_microbatches, per_round, zero_bubble)
        for rank in range(pp_size)
    }


def _add_forward_bubbles(order: PipelineOrder, n_stages: int) -> PipelineOrder:
    """Replay the ranks in lock step; stall a rank whose next F (or B) input isn't made yet.

    Mirrors torch's ``ScheduleInterleavedZeroBubble._add_bubbles_to_actions``: an action seen
    at step t becomes visible to other ranks from step t+1; I and W never stall.
    """
    seen: set[tuple[int, object, int]] = set()
    pointers = dict.fromkeys(order, 0)
    result: PipelineOrder = {rank: [] for rank in order}
    while any(pointers[r] < len(order[r]) for r in order):
        made_this_step: set[tuple[int, object, int]] = set()
        progressed = False
        for rank in sorted(order):
            if pointers[rank] >= len(order[rank]):
                continue
            action = order[rank][pointers[rank]]
            if action is not None and _needs_bubble(action, n_stages, seen):
                result[rank].append(None)
                continue
            result[rank].append(action)
            pointers[rank] += 1
            progressed = True
            if action is not None and action.microbatch_index is not None:
                a = action
                made_this_step.add((a.stage_index, a.computation_type, a.microbatch_index))
        if not progressed:
            # torch loops forever here; a generated order never gets stuck, a bad one may.
            stuck = {r: str(order[r][pointers[r]]) for r in order if pointers[r] < len(order[r])}
            raise ValueError(f"Cannot place bubbles: every rank waits on a missing input {stuck}.")
        seen |= made_this_step
    return result


def _needs_bubble(action: _Action, n_stages: int, seen: set[tuple[int, object, int]]) -> bool:
    stage, ctype, mb = action.stage_index, action.computation_type, action.microbatch_index
    if ctype == FORWARD:
        return stage != 0 and (stage - 1, FORWARD, mb) not in seen
    if ctype == FULL_BACKWARD:
        if stage == n_stages - 1:
            return (stage, FORWARD, mb) not in seen
        return (stage + 1, FULL_BACKWARD, mb) not in seen
    return False


def looped_bfs_order(pp_size: int, n_stages: int, n_microbatches: int) -> PipelineOrder:
    """Looped BFS (Lamy-Poirier 2023): each local stage runs all its microbatches at once.

    Forwards go stage by stage in ascending order, each over microbatches ``0..n-1``; after
    ``2 * (pp_size - 1 - rank)`` bubble steps, backwards go stage by stage in descending order,
    each over microbatches ``n-1..0``, as in torch's ``ScheduleLoopedBFS``.

    Args:
        pp_size: number of pipeline ranks.
        n_stages: a multiple of ``pp_size``; stage ``s`` on rank ``s % pp_size``.
        n_microbatches: any number >= 1.

    Returns:
        rank -> compute actions with bubbles, equal to torch's ``pipeline_order``.

    Raises:
        ValueError: ``n_stages`` not a multiple of ``pp_size`` or a non-positive size.

    Example:
        >>> [str(a) if a else "" for a in looped_bfs_order(2, 4, 2)[1]]
        ['', '1F0', '1F1', '3F0', '3F1', '3B1', '3B0', '1B1', '1B0']
    """
    check_pp_size(pp_size, "LoopedBFS")
    n_local = stages_per_rank(pp_size, n_stages, "LoopedBFS")
    check_microbatches(n_microbatches, "LoopedBFS")
    order: PipelineOrder = {}
    for rank in range(pp_size):
        stages = [rank + i * pp_size for i in range(n_local)]
        ops: list[_Action | None] = [None] * rank
        for stage in stages:
            ops += [_Action(stage, FORWARD, mb) for mb in range(n_microbatches)]
        ops += [None] * (2 * (pp_size - 1 - rank))
        for stage in reversed(stages):
            ops += [_Action(stage, FULL_BACKWARD, mb) for mb in reversed(range(n_microbatches))]
        order[rank] = ops
    return order
