"""``LRScheduler``: torch's scheduler protocol over an spx optimizer's ``param_groups``.

A scheduler only rewrites ``group['lr']`` (and, for OneCycleLR, the momentum) with Python
floats. The optimizer passes numeric hyperparameters to its compiled update as traced values,
so a new lr every step never recompiles anything.
"""

from __future__ import annotations

import warnings
from typing import Any

import jax
import jax.numpy as jnp

from spx import _transforms
from spx.nn import _structure
from spx.optim.optimizer import Optimizer


def _check_optimizer(optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(
            f"{type(optimizer).__name__} is not an Optimizer; pass an spx.optim optimizer "
            "such as spx.optim.SGD(model.parameters(), lr=0.1)"
        )


def _format_param(name: str, optimizer: Optimizer, param: Any) -> list[Any]:
    """One value per param group: a scalar is repeated, a list must have one per group."""
    if isinstance(param, list | tuple):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. {name} has "
                f"{len(param)} values, param_groups has {len(optimizer.param_groups)}."
            )
        return list(param)
    return [param] * len(optimizer.param_groups)


def _param_groups_val_list(optimizer: Optimizer, key: str) -> list[Any]:
    return [group[key] for group in optimizer.param_groups]


def _update_param_group_val(group: dict[str, Any], key: str, value: Any) -> None:
    # An lr given as an array stays an array of the same dtype (torch fills a tensor lr in
    # place), so the traced input keeps its type and the update does not recompile.
    old = group[key]
    if isinstance(old, jax.Array) and not isinstance(value, jax.Array):
        value = jnp.asarray(value, dtype=old.dtype)
    group[key] = value


class LRScheduler:
    """Base class of learning-rate schedulers (mirrors ``torch.optim.lr_scheduler.LRScheduler``).

    The constructor records ``initial_lr`` in every param group (or requires it when resuming
    with ``last_epoch >= 0``) and takes one step, so ``group['lr']`` holds the epoch-0 value.
    Subclasses implement :meth:`get_lr` (torch's recursive form, reading ``group['lr']``) and
    optionally ``_get_closed_form_lr`` (used by ``step(epoch)`` and SequentialLR).

    Args:
        optimizer: the spx optimizer whose ``param_groups`` the scheduler drives.
        last_epoch: index of the last epoch; -1 starts a fresh schedule.

    Example:
        >>> import spx
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = spx.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)  # torch's StepLR
        >>> for _ in range(3):
        ...     opt.step()
        ...     sched.step()
        >>> sched.get_last_lr()
        [0.5]
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
            # A new group key: spx.compile re-plans which hyperparameters it feeds.
            _structure.bump()
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        f"resuming scheduler with last_epoch={last_epoch} >= 0. Load the "
                        "optimizer's state_dict (which holds 'initial_lr') before creating the "
                        "scheduler, or pass last_epoch=-1 for a fresh schedule"
                    )
        self.base_lrs: list[Any] = _param_groups_val_list(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """Take the constructor's step: ``group['lr']`` becomes the epoch-0 value."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer (torch's layout)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[Any]:
        """The lr of every param group as of the last :meth:`step`."""
        if _transforms.in_compiled_step():
            # Read while the step is traced, it would be a constant of the program.
            raise RuntimeError(
                "get_last_lr() inside a step spx.compile traces would be fixed at its value "
                "when the step was traced. Read it after the call: "
                "loss = step(x); lr = sched.get_last_lr()"
            )
        return self._last_lr

    def get_lr(self) -> list[Any]:
        """The lr of every param group for ``self.last_epoch`` (called by :meth:`step`)."""
        raise NotImplementedError

    def _warn_get_lr_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, please use "
                "`get_last_lr()`.",
                UserWarning,
                stacklevel=3,
            )

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or jump to ``epoch``, torch's deprecated form).

        Called inside a step that ``spx.compile`` traces, it runs after each call of the
        compiled program (the learning rate it sets is the next call's), as the step's Python
        would otherwise run only once, while it is traced.
        """
        if _transforms.defer(self, "step", (epoch,)):
            return
        self._step_count += 1
        if epoch is not None:
            warnings.warn(
                "The epoch parameter in `scheduler.step()` was not necessary and is being "
                "deprecated where possible. Please use `scheduler.step()` to step the "
                "scheduler.",
                UserWarning,
                stacklevel=2,
            )
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _update_param_group_val(group, "lr", lr)
        self._last_lr: list[Any] = _param_groups_val_list(self.optimizer, "lr")


# torch's pre-2.0 name, still importable there.
_LRScheduler = LRScheduler
