"""Check a schedule table without devices: structural validation and a deadlock simulator.

`_validate_schedule` checks the rules every executable table obeys (torch's
``_validate_schedule`` plus a few torch leaves to runtime failures) and returns the stage-to-rank
map the table implies. `_simulate` replays the ranks in lock step under the dependency rules
of pipeline execution and returns the resulting timeline, or raises `ScheduleDeadlockError`
naming what each stuck rank waits for. Both accept compute-only tables and lowered tables with
SEND/RECV; errors print the table as torch's step x rank grid with the failing step marked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from ._ir import (
    BACKWARD_INPUT,
    BACKWARD_WEIGHT,
    COMM_TYPES,
    FORWARD,
    FULL_BACKWARD,
    OVERLAP_F_B,
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

__all__ = [
    "ScheduleDeadlockError",
    "SimulationResult",
    "_format_pipeline_order",
    "_simulate",
    "_validate_schedule",
]

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
        >>> from ._orders import interleaved_1f1b_order
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


class SimulationResult(NamedTuple):
    """Outcome of `_simulate`.

    Attributes:
        timeline: rank -> what it ran at each simulated step (None = waiting).
        num_steps: steps until the last rank finished.
    """

    timeline: PipelineOrder
    num_steps: int

    def idle_steps(self) -> dict[int, int]:
        """rank -> steps it spent waiting before finishing (its bubbles)."""
        return {r: sum(a is None for a in acts) for r, acts in self.timeline.items()}

    def __str__(self) -> str:
        return _format_pipeline_order(self.timeline)


class ScheduleDeadlockError(ValueError):
    """No rank can make progress: each waits for something that will never happen.

    Attributes:
        stuck: rank -> (its blocked action, what it still waits for: one tuple of
            alternatives per unmet dependency).
        timeline: what ran until the deadlock (see `SimulationResult.timeline`).
    """

    def __init__(
        self,
        message: str,
        stuck: dict[int, tuple[_Action, list[tuple[_Action, ...]]]],
        timeline: PipelineOrder,
    ) -> None:
        super().__init__(message)
        self.stuck = stuck
        self.timeline = timeline


def _simulate(
    pipeline_order: Table,
    stage_to_rank: Mapping[int, int] | Callable[[int], int] | None = None,
    num_stages: int | None = None,
) -> SimulationResult:
    """Replay a table step by step and report deadlocks.

    Every rank runs its actions in order (bubbles are skipped; timing is recomputed), one per
    step, once the action's inputs were completed at an earlier step:

    - F of (s, k) needs F of (s-1, k); across ranks in a lowered table it needs its RECV_F.
    - B or I of (s, k) needs its own F, and (unless s is the last stage) B or I of (s+1, k);
      across ranks in a lowered table it needs its RECV_B instead.
    - W needs its I. SEND_F needs its F; SEND_B its B or I. RECV_F of (s, k) needs SEND_F of
      (s-1, k); RECV_B of (s, k) needs SEND_B of (s+1, k). Sends never block; receives do.
    - OVERLAP_F_B runs its sub-actions in order within one step. Bookkeeping never waits.

    A table with any SEND/RECV is treated as lowered; otherwise transfers are implicit.

    Args:
        pipeline_order: rank -> actions, compute-only or lowered.
        stage_to_rank: where each stage lives; inferred from the table when None.
        num_stages: total stages; defaults to the largest stage index + 1.

    Returns:
        The timeline and its length.

    Raises:
        ScheduleDeadlockError: no rank can progress; names each stuck action and what it waits
            for, and prints the timeline so far with the stuck step marked.
        ValueError: a stage appears on two ranks, or a lowered table sends something nobody
            receives.

    Example:
        >>> from ._orders import gpipe_order
        >>> _simulate(gpipe_order(2, 2, 2)).num_steps
        6
    """
    sim = _Simulator(pipeline_order, stage_to_rank, num_stages)
    return sim.run()


class _Simulator:
    def __init__(
        self,
        order: Table,
        stage_to_rank: Mapping[int, int] | Callable[[int], int] | None,
        num_stages: int | None,
    ) -> None:
        self.actions = {r: [a for a in order[r] if a is not None] for r in sorted(order)}
        leaves = [(r, x) for r, acts in self.actions.items() for a in acts for x in a.leaves()]
        owner: dict[int, int] = {}
        for rank, leaf in leaves:
            if owner.setdefault(leaf.stage_index, rank) != rank:
                raise ValueError(
                    f"Stage {leaf.stage_index} appears on rank {owner[leaf.stage_index]} and on "
                    f"rank {rank} ('{leaf}'); a stage lives on exactly one rank."
                )
        if stage_to_rank is None:
            self.rank_of: Callable[[int], int] = owner.__getitem__
        elif callable(stage_to_rank):
            self.rank_of = stage_to_rank
        else:
            self.rank_of = stage_to_rank.__getitem__
        self.num_stages = num_stages or 1 + max((x.stage_index for _, x in leaves), default=-1)
        self.lowered = any(x.computation_type in COMM_TYPES for _, x in leaves)
        # Where each action is scheduled, to explain what a stuck rank waits for.
        self.where = {x: (r, i) for r, acts in self.actions.items() for i, a in enumerate(acts)
                      for x in a.leaves()}  # fmt: skip
        self.done: set[_Action] = set()

    def _same_rank(self, a: int, b: int) -> bool:
        return self.rank_of(a) == self.rank_of(b)

    def requirements(self, a: _Action) -> list[tuple[_Action, ...]]:
        """Each entry is satisfied when any one of its actions is done."""
        s, t, k = a.stage_index, a.computation_type, a.microbatch_index
        local = not self.lowered
        if t == FORWARD:
            if s == 0:
                return []
            if local or self._same_rank(s - 1, s):
                return [(_Action(s - 1, FORWARD, k),)]
            return [(_Action(s, RECV_F, k),)]
        if t in (FULL_BACKWARD, BACKWARD_INPUT):
            reqs = [(_Action(s, FORWARD, k),)]
            if s == self.num_stages - 1:
                return reqs
            if local or self._same_rank(s + 1, s):
                nxt = (_Action(s + 1, FULL_BACKWARD, k), _Action(s + 1, BACKWARD_INPUT, k))
                return [*reqs, nxt]
            return [*reqs, (_Action(s, RECV_B, k),)]
        if t == BACKWARD_WEIGHT:
            return [(_Action(s, BACKWARD_INPUT, k),)]
        if t == SEND_F:
            return [(_Action(s, FORWARD, k),)]
        if t == SEND_B:
            return [(_Action(s, FULL_BACKWARD, k), _Action(s, BACKWARD_INPUT, k))]
        if t == RECV_F:
            return [(_Action(s - 1, SEND_F, k),)]
        if t == RECV_B:
            return [(_Action(s + 1, SEND_B, k),)]
        return []

    def missing(self, action: _Action) -> list[tuple[_Action, ...]]:
        """What ``action`` still waits for, as alternatives (empty when it can run now)."""
        earlier_leaves: set[_Action] = set()  # an OVERLAP_F_B's sub-actions run in order
        for leaf in action.leaves():
            unmet = [
                alts
                for alts in self.requirements(leaf)
                if self.done.isdisjoint(alts) and earlier_leaves.isdisjoint(alts)
            ]
            if unmet:
                return unmet
            earlier_leaves.add(leaf)
        return []

    def run(self) -> SimulationResult:
        pointer = dict.fromkeys(self.actions, 0)
        timeline: PipelineOrder = {r: [] for r in self.actions}
        step = 0
        while any(pointer[r] < len(self.actions[r]) for r in self.actions):
            finished: list[_Action] = []
            for rank, acts in self.actions.items():
                if pointer[rank] >= len(acts):
                    continue
                action = acts[pointer[rank]]
                if self.missing(action):
                    timeline[rank].append(None)
                    continue
                timeline[rank].append(action)
                finished.extend(action.leaves())
                pointer[rank] += 1
            if not finished:
                raise self._deadlock(pointer, timeline, step)
            # Results become visible to everyone at the next step, never within this one.
            self.done.update(finished)
            step += 1
        self._check_unmatched_sends()
        return SimulationResult(timeline, step)

    def _deadlock(
        self, pointer: dict[int, int], timeline: PipelineOrder, step: int
    ) -> ScheduleDeadlockError:
        stuck: dict[int, tuple[_Action, list[tuple[_Action, ...]]]] = {}
        lines = []
        for rank, acts in self.actions.items():
            if pointer[rank] >= len(acts):
                continue
            action = acts[pointer[rank]]
            waits = self.missing(action)
            stuck[rank] = (action, waits)
            reasons = "; and ".join(self._explain(alts) for alts in waits)
            lines.append(
                f"  rank {rank}: '{action}' (its action #{pointer[rank]}) waits for {reasons}"
            )
        grid = _format_pipeline_order(timeline, error_step_number=step)
        message = (
            f"Schedule deadlocks at simulated step {step}: no rank can make progress.\n"
            + "\n".join(lines)
            + "\nReorder the actions so every dependency is scheduled before it is needed, or "
            "add the missing SEND/RECV (the lowering pass _lower_schedule inserts them)."
            f"\n\nTimeline until the deadlock:\n{grid}"
        )
        return ScheduleDeadlockError(message, stuck, timeline)

    def _explain(self, alternatives: tuple[_Action, ...]) -> str:
        names = " or ".join(f"'{a}'" for a in alternatives)
        for a in alternatives:
            if a in self.where:
                rank, index = self.where[a]
                return f"{names} (scheduled on rank {rank} as its action #{index})"
        return f"{names} (which no rank schedules)"

    def _check_unmatched_sends(self) -> None:
        for a in self.done:
            s, t, k = a.stage_index, a.computation_type, a.microbatch_index
            if t == SEND_F and _Action(s + 1, RECV_F, k) not in self.done:
                raise ValueError(f"'{a}' is never received: add '{s + 1}RECV_F{k}'.")
            if t == SEND_B and _Action(s - 1, RECV_B, k) not in self.done:
                raise ValueError(f"'{a}' is never received: add '{s - 1}RECV_B{k}'.")
