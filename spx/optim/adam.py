"""``Adam``: torch's Adam (optionally AMSGrad, L2 or decoupled weight decay) over optax.

The moments come from optax's ``update_moment`` helpers and L2 decay from
``add_decayed_weights``; the update is torch's formula
``p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)`` with the bias corrections taken
from the traced step (the program never changes as the step count grows): one scalar when the
stepping parameters share one ``step`` array (the usual case: parameters that start together
share it until a step some of them sit out), else one vector for the group. AMSGrad keeps
torch's running maximum of the *raw* second moment, bias-corrected afterwards
(``optax.scale_by_amsgrad`` takes the maximum of the corrected one).
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


def _adam_moments(
    params: list[Any], grads: list[Any], states: list[dict[str, Any]], hparams: dict[str, Any]
) -> tuple[list[Any], list[Any], list[Any]]:
    """The start of Adam's, AdamW's, NAdam's and RAdam's updates, as torch writes them.

    Returns the gradients (negated under ``maximize``, plus L2 weight decay unless
    ``decoupled_weight_decay``) and the updated first and second moments.
    """
    beta1, beta2 = hparams["betas"]
    if hparams["maximize"]:
        grads = [-g for g in grads]
    if not hparams["decoupled_weight_decay"]:
        decay = optax.add_decayed_weights(hparams["weight_decay"])
        grads = decay.update(grads, optax.EmptyState(), params)[0]
    exp_avgs = optax.tree.update_moment(grads, [s["exp_avg"] for s in states], beta1, 1)
    exp_avg_sqs = optax.tree.update_moment_per_elem_norm(
        grads, [s["exp_avg_sq"] for s in states], beta2, 2
    )
    return grads, exp_avgs, exp_avg_sqs


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
        params: leaf Tensors (Parameters), or dicts ``{"params": [...], **overrides}``.
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
        eps, lr, wd = hparams["eps"], hparams["lr"], hparams["weight_decay"]
        decoupled = hparams["decoupled_weight_decay"]
        grads, exp_avgs, exp_avg_sqs = _adam_moments(params, grads, states, hparams)
        # Bias corrections for the whole group as one vector: per-parameter scalar arithmetic
        # would become dozens of tiny XLA kernels, each costing more than its math.
        if hparams.get("_lockstep"):
            # The parameters share one step array (see Optimizer.step): one scalar bias
            # correction, which XLA fuses into each parameter's update, and one new step.
            step = jnp.asarray(states[0]["step"], jnp.float32) + 1
            steps = [step] * len(states)
            bias_correction1 = [1 - beta1**step] * len(states)
            bias_correction2_sqrt = [jnp.sqrt(1 - beta2**step)] * len(states)
        else:
            steps = jnp.stack([jnp.asarray(s["step"], jnp.float32) for s in states]) + 1
            bias_correction1 = 1 - beta1**steps
            bias_correction2_sqrt = jnp.sqrt(1 - beta2**steps)
        step_sizes = [lr / bc for bc in bias_correction1]
        new_params, new_states = [], []
        for i, (p, state) in enumerate(zip(params, states, strict=True)):
            m, v = exp_avgs[i], exp_avg_sqs[i]
            new_state = {"step": steps[i], "exp_avg": m, "exp_avg_sq": v}
            if hparams["amsgrad"]:
                # torch: max of the raw second moment, bias-corrected afterwards.
                v = new_state["max_exp_avg_sq"] = jnp.maximum(state["max_exp_avg_sq"], v)
            if decoupled:
                p = p * (1 - lr * wd)
            # torch: p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)
            denom = jnp.sqrt(v) / bias_correction2_sqrt[i] + eps
            new_params.append((p - step_sizes[i] * m / denom).astype(p.dtype))
            new_states.append(new_state)
        return new_params, new_states
