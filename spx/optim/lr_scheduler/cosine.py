"""``CosineAnnealingLR``: half-cosine annealing in torch's recursive (chainable) form."""

from __future__ import annotations

import math

from spx.optim.lr_scheduler.base import LRScheduler, _param_groups_val_list
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
