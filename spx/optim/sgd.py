"""``SGD``: stochastic gradient descent with torch's momentum, dampening and Nesterov rules.

The weight decay and the momentum accumulation after the first step are optax transformations
(``add_decayed_weights``, ``trace``); the first step is written out because torch starts the
momentum buffer at the raw gradient (no dampening), which ``optax.trace``'s zero-initialized
trace cannot express.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax
import optax

from spx.nn.parameter import Parameter
from spx.optim._state_check import StateSpec, like
from spx.optim.optimizer import Optimizer


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum (mirrors ``torch.optim.SGD``).

    Per parameter, with ``g`` the gradient (negated when ``maximize``)::

        g = g + weight_decay * p
        buf = g                                      first step with momentum
        buf = momentum * buf + (1 - dampening) * g   later steps
        g = g + momentum * buf  if nesterov  else  buf
        p = p - lr * g

    The state of a parameter is ``momentum_buffer``, created by its first step with
    ``momentum != 0``. Without momentum a parameter keeps no state, so ``state_dict()['state']``
    is empty, as in torch.

    Args:
        params: leaf Tensors (Parameters), or dicts ``{"params": [...], **overrides}``.
        lr: learning rate.
        momentum: momentum factor.
        dampening: dampening of the gradient added to the momentum buffer.
        weight_decay: L2 penalty added to the gradient.
        nesterov: use Nesterov momentum (needs ``momentum > 0`` and ``dampening == 0``).
        maximize: maximize the objective instead of minimizing it.
        foreach: accepted for torch compatibility; XLA compiles the whole update anyway.
        differentiable: accepted for torch compatibility (jax differentiates any update).
        fused: accepted for torch compatibility; the update is always one compiled program.

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(3, 1)
        >>> opt = spx.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)  # torch.optim.SGD
        >>> opt.param_groups[0]["momentum"]
        0.9
    """

    _state_keys = ("momentum_buffer",)

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | jax.Array = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        self._check_group(defaults)
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay = group["weight_decay"]
        if not lr >= 0.0:
            raise ValueError(f"Invalid learning rate: {lr} (lr must be >= 0, e.g. lr=1e-3)")
        if not momentum >= 0.0:
            raise ValueError(f"Invalid momentum value: {momentum} (momentum must be >= 0)")
        if not weight_decay >= 0.0:
            raise ValueError(
                f"Invalid weight_decay value: {weight_decay} (weight_decay must be >= 0)"
            )
        if group["nesterov"] and (momentum <= 0 or dampening != 0):
            raise ValueError(
                "Nesterov momentum requires a momentum and zero dampening, got "
                f"momentum={momentum}, dampening={dampening}; set momentum > 0 and "
                "dampening=0, or nesterov=False"
            )

    def _static_switches(self, group: dict[str, Any]) -> dict[str, bool]:
        # torch tests `momentum != 0` on every step: it decides whether a buffer is kept.
        return {"_momentum_on": bool(group["momentum"] != 0)}

    def _state_spec(self, param: Parameter, group: dict[str, Any]) -> StateSpec:
        # The buffer appears at a parameter's first step with momentum, so a stepped
        # parameter has one exactly when momentum is on (without it, torch keeps no state).
        buffer = {"momentum_buffer": like(param)}
        if self._static_switches(group)["_momentum_on"]:
            return StateSpec(required=buffer, optional={})
        return StateSpec(required={}, optional=buffer)

    def _init_state(self, param: jax.Array, group: dict[str, Any]) -> dict[str, jax.Array]:
        # The buffer is created by the first step that uses momentum (see _update).
        return {}

    def _update(
        self,
        params: list[jax.Array],
        grads: list[jax.Array],
        states: list[dict[str, jax.Array]],
        hparams: dict[str, Any],
    ) -> tuple[list[jax.Array], list[dict[str, jax.Array]]]:
        momentum, dampening = hparams["momentum"], hparams["dampening"]
        l2 = optax.add_decayed_weights(hparams["weight_decay"])
        accumulate = optax.trace(decay=momentum)
        scale = optax.scale_by_learning_rate(hparams["lr"])
        new_params, new_states = [], []
        for p, g, state in zip(params, grads, states, strict=True):
            if hparams["maximize"]:
                g = -g
            g, _ = l2.update(g, optax.EmptyState(), p)
            state = dict(state)
            # With momentum switched off torch leaves an existing buffer untouched.
            if hparams["_momentum_on"]:
                buf = state.get("momentum_buffer")
                if buf is None:
                    # torch's first step: the buffer is the gradient itself, undampened.
                    buf = g
                else:
                    # optax.trace computes `update + decay * trace`, torch's later steps.
                    _, traced = accumulate.update((1 - dampening) * g, optax.TraceState(buf))
                    buf = traced.trace
                state["momentum_buffer"] = buf
                g = g + momentum * buf if hparams["nesterov"] else buf
            update, _ = scale.update(g, optax.EmptyState())
            new_params.append(optax.apply_updates(p, update))
            new_states.append(state)
        return new_params, new_states
