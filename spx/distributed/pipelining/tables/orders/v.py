"""V-shaped schedules: ZBVZeroBubble and DualPipeV (exactly 2 stages per rank).

Rank ``r`` owns stage ``r`` ("chunk 0", on the way down) and stage ``2*pp-1-r`` ("chunk 1", on
the way back up), so the last rank holds the two middle stages and the first rank holds both
the first and the last stage. The tables equal torch 2.13's ``pipeline_order`` for
``ScheduleZBVZeroBubble`` and ``ScheduleDualPipeV``.

DualPipeV issues some forwards and backwards of different chunks together as one
``OVERLAP_F_B`` action (``"(0F3;3B1)OVERLAP_F_B"``), meant to overlap one chunk's compute with
the other chunk's communication; executors run the two sub-actions in order.
"""

from __future__ import annotations

from spx.distributed.pipelining.tables.ir import (
    BACKWARD_INPUT,
    BACKWARD_WEIGHT,
    FORWARD,
    FULL_BACKWARD,
    OVERLAP_F_B,
    PipelineOrder,
    _Action,
    _ComputationType,
)
from spx.distributed.pipelining.tables.orders.common import (
    check_microbatches,
    check_pp_size,
    check_stages_per_rank,
)

__all__ = ["dual_pipe_v_order", "zbv_zero_bubble_order"]

_V_WHY = " (V placement: rank r owns stages r and 2*pp-1-r)"


def zbv_zero_bubble_order(pp_size: int, n_stages: int, n_microbatches: int) -> PipelineOrder:
    """ZB-V (Qi et al. 2024, section 6): zero-bubble 1F1B over a V placement.

    The order is built for ``max(2*pp_size - 1, n_microbatches)`` microbatches, the fewest that
    fill the V; actions on microbatches beyond ``n_microbatches`` then become bubbles, as torch.

    Args:
        pp_size: number of pipeline ranks.
        n_stages: must be ``2 * pp_size``.
        n_microbatches: any number >= 1.

    Returns:
        rank -> F/I/W actions with bubbles, equal to torch's ``pipeline_order``.

    Raises:
        ValueError: ``n_stages != 2 * pp_size`` or a non-positive size.

    Example:
        >>> ",".join(str(a) for a in zbv_zero_bubble_order(1, 2, 1)[0])
        '0F0,1F0,1I0,1W0,0I0,0W0'
    """
    schedule = "ZBVZeroBubble"
    check_pp_size(pp_size, schedule)
    check_stages_per_rank(pp_size, n_stages, 2, schedule, _V_WHY)
    check_microbatches(n_microbatches, schedule)
    n_micro = max(2 * pp_size - 1, n_microbatches)
    order: PipelineOrder = {}
    for rank in range(pp_size):
        ops = _zbv_rank(rank, pp_size, n_micro)
        order[rank] = [
            a if a is not None and a.microbatch_index < n_microbatches else None  # type: ignore[operator]
            for a in ops
        ]
    return order


def _zbv_rank(rank: int, pp: int, n_micro: int) -> list[_Action | None]:
    down, up = rank, 2 * pp - 1 - rank
    count = {(s, t): 0 for s in (down, up) for t in (FORWARD, BACKWARD_INPUT, BACKWARD_WEIGHT)}
    ops: list[_Action | None] = [None] * rank

    def emit(stage: int, ctype: _ComputationType) -> None:
        ops.append(_Action(stage, ctype, count[stage, ctype]))
        count[stage, ctype] += 1

    def emit_iw(stage: int) -> None:
        # In the warm-up and steady phases a W follows its I immediately.
        emit(stage, BACKWARD_INPUT)
        emit(stage, BACKWARD_WEIGHT)

    # Warm-up: fill the way down, then interleave the way up, then start backward on chunk 1.
    for _ in range(2 * (pp - rank) - 1):
        emit(down, FORWARD)
    for _ in range(rank):
        emit(up, FORWARD)
        emit(down, FORWARD)
    for _ in range(pp - rank):
        emit(up, FORWARD)
        emit_iw(up)
    # Steady state: F0 I0 W0 F1 I1 W1 until every chunk-0 forward is matched on chunk 1.
    while count[up, FORWARD] < count[down, FORWARD] or count[down, FORWARD] < n_micro:
        if count[down, FORWARD] < n_micro:
            emit(down, FORWARD)
        emit_iw(down)
        emit(up, FORWARD)
        emit_iw(up)
    # Cool-down: input gradients first (they unblock other ranks), weights afterwards.
    for _ in range(rank):
        emit(down, BACKWARD_INPUT)
        emit(up, BACKWARD_INPUT)
    for _ in range(pp - rank):
        emit_iw(down)
    for stage in (up, down):
        while count[stage, BACKWARD_WEIGHT] < count[stage, BACKWARD_INPUT]:
            emit(stage, BACKWARD_WEIGHT)
    return ops


