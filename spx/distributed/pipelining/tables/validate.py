"""Structural validation of a schedule table: the rules every executable table obeys.

`_validate_schedule` checks torch's ``_validate_schedule`` rules plus a few that torch leaves to
runtime failures, and returns the stage-to-rank map the table implies. It accepts compute-only
tables and lowered tables with SEND/RECV; errors print the table as torch's step x rank grid
with the failing step marked. Deadlocks are the simulator's business (:mod:`.simulate`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from spx.distributed.pipelining.tables.ir import (
    BACKWARD_INPUT,
    BACKWARD_WEIGHT,
    COMM_TYPES,
    FORWARD,
    FULL_BACKWARD,
    OVERLAP_F_B,
    REDUCE_GRAD,
    RESHARD,
    UNSHARD,
    _Action,
    _format_pipeline_order,
)

__all__ = ["Table", "_validate_schedule"]

Table = Mapping[int, Sequence[_Action | None]]
_NO_MICROBATCH = (UNSHARD, RESHARD, REDUCE_GRAD)


def _fail(order: Table, rank: int | None, step: int | None, detail: str) -> ValueError:
    where = "" if rank is None else f"Rank {rank}, step {step}: "
    grid = _format_pipeline_order(order, error_step_number=step)
    return ValueError(f"{where}{detail}\n\nFull pipeline schedule:\n{grid}")


def _validate_schedule(
    pipeline_order: Table,
    pp_group_size: int,
    num_stages: int,
    num_microbatches: int,
    *,
    forward_only: bool = False,
) -> dict[int, int]:
    """Check that a table is executable and return its stage -> rank map.

    Rules (each violation names the rank, the step and the action):

    - the ranks are exactly ``0..pp_group_size-1``; entries are `_Action` or None;
    - stage indices lie in ``[0, num_stages)``, microbatch indices in ``[0, num_microbatches)``;
    - every action of a stage (compute, communication, bookkeeping) runs on one rank;
    - each stage runs F exactly once per microbatch;
    - B or I of (stage, mb) only after its F; W only after its I; never B together with I/W
      for one (stage, mb), nothing twice; every microbatch gets a B, or an I and a W
      (so #I == #W) -- unless ``forward_only``, where no backward may appear;
    - REDUCE_GRAD of a stage, if present, comes once and after all of that stage's backward.

    Args:
        pipeline_order: rank -> actions (None = bubble), compute-only or lowered.
        pp_group_size: number of ranks.
        num_stages: total number of stages.
        num_microbatches: microbatches per step.
        forward_only: the table belongs to a forward-only (eval) schedule.

    Returns:
        stage index -> rank, for the stages that appear.

    Raises:
        ValueError: the first broken rule, with the table printed and the step marked.

    Example:
        >>> from spx.distributed.pipelining.tables.orders import interleaved_1f1b_order
        >>> _validate_schedule(interleaved_1f1b_order(2, 4, 4), 2, 4, 4)
        {0: 0, 2: 0, 1: 1, 3: 1}
    """
    ranks = sorted(pipeline_order)
    if ranks != list(range(pp_group_size)):
        raise _fail(
            pipeline_order,
            None,
            None,
            f"Schedule has ranks {ranks}, expected 0..{pp_group_size - 1} "
            f"(pp_group_size={pp_group_size}). Give every rank a list, empty if it is idle.",
        )
    checker = _Checker(pipeline_order, num_stages, num_microbatches, forward_only)
    for rank in ranks:
        for step, action in enumerate(pipeline_order[rank]):
            if action is not None:
                checker.visit(rank, step, action)
    checker.finish()
    return checker.owner_rank


class _Checker:
    """Per-(stage, microbatch) state machine behind `_validate_schedule`."""

    def __init__(self, order: Table, n_stages: int, n_mb: int, forward_only: bool) -> None:
        self.order, self.n_stages, self.n_mb = order, n_stages, n_mb
        self.forward_only = forward_only
        self.owner_rank: dict[int, int] = {}
        self.owner_step: dict[int, int] = {}
        self.seen: dict[tuple[int, int], set[object]] = {}
        self.backwards_done: dict[int, int] = {}
        self.reduced: set[int] = set()

    def visit(self, rank: int, step: int, action: object) -> None:
        if not isinstance(action, _Action):
            raise _fail(
                self.order,
                rank,
                step,
                f"Got {action!r} of type {type(action).__name__}; entries must be _Action or "
                "None (use _Action.from_str to parse strings).",
            )
        if action.computation_type == OVERLAP_F_B and not action.sub_actions:
            raise _fail(self.order, rank, step, f"'{action}' has no sub_actions to run.")
        for leaf in action.leaves():
            self._leaf(rank, step, leaf)

    def _leaf(self, rank: int, step: int, a: _Action) -> None:
        def fail(detail: str) -> ValueError:
            return _fail(self.order, rank, step, f"'{a}' {detail}")

        s, t, mb = a.stage_index, a.computation_type, a.microbatch_index
        if not 0 <= s < self.n_stages:
            raise fail(f"names stage {s}, but stages are 0..{self.n_stages - 1}.")
        if s in self.owner_rank and self.owner_rank[s] != rank:
            first = self.owner_rank[s]
            raise fail(
                f"puts stage {s} on rank {rank}, but rank {first} already runs it (step "
                f"{self.owner_step[s]}). A stage lives on exactly one rank; move the action."
            )
        self.owner_rank.setdefault(s, rank)
        self.owner_step.setdefault(s, step)
        if t in _NO_MICROBATCH:
            if t == REDUCE_GRAD:
                self._reduce_grad(s, fail)
            return
        if mb is None or not 0 <= mb < self.n_mb:
            raise fail(f"needs a microbatch index in 0..{self.n_mb - 1}, got {mb}.")
        if t in COMM_TYPES:
            return
        seen = self.seen.setdefault((s, mb), set())
        if t in (FULL_BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT) and self.forward_only:
            raise fail("is a backward action in a forward-only schedule; remove it.")
        if t in seen:
            raise fail(f"runs twice; each (stage, microbatch) runs {t.value} once.")
        if t in (FULL_BACKWARD, BACKWARD_INPUT):
            if FORWARD not in seen:
                raise fail(f"runs before its forward '{s}F{mb}'; move it after the forward.")
            other = BACKWARD_INPUT if t == FULL_BACKWARD else FULL_BACKWARD
            if other in seen:
                raise fail(
                    f"mixes a full backward (B) with a split one (I/W) for stage {s} "
                    f"microbatch {mb}; use B alone or I then W."
                )
        if t == BACKWARD_WEIGHT and BACKWARD_INPUT not in seen:
            raise fail(f"runs before its backward-input '{s}I{mb}'; W needs I first.")
        seen.add(t)
        if t in (FULL_BACKWARD, BACKWARD_WEIGHT):
            self.backwards_done[s] = self.backwards_done.get(s, 0) + 1

    def _reduce_grad(self, s: int, fail: Callable[[str], ValueError]) -> None:
        if s in self.reduced:
            raise fail("runs twice; reduce each stage's gradients once.")
        done = self.backwards_done.get(s, 0)
        if done != self.n_mb:
            raise fail(
                f"runs after {done} of stage {s}'s {self.n_mb} backwards; move it after the last."
            )
        self.reduced.add(s)

    def finish(self) -> None:
        for s in range(self.n_stages):
            states = [self.seen.get((s, mb), set()) for mb in range(self.n_mb)]
            missing_f = [mb for mb, st in enumerate(states) if FORWARD not in st]
            if missing_f:
                raise _fail(
                    self.order,
                    None,
                    None,
                    f"Stage {s} runs {self.n_mb - len(missing_f)} forwards, expected "
                    f"{self.n_mb}; missing F for microbatches {missing_f}.",
                )
            if self.forward_only:
                continue
            for mb, st in enumerate(states):
                if FULL_BACKWARD in st or {BACKWARD_INPUT, BACKWARD_WEIGHT} <= st:
                    continue
                what = "I but no W" if BACKWARD_INPUT in st else "no backward (B, or I then W)"
                raise _fail(
                    self.order,
                    None,
                    None,
                    f"Stage {s} microbatch {mb} has {what}; every microbatch needs its gradient. "
                    "Pass forward_only=True for an eval schedule.",
                )
