"""A deadlock simulator for schedule tables, without devices.

`_simulate` replays the ranks in lock step under the dependency rules of pipeline execution and
returns the resulting timeline, or raises `ScheduleDeadlockError` naming what each stuck rank
waits for. It accepts compute-only tables and lowered tables with SEND/RECV; errors print the
table as torch's step x rank grid with the failing step marked. Structural rules (one F per
microbatch, I before W, ...) are checked by :mod:`.validate`, re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from spx.distributed.pipelining.tables.ir import (
    BACKWARD_INPUT,
    BACKWARD_WEIGHT,
    COMM_TYPES,
    FORWARD,
    FULL_BACKWARD,
    RECV_B,
    RECV_F,
    SEND_B,
    SEND_F,
    PipelineOrder,
    _Action,
    _format_pipeline_order,
)
from spx.distributed.pipelining.tables.validate import Table, _validate_schedule

__all__ = [
    "ScheduleDeadlockError",
    "SimulationResult",
    "_format_pipeline_order",
    "_simulate",
    "_validate_schedule",
]


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
        >>> from spx.distributed.pipelining.tables.orders import gpipe_order
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
