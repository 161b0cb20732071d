"""Schedule generators by name: the compute-only table of every torch schedule.

Each generator is a pure function ``(pp_size, n_stages, n_microbatches) -> PipelineOrder``
returning rank -> compute actions (``F``, ``B``, ``I``, ``W``, ``OVERLAP_F_B``) with ``None``
for bubbles, and raising ``ValueError`` exactly where torch 2.13's schedule constructor
rejects the configuration. The runtime lowers a table with
``tables.lowering._lower_schedule`` (adds REDUCE_GRAD, UNSHARD/RESHARD and SEND/RECV) and
executes it.

Name (case-insensitive) -> generator, placement, stages per rank:

- ``GPipe`` -> `gpipe_order`, loop, 1
- ``1F1B`` -> `one_f_one_b_order`, loop, 1
- ``ForwardOnly`` -> `forward_only_order`, loop, 1
- ``Interleaved1F1B`` -> `interleaved_1f1b_order`, loop, any
- ``LoopedBFS`` -> `looped_bfs_order`, loop, any
- ``InterleavedZeroBubble`` -> `interleaved_zero_bubble_order`, loop, any
- ``ZBVZeroBubble`` -> `zbv_zero_bubble_order`, v, 2
- ``DualPipeV`` -> `dual_pipe_v_order`, v, 2
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from spx.distributed.pipelining.tables.ir import PipelineOrder
from spx.distributed.pipelining.tables.orders.common import (
    PlacementStyle,
    placement,
    rank_to_stages,
    stage_to_rank_loop,
    stage_to_rank_v,
)
from spx.distributed.pipelining.tables.orders.interleaved import (
    interleaved_1f1b_order,
    interleaved_zero_bubble_order,
    looped_bfs_order,
)
from spx.distributed.pipelining.tables.orders.single import (
    forward_only_order,
    gpipe_order,
    one_f_one_b_order,
)
from spx.distributed.pipelining.tables.orders.v import dual_pipe_v_order, zbv_zero_bubble_order

__all__ = [
    "SCHEDULES",
    "ScheduleSpec",
    "dual_pipe_v_order",
    "forward_only_order",
    "get_schedule_order",
    "get_schedule_spec",
    "gpipe_order",
    "interleaved_1f1b_order",
    "interleaved_zero_bubble_order",
    "looped_bfs_order",
    "one_f_one_b_order",
    "rank_to_stages",
    "stage_to_rank_loop",
    "stage_to_rank_v",
    "zbv_zero_bubble_order",
]

OrderFn = Callable[[int, int, int], PipelineOrder]


class ScheduleSpec(NamedTuple):
    """What a runtime needs to know about a schedule besides its table.

    Attributes:
        name: torch's name without the ``Schedule`` prefix (``"Interleaved1F1B"``).
        order: the generator ``(pp_size, n_stages, n_microbatches) -> PipelineOrder``.
        placement: ``"loop"`` (stage s on rank s % pp) or ``"v"``.
        stages_per_rank: required local stages, or None when any number works.
        torch_class: the torch class it mirrors (for messages and docs).
    """

    name: str
    order: OrderFn
    placement: PlacementStyle
    stages_per_rank: int | None
    torch_class: str

    @property
    def single_stage(self) -> bool:
        """True for schedules that take one stage per rank (``PipelineScheduleSingle``)."""
        return self.stages_per_rank == 1

    def stage_to_rank(self, pp_size: int, n_stages: int) -> dict[int, int]:
        """Where each stage lives under this schedule's placement."""
        return placement(self.placement, pp_size, n_stages)


SCHEDULES: dict[str, ScheduleSpec] = {
    spec.name: spec
    for spec in (
        ScheduleSpec("GPipe", gpipe_order, "loop", 1, "ScheduleGPipe"),
        ScheduleSpec("1F1B", one_f_one_b_order, "loop", 1, "Schedule1F1B"),
        ScheduleSpec("ForwardOnly", forward_only_order, "loop", 1, "_ScheduleForwardOnly"),
        ScheduleSpec(
            "Interleaved1F1B", interleaved_1f1b_order, "loop", None, "ScheduleInterleaved1F1B"
        ),
        ScheduleSpec("LoopedBFS", looped_bfs_order, "loop", None, "ScheduleLoopedBFS"),
        ScheduleSpec(
            "InterleavedZeroBubble",
            interleaved_zero_bubble_order,
            "loop",
            None,
            "ScheduleInterleavedZeroBubble",
        ),
        ScheduleSpec("ZBVZeroBubble", zbv_zero_bubble_order, "v", 2, "ScheduleZBVZeroBubble"),
        ScheduleSpec("DualPipeV", dual_pipe_v_order, "v", 2, "ScheduleDualPipeV"),
    )
}


def get_schedule_spec(name: str) -> ScheduleSpec:
    """Look a schedule up by name, case-insensitively, like torch's ``get_schedule_class``.

    Accepts torch's class names too (``"ScheduleInterleaved1F1B"``).

    Raises:
        ValueError: unknown name; the message lists the valid ones.

    Example:
        >>> get_schedule_spec("zbvzerobubble").placement
        'v'
    """
    key = name.lower().removeprefix("_").removeprefix("schedule")
    for spec in SCHEDULES.values():
        if spec.name.lower() == key:
            return spec
    raise ValueError(f"Unknown schedule name {name!r}. The valid options are {list(SCHEDULES)}.")


def get_schedule_order(
    name: str, pp_size: int, n_stages: int, n_microbatches: int
) -> PipelineOrder:
    """Generate the compute-only table of the named schedule.

    Args:
        name: a key of `SCHEDULES`, case-insensitive.
        pp_size: number of pipeline ranks.
        n_stages: total number of stages (``pp_size * stages_per_rank``).
        n_microbatches: microbatches per step.

    Returns:
        rank -> compute actions with bubbles.

    Raises:
        ValueError: unknown name, or a configuration the schedule rejects.

    Example:
        >>> order = get_schedule_order("Interleaved1F1B", 2, 4, 4)
        >>> ",".join(str(a) if a else "" for a in order[0])
        '0F0,0F1,2F0,2F1,,,0F2,2B0,0F3,2B1,2F2,0B0,2F3,0B1,,2B2,,2B3,,0B2,,0B3'
    """
    return get_schedule_spec(name).order(pp_size, n_stages, n_microbatches)
