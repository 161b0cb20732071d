"""``spx.optim.swa_utils``: weight averaging (SWA, EMA) of a model, as torch's module.

:class:`AveragedModel` keeps a deep copy of a model whose parameters (and, with
``use_buffers``, buffers) are a running average of the model's; the ``get_*_avg_fn`` factories
give torch's SWA and EMA rules; :class:`SWALR` anneals the lr to a constant SWA lr;
:func:`update_bn` recomputes BatchNorm statistics for the averaged weights.

Whether an update is the first one (a plain copy) is selected on the device from the
``n_averaged`` buffer, never read on the host, so ``update_parameters`` costs no sync and can
be traced inside ``spx.compile``.
"""

from __future__ import annotations

import copy
import itertools
import math
import warnings
from collections.abc import Callable, Iterable
from typing import Any, Literal

import jax.numpy as jnp

from spx import ops
from spx._tensor.grad_mode import no_grad
from spx._tensor.tensor import Tensor
from spx.nn.module import Module
from spx.nn.modules.batchnorm import _BatchNorm
from spx.optim.lr_scheduler.base import LRScheduler, _format_param
from spx.optim.optimizer import Optimizer

__all__ = [
    "SWALR",
    "AveragedModel",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]

ParamList = list[Tensor]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] range."
        )


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[[ParamList, ParamList, Any], None]:
    """EMA over lists of parameters, in place (mirrors torch's ``get_ema_multi_avg_fn``).

    ``ema = decay * ema + (1 - decay) * model`` (a lerp for floating tensors, as torch).

    Args:
        decay: the EMA decay, in [0, 1].

    Example:
        >>> import spx
        >>> from spx.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
        >>> model = spx.nn.Linear(2, 1)
        >>> ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
        >>> ema.update_parameters(model)
        >>> int(ema.n_averaged)
        1
    """
    _check_decay(decay)

    def ema_update(ema_params: ParamList, current_params: ParamList, _: Any) -> None:
        with no_grad():
            for p_ema, p_model in zip(ema_params, current_params, strict=True):
                if p_ema.is_floating_point() or p_ema.is_complex():
                    p_ema.lerp_(p_model, 1 - decay)
                else:
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable[[ParamList, ParamList, Any], None]:
    """Equal-weight (SWA) average over lists of parameters, in place (torch's)."""

    def swa_update(averaged: ParamList, current: ParamList, num_averaged: Any) -> None:
        with no_grad():
            for p_avg, p_model in zip(averaged, current, strict=True):
                if p_avg.is_floating_point() or p_avg.is_complex():
                    p_avg.lerp_(p_model, 1 / (num_averaged + 1))
                else:
                    p_avg.copy_(p_avg + (p_model - p_avg) / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Tensor, Tensor, Any], Tensor]:
    """EMA of one parameter: returns ``decay * ema + (1 - decay) * model`` (torch's)."""
    _check_decay(decay)

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable[[Tensor, Tensor, Any], Tensor]:
    """SWA of one parameter: returns ``avg + (model - avg) / (n + 1)`` (torch's)."""

    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A running average (SWA or EMA) of a model's weights (mirrors torch's ``AveragedModel``).

    The first :meth:`update_parameters` copies the model's parameters; later ones average them
    with ``avg_fn`` (one tensor at a time, returning the new value) or ``multi_avg_fn`` (lists
    of tensors, in place); with neither, the equal-weight SWA average. Without ``use_buffers``
    the buffers (BatchNorm statistics) are copied from the model; with it they are averaged too.
    ``n_averaged`` (a buffer, int32 rather than torch's int64: JAX's 64-bit mode is off) counts
    the updates. Calling the averaged model runs the copy.

    Args:
        model: the model to average.
        device: if given, the copy is moved there.
        avg_fn: ``avg_fn(averaged, current, num_averaged) -> new averaged`` for one tensor.
        multi_avg_fn: ``multi_avg_fn(averaged_list, current_list, num_averaged)``, in place.
        use_buffers: average the buffers too (and keep the parameters' and buffers' order).

    Example:
        >>> import spx
        >>> from spx.optim.swa_utils import AveragedModel
        >>> model = spx.nn.Linear(2, 1)
        >>> swa_model = AveragedModel(model)  # torch.optim.swa_utils.AveragedModel
        >>> swa_model.update_parameters(model)
        >>> bool((swa_model.module.weight == model.weight).all())
        True
    """

    def __init__(
        self,
        model: Module,
        device: Any = None,
        avg_fn: Callable[[Tensor, Tensor, Any], Tensor] | None = None,
        multi_avg_fn: Callable[[ParamList, ParamList, Any], None] | None = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise ValueError(
                "Only one of avg_fn and multi_avg_fn should be provided: avg_fn returns one "
                "tensor's new average, multi_avg_fn updates lists of tensors in place"
            )
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", Tensor._of(jnp.zeros((), jnp.int32)))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _pairs(self, model: Module) -> tuple[list[Tensor], list[Tensor]]:
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        pairs = list(zip(mine, theirs, strict=False))  # torch zips without strict
        return [a.detach() for a, _ in pairs], [b.detach() for _, b in pairs]

    def update_parameters(self, model: Module) -> None:
        """Average ``model``'s current weights into this copy (the first call copies them)."""
        averaged, current = self._pairs(model)
        n = self.n_averaged
        with no_grad():
            if self.avg_fn is not None:
                for p_avg, p_model in zip(averaged, current, strict=True):
                    p_avg.copy_(self.avg_fn(p_avg, p_model, n))
            else:
                # torch calls multi_avg_fn once per (device, dtype) group.
                groups: dict[Any, tuple[ParamList, ParamList]] = {}
                for p_avg, p_model in zip(averaged, current, strict=True):
                    group = groups.setdefault(p_avg.dtype, ([], []))
                    group[0].append(p_avg)
                    group[1].append(p_model.to(p_avg.dtype))
                fn = self.multi_avg_fn or get_swa_multi_avg_fn()
                for avg_list, model_list in groups.values():
                    fn(avg_list, model_list, n)
            # The first update is a copy; the average computed above is discarded then.
            first = n == 0
            for p_avg, p_model in zip(averaged, current, strict=True):
                p_avg.copy_(ops.where(first, p_model, p_avg))
            if not self.use_buffers:
                for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                    b_swa.detach().copy_(b_model.detach())
            self.n_averaged.add_(1)


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute the BatchNorm running statistics of ``model`` over ``loader`` (torch's).

    The statistics are reset and re-estimated as a cumulative average (``momentum=None``) over
    one pass in training mode; the modules' momenta and the model's mode are restored after.

    Args:
        loader: batches: tensors, or lists/tuples whose first element is the input.
        model: the model (an :class:`AveragedModel` too) whose BatchNorm layers to update.
        device: if given, each batch is moved there first.

    Example:
        >>> import spx
        >>> from spx.optim.swa_utils import update_bn
        >>> model = spx.nn.Sequential(spx.nn.Linear(2, 3), spx.nn.BatchNorm1d(3))
        >>> update_bn([spx.randn(4, 2), spx.randn(4, 2)], model)
        >>> int(model[1].num_batches_tracked)
        2
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, list | tuple):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to a constant SWA lr (mirrors ``torch.optim.swa_utils.SWALR``).

    Over ``anneal_epochs`` steps the lr moves from its current value to ``swa_lr`` along a
    cosine or a line, and then stays there.

    Args:
        optimizer: the wrapped optimizer.
        swa_lr: the lr to anneal to, or one per param group.
        anneal_epochs: number of epochs of the annealing (>= 0).
        anneal_strategy: ``"cos"`` or ``"linear"``.
        last_epoch: index of the last epoch; -1 starts a fresh schedule.

    Example:
        >>> import spx
        >>> from spx.optim.swa_utils import SWALR
        >>> opt = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = SWALR(opt, swa_lr=0.1, anneal_epochs=2, anneal_strategy="linear")
        >>> for _ in range(2):
        ...     opt.step()
        ...     sched.step()
        >>> round(sched.get_last_lr()[0], 6)
        0.1
    """

    def __init__(
        self,
        optimizer: Optimizer,
        swa_lr: float | list[float],
        anneal_epochs: int = 10,
        anneal_strategy: Literal["cos", "linear"] = "cos",
        last_epoch: int = -1,
    ) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for value, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        if anneal_strategy == "cos":
            self.anneal_func = self._cosine_anneal
        else:
            self.anneal_func = self._linear_anneal

    def get_lr(self) -> list[float]:
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, please use "
                "`get_last_lr()`.",
                UserWarning,
                stacklevel=2,
            )
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        # Recover the lr the annealing started from, then move it one step further.
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [
            self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
            for group in self.optimizer.param_groups
        ]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [
            group["swa_lr"] * alpha + lr * (1 - alpha)
            for group, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)
        ]

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer and ``anneal_func`` (torch's layout)."""
        return {
            key: value
            for key, value in self.__dict__.items()
            if key not in ("optimizer", "anneal_func")
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
