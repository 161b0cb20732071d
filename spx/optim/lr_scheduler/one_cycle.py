"""``OneCycleLR``: the 1cycle policy (warm up to ``max_lr``, anneal far below the start).

With ``cycle_momentum`` the momentum moves inversely to the lr: ``group['momentum']`` for
optimizers that have one (SGD, RMSprop), ``group['betas'][0]`` for Adam-style optimizers. Both
are traced inputs of the compiled update, so cycling them never recompiles.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from spx import _validate
from spx.optim.lr_scheduler.base import LRScheduler, _check_optimizer, _format_param
from spx.optim.optimizer import Optimizer


class OneCycleLR(LRScheduler):
    """The 1cycle learning-rate policy (mirrors ``torch.optim.lr_scheduler.OneCycleLR``).

    The lr starts at ``max_lr / div_factor``, rises to ``max_lr`` over the first ``pct_start``
    of ``total_steps`` and then anneals to ``initial_lr / final_div_factor``; ``three_phase``
    first anneals back to the initial lr and only then to the minimum. Step it after every
    batch, ``total_steps`` times at most.

    Args:
        optimizer: the wrapped optimizer.
        max_lr: peak lr, or one per param group.
        total_steps: length of the cycle; or give ``epochs`` and ``steps_per_epoch``.
        epochs: number of epochs (with ``steps_per_epoch``).
        steps_per_epoch: steps per epoch (with ``epochs``).
        pct_start: fraction of the cycle spent increasing the lr.
        anneal_strategy: ``"cos"`` or ``"linear"``.
        cycle_momentum: cycle the momentum (or ``betas[0]``) inversely to the lr.
        base_momentum: momentum at the lr peak, or one per param group.
        max_momentum: momentum at the start and end, or one per param group.
        div_factor: ``initial_lr = max_lr / div_factor``.
        final_div_factor: ``min_lr = initial_lr / final_div_factor``.
        three_phase: use the three-phase variant.
        last_epoch: index of the last step; -1 starts a fresh schedule.

    Example:
        >>> import spx
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=0.1, momentum=0.9)
        >>> sched = spx.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)  # torch's
        >>> round(sched.get_last_lr()[0], 6), opt.param_groups[0]["momentum"]
        (0.04, 0.95)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: Literal["cos", "linear"] = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            # torch's wording, kept exactly; the int test is the shared one (numpy ints pass).
            if not _validate.is_int(total_steps) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = int(total_steps)
        elif epochs is not None and steps_per_epoch is not None:
            if not _validate.is_int(epochs) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not _validate.is_int(steps_per_epoch) or steps_per_epoch <= 0:
                raise ValueError(
                    f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}"
                )
            self.total_steps = int(epochs) * int(steps_per_epoch)
        else:
            raise ValueError(
                "You must define either total_steps OR (epochs AND steps_per_epoch), e.g. "
                "OneCycleLR(opt, max_lr=0.1, total_steps=1000)"
            )
        warmup_end = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._schedule_phases = [
                _phase(warmup_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(
                    float(2 * pct_start * self.total_steps) - 2,
                    "max_lr",
                    "initial_lr",
                    "base_momentum",
                    "max_momentum",
                ),
                _phase(
                    self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"
                ),
            ]
        else:
            self._schedule_phases = [
                _phase(warmup_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        if not isinstance(pct_start, float) or pct_start < 0 or pct_start > 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._anneal_func_type = anneal_strategy
        max_lrs = _format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for peak, group in zip(max_lrs, optimizer.param_groups, strict=True):
                group["initial_lr"] = peak / div_factor
                group["max_lr"] = peak
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with `cycle_momentum` option "
                    f"enabled; {type(optimizer).__name__} has neither. Pass "
                    "cycle_momentum=False"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for top, bottom, group in zip(
                    max_momentums, base_momentums, optimizer.param_groups, strict=True
                ):
                    self._set_momentum(group, top)
                    group["max_momentum"] = top
                    group["base_momentum"] = bottom
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal_func(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        self._warn_get_lr_outside_step()
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(
                f"Tried to step {step_num} times. The specified number of total steps is "
                f"{self.total_steps}; raise total_steps (or epochs) to train longer"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lr = self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        momentum = self._anneal_func(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct
                        )
                    break
                start_step = phase["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                self._set_momentum(group, momentum)
        return lrs


def _phase(end_step: float, start_lr: str, end_lr: str, start_m: str, end_m: str) -> dict:
    """One phase of the cycle: where it ends and which group keys it anneals between."""
    return {
        "end_step": end_step,
        "start_lr": start_lr,
        "end_lr": end_lr,
        "start_momentum": start_m,
        "end_momentum": end_m,
    }
