"""``ASGD``: torch's averaged stochastic gradient descent (Polyak-Ruppert averaging).

Beside the parameter, each element keeps ``ax``, the running average of the iterates, which
starts averaging after ``t0`` steps. The decaying step size ``eta`` and the averaging weight
``mu`` are per-parameter scalar state, as in torch; they are computed from the traced step, so
one program serves every step count and a changed ``lr`` never recompiles.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from spx.optim.optimizer import Optimizer


class ASGD(Optimizer):
    """ASGD (mirrors ``torch.optim.ASGD``).

    Per parameter, at step ``t`` with ``g`` the gradient (negated when ``maximize``), ``eta``
    and ``mu`` as left by the previous step::

        g = g + weight_decay * p
        p = p * (1 - lambd * eta) - eta * g
        ax = p if mu == 1 else ax + mu * (p - ax)
        eta = lr / (1 + lambd * lr * t)^alpha
        mu = 1 / max(1, t - t0)

    State per parameter, in torch's names: ``step``, ``eta``, ``mu`` (float32 scalars) and
    ``ax`` (the averaged parameter).

    Args:
        params: leaf Tensors (Parameters), or dicts ``{"params": [...], **overrides}``.
        lr: learning rate (the first ``eta``).
        lambd: decay term.
        alpha: power of the ``eta`` decay.
        t0: the step at which averaging starts.
        weight_decay: L2 penalty added to the gradient.
        foreach: accepted for torch compatibility; XLA compiles the whole update anyway.
        maximize: maximize the objective instead of minimizing it.
        differentiable: accepted for torch compatibility (jax differentiates any update).
        capturable: accepted for torch compatibility (the state is always device arrays).

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(3, 1)
        >>> opt = spx.optim.ASGD(model.parameters(), lr=1e-2)  # torch.optim.ASGD
        >>> sorted(opt.param_groups[0])[:3]
        ['alpha', 'capturable', 'differentiable']
    """

    _state_keys = ("step", "eta", "mu", "ax")

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | jax.Array = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "lambd": lambd,
            "alpha": alpha,
            "t0": t0,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        self._check_group(defaults)
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        lr, weight_decay = group["lr"], group["weight_decay"]
        if not lr >= 0.0:
            raise ValueError(f"Invalid learning rate: {lr} (lr must be >= 0, e.g. lr=1e-2)")
        if not weight_decay >= 0.0:
            raise ValueError(
                f"Invalid weight_decay value: {weight_decay} (weight_decay must be >= 0)"
            )

    def _init_state(self, param: jax.Array, group: dict[str, Any]) -> dict[str, jax.Array]:
        return {
            "step": jnp.zeros((), jnp.float32),
            "eta": jnp.asarray(group["lr"], jnp.float32),
            "mu": jnp.ones((), jnp.float32),
            "ax": jnp.zeros_like(param),
        }

    def _update(
        self,
        params: list[jax.Array],
        grads: list[jax.Array],
        states: list[dict[str, jax.Array]],
        hparams: dict[str, Any],
    ) -> tuple[list[jax.Array], list[dict[str, jax.Array]]]:
        lr, lambd, alpha, t0 = hparams["lr"], hparams["lambd"], hparams["alpha"], hparams["t0"]
        if hparams["maximize"]:
            grads = [-g for g in grads]
        l2 = optax.add_decayed_weights(hparams["weight_decay"])
        grads = l2.update(grads, optax.EmptyState(), params)[0]
        steps = self._next_steps(states, hparams)
        new_params, new_states = [], []
        for p, g, state, step in zip(params, grads, states, steps, strict=True):
            eta, mu = state["eta"], state["mu"]
            new_p = (p * (1 - lambd * eta) - eta * g).astype(p.dtype)
            # torch copies the parameter while mu == 1 (before t0): no averaging rounding.
            ax = jnp.where(mu == 1, new_p, state["ax"] + (new_p - state["ax"]) * mu)
            t = jnp.asarray(step, jnp.float32)
            new_eta = jnp.asarray(lr / (1 + lambd * lr * t) ** alpha, jnp.float32)
            new_mu = jnp.asarray(1 / jnp.maximum(1.0, t - t0), jnp.float32)
            new_params.append(new_p)
            new_states.append(
                {"step": step, "eta": new_eta, "mu": new_mu, "ax": ax.astype(p.dtype)}
            )
        return new_params, new_states
