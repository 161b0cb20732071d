"""``PipelineStage``: one stage of a pipeline — its module, its device, its compiled programs.

Mirrors ``torch.distributed.pipelining.PipelineStage``. A rank builds one stage object per
stage it holds and hands them to a schedule. The stage keeps, per step, the residuals each
forward left on its device until the matching backward, the gradient accumulators of its
trainable parameters, and the outputs and losses of the last stage. Stages may differ in class,
width and dtype; inputs and outputs may be any pytree of arrays (a stage's output becomes the
next stage's positional arguments: a tuple is unpacked, anything else is passed as one value).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from spx import random as spx_random
from spx._device import device as resolve_device
from spx._tensor.autograd import run_post_backward
from spx._validate import as_int
from spx.distributed.pipelining.runtime.programs import StagePrograms
from spx.nn.module import Module
from spx.nn.parallel.distributed import DistributedDataParallel


def _meta(tree: Any) -> tuple:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, tuple(
        (x.shape, x.dtype) if hasattr(x, "dtype") else ((), type(x).__name__) for x in leaves
    )


def _describe(meta: tuple) -> str:
    treedef, leaves = meta
    return f"{treedef} with leaves " + ", ".join(f"{s} {d}" for s, d in leaves)


class FusedProgramFailed(Exception):
    """The last stage's fused F+B program raised before changing anything (the runner then
    runs F and B as separate programs; see ``RankRunner._forward_backward``)."""


class PipelineStage:
    """One pipeline stage (mirrors ``torch.distributed.pipelining.PipelineStage``).

    Args:
        submodule: the stage's module.
        stage_index: this stage's index, ``0 <= stage_index < num_stages``.
        num_stages: total number of stages of the pipeline.
        device: where the stage runs (``"cpu"``, ``"cuda:N"`` or a ``jax.Device``); the module
            is moved there.
        input_args: example input(s) (arrays or ``jax.ShapeDtypeStruct``) of one microbatch;
            when given, the first step checks the received inputs against them. Otherwise the
            shapes are inferred from the first step and checked on every later step.
        output_args: example output(s) of one microbatch, checked likewise.
        group: the process group of the pipeline ranks (default: the default group).
        dw_builder: torch's hook for a custom weight-gradient function. spx derives the
            weight-gradient program automatically (the backward is split at the jaxpr level),
            so a custom builder is not supported and raises.
        recompute: activation checkpointing: keep only the stage inputs between forward and
            backward and recompute the forward during the backward.

    Example:
        >>> import spx
        >>> stage = PipelineStage(spx.nn.Linear(4, 4), 0, 1, "cpu")
        >>> stage.is_first and stage.is_last
        True
    """

    def __init__(
        self,
        submodule: Module,
        stage_index: int,
        num_stages: int,
        device: Any,
        input_args: Any = None,
        output_args: Any = None,
        group: Any = None,
        dw_builder: Callable[[], Callable[..., None]] | None = None,
        *,
        recompute: bool = False,
    ) -> None:
        if not isinstance(submodule, Module):
            raise TypeError(
                f"PipelineStage expects an spx.nn.Module as submodule, got "
                f"{type(submodule).__name__}"
            )
        stage_index = as_int(stage_index, "stage_index", "PipelineStage")
        num_stages = as_int(num_stages, "num_stages", "PipelineStage")
        if num_stages < 1:
            raise ValueError(f"PipelineStage: num_stages must be >= 1, got {num_stages}")
        if not 0 <= stage_index < num_stages:
            raise ValueError(
                f"Stage index {stage_index} is out of range of {num_stages}: expected "
                f"0 <= stage_index < num_stages"
            )
        if dw_builder is not None:
            raise NotImplementedError(
                "PipelineStage(dw_builder=...) is not supported: spx splits each stage's "
                "backward into input-gradient (I) and weight-gradient (W) programs itself, so "
                "zero-bubble schedules need no custom weight function. Drop the argument."
            )
        self.submod = submodule
        self.stage_index = stage_index
        self.num_stages = num_stages
        self.device = resolve_device(device)
        self._devices = {self.device}
        self.is_first = stage_index == 0
        self.is_last = stage_index == num_stages - 1
        self.recompute = bool(recompute)
        self.group = group
        self._expected_in = _meta(_as_tuple(input_args)) if input_args is not None else None
        self._expected_out = _meta(output_args) if output_args is not None else None
        self._seen_in: tuple | None = None
        self._seen_out: tuple | None = None
        submodule.to(self.device)
        self._programs: StagePrograms | None = None
        self._loss_fn: Any = None
        self.stage_index_to_group_rank: dict[int, int] = {}
        self.peak_stored = 0  # most microbatches whose residuals were alive at once (last step)
        self._reset_step()

    @property
    def submodule(self) -> Module:
        return self.submod

    def __repr__(self) -> str:
        return (
            f"PipelineStage(stage_index={self.stage_index}, num_stages={self.num_stages}, "
            f"device={self.device}, submod={type(self.submod).__name__})"
        )

    @property
    def fuses_forward_backward(self) -> bool:
        """Whether the runtime may run F and B of one microbatch as one program: on the last
        stage, with a loss (see :meth:`forward_backward_one_chunk`)."""
        return self.is_last and self._loss_fn is not None

    # -- set-up by the schedule --------------------------------------------------------------
    def _attach(self, loss_fn: Any) -> None:
        # Only the last stage's programs involve the loss: the other stages keep theirs (and
        # what they compiled) when another schedule reuses them with a different loss_fn.
        loss_fn = loss_fn if self.is_last else None
        if self._programs is None or self._loss_fn is not loss_fn:
            self._loss_fn = loss_fn
            self._programs = StagePrograms(
                self.submod, self.is_first, self.is_last, loss_fn, recompute=self.recompute
            )

    def _reset_step(self) -> None:
        self._residuals: dict[int, Any] = {}
        self._saved_w: dict[int, Any] = {}
        self._acc: list[jax.Array] | None = None
        self.outputs: dict[int, Any] = {}
        self.losses: dict[int, jax.Array] = {}
        self._stored_now = 0
        self.peak_stored = 0
        self._key_out: Any = None  # the key this stage's last forward returned

    def _begin_step(self) -> None:
        """Read live parameters (placing strays on the stage's device) for this step."""
        self._reset_step()
        programs = self._programs
        for p in programs.binding.params:
            data = p._data
            if getattr(data, "committed", True) is False or self.device not in data.devices():
                p._data = jax.device_put(data, self.device)
        programs.read_params()

    # -- checks ------------------------------------------------------------------------------
    def _check_inputs(self, args: tuple, mb: int) -> None:
        meta = _meta(args)
        expected = self._expected_in or self._seen_in
        if expected is None:
            self._seen_in = meta
        elif meta != expected:
            raise ValueError(
                f"Stage {self.stage_index}, microbatch {mb}: received inputs "
                f"{_describe(meta)}, but expected {_describe(expected)}"
                + (" (from input_args)" if self._expected_in else " (as in the first step)")
                + ". Every microbatch of every step must have the same shapes; keep the batch "
                "size and sequence length fixed."
            )

    def _check_output(self, out: Any, mb: int) -> None:
        meta = _meta(out)
        expected = self._expected_out or self._seen_out
        if expected is None:
            self._seen_out = meta
        elif meta != expected:
            raise ValueError(
                f"Stage {self.stage_index}, microbatch {mb}: produced outputs {_describe(meta)}, "
                f"but expected {_describe(expected)}"
            )

    # -- actions -----------------------------------------------------------------------------
    def _place(self, tree: Any) -> Any:
        return jax.device_put(tree, self.device)

    def forward_one_chunk(
        self,
        mb: int,
        args: tuple,
        kwargs: dict,
        target: Any,
        train: bool,
        loss_kwargs: dict[str, Any] | None = None,
    ) -> Any:
        """F of microbatch ``mb``; returns the output to hand to the next stage."""
        self._check_inputs(args, mb)
        programs = self._programs
        buffers = programs.read_buffers()
        key = self._forward_key()
        if train:
            out, loss, res, new_buffers, new_key = programs.forward(
                buffers, key, args, kwargs, target, loss_kwargs
            )
            # The backward needs the stage inputs only if the vjp refers to them.
            inputs = jax.tree_util.tree_leaves(args) if res.layout[2] else None
            self._residuals[mb] = (res, inputs, buffers)
            self._stored_now += 1
            self.peak_stored = max(self.peak_stored, self._stored_now)
        else:
            out, loss, new_buffers, new_key = programs.forward_eval(
                buffers, key, args, kwargs, target, loss_kwargs
            )
        self._forward_done(mb, out, loss, new_buffers, new_key)
        return out

    def forward_backward_one_chunk(
        self, mb: int, args: tuple, kwargs: dict, target: Any, loss_kwargs: dict[str, Any] | None
    ) -> Any:
        """F then B of microbatch ``mb`` on the last stage, as one program (the executor's
        choice when the table runs them back to back); returns the gradients for the previous
        stage. The results of ``forward_one_chunk`` then ``backward_one_chunk``, up to float
        rounding.

        Raises:
            FusedProgramFailed: the program failed before changing anything (the caller runs
                F and B apart then).
        """
        self._check_inputs(args, mb)
        programs = self._programs
        buffers = programs.read_buffers()
        key = self._forward_key()
        acc = self._accumulators()
        try:
            out, loss, new_buffers, new_key, g_inputs, new_acc = programs.forward_backward(
                buffers, key, args, kwargs, target, loss_kwargs, acc
            )
        except Exception as e:
            if any(a.is_deleted() for a in acc):
                # The accumulators were donated to a program that failed while running: the
                # step's gradients are gone, nothing to fall back to.
                raise
            # Nothing changed yet; the runner runs F and B apart to report where it fails.
            raise FusedProgramFailed(f"{type(e).__name__}: {e}") from e
        self._acc = new_acc
        # The microbatch's residuals live inside the program: count them while it runs.
        self.peak_stored = max(self.peak_stored, self._stored_now + 1)
        self._forward_done(mb, out, loss, new_buffers, new_key)
        return g_inputs

    def _forward_key(self) -> Any:
        key = spx_random.get_key()
        if key is not self._key_out and not (key.committed and key.devices() == self._devices):
            # A fresh key, or one another stage of this rank left on another device.
            key = jax.device_put(key, self.device)
        return key

    def _forward_done(self, mb: int, out: Any, loss: Any, new_buffers: list, new_key: Any) -> None:
        self._programs.write_buffers(new_buffers)
        spx_random.set_key(new_key)
        self._key_out = new_key
        self._check_output(out, mb)
        if self.is_last:
            self.outputs[mb] = out
            if loss is not None:
                self.losses[mb] = loss

    def _take_residuals(self, mb: int, action: str) -> Any:
        try:
            return self._residuals.pop(mb)
        except KeyError:
            raise RuntimeError(
                f"Stage {self.stage_index}: {action} of microbatch {mb} ran before its forward "
                "(or twice). The schedule's action order is invalid for this stage."
            ) from None

    def backward_one_chunk(self, mb: int, grads_out: Any) -> Any:
        """B of microbatch ``mb``; returns the gradients for the previous stage."""
        saved = self._take_residuals(mb, "backward")
        self._stored_now -= 1
        g_inputs, self._acc = self._programs.backward(saved, grads_out, self._accumulators())
        return g_inputs

    def backward_input_one_chunk(self, mb: int, grads_out: Any) -> Any:
        """I of microbatch ``mb``: input gradients now, weight gradients left for W."""
        saved = self._take_residuals(mb, "backward-input")
        g_inputs, bridge = self._programs.backward_input(saved, grads_out)
        self._saved_w[mb] = (saved, grads_out, bridge)
        return g_inputs

    def backward_weight_one_chunk(self, mb: int) -> None:
        """W of microbatch ``mb``: add its weight gradients to the accumulators."""
        try:
            saved, grads_out, bridge = self._saved_w.pop(mb)
        except KeyError:
            raise RuntimeError(
                f"Stage {self.stage_index}: backward-weight of microbatch {mb} ran before its "
                "backward-input. The schedule's action order is invalid for this stage."
            ) from None
        self._stored_now -= 1
        self._acc = self._programs.backward_weight(saved, grads_out, bridge, self._accumulators())

    def _accumulators(self) -> list[jax.Array]:
        # Start the step's accumulators at zeros rather than None, so the B and W programs see
        # one argument structure and compile once (not once for the first microbatch and again
        # for the rest). Adding zero to the first gradient is exact.
        if self._acc is None:
            # Committed like the accumulators the programs return, or jit sees a new signature.
            self._acc = jax.device_put(self._programs.zero_accumulators(), self.device)
        return self._acc

    def _finish_step(self, scale: float | None) -> None:
        """Add the step's accumulated gradients into ``param.grad`` (scaled by ``scale``)."""
        if self._residuals or self._saved_w:
            left = sorted(set(self._residuals) | set(self._saved_w))
            raise RuntimeError(
                f"Stage {self.stage_index}: microbatches {left} never finished their backward; "
                "the schedule is missing B (or I/W) actions for them"
            )
        if self._acc is None:
            return
        self._programs.finish(self._programs.train_params, self._acc, scale)
        self._acc = None
        # The stage's backward is done: post-backward callbacks run as after loss.backward(),
        # so a DistributedDataParallel stage module averages its gradients over its data-
        # parallel group once per step (torch arms DDP's reducer for the last microbatch's
        # backward: the programs run the module's forward without passing through DDP's).
        if isinstance(self.submod, DistributedDataParallel):
            self.submod._prepare_for_backward()
        run_post_backward(self._programs.train_params)


def _as_tuple(value: Any) -> tuple:
    return value if isinstance(value, tuple) else (value,)
