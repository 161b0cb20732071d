"""``RAdam``: torch's rectified Adam over optax.

The moments come from optax's ``update_moment`` helpers. The rectification term
``rho_t = rho_inf - 2 t b2^t / (1 - b2^t)`` is a difference of two numbers near
``2 / (1 - b2)`` (about 2000 for ``b2 = 0.999``) whose result is about ``t - 1``: torch computes it
in float64 on the host, while here it is float32 from the traced step, where the plain formula
is off by ~1e-2. It is therefore rewritten without the cancellation (see :func:`_rho`), which
agrees with torch to float32 rounding.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp

from spx.optim.adam import _adam_moments, _check_adam_hparams
from spx.optim.optimizer import Optimizer


def _one_over_d_minus_one_over_l(d: jax.Array, log_b2: jax.Array) -> jax.Array:
    """``1/d - 1/L`` with ``d = 1 - b2``, ``L = -log(b2)``: ~1/2, a series for small ``d``."""
    series = 0.5 + d * (1 / 12 + d * (1 / 24 + d * (19 / 720 + d * 3 / 160)))
    safe = jnp.where(d > 0.05, d, 1.0)
    direct = 1 / safe - 1 / -jnp.where(d > 0.05, log_b2, -1.0)
    return jnp.where(d > 0.05, direct, series)


def _one_over_y_minus_one_over_expm1(y: jax.Array) -> jax.Array:
    """``1/y - 1/(e^y - 1)`` for ``y >= 0``: ~1/2 - y/12, a series for small ``y``."""
    y2 = y * y
    series = 0.5 - y / 12 + y * y2 / 720 - y * y2 * y2 / 30240 + y * y2 * y2 * y2 / 1209600
    safe = jnp.where(y > 0.5, y, 1.0)
    return jnp.where(y > 0.5, 1 / safe - 1 / jnp.expm1(safe), series)


def _rho(t: jax.Array, beta2: Any) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(rho_t, rho_inf, 1 - b2^t)`` of RAdam, free of cancellation.

    With ``L = -log(b2)``: ``2 t b2^t / (1 - b2^t) = 2 t / expm1(t L)``, and
    ``rho_t = 2 (1/d - 1/L) + 2 t (1/(tL) - 1/expm1(tL)) - 1``, each bracket about 1/2.
    """
    d = 1 - jnp.asarray(beta2, jnp.float32)
    log_b2 = jnp.log1p(-d)
    rho_inf = 2 / d - 1
    y = -t * log_b2
    rho_t = 2 * _one_over_d_minus_one_over_l(d, log_b2) - 1
    rho_t = rho_t + 2 * t * _one_over_y_minus_one_over_expm1(y)
    return rho_t, rho_inf, -jnp.expm1(-y)


class RAdam(Optimizer):
    """RAdam (mirrors ``torch.optim.RAdam``).

    Per parameter, at step ``t`` with ``g`` the gradient (negated when ``maximize``)::

        g = g + weight_decay * p                 (L2; unless decoupled_weight_decay)
        p = p * (1 - lr * weight_decay)          (only if decoupled_weight_decay)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g^2
        rho_inf = 2 / (1 - b2) - 1;  rho_t = rho_inf - 2 t b2^t / (1 - b2^t)
        if rho_t > 5:
            r = sqrt((rho_t - 4) (rho_t - 2) rho_inf / ((rho_inf - 4) (rho_inf - 2) rho_t))
            p = p - lr * m / (1 - b1^t) * r * sqrt(1 - b2^t) / (sqrt(v) + eps)
        else:
            p = p - lr * m / (1 - b1^t)

    State per parameter, in torch's names: ``step`` (float32 scalar), ``exp_avg`` and
    ``exp_avg_sq``.

    Args:
        params: leaf Tensors (Parameters), or dicts ``{"params": [...], **overrides}``.
        lr: learning rate.
        betas: decay rates ``(beta1, beta2)`` of the first and second moment.
        eps: added to the denominator.
        weight_decay: L2 penalty (or decoupled decay with ``decoupled_weight_decay``).
        decoupled_weight_decay: decay the weights directly (as AdamW) instead of adding an L2
            term to the gradient.
        foreach: accepted for torch compatibility; no numerical effect.
        maximize: maximize the objective instead of minimizing it.
        capturable: accepted for torch compatibility; no numerical effect.
        differentiable: accepted for torch compatibility (jax differentiates any update).

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(3, 1)
        >>> opt = spx.optim.RAdam(model.parameters(), lr=1e-3)  # torch.optim.RAdam
        >>> opt.param_groups[0]["decoupled_weight_decay"]
        False
    """

    _state_keys = ("step", "exp_avg", "exp_avg_sq")

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | jax.Array = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
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
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "decoupled_weight_decay": decoupled_weight_decay,
            "differentiable": differentiable,
        }
        self._check_group(defaults)
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        _check_adam_hparams(group)

    def _init_state(self, param: jax.Array, group: dict[str, Any]) -> dict[str, jax.Array]:
        return {
            "step": jnp.zeros((), jnp.float32),
            "exp_avg": jnp.zeros_like(param),
            "exp_avg_sq": jnp.zeros_like(param),
        }

    def _update(
        self,
        params: list[jax.Array],
        grads: list[jax.Array],
        states: list[dict[str, jax.Array]],
        hparams: dict[str, Any],
    ) -> tuple[list[jax.Array], list[dict[str, jax.Array]]]:
        beta1, beta2 = hparams["betas"]
        eps, lr, wd = hparams["eps"], hparams["lr"], hparams["weight_decay"]
        decoupled = hparams["decoupled_weight_decay"]
        grads, exp_avgs, exp_avg_sqs = _adam_moments(params, grads, states, hparams)
        steps = self._next_steps(states, hparams)
        new_params, new_states = [], []
        for i, (p, step) in enumerate(zip(params, steps, strict=True)):
            t = jnp.asarray(step, jnp.float32)
            m, v = exp_avgs[i], exp_avg_sqs[i]
            rho_t, rho_inf, bias_correction2 = _rho(t, beta2)
            rectified = rho_t > 5.0
            # Under the threshold the radicand may be negative; its value is discarded.
            rect = jnp.sqrt(
                jnp.maximum((rho_t - 4) * (rho_t - 2) * rho_inf, 0.0)
                / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
            )
            adaptive = jnp.sqrt(bias_correction2) / (jnp.sqrt(v) + eps)
            update = jnp.where(rectified, rect * adaptive, 1.0)
            if decoupled:
                p = p * (1 - lr * wd)
            p = p - m / (1 - beta1**t) * lr * update
            new_params.append(p.astype(params[i].dtype))
            new_states.append({"step": step, "exp_avg": m, "exp_avg_sq": v})
        return new_params, new_states
