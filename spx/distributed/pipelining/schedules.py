"""Pipeline schedules with torch's classes, constructors and ``step``/``eval`` semantics.

Every schedule here is a *table generator* (see :mod:`.tables.orders`) plus the shared runtime
(:mod:`.runtime.executor`): the constructor builds the per-rank action lists — ``pipeline_order``,
printable with :meth:`_PipelineSchedule.format_order` and exchangeable as torch's CSV — lowers
them to ``pipeline_order_with_comms`` (explicit SEND/RECV, as torch's runtime does), and ``step``
executes this rank's lowered list. A custom schedule is a CSV loaded with ``_load_csv``.

A training step, as in torch::

    schedule = Schedule1F1B(stage, n_microbatches=4, loss_fn=loss_fn)
    if stage.is_first:
        schedule.step(x)                             # the full batch, split into microbatches
    elif stage.is_last:
        losses = []
        out = schedule.step(target=y, losses=losses)  # merged output, one loss per microbatch
    else:
        schedule.step()

Gradients accumulate into ``param.grad`` (the schedule never zeros them); with
``scale_grads=True`` they are divided by ``n_microbatches`` after the last backward.
"""

from __future__ import annotations

from typing import Any, ClassVar, TextIO

from spx._tensor.tensor import Tensor
from spx._validate import as_int
from spx.distributed.pipelining.microbatch import (
    merge_chunks,
    split_args_kwargs_into_chunks,
    split_target,
)
from spx.distributed.pipelining.runtime.executor import RankRunner
from spx.distributed.pipelining.runtime.programs import to_arrays, to_tensors
from spx.distributed.pipelining.runtime.transport import Transport
from spx.distributed.pipelining.stage import PipelineStage
from spx.distributed.pipelining.tables import ir as _ir
from spx.distributed.pipelining.tables.csv_io import _dump_csv, _load_csv
from spx.distributed.pipelining.tables.ir import PipelineOrder, _Action, _format_pipeline_order
from spx.distributed.pipelining.tables.lowering import _lower_schedule
from spx.distributed.pipelining.tables.orders import get_schedule_spec
from spx.distributed.pipelining.tables.simulate import _simulate, _validate_schedule


def _group_of(stages: list[PipelineStage]) -> tuple[Any, int, int]:
    """(group, group rank, group size) of the pipeline ranks."""
    from spx.distributed import process_group

    group = stages[0].group
    if group is None and process_group.is_initialized():
        group = process_group.default_group()
    if group is None:
        return None, 0, 1
    return group, group.rank(), group.size()


