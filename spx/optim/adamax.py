"""``Adamax``: torch's Adamax (Adam with an infinity-norm second moment) over optax.

The first moment is optax's ``update_moment``; the infinity norm is torch's
``max(b2 * u, |g| + eps)`` (eps *inside* the maximum, unlike ``optax.scale_by_adamax`` which adds
it to the denominator afterwards), so it is written here. Only the first moment is
bias-corrected, from the traced step, so the program never changes as the step count grows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from spx.optim.adam import _check_adam_hparams
from spx.optim.optimizer import Optimizer


class Adamax(Optimizer):
    """Adamax (mirrors ``torch.optim.Adamax``).

    Per parameter, at step ``t`` with ``g`` the gradient (negated when ``maximize``)::

        g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        u = max(b2 * u, |g| + eps)
        p = p - lr / (1 - b1^t) * m / u

    State per parameter, in torch's names: ``step`` (float32 scalar), ``exp_avg`` and
    ``exp_inf``.

    Args:
        params: leaf Tensors (Parameters), or dicts ``{"params": [...], **overrides}``.
        lr: learning rate.
        betas: decay rates ``(beta1, beta2)`` of the first moment and the infinity norm.
        eps: added to ``|g|`` inside the infinity norm.
        weight_decay: L2 penalty added to the gradient.
        foreach: accepted for torch compatibility; XLA compiles the whole update anyway (no
            numerical effect).
        maximize: maximize the objective instead of minimizing it.
        differentiable: accepted for torch compatibility (jax differentiates any update).
        capturable: accepted for torch compatibility (the step is always a device array; no
            numerical effect).

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(3, 1)
        >>> opt = spx.optim.Adamax(model.parameters())  # torch.optim.Adamax
        >>> opt.param_groups[0]["lr"]
        0.002
    """

    _state_keys = ("step", "exp_avg", "exp_inf")

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | jax.Array = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        self._check_group(defaults)
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        _check_adam_hparams(group)

    def _init_state(self, param: jax.Array, group: dict[str, Any]) -> dict[str, jax.Array]:
        return {
            "step": jnp.zeros((), jnp.float32),
            "exp_avg": jnp.zeros_like(param),
            "exp_inf": jnp.zeros_like(param),
        }

    def _update(
        self,
        params: list[jax.Array],
        grads: list[jax.Array],
        states: list[dict[str, jax.Array]],
        hparams: dict[str, Any],
    ) -> tuple[list[jax.Array], list[dict[str, jax.Array]]]:
        beta1, beta2 = hparams["betas"]
        eps, lr = hparams["eps"], hparams["lr"]
        if hparams["maximize"]:
            grads = [-g for g in grads]
        l2 = optax.add_decayed_weights(hparams["weight_decay"])
        grads = l2.update(grads, optax.EmptyState(), params)[0]
        exp_avgs = optax.tree.update_moment(grads, [s["exp_avg"] for s in states], beta1, 1)
        steps = self._next_steps(states, hparams)
        new_params, new_states = [], []
        for p, g, m, state, step in zip(params, grads, exp_avgs, states, steps, strict=True):
            u = jnp.maximum(state["exp_inf"] * beta2, jnp.abs(g) + eps)
            clr = lr / (1 - beta1 ** jnp.asarray(step, jnp.float32))
            new_params.append((p - clr * m / u).astype(p.dtype))
            new_states.append({"step": step, "exp_avg": m, "exp_inf": u})
        return new_params, new_states
