"""Shared pieces of the schedule generators: argument checks and stage-to-rank placement.

Two placements exist, as in torch (``torch.distributed.pipelining._utils``):

- loop: stage ``s`` lives on rank ``s % pp`` (GPipe, 1F1B, Interleaved1F1B, LoopedBFS,
  InterleavedZeroBubble). With 2 stages per rank and pp=2: ranks own ``[0, 2]`` and ``[1, 3]``.
- V: stages zig-zag down and back up the ranks, so rank ``r`` owns ``r`` and ``2*pp-1-r``
  (ZBVZeroBubble, DualPipeV). With pp=2: ranks own ``[0, 3]`` and ``[1, 2]``; the turn (stages
  ``pp-1`` and ``pp``) stays on one rank, so that hop needs no communication.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from spx._validate import as_int

__all__ = [
    "check_microbatches",
    "check_pp_size",
    "check_stages_per_rank",
    "placement",
    "rank_to_stages",
    "stage_to_rank_loop",
    "stage_to_rank_v",
    "stages_per_rank",
]

PlacementStyle = Literal["loop", "v"]


def _check_int(name: str, value: object, schedule: str) -> int:
    # bool is an int subclass; True microbatches is a bug, not 1.
    return as_int(value, name, schedule, minimum=1)


def check_pp_size(pp_size: object, schedule: str) -> int:
    """Return ``pp_size`` after checking it is an int >= 1.

    Raises:
        TypeError: not an int.
        ValueError: smaller than 1.
    """
    return _check_int("pp_size (number of pipeline ranks)", pp_size, schedule)


def check_microbatches(n_microbatches: object, schedule: str) -> int:
    """Return ``n_microbatches`` after checking it is an int >= 1.

    torch accepts 0 and then fails while splitting the batch; spx rejects it up front.

    Raises:
        TypeError: not an int.
        ValueError: smaller than 1.
    """
    return _check_int("n_microbatches", n_microbatches, schedule)


def stages_per_rank(pp_size: int, n_stages: object, schedule: str) -> int:
    """Return ``n_stages // pp_size`` after checking the stages split evenly over the ranks.

    Raises:
        TypeError: ``n_stages`` is not an int.
        ValueError: ``n_stages`` < 1 or not a multiple of ``pp_size``.
    """
    n = _check_int("n_stages", n_stages, schedule)
    if n % pp_size != 0:
        raise ValueError(
            f"{schedule}: the number of stages ({n}) must be divisible by the pipeline parallel "
            f"size ({pp_size}) so that every rank holds the same number of stages. Use "
            f"{(n // pp_size + 1) * pp_size} or {max(1, n // pp_size) * pp_size} stages, or "
            "change the number of ranks."
        )
    return n // pp_size


def check_stages_per_rank(
    pp_size: int, n_stages: object, expected: int, schedule: str, why: str = ""
) -> None:
    """Check that ``n_stages == expected * pp_size`` (single-stage and V-shaped schedules).

    Raises:
        TypeError: ``n_stages`` is not an int.
        ValueError: the number of stages per rank is not ``expected``.
    """
    n = _check_int("n_stages", n_stages, schedule)
    if n != expected * pp_size:
        per_rank = f"{n / pp_size:g}"
        raise ValueError(
            f"{schedule} requires exactly {expected} stage(s) per rank{why}, but got {n} stages "
            f"for {pp_size} ranks ({per_rank} per rank). Use n_stages={expected * pp_size}."
        )


def stage_to_rank_loop(pp_size: int, n_stages: int) -> dict[int, int]:
    """Loop placement: stage ``s`` on rank ``s % pp_size``.

    Example:
        >>> stage_to_rank_loop(2, 4)
        {0: 0, 1: 1, 2: 0, 3: 1}
    """
    check_pp_size(pp_size, "stage_to_rank_loop")
    return {s: s % pp_size for s in range(n_stages)}


def stage_to_rank_v(pp_size: int, n_stages: int) -> dict[int, int]:
    """V placement: stages walk down the ranks, turn on the last rank, walk back up, ...

    With 2 stages per rank, rank ``r`` owns stages ``r`` and ``2*pp_size-1-r``. Mirrors torch's
    ``generate_stage_to_rank_mapping(pp_size, n_stages, style="v")``.

    Raises:
        ValueError: ``n_stages`` is not a multiple of ``pp_size``.

    Example:
        >>> stage_to_rank_v(2, 4)
        {0: 0, 1: 1, 2: 1, 3: 0}
    """
    check_pp_size(pp_size, "stage_to_rank_v")
    stages_per_rank(pp_size, n_stages, "V placement")
    mapping = {}
    for s in range(n_stages):
        lap, pos = divmod(s, pp_size)
        # Even laps go down the ranks, odd laps come back up.
        mapping[s] = pos if lap % 2 == 0 else pp_size - 1 - pos
    return mapping


def placement(style: PlacementStyle, pp_size: int, n_stages: int) -> dict[int, int]:
    """Stage-to-rank map for a placement style (``"loop"`` or ``"v"``).

    Raises:
        ValueError: unknown style.
    """
    if style == "loop":
        return stage_to_rank_loop(pp_size, n_stages)
    if style == "v":
        return stage_to_rank_v(pp_size, n_stages)
    raise ValueError(f"Unknown stage placement style {style!r}; expected 'loop' or 'v'.")


def rank_to_stages(stage_to_rank: Mapping[int, int]) -> dict[int, list[int]]:
    """Invert a stage-to-rank map: rank -> its stages in ascending order.

    Example:
        >>> rank_to_stages(stage_to_rank_v(2, 4))
        {0: [0, 3], 1: [1, 2]}
    """
    out: dict[int, list[int]] = {}
    for stage in sorted(stage_to_rank):
        out.setdefault(stage_to_rank[stage], []).append(stage)
    return dict(sorted(out.items()))
