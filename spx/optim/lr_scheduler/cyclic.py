"""``CyclicLR``: the lr cycles between two bounds, one step per batch (CLR)."""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from functools import partial
from typing import Any, Literal

from spx.optim.lr_scheduler.base import LRScheduler, _format_param, _update_param_group_val
from spx.optim.optimizer import Optimizer


class CyclicLR(LRScheduler):
    """Cyclical learning rates (mirrors ``torch.optim.lr_scheduler.CyclicLR``).

    The lr goes from ``base_lr`` up to ``max_lr`` over ``step_size_up`` steps and back over
    ``step_size_down``; the amplitude is scaled per cycle (``"triangular"``: 1,
    ``"triangular2"``: halved each cycle) or per iteration (``"exp_range"``: ``gamma**it``), or
    by a custom ``scale_fn``. With ``cycle_momentum`` the momentum (or ``betas[0]``) cycles
    inversely between ``max_momentum`` and ``base_momentum``. Step it after every batch.

    Args:
        optimizer: the wrapped optimizer.
        base_lr: lower lr bound, or one per param group (the constructor sets it as the lr).
        max_lr: upper lr bound, or one per param group.
        step_size_up: steps of the increasing half of a cycle.
        step_size_down: steps of the decreasing half (default: ``step_size_up``).
        mode: ``"triangular"``, ``"triangular2"`` or ``"exp_range"``; ignored with ``scale_fn``.
        gamma: the base of ``"exp_range"``'s scaling.
        scale_fn: custom amplitude scaling, ``0 <= scale_fn(x) <= 1``.
        scale_mode: ``"cycle"`` or ``"iterations"``: what ``scale_fn`` is called with.
        cycle_momentum: cycle the momentum inversely to the lr.
        base_momentum: momentum at the lr peak, or one per param group.
        max_momentum: momentum at the cycle's start, or one per param group.
        last_epoch: index of the last batch; -1 starts a fresh schedule.

    Example:
        >>> import spx
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=0.1, momentum=0.9)
        >>> sched = spx.optim.lr_scheduler.CyclicLR(opt, base_lr=0.0, max_lr=1.0, step_size_up=2)
        >>> lrs = []
        >>> for _ in range(5):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [0.0, 0.5, 1.0, 0.5, 0.0]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: Literal["triangular", "triangular2", "exp_range"] = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: Literal["cycle", "iterations"] = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.8,
        max_momentum: float | list[float] = 0.9,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(
                f"{type(optimizer).__name__} is not an Optimizer; pass an spx.optim optimizer"
            )
        self.optimizer = optimizer
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                _update_param_group_val(group, "lr", lr)
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(
                f"mode is invalid and scale_fn is None: got mode={mode!r}; use 'triangular', "
                "'triangular2' or 'exp_range', or pass scale_fn"
            )
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with `cycle_momentum` option "
                    f"enabled; {type(optimizer).__name__} has neither. Pass "
                    "cycle_momentum=False"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            self.max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for top, bottom, group in zip(
                    self.max_momentums, self.base_momentums, optimizer.param_groups, strict=True
                ):
                    self._set_momentum(group, top)
                    group["max_momentum"] = top
                    group["base_momentum"] = bottom
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref = self._triangular_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = self._triangular2_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = partial(self._exp_range_scale_fn, self.gamma)
            self.scale_mode = "iterations"

    def scale_fn(self, x: float) -> float:
        """The amplitude scaling of cycle (or iteration) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    @staticmethod
    def _triangular_scale_fn(x: float) -> float:
        return 1.0

    @staticmethod
    def _triangular2_scale_fn(x: float) -> float:
        return 1 / (2.0 ** (x - 1))

    @staticmethod
    def _exp_range_scale_fn(gamma: float, x: float) -> float:
        return gamma**x

    def get_lr(self) -> list[float]:
        self._warn_get_lr_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        where = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [
            base_lr + (max_lr - base_lr) * scale_factor * self.scale_fn(where)
            for base_lr, max_lr in zip(self.base_lrs, self.max_lrs, strict=True)
        ]
        if self.cycle_momentum:
            for bottom, top, group in zip(
                self.base_momentums, self.max_momentums, self.optimizer.param_groups, strict=True
            ):
                self._set_momentum(
                    group, top - (top - bottom) * scale_factor * self.scale_fn(where)
                )
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """torch's layout: ``_scale_fn_ref`` is dropped, a custom function kept only as an
        object's ``__dict__``."""
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes; a custom scale function object gets its ``__dict__`` back."""
        state = dict(state_dict)
        fn = state.pop("_scale_fn_custom")
        super().load_state_dict(state)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()
