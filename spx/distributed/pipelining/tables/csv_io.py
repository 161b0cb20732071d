"""Schedule tables in torch's CSV format: one row per rank in rank order, one cell per step.

An empty cell is a bubble. ``compute_only`` files hold F/I/W/B/OVERLAP_F_B (and bookkeeping);
``compute_comms`` files hold lowered tables with SEND/RECV and no bubbles, as torch's
``_dump_csv``/``_load_csv`` (2.13) write and read them. A custom schedule is such a file handed
to ``schedule._load_csv``.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Literal, TextIO

from spx.distributed.pipelining.tables.ir import PipelineOrder, _Action

__all__ = ["_dump_csv", "_load_csv"]


@contextmanager
def _open_text(path_or_file: str | os.PathLike[str] | TextIO, mode: str) -> Iterator[TextIO]:
    if isinstance(path_or_file, str | os.PathLike):
        # newline="" lets the csv module own line endings, as torch's writer does.
        with open(path_or_file, mode, newline="") as f:
            yield f
    else:
        yield path_or_file


def _dump_csv(
    pipeline_order: Mapping[int, Sequence[_Action | None]],
    path_or_file: str | os.PathLike[str] | TextIO,
) -> None:
    """Write a table in torch's CSV format: row r = rank r's actions, empty cell = bubble.

    Args:
        pipeline_order: ranks must be exactly ``0..n-1`` because the row position is the rank.
        path_or_file: a path (created/overwritten) or an open text file.

    Raises:
        ValueError: the ranks are not ``0..n-1``.

    Example:
        >>> import io
        >>> buf = io.StringIO()
        >>> _dump_csv({0: [_Action.from_str("0F0"), None], 1: [None, _Action.from_str("1F0")]}, buf)
        >>> buf.getvalue()
        '0F0,\\r\\n,1F0\\r\\n'
    """
    ranks = sorted(pipeline_order)
    if ranks != list(range(len(ranks))):
        raise ValueError(
            f"Cannot dump a schedule whose ranks are {ranks}: CSV rows are positional, so the "
            f"ranks must be 0..{len(ranks) - 1}. Renumber the ranks first."
        )
    with _open_text(path_or_file, "w") as f:
        writer = csv.writer(f)
        for rank in ranks:
            writer.writerow(["" if a is None else str(a) for a in pipeline_order[rank]])


def _load_csv(
    path_or_file: str | os.PathLike[str] | TextIO,
    format: Literal["compute_only", "compute_comms"] = "compute_only",
) -> PipelineOrder:
    """Read a table written by `_dump_csv` or by torch's ``_dump_csv``.

    Args:
        path_or_file: a path, an open text file, or CSV text wrapped in ``io.StringIO``.
        format: ``"compute_only"`` (F/I/W/B/OVERLAP_F_B/bookkeeping, bubbles allowed) or
            ``"compute_comms"`` (the lowered form with SEND/RECV, no bubbles), as in torch.

    Returns:
        rank -> actions, ranks numbered by row.

    Raises:
        ValueError: a malformed cell (named by rank and step), a communication action in a
            compute-only file, a bubble in a compute_comms file, or an unknown ``format``.

    Example:
        >>> import io
        >>> order = _load_csv(io.StringIO("0F0,,0B0\\n,1F0,1B0\\n"))
        >>> [str(a) for a in order[1] if a]
        ['1F0', '1B0']
    """
    if format not in ("compute_only", "compute_comms"):
        raise ValueError(f"format must be 'compute_only' or 'compute_comms', got {format!r}.")
    order: PipelineOrder = {}
    with _open_text(path_or_file, "r") as f:
        for rank, row in enumerate(csv.reader(f)):
            actions: list[_Action | None] = []
            for step, cell in enumerate(row):
                try:
                    action = _Action.from_str(cell)
                except ValueError as e:
                    raise ValueError(f"Rank {rank}, step {step}: {e}") from None
                _check_cell(action, format, rank, step)
                actions.append(action)
            order[rank] = actions
    return order


def _check_cell(action: _Action | None, format: str, rank: int, step: int) -> None:
    if format == "compute_only" and action is not None and action.is_comm_op:
        raise ValueError(
            f"Rank {rank}, step {step}: found communication action '{action}' in a "
            "compute_only schedule. Load it with format='compute_comms', or remove the "
            "SEND/RECV cells and let the lowering pass add them."
        )
    if format == "compute_comms" and action is None:
        raise ValueError(
            f"Rank {rank}, step {step}: empty cell in a compute_comms schedule; lowered "
            "schedules list actions back to back with no bubbles. Remove the empty cell or "
            "load the file with format='compute_only'."
        )
