"""``RMSprop``: torch's RMSprop (plain or centered, with optional momentum) over optax.

torch divides by ``sqrt(square_avg) + eps`` (eps *outside* the root) and never bias-corrects,
which is ``optax.scale_by_rms(eps_in_sqrt=False)``; the centered variant
``sqrt(square_avg - grad_avg^2) + eps`` is ``optax.scale_by_stddev(eps_in_sqrt=False)``; the
momentum buffer ``momentum * buf + g / avg`` is ``optax.trace``. All three reproduce torch's
numbers, so nothing here is hand-written beyond the bookkeeping of torch's state names.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from spx.optim.optimizer import Optimizer


class RMSprop(Optimizer):
    """RMSprop (mirrors ``torch.optim.RMSprop``).

    Per parameter, with ``g`` the gradient (negated when ``maximize``)::

        g = g + weight_decay * p
        square_avg = alpha * square_avg + (1 - alpha) * g^2
        grad_avg = alpha * grad_avg + (1 - alpha) * g                   (centered)
        avg = sqrt(square_avg - grad_avg^2 if centered else square_avg) + eps
        buf = momentum * buf + g / avg;  p = p - lr * buf                (momentum > 0)
        p = p - lr * g / avg                                             (otherwise)

    State per parameter, in torch's names: ``step`` (float32 scalar), ``square_avg``,
    ``momentum_buffer`` (when ``momentum > 0``) and ``grad_avg`` (when ``centered``).

    Args:
        params: leaf Tensors (Parameters), or dicts ``{"params": [...], **overrides}``.
        lr: learning rate.
        alpha: smoothing constant of the squared-gradient average.
        eps: added to the denominator.
        weight_decay: L2 penalty added to the gradient.
        momentum: momentum factor.
        centered: normalize by the estimated variance instead of the raw second moment.
        capturable: accepted for torch compatibility (the step is always a device array).
        foreach: accepted for torch compatibility; XLA compiles the whole update anyway.
        maximize: maximize the objective instead of minimizing it.
        differentiable: accepted for torch compatibility (jax differentiates any update).

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(3, 1)
        >>> opt = spx.optim.RMSprop(model.parameters(), lr=1e-2)  # torch.optim.RMSprop
        >>> opt.param_groups[0]["alpha"]
        0.99
    """

    _state_keys = ("step", "square_avg", "momentum_buffer", "grad_avg")

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | jax.Array = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        self._check_group(defaults)
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        lr, eps, momentum = group["lr"], group["eps"], group["momentum"]
        weight_decay, alpha = group["weight_decay"], group["alpha"]
        if not lr >= 0.0:
            raise ValueError(f"Invalid learning rate: {lr} (lr must be >= 0, e.g. lr=1e-2)")
        if not eps >= 0.0:
            raise ValueError(f"Invalid epsilon value: {eps} (eps must be >= 0, e.g. eps=1e-8)")
        if not momentum >= 0.0:
            raise ValueError(f"Invalid momentum value: {momentum} (momentum must be >= 0)")
        if not weight_decay >= 0.0:
            raise ValueError(
                f"Invalid weight_decay value: {weight_decay} (weight_decay must be >= 0)"
            )
        if not alpha >= 0.0:
            raise ValueError(f"Invalid alpha value: {alpha} (alpha must be >= 0, e.g. 0.99)")

    def _static_switches(self, group: dict[str, Any]) -> dict[str, bool]:
        # torch tests `momentum > 0` on every step to choose the momentum update.
        return {"_momentum_on": bool(group["momentum"] > 0)}

    def _init_state(self, param: jax.Array, group: dict[str, Any]) -> dict[str, jax.Array]:
        state = {"step": jnp.zeros((), jnp.float32), "square_avg": jnp.zeros_like(param)}
        if dict(self._switches(group))["_momentum_on"]:
            state["momentum_buffer"] = jnp.zeros_like(param)
        if group["centered"]:
            state["grad_avg"] = jnp.zeros_like(param)
        return state

    def _update(
        self,
        params: list[jax.Array],
        grads: list[jax.Array],
        states: list[dict[str, jax.Array]],
        hparams: dict[str, Any],
    ) -> tuple[list[jax.Array], list[dict[str, jax.Array]]]:
        alpha, eps = hparams["alpha"], hparams["eps"]
        l2 = optax.add_decayed_weights(hparams["weight_decay"])
        if hparams["centered"]:
            normalize = optax.scale_by_stddev(decay=alpha, eps=eps, eps_in_sqrt=False)
        else:
            normalize = optax.scale_by_rms(decay=alpha, eps=eps, eps_in_sqrt=False)
        accumulate = optax.trace(decay=hparams["momentum"])
        scale = optax.scale_by_learning_rate(hparams["lr"])
        new_params, new_states = [], []
        steps = self._next_steps(states, hparams)
        for p, g, state, step in zip(params, grads, states, steps, strict=True):
            if hparams["maximize"]:
                g = -g
            g, _ = l2.update(g, optax.EmptyState(), p)
            # Keys in torch's order; a buffer torch no longer uses is carried over untouched.
            new_state = {"step": step}
            if hparams["centered"]:
                # A group switched to centered after its first step starts the average at 0.
                grad_avg = state.get("grad_avg", jnp.zeros_like(p))
                update, moments = normalize.update(
                    g, optax.ScaleByRStdDevState(mu=grad_avg, nu=state["square_avg"])
                )
                new_state["square_avg"] = moments.nu
                new_grad_avg = moments.mu
            else:
                update, moments = normalize.update(g, optax.ScaleByRmsState(state["square_avg"]))
                new_state["square_avg"] = moments.nu
                new_grad_avg = state.get("grad_avg")
            buf = state.get("momentum_buffer")
            if hparams["_momentum_on"]:
                buf = jnp.zeros_like(p) if buf is None else buf
                update, traced = accumulate.update(update, optax.TraceState(buf))
                buf = traced.trace
            if buf is not None:
                new_state["momentum_buffer"] = buf
            if new_grad_avg is not None:
                new_state["grad_avg"] = new_grad_avg
            update, _ = scale.update(update, optax.EmptyState())
            new_params.append(optax.apply_updates(p, update))
            new_states.append(new_state)
        return new_params, new_states
