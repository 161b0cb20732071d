"""``ReduceLROnPlateau``: cut the lr when a watched metric stops improving."""

from __future__ import annotations

import warnings
from math import inf
from typing import Any, Literal, SupportsFloat

from spx import _transforms
from spx.optim.lr_scheduler.base import (
    LRScheduler,
    _check_optimizer,
    _param_groups_val_list,
    _update_param_group_val,
)
from spx.optim.optimizer import Optimizer


class ReduceLROnPlateau(LRScheduler):
    """Reduce the lr by ``factor`` after ``patience`` epochs without improvement.

    Mirrors ``torch.optim.lr_scheduler.ReduceLROnPlateau``: ``step(metric)`` compares the
    metric with the best so far (``threshold`` relative or absolute, in ``mode`` min or max);
    after more than ``patience`` bad epochs every group's lr becomes
    ``max(lr * factor, min_lr)`` (skipped if the change is below ``eps``), followed by
    ``cooldown`` epochs in which bad epochs are not counted.

    Args:
        optimizer: the wrapped optimizer.
        mode: ``"min"`` (lower metric is better) or ``"max"``.
        factor: multiplicative lr cut, < 1.
        patience: bad epochs tolerated before a cut.
        threshold: minimum change that counts as an improvement.
        threshold_mode: ``"rel"`` (relative to the best) or ``"abs"``.
        cooldown: epochs to wait after a cut before counting bad epochs again.
        min_lr: lower bound of the lr, or one per param group.
        eps: cuts smaller than this are skipped.

    Example:
        >>> import spx
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = spx.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1)  # torch's
        >>> for val_loss in [1.0, 1.0, 1.0]:
        ...     sched.step(val_loss)
        >>> sched.get_last_lr()
        [0.1]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: Literal["min", "max"] = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: Literal["rel", "abs"] = "rel",
        cooldown: int = 0,
        min_lr: list[float] | float = 0,
        eps: float = 1e-8,
    ) -> None:
        if factor >= 1.0:
            raise ValueError(f"Factor should be < 1.0, got factor={factor}")
        self.factor = factor
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if isinstance(min_lr, list | tuple):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(
                    f"expected {len(optimizer.param_groups)} min_lrs (one per param group), "
                    f"got {len(min_lr)}"
                )
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _param_groups_val_list(optimizer, "lr")
        self._init_is_better(mode=mode, threshold=threshold, threshold_mode=threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics: SupportsFloat, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record one epoch's metric and cut the lr if it has plateaued (inside a compiled
        step, after each call: see :meth:`LRScheduler.step`)."""
        if _transforms.defer(self, "step", (metrics, epoch)):
            return
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(
                "The epoch parameter in `scheduler.step()` was not necessary and is being "
                "deprecated where possible. Please use `scheduler.step()` to step the "
                "scheduler.",
                UserWarning,
                stacklevel=2,
            )
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs during the cooldown don't count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _param_groups_val_list(self.optimizer, "lr")

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs "
                    f"from when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), "
                    "usually due to a new param group being added to the optimizer. Please "
                    "modify the `min_lrs` field to match the length of the `optimizer` param "
                    "groups."
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs, strict=True):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, min_lr)
            if old_lr - new_lr > self.eps:
                _update_param_group_val(group, "lr", new_lr)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min" and self.threshold_mode == "abs":
            return a < best - self.threshold
        if self.mode == "max" and self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in {"min", "max"}:
            raise ValueError(f"mode {mode} is unknown! Use 'min' or 'max'")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError(f"threshold mode {threshold_mode} is unknown! Use 'rel' or 'abs'")
        self.mode_worse = inf if mode == "min" else -inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state_dict)
        self._init_is_better(
            mode=self.mode, threshold=self.threshold, threshold_mode=self.threshold_mode
        )