def dual_pipe_v_order(pp_size: int, n_stages: int, n_microbatches: int) -> PipelineOrder:
    """DualPipeV (DeepSeek-V3's DualPipe folded into a V), as torch's ``ScheduleDualPipeV``.

    Phases per rank: chunk-0 forwards; paired F0/F1; zero-bubble I1 W F1; the main phase of
    overlapped F0+B1 / F1+B0; B1 + overlapped F1+B0; B1 B0 switching to I (zero bubble) half-way;
    W B0; and the remaining W's. Full backwards (B) count as both the I and the W of their
    microbatch; W's of split backwards run in the order of their I's.

    Args:
        pp_size: number of pipeline ranks.
        n_stages: must be ``2 * pp_size``.
        n_microbatches: at least ``n_stages``.

    Returns:
        rank -> actions (F, B, I, W and OVERLAP_F_B), equal to torch's ``pipeline_order``.

    Raises:
        ValueError: ``n_stages != 2 * pp_size``, ``n_microbatches < n_stages`` (as torch), or a
            non-positive size.

    Example:
        >>> ",".join(str(a) for a in dual_pipe_v_order(1, 2, 2)[0])
        '0F0,1F0,0F1,1B0,(1F1;0B0)OVERLAP_F_B,1B1,0I1,0W1'
    """
    schedule = "DualPipeV"
    check_pp_size(pp_size, schedule)
    check_stages_per_rank(pp_size, n_stages, 2, schedule, _V_WHY)
    check_microbatches(n_microbatches, schedule)
    if n_microbatches < n_stages:
        raise ValueError(
            f"DualPipeV requires at least as many microbatches as stages, but got "
            f"{n_microbatches} microbatches and {n_stages} stages. Use n_microbatches >= "
            f"{n_stages}."
        )
    return {rank: _DualPipeVRank(rank, pp_size, n_microbatches).build() for rank in range(pp_size)}


class _DualPipeVRank:
    """Builds one rank's DualPipeV order; tracks the next microbatch per (stage, type)."""

    def __init__(self, rank: int, pp_size: int, n_microbatches: int) -> None:
        self.rank, self.pp, self.n = rank, pp_size, n_microbatches
        self.down, self.up = rank, 2 * pp_size - 1 - rank
        self.next_mb: dict[tuple[int, _ComputationType], int] = {}
        # (stage, microbatch) of each I whose W is still owed, oldest first.
        self.pending_w: list[tuple[int, int]] = []
        self.ops: list[_Action | None] = []

    def _take(self, stage: int, ctype: _ComputationType) -> int:
        mb = self.next_mb.get((stage, ctype), 0)
        self.next_mb[stage, ctype] = mb + 1
        return mb

    def _backward(self, stage: int, full: bool) -> _Action:
        # B and I share one microbatch counter; a B also settles that microbatch's W.
        mb = self._take(stage, BACKWARD_INPUT)
        if full:
            self._take(stage, BACKWARD_WEIGHT)
            return _Action(stage, FULL_BACKWARD, mb)
        self.pending_w.append((stage, mb))
        return _Action(stage, BACKWARD_INPUT, mb)

    def forward(self, stage: int) -> None:
        self.ops.append(_Action(stage, FORWARD, self._take(stage, FORWARD)))

    def backward(self, stage: int, full: bool = True) -> None:
        self.ops.append(self._backward(stage, full))

    def weight(self) -> None:
        if self.pending_w:
            stage, mb = self.pending_w.pop(0)
            self._take(stage, BACKWARD_WEIGHT)
            self.ops.append(_Action(stage, BACKWARD_WEIGHT, mb))

    def overlap(self, f_stage: int, b_stage: int) -> None:
        f = _Action(f_stage, FORWARD, self._take(f_stage, FORWARD))
        self.ops.append(_Action(-1, OVERLAP_F_B, None, (f, self._backward(b_stage, True))))

    def build(self) -> list[_Action | None]:
        r, pp, down, up = self.rank, self.pp, self.down, self.up
        for _ in range(2 * (pp - r - 1)):  # 1: F0
            self.forward(down)
        for _ in range(r + 1):  # 2: F0 F1
            self.forward(down)
            self.forward(up)
        for _ in range(pp - r - 1):  # 3: I1 W F1 (zero bubble)
            self.backward(up, full=False)
            self.weight()
            self.forward(up)
        for i in range(self.n - 2 * pp + r + 1):  # 4: F0+B1, F1+B0 overlapped
            if i == 0 and r == pp - 1:
                # The last rank's first pair runs unoverlapped to shrink the bubble.
                self.forward(down)
                self.backward(up)
            else:
                self.overlap(down, up)
            self.overlap(up, down)
        for _ in range(pp - r - 1):  # 5: B1, F1+B0
            self.backward(up)
            self.overlap(up, down)
        # 6: B1 B0, switching to split backwards half-way; odd ranks switch one action earlier.
        zero_bubble = False
        for i in range(r + 1):
            if i == (r + 1) // 2 and r % 2 == 1:
                zero_bubble = True
            self.backward(up, full=not zero_bubble)
            if i == (r + 1) // 2 and r % 2 == 0:
                zero_bubble = True
            self.backward(down, full=not zero_bubble)
        for _ in range(pp - r - 1):  # 7: W B0
            self.weight()
            self.backward(down, full=not zero_bubble)
        for _ in range(r + 1):  # 8: remaining W
            self.weight()
        return self.ops
