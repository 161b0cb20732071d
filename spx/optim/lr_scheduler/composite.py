"""Schedulers of schedulers: ``SequentialLR`` (one after another), ``ChainedScheduler`` (all)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from spx import _transforms
from spx.optim.lr_scheduler.base import (
    LRScheduler,
    _param_groups_val_list,
    _update_param_group_val,
)
from spx.optim.lr_scheduler.plateau import ReduceLROnPlateau
from spx.optim.optimizer import Optimizer


def _check_children(owner: str, optimizer: Optimizer, schedulers: Sequence[Any]) -> None:
    if len(schedulers) < 1:
        raise ValueError(f"{owner} expects at least one scheduler, but got no scheduler.")
    for i, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(
                f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires "
                "additional kwargs to be specified when calling `step`, but got one at index "
                f"{i} in the given schedulers sequence."
            )
        if optimizer is not scheduler.optimizer:
            raise ValueError(
                f"{owner} expects all schedulers to belong to the same optimizer, but got "
                f"scheduler {type(scheduler).__name__} at index {i} has "
                f"{type(scheduler.optimizer).__name__} object at {id(scheduler.optimizer):#x}, "
                f"which is different from {type(optimizer).__name__} at {id(optimizer):#x}."
            )


def _save_children(owner: LRScheduler) -> dict[str, Any]:
    skip = ("optimizer", "_schedulers")
    state = {key: value for key, value in owner.__dict__.items() if key not in skip}
    state["_schedulers"] = [s.state_dict() for s in owner._schedulers]
    return state


def _load_children(owner: LRScheduler, state_dict: dict[str, Any]) -> None:
    state = dict(state_dict)
    children = state.pop("_schedulers")
    owner.__dict__.update(state)
    for scheduler, saved in zip(owner._schedulers, children, strict=True):
        scheduler.load_state_dict(saved)


class SequentialLR(LRScheduler):
    """Run schedulers one after another, switching at ``milestones`` (torch's ``SequentialLR``).

    At a milestone the next scheduler restarts from its epoch 0 (its closed form), e.g. a
    LinearLR warm-up followed by a cosine decay.

    Args:
        optimizer: the optimizer every scheduler drives.
        schedulers: the schedulers, in order (already constructed on ``optimizer``).
        milestones: the epochs at which to switch; one fewer than ``schedulers``.
        last_epoch: index of the last epoch; -1 starts a fresh schedule.

    Example:
        >>> import spx
        >>> from spx.optim import lr_scheduler as L
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> warmup = L.LinearLR(opt, start_factor=0.5, total_iters=2)
        >>> decay = L.ExponentialLR(opt, gamma=0.5)
        >>> sched = L.SequentialLR(opt, [warmup, decay], milestones=[2])  # torch's SequentialLR
        >>> lrs = []
        >>> for epoch in range(4):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [0.5, 0.75, 1.0, 0.5]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        schedulers: list[LRScheduler],
        milestones: list[int],
        last_epoch: int = -1,
    ) -> None:
        _check_children(type(self).__name__, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                f"than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to "
                f"{len(milestones)}"
            )
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # Undo the constructors' steps of every child, then start the first one again.
        for group in optimizer.param_groups:
            _update_param_group_val(group, "lr", group["initial_lr"])
        self.recursive_undo()
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()

    def recursive_undo(self, sched: Any = None) -> None:
        """Step back ``last_epoch`` of every (nested) child scheduler by one."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self) -> None:  # type: ignore[override]
        """Advance the active scheduler, starting the next one at its milestone (after each
        call inside a compiled step: see :meth:`LRScheduler.step`)."""
        if _transforms.defer(self, "step"):
            return
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        """Own attributes plus each child's ``state_dict()`` under ``_schedulers``."""
        return _save_children(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore own attributes and every child's state."""
        _load_children(self, state_dict)


class ChainedScheduler(LRScheduler):
    """Step several schedulers together each epoch (mirrors torch's ``ChainedScheduler``).

    Every scheduler's recursive rule multiplies the lr left by the previous one, so e.g. a
    warm-up and a decay compose.

    Args:
        schedulers: the schedulers to step, in order.
        optimizer: the optimizer they drive (default: the first scheduler's).

    Example:
        >>> import spx
        >>> from spx.optim import lr_scheduler as L
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> warmup = L.LinearLR(opt, start_factor=0.5, total_iters=2)
        >>> sched = L.ChainedScheduler([warmup, L.ExponentialLR(opt, gamma=0.5)])  # torch's
        >>> lrs = []
        >>> for epoch in range(4):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [0.5, 0.375, 0.25, 0.125]
    """

    def __init__(
        self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None
    ) -> None:
        if len(schedulers) < 1:
            raise ValueError(
                f"{type(self).__name__} expects at least one scheduler to be chained, but got "
                "no scheduler."
            )
        optimizer = optimizer or schedulers[0].optimizer
        _check_children(type(self).__name__, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _param_groups_val_list(self._schedulers[-1].optimizer, "lr")

    def step(self) -> None:  # type: ignore[override]
        """Step every scheduler once, in order (after each call inside a compiled step)."""
        if _transforms.defer(self, "step"):
            return
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _param_groups_val_list(self._schedulers[-1].optimizer, "lr")

    def state_dict(self) -> dict[str, Any]:
        """Own attributes plus each child's ``state_dict()`` under ``_schedulers``."""
        return _save_children(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore own attributes and every child's state."""
        _load_children(self, state_dict)