class _PipelineSchedule:
    """Shared constructor arguments, validation, ``step`` and ``eval``."""

    _name: ClassVar[str] = ""
    _forward_only: ClassVar[bool] = False  # the table has no backward actions

    def __init__(
        self,
        stages: list[PipelineStage],
        n_microbatches: int,
        loss_fn: Any = None,
        args_chunk_spec: Any = None,
        kwargs_chunk_spec: Any = None,
        output_merge_spec: Any = None,
        scale_grads: bool = True,
        defer_pp_recv: bool = False,
    ) -> None:
        n_microbatches = as_int(n_microbatches, "n_microbatches", type(self).__name__, minimum=1)
        if loss_fn is not None and not callable(loss_fn):
            raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
        for s in stages:
            if not isinstance(s, PipelineStage):
                raise TypeError(
                    f"{type(self).__name__} expects PipelineStage objects, got {type(s).__name__}"
                )
        num_stages = {s.num_stages for s in stages}
        if len(num_stages) != 1:
            raise ValueError(f"the stages disagree on num_stages: {sorted(num_stages)}")
        self._stages = {s.stage_index: s for s in stages}
        if len(self._stages) != len(stages):
            raise ValueError("the same stage_index was given twice")
        self._n_microbatches = n_microbatches
        self._loss_fn = loss_fn
        self._args_chunk_spec = args_chunk_spec
        self._kwargs_chunk_spec = kwargs_chunk_spec
        self._output_merge_spec = output_merge_spec
        self.scale_grads = scale_grads
        self._defer_pp_recv = defer_pp_recv
        self._num_stages = num_stages.pop()
        self._group, self.rank, self.pp_size = _group_of(stages)
        self._has_backward = loss_fn is not None
        spec = get_schedule_spec(self._name)
        # The generator raises torch's ValueErrors for unsupported configurations.
        order = spec.order(self.pp_size, self._num_stages, n_microbatches)
        self.stage_to_rank = spec.stage_to_rank(self.pp_size, self._num_stages)
        self._check_placement()
        self._set_order(order)
        for s in stages:
            s._attach(loss_fn)
            s.stage_index_to_group_rank = dict(self.stage_to_rank)
        self._transport = Transport(self._group if self.pp_size > 1 else None)
        self._runner = RankRunner(
            self._stages, self.stage_to_rank, self.rank, self._transport, type(self).__name__
        )

    def _check_placement(self) -> None:
        for index in self._stages:
            want = self.stage_to_rank[index]
            if want != self.rank:
                raise ValueError(
                    f"{type(self).__name__} places stage {index} on rank {want}, but rank "
                    f"{self.rank} was given it. This schedule expects rank r to hold stages "
                    f"{sorted(s for s, r in self.stage_to_rank.items() if r == self.rank)}."
                )

    def _set_order(self, order: PipelineOrder) -> None:
        self.stage_to_rank = _validate_schedule(
            order,
            self.pp_size,
            self._num_stages,
            self._n_microbatches,
            forward_only=self._forward_only,
        )
        self.pipeline_order: PipelineOrder = {r: list(a) for r, a in order.items()}
        lowered = any(a is not None and a.is_comm_op for acts in order.values() for a in acts)
        # The tables the runtime executes: SEND/RECV where torch's lowering puts them (a table
        # loaded in compute_comms format is already lowered). UNSHARD/RESHARD are left out:
        # they are FSDP prefetching, and spx stages hold whole parameters.
        self.pipeline_order_with_comms: PipelineOrder = (
            {r: list(a) for r, a in order.items()}
            if lowered
            else self._lower(order, self._forward_only, self._defer_pp_recv)
        )
        self._eval_order_with_comms = self._lower(self._forward_only_from(order), True, False)

    def _lower(self, order: PipelineOrder, forward_only: bool, defer: bool) -> PipelineOrder:
        return _lower_schedule(
            order,
            self._num_stages,
            self._n_microbatches,
            forward_only=forward_only,
            unshard_reshard=False,
            defer_recv=defer,
        )

    def _forward_only_from(self, order: PipelineOrder) -> PipelineOrder:
        # Forward-only execution of any placement: each rank runs its stages in increasing
        # index, every microbatch; deadlock-free since a stage only waits on lower stages.
        out: PipelineOrder = {}
        for rank in order:
            mine = sorted(s for s, r in self.stage_to_rank.items() if r == rank)
            out[rank] = [
                _Action(s, _ir.FORWARD, mb) for s in mine for mb in range(self._n_microbatches)
            ]
        return out

    # -- tables ------------------------------------------------------------------------------
    def format_order(self) -> str:
        """The step x rank grid of this schedule's table (torch's format)."""
        return _format_pipeline_order(self.pipeline_order)

    def _load_csv(self, filename: str | TextIO, format: str = "compute_only") -> None:
        """Replace the table with one read from torch's CSV format (a custom schedule).

        The table is validated and simulated before it is accepted.
        """
        order = _load_csv(filename, format=format)
        _simulate(order, self.stage_to_rank, self._num_stages)
        self._set_order(order)

    def _dump_csv(self, filename: str | TextIO) -> None:
        """Write the table in torch's CSV format."""
        _dump_csv(self.pipeline_order, filename)

    # -- running -----------------------------------------------------------------------------
    def step(
        self,
        *args: Any,
        target: Any = None,
        losses: list | None = None,
        return_outputs: bool = True,
        loss_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """One training step over ``n_microbatches`` microbatches (torch's ``step``).

        Args:
            *args: the full batch, on the rank holding stage 0 (ignored elsewhere).
            target: the full target, on the rank holding the last stage.
            losses: on the last stage's rank, a list cleared and filled with each
                microbatch's loss.
            return_outputs: whether the last stage's rank returns the merged output.
            loss_kwargs: extra keyword arguments of ``loss_fn`` (the same for every
                microbatch): ``loss_fn(output, target, **loss_kwargs)``.
            **kwargs: keyword inputs of stage 0, split like ``args``.

        Returns:
            The merged output of the last stage on its rank, else None.
        """
        return self._run(
            args, kwargs, target, losses, return_outputs, self._has_backward, loss_kwargs
        )

    def eval(
        self, *args: Any, target: Any = None, losses: list | None = None, **kwargs: Any
    ) -> Any:
        """Forward only (losses still computed when a target is given); no gradients."""
        return self._run(args, kwargs, target, losses, True, train=False)

    def _run(
        self, args, kwargs, target, losses, return_outputs, train: bool, loss_kwargs=None
    ) -> Any:
        n = self._n_microbatches
        # The runtime moves plain arrays; the caller's Tensors are read once here.
        args, kwargs, target = to_arrays((args, kwargs, target))
        holds_first = 0 in self._stages
        holds_last = self._num_stages - 1 in self._stages
        if holds_first:
            args_mb, kwargs_mb = split_args_kwargs_into_chunks(
                args, kwargs, n, self._args_chunk_spec, self._kwargs_chunk_spec
            )
        else:
            args_mb, kwargs_mb = [()] * n, [{}] * n
        if (
            holds_last
            and self._loss_fn is not None
            and target is None
            and (train or losses is not None)
        ):
            raise ValueError(
                f"rank {self.rank} holds the last stage and the schedule has a loss_fn: pass "
                "target= to step() on this rank"
            )
        target_mb = split_target(target, n) if holds_last else [None] * n
        if losses is not None and not isinstance(losses, list):
            raise TypeError(f"losses must be a list, got {type(losses).__name__}")
        for stage in self._stages.values():
            stage._begin_step()
        table = self.pipeline_order_with_comms if train else self._eval_order_with_comms
        self._runner.run(table, args_mb, kwargs_mb, target_mb, train, loss_kwargs)
        if train:
            scale = 1.0 / n if self.scale_grads else None
            for stage in self._stages.values():
                stage._finish_step(scale)
        if not holds_last:
            return None
        last = self._stages[self._num_stages - 1]
        if losses is not None:
            losses.clear()
            losses.extend(Tensor._of(last.losses[i]) for i in range(n) if i in last.losses)
        if not return_outputs:
            return None
        return to_tensors(
            merge_chunks([last.outputs[i] for i in range(n)], self._output_merge_spec)
        )


class PipelineScheduleSingle(_PipelineSchedule):
    """Base of schedules with one stage per rank (mirrors torch's class of that name)."""

    def __init__(
        self,
        stage: PipelineStage,
        n_microbatches: int,
        loss_fn: Any = None,
        args_chunk_spec: Any = None,
        kwargs_chunk_spec: Any = None,
        output_merge_spec: Any = None,
        scale_grads: bool = True,
    ) -> None:
        if isinstance(stage, list | tuple):
            raise TypeError(
                f"{type(self).__name__} takes one PipelineStage; for several stages per rank "
                "use a multi-stage schedule such as ScheduleInterleaved1F1B"
            )
        self._stage = stage
        super().__init__(
            [stage],
            n_microbatches,
            loss_fn,
            args_chunk_spec,
            kwargs_chunk_spec,
            output_merge_spec,
            scale_grads,
        )


class PipelineScheduleMulti(_PipelineSchedule):
    """Base of schedules with several stages per rank (mirrors torch's class of that name)."""

    def __init__(
        self,
        stages: list[PipelineStage],
        n_microbatches: int,
        loss_fn: Any = None,
        args_chunk_spec: Any = None,
        kwargs_chunk_spec: Any = None,
        output_merge_spec: Any = None,
        use_full_backward: bool | None = None,
        scale_grads: bool = True,
        backward_requires_autograd: bool = True,
        defer_pp_recv: bool = False,
    ) -> None:
        if isinstance(stages, PipelineStage):
            stages = [stages]
        if not isinstance(stages, list | tuple) or not stages:
            raise TypeError(f"{type(self).__name__} takes a non-empty list of PipelineStages")
        self._stages_list = list(stages)
        # use_full_backward / backward_requires_autograd steer torch's autograd; spx's compiled
        # programs need neither. defer_pp_recv posts each RECV just before its consumer.
        super().__init__(
            list(stages),
            n_microbatches,
            loss_fn,
            args_chunk_spec,
            kwargs_chunk_spec,
            output_merge_spec,
            scale_grads,
            defer_pp_recv,
        )


class ScheduleGPipe(PipelineScheduleSingle):
    """All forwards, then all backwards (mirrors ``torch...ScheduleGPipe``)."""

    _name = "GPipe"


class Schedule1F1B(PipelineScheduleSingle):
    """One forward, one backward in steady state (mirrors ``torch...Schedule1F1B``)."""

    _name = "1F1B"


class _ScheduleForwardOnly(PipelineScheduleSingle):
    """Forward passes only (mirrors torch's ``_ScheduleForwardOnly``)."""

    _name = "ForwardOnly"
    _forward_only = True

    def _run(
        self, args, kwargs, target, losses, return_outputs, train: bool, loss_kwargs=None
    ) -> Any:
        # As in torch: no loss and no backward, even if a loss_fn was given (a training
        # forward would keep residuals that no backward ever frees).
        if target is not None or losses is not None:
            raise RuntimeError(
                "_ScheduleForwardOnly does not compute losses: call step() without target= "
                "and losses=, or use a training schedule (e.g. ScheduleGPipe) or its eval()"
            )
        return super()._run(args, kwargs, None, None, return_outputs, train=False)


class ScheduleInterleaved1F1B(PipelineScheduleMulti):
    """1F1B over several looped stages per rank (mirrors torch's class)."""

    _name = "Interleaved1F1B"


class ScheduleLoopedBFS(PipelineScheduleMulti):
    """Breadth-first over looped stages (mirrors torch's class)."""

    _name = "LoopedBFS"


class ScheduleInterleavedZeroBubble(PipelineScheduleMulti):
    """Interleaved 1F1B with backward split into I and W (mirrors torch's class)."""

    _name = "InterleavedZeroBubble"


class ScheduleZBVZeroBubble(PipelineScheduleMulti):
    """Zero-bubble V schedule: rank r holds stages r and 2·pp−1−r (mirrors torch's class)."""

    _name = "ZBVZeroBubble"


class ScheduleDualPipeV(PipelineScheduleMulti):
    """DualPipeV: V placement with overlapped forward/backward pairs (mirrors torch's class)."""

    _name = "DualPipeV"


_CLASSES: dict[str, type[_PipelineSchedule]] = {
    c._name.lower(): c
    for c in (
        ScheduleGPipe,
        Schedule1F1B,
        _ScheduleForwardOnly,
        ScheduleInterleaved1F1B,
        ScheduleLoopedBFS,
        ScheduleInterleavedZeroBubble,
        ScheduleZBVZeroBubble,
        ScheduleDualPipeV,
    )
}


def get_schedule_class(schedule_name: str) -> type[_PipelineSchedule]:
    """The schedule class for a name, case-insensitively (torch's ``get_schedule_class``).

    Example:
        >>> get_schedule_class("1f1b").__name__
        'Schedule1F1B'
    """
    spec = get_schedule_spec(schedule_name)
    return _CLASSES[spec.name.lower()]
