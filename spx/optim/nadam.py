"""``NAdam``: torch's NAdam (Adam with Nesterov momentum and momentum decay) over optax.

The moments come from optax's ``update_moment`` helpers. torch's momentum schedule
``mu_t = b1 * (1 - 0.5 * 0.96^(t * momentum_decay))`` and the running product of the ``mu_t``
(state ``mu_product``, a float32 scalar as in torch) are computed from the traced step, so the
program never changes as the step count grows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp

from spx.optim.adam import _adam_moments, _check_adam_hparams
from spx.optim.optimizer import Optimizer


class NAdam(Optimizer):
    """NAdam (mirrors ``torch.optim.NAdam``).

    Per parameter, at step ``t`` with ``g`` the gradient (negated when ``maximize``)::

        g = g + weight_decay * p                 (L2; unless decoupled_weight_decay)
        p = p * (1 - lr * weight_decay)          (only if decoupled_weight_decay)
        mu_t = b1 * (1 - 0.5 * 0.96^(t * momentum_decay))
        mu_product = mu_product * mu_t
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g^2
        denom = sqrt(v / (1 - b2^t)) + eps
        p = p - lr * (1 - mu_t) / (1 - mu_product) * g / denom
              - lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / denom

    State per parameter, in torch's names and order: ``step`` (float32 scalar),
    ``mu_product`` (float32 scalar), ``exp_avg`` and ``exp_avg_sq``.

    Args:
        params: leaf Tensors (Parameters), or dicts ``{"params": [...], **overrides}``.
        lr: learning rate.
        betas: decay rates ``(beta1, beta2)`` of the first and second moment.
        eps: added to the denominator.
        weight_decay: L2 penalty (or decoupled decay with ``decoupled_weight_decay``).
        momentum_decay: the ``psi`` of the momentum schedule.
        decoupled_weight_decay: decay the weights directly (as AdamW) instead of adding an L2
            term to the gradient.
        foreach: accepted for torch compatibility; no numerical effect.
        maximize: maximize the objective instead of minimizing it.
        capturable: accepted for torch compatibility; no numerical effect.
        differentiable: accepted for torch compatibility (jax differentiates any update).

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(3, 1)
        >>> opt = spx.optim.NAdam(model.parameters())  # torch.optim.NAdam
        >>> opt.param_groups[0]["momentum_decay"]
        0.004
    """

    _state_keys = ("step", "mu_product", "exp_avg", "exp_avg_sq")

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | jax.Array = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        self._check_group(defaults)
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        _check_adam_hparams(group)
        momentum_decay = group["momentum_decay"]
        if not momentum_decay >= 0.0:
            raise ValueError(
                f"Invalid momentum_decay value: {momentum_decay} (momentum_decay must be >= 0, "
                "e.g. 4e-3)"
            )

    def _init_state(self, param: jax.Array, group: dict[str, Any]) -> dict[str, jax.Array]:
        return {
            "step": jnp.zeros((), jnp.float32),
            "mu_product": jnp.ones((), jnp.float32),
            "exp_avg": jnp.zeros_like(param),
            "exp_avg_sq": jnp.zeros_like(param),
        }

    def _state_dtype(self, key: str, value: Any, param: Any) -> Any:
        # torch keeps mu_product float32 whatever the parameter's dtype.
        if key == "mu_product":
            return jnp.float32
        return super()._state_dtype(key, value, param)

    def _update(
        self,
        params: list[jax.Array],
        grads: list[jax.Array],
        states: list[dict[str, jax.Array]],
        hparams: dict[str, Any],
    ) -> tuple[list[jax.Array], list[dict[str, jax.Array]]]:
        beta1, beta2 = hparams["betas"]
        eps, lr, wd = hparams["eps"], hparams["lr"], hparams["weight_decay"]
        psi = hparams["momentum_decay"]
        decoupled = hparams["decoupled_weight_decay"]
        grads, exp_avgs, exp_avg_sqs = _adam_moments(params, grads, states, hparams)
        steps = self._next_steps(states, hparams)
        new_params, new_states = [], []
        for i, (p, g, state, step) in enumerate(zip(params, grads, states, steps, strict=True)):
            t = jnp.asarray(step, jnp.float32)
            m, v = exp_avgs[i], exp_avg_sqs[i]
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * psi))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * psi))
            mu_product = state["mu_product"] * mu
            if decoupled:
                p = p * (1 - lr * wd)
            denom = jnp.sqrt(v / (1 - beta2**t)) + eps
            p = p - lr * (1.0 - mu) / (1.0 - mu_product) * g / denom
            p = p - lr * mu_next / (1.0 - mu_product * mu_next) * m / denom
            new_params.append(p.astype(params[i].dtype))
            new_states.append(
                {"step": step, "mu_product": mu_product, "exp_avg": m, "exp_avg_sq": v}
            )
        return new_params, new_states
