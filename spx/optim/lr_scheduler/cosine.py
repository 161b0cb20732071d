"""``CosineAnnealingLR`` (half-cosine annealing, torch's recursive form) and
``CosineAnnealingWarmRestarts`` (SGDR)."""

from __future__ import annotations

import math

from spx import _transforms
from spx.optim.lr_scheduler.base import (
    LRScheduler,
    _param_groups_val_list,
    _update_param_group_val,
)
from spx.optim.optimizer import Optimizer


class CosineAnnealingLR(LRScheduler):
    """Anneal the lr along a cosine from ``initial_lr`` to ``eta_min`` over ``T_max`` epochs.

    Mirrors ``torch.optim.lr_scheduler.CosineAnnealingLR``, including its recursive update: each
    step rescales the *current* lr, so other schedulers can be chained with it, and past
    ``T_max`` the lr is not clamped but rises again along the cosine (``T_max=4`` gives
    1, .854, .5, .146, 0, .146, ...).

    Args:
        optimizer: the wrapped optimizer.
        T_max: half period of the cosine, in epochs.
        eta_min: minimum lr.
        last_epoch: index of the last epoch; -1 starts a fresh schedule.

    Example:
        >>> import spx
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = spx.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)  # torch's
        >>> for _ in range(2):
        ...     opt.step()
        ...     sched.step()
        >>> round(sched.get_last_lr()[0], 6)
        0.5
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_max: int,
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr_outside_step()
        groups = self.optimizer.param_groups
        if self._is_initial:
            return _param_groups_val_list(self.optimizer, "lr")
        if self._step_count == 1 and self.last_epoch > 0:
            # Resumed at a later epoch: start from the closed form.
            return [
                self.eta_min
                + (base_lr - self.eta_min)
                * (1 + math.cos(self.last_epoch * math.pi / self.T_max))
                / 2
                for base_lr in self.base_lrs
            ]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            # The step off the cosine's minimum: the ratio form would divide by zero.
            return [
                group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                for base_lr, group in zip(self.base_lrs, groups, strict=True)
            ]
        return [
            (1 + math.cos(math.pi * self.last_epoch / self.T_max))
            / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
            * (group["lr"] - self.eta_min)
            + self.eta_min
            for group in groups
        ]

    def _get_closed_form_lr(self) -> list[float]:
        return [
            self.eta_min
            + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
            for base_lr in self.base_lrs
        ]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing with warm restarts, SGDR (torch's ``CosineAnnealingWarmRestarts``).

    ``lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2``, where ``T_cur``
    counts the epochs since the last restart and ``T_i`` (first ``T_0``) grows ``T_mult``-fold
    at each restart. ``step(epoch)`` accepts a fractional epoch (``epoch + i / iters``, to
    anneal within an epoch) and, unlike the other schedulers, does not warn about it, as torch.

    Args:
        optimizer: the wrapped optimizer.
        T_0: number of epochs until the first restart, a positive int.
        T_mult: factor by which ``T_i`` grows after a restart, an int >= 1.
        eta_min: minimum lr.
        last_epoch: index of the last epoch; -1 starts a fresh schedule.

    Example:
        >>> import spx
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = spx.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)  # torch's
        >>> lrs = []
        >>> for epoch in range(4):
        ...     lrs.append(round(sched.get_last_lr()[0], 6))
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [1.0, 0.5, 1.0, 0.5]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_0: int,
        T_mult: int = 1,
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, float | int):
            raise ValueError(
                f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}"
            )
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr_outside_step()
        return [
            self.eta_min
            + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
            for base_lr in self.base_lrs
        ]

    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or go to ``epoch`` (may be fractional: call it every batch).
        Inside a compiled step it runs after each call (see :meth:`LRScheduler.step`)."""
        if _transforms.defer(self, "step", (epoch,)):
            return
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    # The restart epochs are T_0 * (T_mult^n - 1) / (T_mult - 1).
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _update_param_group_val(group, "lr", lr)
        self._last_lr = _param_groups_val_list(self.optimizer, "lr")
