"""Single-stage schedules as tables: GPipe, 1F1B and forward-only (one stage per rank).

torch runs these three schedules from hand-written loops (``_step_microbatches``) rather than
from a table. What torch 2.13 exposes as ``pipeline_order``:

- ``ScheduleGPipe``: a table, but passed through ``_add_reduce_grad``, which drops the bubbles
  and appends ``REDUCE_GRAD``. `gpipe_order` returns torch's table *before* that pass
  (bubbles kept, no REDUCE_GRAD); ``_add_reduce_grad(gpipe_order(...)[r], n)`` equals torch's.
- ``Schedule1F1B``: a table with the same passes applied, whose last rank is off by one in
  torch 2.13 (it starts at ``F1`` and ends at ``F{n}``, which does not exist). `one_f_one_b_order`
  instead lists exactly the compute order that ``Schedule1F1B._step_microbatches`` executes:
  ``pp - rank`` warm-up forwards, then backward/forward pairs, then the remaining backwards.
- ``_ScheduleForwardOnly``: no table (``None``). `forward_only_order` lists the forwards its
  ``_step_microbatches`` runs, one per microbatch in order.

Bubbles are placed so that, with every action taking one step and hand-offs between ranks
taking none, each action's inputs were produced at an earlier step: the tables read as
timelines. Executors skip bubbles, so their placement never changes results.
"""

from __future__ import annotations

from spx.distributed.pipelining.tables.ir import FORWARD, FULL_BACKWARD, PipelineOrder, _Action
from spx.distributed.pipelining.tables.orders.common import (
    check_microbatches,
    check_pp_size,
    check_stages_per_rank,
)

__all__ = ["forward_only_order", "gpipe_order", "one_f_one_b_order"]


def _check_single(schedule: str, pp_size: int, n_stages: int, n_microbatches: int) -> None:
    check_pp_size(pp_size, schedule)
    check_stages_per_rank(pp_size, n_stages, 1, schedule, " (it is a single-stage schedule)")
    check_microbatches(n_microbatches, schedule)


def gpipe_order(pp_size: int, n_stages: int, n_microbatches: int) -> PipelineOrder:
    """GPipe (fill-drain): every forward, then every backward, in microbatch order.

    Rank ``r`` waits ``r`` steps for its first input, and ``3 * (pp_size - 1 - r)`` steps after
    its last forward for the first gradient, as in torch's ``ScheduleGPipe._get_pipeline_order``.

    Args:
        pp_size: number of pipeline ranks.
        n_stages: must equal ``pp_size`` (one stage per rank).
        n_microbatches: microbatches per step (any number >= 1).

    Returns:
        rank -> compute actions with bubbles.

    Raises:
        ValueError: ``n_stages != pp_size`` or a non-positive size.

    Example:
        >>> [str(a) if a else "" for a in gpipe_order(2, 2, 2)[1]]
        ['', '1F0', '1F1', '1B0', '1B1']
    """
    _check_single("GPipe", pp_size, n_stages, n_microbatches)
    order: PipelineOrder = {}
    for rank in range(pp_size):
        actions: list[_Action | None] = [None] * rank
        actions += [_Action(rank, FORWARD, mb) for mb in range(n_microbatches)]
        actions += [None] * (3 * (pp_size - 1 - rank))
        actions += [_Action(rank, FULL_BACKWARD, mb) for mb in range(n_microbatches)]
        order[rank] = actions
    return order


def one_f_one_b_order(pp_size: int, n_stages: int, n_microbatches: int) -> PipelineOrder:
    """1F1B: warm up with forwards, then alternate one backward and one forward, then drain.

    Rank ``r`` runs ``pp_size - r`` warm-up forwards (as ``Schedule1F1B._step_microbatches``),
    waits ``pp_size - 1 - r`` steps for the first gradient, alternates backward/forward while
    forwards remain, and finishes the backwards one every other step (the gradients arrive
    every other step from the rank below).

    Args:
        pp_size: number of pipeline ranks.
        n_stages: must equal ``pp_size`` (one stage per rank).
        n_microbatches: at least ``n_stages``.

    Returns:
        rank -> compute actions with bubbles.

    Raises:
        ValueError: ``n_microbatches < n_stages`` (as torch), ``n_stages != pp_size``, or a
            non-positive size.

    Example:
        >>> [str(a) if a else "" for a in one_f_one_b_order(2, 2, 3)[0]]
        ['0F0', '0F1', '', '0B0', '0F2', '0B1', '', '0B2']
    """
    _check_single("1F1B", pp_size, n_stages, n_microbatches)
    if n_microbatches < n_stages:
        raise ValueError(
            f"1F1B: the number of microbatches ({n_microbatches}) must be greater than or equal "
            f"to the number of stages ({n_stages}), or the pipeline never fills. Use "
            f"n_microbatches >= {n_stages}, or GPipe for fewer microbatches."
        )
    order: PipelineOrder = {}
    for rank in range(pp_size):
        warmup = pp_size - rank
        actions: list[_Action | None] = [None] * rank
        actions += [_Action(rank, FORWARD, mb) for mb in range(warmup)]
        actions += [None] * (pp_size - 1 - rank)
        for mb in range(n_microbatches):
            if mb > n_microbatches - warmup:
                # Cool-down: the next gradient is still two hops away.
                actions.append(None)
            actions.append(_Action(rank, FULL_BACKWARD, mb))
            if mb + warmup < n_microbatches:
                actions.append(_Action(rank, FORWARD, mb + warmup))
        order[rank] = actions
    return order


def forward_only_order(pp_size: int, n_stages: int, n_microbatches: int) -> PipelineOrder:
    """Forward only (torch's ``_ScheduleForwardOnly``, and what ``eval()`` runs): forwards in order.

    Args:
        pp_size: number of pipeline ranks.
        n_stages: must equal ``pp_size`` (one stage per rank).
        n_microbatches: any number >= 1.

    Returns:
        rank -> forward actions, rank ``r`` delayed ``r`` steps.

    Raises:
        ValueError: ``n_stages != pp_size`` or a non-positive size.

    Example:
        >>> [str(a) if a else "" for a in forward_only_order(2, 2, 2)[1]]
        ['', '1F0', '1F1']
    """
    _check_single("ForwardOnly", pp_size, n_stages, n_microbatches)
    return {
        rank: [None] * rank + [_Action(rank, FORWARD, mb) for mb in range(n_microbatches)]
        for rank in range(pp_size)
    }
