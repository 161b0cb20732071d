"""``LambdaLR`` and ``MultiplicativeLR``: the lr follows user functions of the epoch.

``LambdaLR`` sets ``initial_lr * f(epoch)``; ``MultiplicativeLR`` multiplies the current lr by
``f(epoch)`` every step. Both save a callable object's ``__dict__`` (not a plain function) in
their state dict, as torch does.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from spx.optim.lr_scheduler.base import LRScheduler, _param_groups_val_list
from spx.optim.optimizer import Optimizer


def _lambdas_per_group(optimizer: Optimizer, lr_lambda: Any) -> list[Callable[[int], float]]:
    """One function per param group: a single one is repeated, a list must match the groups."""
    if not isinstance(lr_lambda, list | tuple):
        return [lr_lambda] * len(optimizer.param_groups)
    if len(lr_lambda) != len(optimizer.param_groups):
        raise ValueError(
            f"Expected {len(optimizer.param_groups)} lr_lambdas (one per param group), "
            f"but got {len(lr_lambda)}"
        )
    return list(lr_lambda)


def _lambdas_state_dict(scheduler: Any) -> dict[str, Any]:
    state = {k: v for k, v in scheduler.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
    state["lr_lambdas"] = [
        None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
        for fn in scheduler.lr_lambdas
    ]
    return state


def _lambdas_load_state_dict(scheduler: Any, state_dict: dict[str, Any]) -> None:
    state = dict(state_dict)
    lr_lambdas = state.pop("lr_lambdas")
    scheduler.__dict__.update(state)
    for fn, saved in zip(scheduler.lr_lambdas, lr_lambdas, strict=True):
        if saved is not None:
            fn.__dict__.update(saved)


class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(epoch)`` (mirrors ``torch.optim.lr_scheduler.LambdaLR``).

    Args:
        optimizer: the wrapped optimizer.
        lr_lambda: a function of the epoch index, or a list with one function per param group.
        last_epoch: index of the last epoch; -1 starts a fresh schedule.

    Example:
        >>> import spx
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = spx.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.5**epoch)  # torch's
        >>> opt.step(); sched.step(); sched.get_last_lr()
        [0.5]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas_per_group(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """torch's layout: plain functions are not saved; callable objects save ``__dict__``."""
        return _lambdas_state_dict(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes; callable objects get their saved ``__dict__`` back."""
        _lambdas_load_state_dict(self, state_dict)

    def get_lr(self) -> list[float]:
        self._warn_get_lr_outside_step()
        return [
            base_lr * lmbda(self.last_epoch)
            for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs, strict=True)
        ]


class MultiplicativeLR(LRScheduler):
    """``lr = lr * lr_lambda(epoch)`` each step (mirrors torch's ``MultiplicativeLR``).

    Args:
        optimizer: the wrapped optimizer.
        lr_lambda: a function of the epoch index giving the factor, or a list with one function
            per param group.
        last_epoch: index of the last epoch; -1 starts a fresh schedule.

    Example:
        >>> import spx
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = spx.optim.lr_scheduler.MultiplicativeLR(opt, lambda epoch: 0.5)  # torch's
        >>> for _ in range(2):
        ...     opt.step()
        ...     sched.step()
        >>> sched.get_last_lr()
        [0.25]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas_per_group(optimizer, lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(
                    f"lr_lambda should be a function, but got {type(fn).__name__}; pass e.g. "
                    "lr_lambda=lambda epoch: 0.95"
                )
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """torch's layout: plain functions are not saved; callable objects save ``__dict__``."""
        return _lambdas_state_dict(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes; callable objects get their saved ``__dict__`` back."""
        _lambdas_load_state_dict(self, state_dict)

    def get_lr(self) -> list[float]:
        self._warn_get_lr_outside_step()
        if self._is_initial:
            return _param_groups_val_list(self.optimizer, "lr")
        return [
            group["lr"] * lmbda(self.last_epoch)
            for lmbda, group in zip(self.lr_lambdas, self.optimizer.param_groups, strict=True)
        ]
