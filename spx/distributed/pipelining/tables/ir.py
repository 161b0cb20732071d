"""The pipeline action IR: one `_Action` per thing a rank does, printed and parsed like torch.

A pipeline schedule is data: ``dict[rank, list[_Action | None]]`` where ``None`` is a bubble
(an idle step). This module defines the vocabulary of that table, mirroring
``torch.distributed.pipelining.schedules`` (2.13) so that schedules print, parse and round-trip
through CSV exactly as torch's do:

- ``"2F0"``  stage 2, forward, microbatch 0
- ``"1I3"``  stage 1, backward w.r.t. inputs, microbatch 3
- ``"1W3"``  stage 1, backward w.r.t. weights, microbatch 3
- ``"0B1"``  stage 0, full backward, microbatch 1
- ``"0SEND_F1"`` / ``"1RECV_F1"`` / ``"1SEND_B0"`` / ``"0RECV_B0"``  communication
- ``"0UNSHARD"`` / ``"0RESHARD"`` / ``"0REDUCE_GRAD"``  per-stage bookkeeping (no microbatch)
- ``"(0F3;3B1)OVERLAP_F_B"``  a forward and a backward issued together (DualPipeV)

Tables are read from and written to torch's CSV format by :mod:`.csv_io`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import NamedTuple

__all__ = [
    "BACKWARD_INPUT",
    "BACKWARD_WEIGHT",
    "COMM_TYPES",
    "COMPUTE_TYPES",
    "FORWARD",
    "FULL_BACKWARD",
    "OVERLAP_F_B",
    "RECV_B",
    "RECV_F",
    "REDUCE_GRAD",
    "RESHARD",
    "SEND_B",
    "SEND_F",
    "UNSHARD",
    "B",
    "F",
    "I",
    "PipelineOrder",
    "W",
    "_Action",
    "_ComputationType",
    "_format_pipeline_order",
]


class _ComputationType(StrEnum):
    """What an action does; the value is its spelling inside an action string (torch's)."""

    FORWARD = "F"
    BACKWARD_INPUT = "I"
    BACKWARD_WEIGHT = "W"
    UNSHARD = "UNSHARD"
    RESHARD = "RESHARD"
    SEND_F = "SEND_F"
    RECV_F = "RECV_F"
    SEND_B = "SEND_B"
    RECV_B = "RECV_B"
    FULL_BACKWARD = "B"
    OVERLAP_F_B = "OVERLAP_F_B"
    REDUCE_GRAD = "REDUCE_GRAD"

    @staticmethod
    def from_str(text: str) -> _ComputationType:
        """Parse ``"F"``, ``"SEND_B"``, ... into a member.

        Raises:
            ValueError: ``text`` is not one of the spellings.
        """
        try:
            return _ComputationType(text)
        except ValueError:
            valid = ", ".join(repr(c.value) for c in _ComputationType)
            raise ValueError(
                f"Invalid computation type {text!r}; expected one of {valid}."
            ) from None


FORWARD = _ComputationType.FORWARD
BACKWARD_INPUT = _ComputationType.BACKWARD_INPUT
BACKWARD_WEIGHT = _ComputationType.BACKWARD_WEIGHT
FULL_BACKWARD = _ComputationType.FULL_BACKWARD
UNSHARD = _ComputationType.UNSHARD
RESHARD = _ComputationType.RESHARD
SEND_F = _ComputationType.SEND_F
RECV_F = _ComputationType.RECV_F
SEND_B = _ComputationType.SEND_B
RECV_B = _ComputationType.RECV_B
OVERLAP_F_B = _ComputationType.OVERLAP_F_B
REDUCE_GRAD = _ComputationType.REDUCE_GRAD

# torch's shorthands for the compute actions of the "simple schedule format".
F = FORWARD
I = BACKWARD_INPUT
W = BACKWARD_WEIGHT
B = FULL_BACKWARD

COMPUTE_TYPES = frozenset({F, I, W, B, OVERLAP_F_B})
COMM_TYPES = frozenset({SEND_F, RECV_F, SEND_B, RECV_B})
# Bookkeeping actions carry no microbatch; every other single action must carry one.
_NO_MICROBATCH_TYPES = frozenset({UNSHARD, RESHARD, REDUCE_GRAD})

# The type alternatives are anchored by fullmatch, so "2F0x" is junk rather than "2F0".
_ACTION_RE = re.compile(
    r"(\d+)(F|I|B|W|UNSHARD|RESHARD|REDUCE_GRAD|SEND_F|RECV_F|SEND_B|RECV_B)(\d*)"
)
_OVERLAP_RE = re.compile(r"\((.*)\)(\w+)")
_FORMAT_HINT = (
    "Actions are written [stage][type][microbatch], e.g. '2F0', '1I3', '0SEND_F1', "
    "'0REDUCE_GRAD', or '(0F3;3B1)OVERLAP_F_B'."
)


class _Action(NamedTuple):
    """One step of one rank: ``_Action(stage_index, computation_type, microbatch_index)``.

    Mirrors ``torch.distributed.pipelining.schedules._Action``: a frozen, hashable tuple whose
    ``str`` is torch's spelling (``"2F0"``) and which ``from_str`` parses back. An
    ``OVERLAP_F_B`` action holds the forward and backward it overlaps in ``sub_actions`` and uses
    ``stage_index=-1`` as torch does.

    Example:
        >>> a = _Action(2, F, 0)
        >>> str(a), _Action.from_str("2F0") == a
        ('2F0', True)
        >>> str(_Action.from_str("(0F3;3B1)OVERLAP_F_B").sub_actions[1])
        '3B1'
    """

    stage_index: int
    computation_type: _ComputationType
    microbatch_index: int | None = None
    sub_actions: tuple[_Action, ...] | None = None

    def __repr__(self) -> str:
        if self.sub_actions is not None:
            inner = ";".join(repr(a) for a in self.sub_actions)
            return f"({inner}){self.computation_type.value}"
        mb = "" if self.microbatch_index is None else str(self.microbatch_index)
        return f"{self.stage_index}{self.computation_type.value}{mb}"

    def __str__(self) -> str:
        return self.__repr__()

    @property
    def is_compute_op(self) -> bool:
        """True for F, I, W, B and OVERLAP_F_B (torch's definition)."""
        return self.computation_type in COMPUTE_TYPES

    @property
    def is_comm_op(self) -> bool:
        """True for SEND_F, RECV_F, SEND_B and RECV_B."""
        return self.computation_type in COMM_TYPES

    def leaves(self) -> tuple[_Action, ...]:
        """The actions this one really performs: its sub-actions, or itself."""
        return self.sub_actions if self.sub_actions is not None else (self,)

    @staticmethod
    def from_str(text: str) -> _Action | None:
        """Parse torch's spelling; an empty (or blank) string is a bubble and returns None.

        Raises:
            ValueError: ``text`` is not a well-formed action.
        """
        s = text.strip()
        if not s:
            return None
        if s.startswith("("):
            return _parse_overlap(text, s)
        match = _ACTION_RE.fullmatch(s)
        if match is None:
            raise ValueError(f"Invalid action string {text!r}. {_FORMAT_HINT}")
        stage, kind, mb = match.groups()
        ctype = _ComputationType(kind)
        if ctype in _NO_MICROBATCH_TYPES and mb:
            raise ValueError(
                f"Invalid action string {text!r}: {kind} is per stage and takes no microbatch "
                f"index; write '{stage}{kind}'."
            )
        if ctype not in _NO_MICROBATCH_TYPES and not mb:
            raise ValueError(
                f"Invalid action string {text!r}: {kind} needs a microbatch index, "
                f"e.g. '{stage}{kind}0'."
            )
        return _Action(int(stage), ctype, int(mb) if mb else None)


def _parse_overlap(text: str, s: str) -> _Action:
    match = _OVERLAP_RE.fullmatch(s)
    if match is None or match.group(2) != OVERLAP_F_B.value:
        raise ValueError(
            f"Invalid action string {text!r}: a parenthesised group must be followed by "
            f"'OVERLAP_F_B'. {_FORMAT_HINT}"
        )
    subs = []
    for part in match.group(1).split(";"):
        sub = _Action.from_str(part)
        if sub is None or sub.computation_type not in (F, I, W, B):
            raise ValueError(
                f"Invalid action string {text!r}: OVERLAP_F_B may only group compute actions "
                f"(F, I, W, B), got {part.strip()!r}."
            )
        subs.append(sub)
    return _Action(-1, OVERLAP_F_B, None, tuple(subs))


PipelineOrder = dict[int, list[_Action | None]]
"""A schedule table: rank -> that rank's actions in execution order (None = bubble)."""


def _format_pipeline_order(
    pipeline_order: Mapping[int, Sequence[_Action | None]],
    error_step_number: int | None = None,
) -> str:
    """Render a table as a step (row) x rank (column) grid, exactly as torch prints it.

    Args:
        pipeline_order: rank -> actions; missing trailing steps and bubbles print blank.
        error_step_number: if given, that row is suffixed with ``" <-- ERROR HERE"``.

    Returns:
        The grid, one line per step after a header of rank labels, ending in a newline.

    Example:
        >>> grid = _format_pipeline_order({0: [_Action(0, F, 0)], 1: [None, _Action(1, F, 0)]}, 1)
        >>> [line.rstrip() for line in grid.splitlines()]
        ['        Rank 0 Rank 1', 'Step 0: 0F0', 'Step 1:        1F0    <-- ERROR HERE']
    """
    ranks = sorted(pipeline_order)
    columns = [["" if a is None else str(a) for a in pipeline_order[r]] for r in ranks]
    num_steps = max((len(c) for c in columns), default=0)
    width = len(str(num_steps - 1))
    steps = [f"Step {i:0{width}d}" for i in range(num_steps)]
    # torch labels columns 0..n-1 by position, whatever the dict keys are.
    labels = [f"Rank {i}" for i in range(len(ranks))]
    cells = [[c[i] if i < len(c) else "" for c in columns] for i in range(num_steps)]
    # torch sizes every rank column to fit a step label too ("Step 07"); kept so that the
    # grid is character-for-character torch's.
    label_width = len(steps[0]) if steps else 0
    widths = [max([label_width, *(len(x) for x in col)]) for col in columns]
    header = " " * (len(steps[0]) + 2 if steps else 2) + " ".join(
        f"{label:<{widths[i]}}" for i, label in enumerate(labels)
    )
    rows = []
    for i, (step, row) in enumerate(zip(steps, cells, strict=True)):
        line = f"{step}: " + " ".join(f"{x:<{widths[j]}}" for j, x in enumerate(row))
        if error_step_number is not None and i == error_step_number:
            line += " <-- ERROR HERE"
        rows.append(line)
    return header + "\n" + "\n".join(rows) + "\n"


if __name__ == "__main__":  # pragma: no cover - doctest entry point
    import doctest

    doctest.testmod()
