"""``Adam``: torch's Adam (optionally AMSGrad, L2 or decoupled weight decay) over optax.

``optax.scale_by_adam`` computes exactly torch's moments and its non-AMSGrad update
``(m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)``, with the bias corrections taken from the
traced step, so the program never changes as the step count grows. AMSGrad is written out:
torch keeps the running maximum of the *raw* second moment and bias-corrects it afterwards,
while ``optax.scale_by_amsgrad`` takes the maximum of the bias-corrected one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from spx.optim.optimizer import Optimizer


def _check_adam_hparams(group: dict[str, Any]) -> None:
    """torch's Adam/AdamW hyperparameter checks, with the accepted range in the message."""
    lr, eps, betas, weight_decay = group["lr"], group["eps"], group["betas"], group["weight_decay"]
    if not lr >= 0.0:
        raise ValueError(f"Invalid learning rate: {lr} (lr must be >= 0, e.g. lr=1e-3)")
    if not eps >= 0.0:
        raise ValueError(f"Invalid epsilon value: {eps} (eps must be >= 0, e.g. eps=1e-8)")
    if len(betas) != 2:
        raise ValueError(f"betas must be a pair (beta1, beta2), got {betas!r}")
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(
                f"Invalid beta parameter at index {i}: {beta} (each beta must be in [0, 1), "
                "e.g. betas=(0.9, 0.999))"
            )
    if not weight_decay >= 0.0:
        raise ValueError(f"Invalid weight_decay value: {weight_decay} (weight_decay must be >= 0)")


class Adam(Optimizer):
    """Adam (mirrors ``torch.optim.Adam``).

    Per parameter, at step ``t`` with ``g`` the gradient (negated when ``maximize``)::

        g = g + weight_decay * p                 (L2; unless decoupled_weight_decay)
        p = p * (1 - lr * weight_decay)          (only if decoupled_weight_decay)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g^2
        v_max = max(v_max, v)                    (amsgrad; the denominator then uses v_max)
        p = p - lr / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps)

    State per parameter, in torch's names: ``step`` (float32 scalar), ``exp_avg``,
    ``exp_avg_sq`` and, with ``amsgrad``, ``max_exp_avg_sq``.

    Args:
        params: Parameters, or dicts ``{"params": [...], **hyperparameter overrides}``.
        lr: learning rate.
        betas: decay rates ``(beta1, beta2)`` of the first and second moment.
        eps: added to the denominator.
        weight_decay: L2 penalty (or decoupled decay with ``decoupled_weight_decay``).
        amsgrad: use the AMSGrad variant.
        foreach: accepted for torch compatibility; XLA compiles the whole update anyway.
        maximize: maximize the objective instead of minimizing it.
        capturable: accepted for torch compatibility (the step is always a device array).
        differentiable: accepted for torch compatibility (jax differentiates any update).
        fused: accepted for torch compatibility; the update is always one compiled program.
        decoupled_weight_decay: decay the weights directly (AdamW) instead of adding an L2
            term to the gradient.

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(3, 1)
        >>> opt = spx.optim.Adam(model.parameters(), lr=1e-3)  # torch.optim.Adam
        >>> opt.param_groups[0]["betas"]
        (0.9, 0.999)
    """

    _state_keys = ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq")

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | jax.Array = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        self._check_group(defaults)
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        _check_adam_hparams(group)

    def _init_state(self, param: jax.Array, group: dict[str, Any]) -> dict[str, jax.Array]:
        state = {
            "step": jnp.zeros((), jnp.float32),
            "exp_avg": jnp.zeros_like(param),
            "exp_avg_sq": jnp.zeros_like(param),
        }
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = jnp.zeros_like(param)
        return state

    def _update(
        self,
        params: list[jax.Array],
        grads: list[jax.Array],
        states: list[dict[str, jax.Array]],
        hparams: dict[str, Any],
    ) -> tuple[list[jax.Array], list[dict[str, jax.Array]]]:
        beta1, beta2 = hparams["betas"]
        eps = hparams["eps"]
        decoupled = hparams["decoupled_weight_decay"]
        decay = optax.add_decayed_weights(hparams["weight_decay"])
        adam = optax.scale_by_adam(b1=beta1, b2=beta2, eps=eps)
        scale = optax.scale_by_learning_rate(hparams["lr"])
        new_params, new_states = [], []
        for p, g, state in zip(params, grads, states, strict=True):
            if hparams["maximize"]:
                g = -g
            if not decoupled:
                g, _ = decay.update(g, optax.EmptyState(), p)
            # optax increments the count before bias-correcting, as torch increments `step`.
            count = state["step"].astype(jnp.int32)
            update, moments = adam.update(
                g, optax.ScaleByAdamState(count, state["exp_avg"], state["exp_avg_sq"])
            )
            step = state["step"] + 1
            new_state = {"step": step, "exp_avg": moments.mu, "exp_avg_sq": moments.nu}
            if hparams["amsgrad"]:
                # torch: max of the raw second moment, bias-corrected afterwards.
                max_sq = jnp.maximum(state["max_exp_avg_sq"], moments.nu)
                bias_correction1 = 1 - beta1**step
                bias_correction2_sqrt = jnp.sqrt(1 - beta2**step)
                denom = jnp.sqrt(max_sq) / bias_correction2_sqrt + eps
                update = moments.mu / bias_correction1 / denom
                new_state["max_exp_avg_sq"] = max_sq
            if decoupled:
                # p - lr * (update + wd * p) == torch's p * (1 - lr * wd) - lr * update.
                update, _ = decay.update(update, optax.EmptyState(), p)
            update, _ = scale.update(update, optax.EmptyState())
            new_params.append(optax.apply_updates(p, update))
            new_states.append(new_state)
        return new_params, new_states
