"""Multiplicative decay schedules: StepLR, MultiStepLR, ExponentialLR, LinearLR, ConstantLR,
PolynomialLR.

Each multiplies the current ``group['lr']`` by a factor at chosen epochs (torch's recursive,
chainable form) and also has a closed form for ``step(epoch)`` and SequentialLR.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable

from spx.optim.lr_scheduler.base import LRScheduler, _param_groups_val_list
from spx.optim.optimizer import Optimizer


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs (mirrors torch's ``StepLR``).

    Args:
        optimizer: the wrapped optimizer.
        step_size: period of the decay, in epochs.
        gamma: multiplicative factor.
        last_epoch: index of the last epoch; -1 starts a fresh schedule.

    Example:
        >>> import spx
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = spx.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        >>> lrs = []
        >>> for epoch in range(5):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [1.0, 1.0, 0.5, 0.5, 0.25]
    """

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _param_groups_val_list(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [
            base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs
        ]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone epoch (mirrors torch's ``MultiStepLR``).

    Args:
        optimizer: the wrapped optimizer.
        milestones: epoch indices; a milestone listed twice applies ``gamma`` twice.
        gamma: multiplicative factor.
        last_epoch: index of the last epoch; -1 starts a fresh schedule.

    Example:
        >>> import spx
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = spx.optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 3], gamma=0.5)
        >>> lrs = []
        >>> for epoch in range(4):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [1.0, 0.5, 0.5, 0.25]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        milestones: Iterable[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr_outside_step()
        if self.last_epoch not in self.milestones:
            return _param_groups_val_list(self.optimizer, "lr")
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        milestones = sorted(self.milestones.elements())
        return [
            base_lr * self.gamma ** bisect_right(milestones, self.last_epoch)
            for base_lr in self.base_lrs
        ]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch (mirrors torch's ``ExponentialLR``).

    Args:
        optimizer: the wrapped optimizer.
        gamma: multiplicative factor.
        last_epoch: index of the last epoch; -1 starts a fresh schedule.

    Example:
        >>> import spx
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = spx.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        >>> opt.step(); sched.step(); sched.get_last_lr()
        [0.5]
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr_outside_step()
        if self._is_initial:
            return _param_groups_val_list(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma**self.last_epoch for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Ramp the lr factor linearly from ``start_factor`` to ``end_factor`` (torch's ``LinearLR``).

    Over ``total_iters`` epochs the lr goes from ``initial_lr * start_factor`` to
    ``initial_lr * end_factor`` and stays there.

    Args:
        optimizer: the wrapped optimizer.
        start_factor: factor of the first epoch, in (0, 1].
        end_factor: factor reached after ``total_iters`` epochs, in [0, 1].
        total_iters: number of epochs of the ramp.
        last_epoch: index of the last epoch; -1 starts a fresh schedule.

    Example:
        >>> import spx
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=0.3)
        >>> sched = spx.optim.lr_scheduler.LinearLR(opt, start_factor=1 / 3, total_iters=2)
        >>> round(sched.get_last_lr()[0], 6)
        0.1
    """

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or equal "
                f"to 1, got start_factor={start_factor}"
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(
                f"Ending multiplicative factor expected to be between 0 and 1, got "
                f"end_factor={end_factor}"
            )
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr_outside_step()
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _param_groups_val_list(self.optimizer, "lr")
        span = self.end_factor - self.start_factor
        factor = 1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span)
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        # Same operation order as torch, so the floats are identical.
        done = (self.end_factor - self.start_factor) * min(self.total_iters, self.last_epoch)
        return [
            base_lr * (self.start_factor + done / self.total_iters) for base_lr in self.base_lrs
        ]


class ConstantLR(LRScheduler):
    """Multiply the lr by ``factor`` until epoch ``total_iters`` (mirrors torch's ``ConstantLR``).

    Args:
        optimizer: the wrapped optimizer.
        factor: multiplier of the lr before ``total_iters``, in [0, 1].
        total_iters: the epoch at which the lr goes back to ``initial_lr``.
        last_epoch: index of the last epoch; -1 starts a fresh schedule.

    Example:
        >>> import spx
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=0.05)
        >>> sched = spx.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2)
        >>> lrs = []
        >>> for epoch in range(3):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [0.025, 0.025, 0.05]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError(
                f"Constant multiplicative factor expected to be between 0 and 1, got "
                f"factor={factor}"
            )
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr_outside_step()
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _param_groups_val_list(self.optimizer, "lr")
        return [group["lr"] * (1.0 / self.factor) for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [
            base_lr * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
            for base_lr in self.base_lrs
        ]


class PolynomialLR(LRScheduler):
    """Decay the lr as ``(1 - epoch / total_iters) ** power`` (mirrors torch's ``PolynomialLR``).

    After ``total_iters`` epochs the lr stays at its last value (0 from a fresh start).

    Args:
        optimizer: the wrapped optimizer.
        total_iters: number of epochs of the decay.
        power: power of the polynomial.
        last_epoch: index of the last epoch; -1 starts a fresh schedule.

    Example:
        >>> import spx
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = spx.optim.lr_scheduler.PolynomialLR(opt, total_iters=4, power=2.0)
        >>> opt.step(); sched.step(); sched.get_last_lr()
        [0.5625]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        total_iters: int = 5,
        power: float = 1.0,
        last_epoch: int = -1,
    ) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr_outside_step()
        if self._is_initial or self.last_epoch > self.total_iters:
            return _param_groups_val_list(self.optimizer, "lr")
        # torch's recursive form (chainable): the ratio of two consecutive closed forms.
        decay_factor = (
            (1.0 - self.last_epoch / self.total_iters)
            / (1.0 - (self.last_epoch - 1) / self.total_iters)
        ) ** self.power
        return [group["lr"] * decay_factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [
            base_lr
            * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
            for base_lr in self.base_lrs
        ]
