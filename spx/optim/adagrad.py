"""``Adagrad``: torch's Adagrad, with its learning-rate decay and eps outside the root.

The accumulation and division are written out: ``optax.scale_by_rss`` adds eps *inside* the
square root (``g / sqrt(sum + eps)``) and zeroes the update where the sum is 0, while torch
divides by ``sqrt(sum) + eps``. The L2 term and the final scaling are optax transformations.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from spx.optim.optimizer import Optimizer


class Adagrad(Optimizer):
    """Adagrad (mirrors ``torch.optim.Adagrad``).

    Per parameter, at step ``t`` with ``g`` the gradient (negated when ``maximize``)::

        g = g + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        sum = sum + g^2
        p = p - clr * g / (sqrt(sum) + eps)

    State per parameter, in torch's names: ``step`` (float32 scalar) and ``sum``. As in torch,
    the state is created by the constructor (so ``state_dict()`` lists it before any step), and
    ``sum`` starts at the *optimizer's* ``initial_accumulator_value``, even for a param group
    that overrides it.

    Args:
        params: leaf Tensors (Parameters), or dicts ``{"params": [...], **overrides}``.
        lr: learning rate.
        lr_decay: learning-rate decay per step.
        weight_decay: L2 penalty added to the gradient.
        initial_accumulator_value: starting value of the squared-gradient sum.
        eps: added to the denominator.
        foreach: accepted for torch compatibility; XLA compiles the whole update anyway.
        maximize: maximize the objective instead of minimizing it.
        differentiable: accepted for torch compatibility (jax differentiates any update).
        fused: accepted for torch compatibility; the update is always one compiled program.

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(3, 1)
        >>> opt = spx.optim.Adagrad(model.parameters(), lr=1e-2)  # torch.optim.Adagrad
        >>> sorted(opt.state_dict()["state"][0])
        ['step', 'sum']
    """

    _state_keys = ("step", "sum")

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | jax.Array = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        self._check_group(defaults)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if not getattr(p, "is_uninitialized", False):  # a lazy parameter: on its first step
                    self.state[p] = self._init_state(p._data, group)

    def _check_group(self, group: dict[str, Any]) -> None:
        lr, lr_decay, eps = group["lr"], group["lr_decay"], group["eps"]
        weight_decay, initial = group["weight_decay"], group["initial_accumulator_value"]
        if not lr >= 0.0:
            raise ValueError(f"Invalid learning rate: {lr} (lr must be >= 0, e.g. lr=1e-2)")
        if not lr_decay >= 0.0:
            raise ValueError(f"Invalid lr_decay value: {lr_decay} (lr_decay must be >= 0)")
        if not weight_decay >= 0.0:
            raise ValueError(
                f"Invalid weight_decay value: {weight_decay} (weight_decay must be >= 0)"
            )
        if not initial >= 0.0:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial} (must be >= 0)")
        if not eps >= 0.0:
            raise ValueError(f"Invalid epsilon value: {eps} (eps must be >= 0, e.g. eps=1e-10)")

    def _init_state(self, param: jax.Array, group: dict[str, Any]) -> dict[str, jax.Array]:
        # torch reads the optimizer-wide default here, not the group's value.
        initial = self.defaults["initial_accumulator_value"]
        return {"step": jnp.zeros((), jnp.float32), "sum": jnp.full_like(param, initial)}

    def _update(
        self,
        params: list[jax.Array],
        grads: list[jax.Array],
        states: list[dict[str, jax.Array]],
        hparams: dict[str, Any],
    ) -> tuple[list[jax.Array], list[dict[str, jax.Array]]]:
        lr, lr_decay, eps = hparams["lr"], hparams["lr_decay"], hparams["eps"]
        l2 = optax.add_decayed_weights(hparams["weight_decay"])
        new_params, new_states = [], []
        steps = self._next_steps(states, hparams)
        for p, g, state, step in zip(params, grads, states, steps, strict=True):
            if hparams["maximize"]:
                g = -g
            g, _ = l2.update(g, optax.EmptyState(), p)
            # The traced step keeps one program for every step count.
            clr = lr / (1 + (step - 1) * lr_decay)
            total = state["sum"] + g * g
            update = g / (jnp.sqrt(total) + eps)
            update, _ = optax.scale_by_learning_rate(clr).update(update, optax.EmptyState())
            new_params.append(optax.apply_updates(p, update))
            new_states.append({"step": step, "sum": total})
        return new_params, new_states
