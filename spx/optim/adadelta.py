"""``Adadelta``: torch's Adadelta (running averages of squared gradients and squared updates).

optax's ``scale_by_adadelta`` matches the formula but keeps its own state names and adds the L2
term elsewhere; the two running averages are written here so the state is torch's
``square_avg`` / ``acc_delta`` and the update can be checked against torch line by line.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from spx.optim.optimizer import Optimizer


class Adadelta(Optimizer):
    """Adadelta (mirrors ``torch.optim.Adadelta``).

    Per parameter, with ``g`` the gradient (negated when ``maximize``)::

        g = g + weight_decay * p
        square_avg = rho * square_avg + (1 - rho) * g^2
        delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
        acc_delta = rho * acc_delta + (1 - rho) * delta^2
        p = p - lr * delta

    State per parameter, in torch's names: ``step`` (float32 scalar), ``square_avg`` and
    ``acc_delta``.

    Args:
        params: leaf Tensors (Parameters), or dicts ``{"params": [...], **overrides}``.
        lr: coefficient that scales delta before it is applied to the parameters.
        rho: decay rate of both running averages, in ``[0, 1]``.
        eps: added inside both square roots (numerical stability).
        weight_decay: L2 penalty added to the gradient.
        foreach: accepted for torch compatibility; XLA compiles the whole update anyway.
        capturable: accepted for torch compatibility (the step is always a device array).
        maximize: maximize the objective instead of minimizing it.
        differentiable: accepted for torch compatibility (jax differentiates any update).

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(3, 1)
        >>> opt = spx.optim.Adadelta(model.parameters())  # torch.optim.Adadelta
        >>> opt.param_groups[0]["rho"]
        0.9
    """

    _state_keys = ("step", "square_avg", "acc_delta")

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | jax.Array = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        self._check_group(defaults)
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        lr, rho, eps, weight_decay = group["lr"], group["rho"], group["eps"], group["weight_decay"]
        if not lr >= 0.0:
            raise ValueError(f"Invalid learning rate: {lr} (lr must be >= 0, e.g. lr=1.0)")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho} (rho must be in [0, 1], e.g. rho=0.9)")
        if not eps >= 0.0:
            raise ValueError(f"Invalid epsilon value: {eps} (eps must be >= 0, e.g. eps=1e-6)")
        if not weight_decay >= 0.0:
            raise ValueError(
                f"Invalid weight_decay value: {weight_decay} (weight_decay must be >= 0)"
            )

    def _init_state(self, param: jax.Array, group: dict[str, Any]) -> dict[str, jax.Array]:
        return {
            "step": jnp.zeros((), jnp.float32),
            "square_avg": jnp.zeros_like(param),
            "acc_delta": jnp.zeros_like(param),
        }

    def _update(
        self,
        params: list[jax.Array],
        grads: list[jax.Array],
        states: list[dict[str, jax.Array]],
        hparams: dict[str, Any],
    ) -> tuple[list[jax.Array], list[dict[str, jax.Array]]]:
        lr, rho, eps = hparams["lr"], hparams["rho"], hparams["eps"]
        if hparams["maximize"]:
            grads = [-g for g in grads]
        l2 = optax.add_decayed_weights(hparams["weight_decay"])
        grads = l2.update(grads, optax.EmptyState(), params)[0]
        steps = self._next_steps(states, hparams)
        new_params, new_states = [], []
        for p, g, state, step in zip(params, grads, states, steps, strict=True):
            square_avg = state["square_avg"] * rho + (1 - rho) * g * g
            delta = jnp.sqrt(state["acc_delta"] + eps) / jnp.sqrt(square_avg + eps) * g
            acc_delta = state["acc_delta"] * rho + (1 - rho) * delta * delta
            new_params.append((p - lr * delta).astype(p.dtype))
            new_states.append({"step": step, "square_avg": square_avg, "acc_delta": acc_delta})
        return new_params, new_states
