"""``Rprop``: torch's resilient backpropagation (per-element step sizes driven by grad signs).

Each element's step size grows by ``etaplus`` while its gradient keeps its sign and shrinks by
``etaminus`` when the sign flips; on a flip the element does not move and its remembered
gradient is zeroed, so the next step neither grows nor shrinks it. torch does this with masked
assignments; here it is ``jnp.where`` on the sign of ``g * prev``, one program for every step.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp

from spx.optim.optimizer import Optimizer


class Rprop(Optimizer):
    """Rprop (mirrors ``torch.optim.Rprop``).

    Per parameter, with ``g`` the gradient (negated when ``maximize``)::

        s = sign(g * prev)
        step_size = clamp(step_size * (etaplus if s > 0 else etaminus if s < 0 else 1),
                          step_size_min, step_size_max)
        g = 0 where s < 0
        p = p - sign(g) * step_size
        prev = g

    State per parameter, in torch's names: ``step`` (float32 scalar), ``prev`` and
    ``step_size`` (starts at ``lr``; later changes of ``lr`` have no effect, as in torch).

    Args:
        params: leaf Tensors (Parameters), or dicts ``{"params": [...], **overrides}``.
        lr: initial step size of every element.
        etas: ``(etaminus, etaplus)``, the factors applied on a sign flip and on a kept sign;
            ``0 < etaminus < 1 < etaplus``.
        step_sizes: ``(min, max)`` bounds of the step size.
        capturable: accepted for torch compatibility (the step is always a device array).
        foreach: accepted for torch compatibility; XLA compiles the whole update anyway.
        maximize: maximize the objective instead of minimizing it.
        differentiable: accepted for torch compatibility (jax differentiates any update).

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(3, 1)
        >>> opt = spx.optim.Rprop(model.parameters(), lr=1e-2)  # torch.optim.Rprop
        >>> opt.param_groups[0]["etas"]
        (0.5, 1.2)
    """

    _state_keys = ("step", "prev", "step_size")

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | jax.Array = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "etas": etas,
            "step_sizes": step_sizes,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        self._check_group(defaults)
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        lr, etas, step_sizes = group["lr"], group["etas"], group["step_sizes"]
        if not lr >= 0.0:
            raise ValueError(f"Invalid learning rate: {lr} (lr must be >= 0, e.g. lr=1e-2)")
        if len(etas) != 2:
            raise ValueError(f"etas must be a pair (etaminus, etaplus), got {etas!r}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(
                f"Invalid eta values: {etas[0]}, {etas[1]} (need 0 < etaminus < 1 < etaplus, "
                "e.g. etas=(0.5, 1.2))"
            )
        if len(step_sizes) != 2:
            raise ValueError(f"step_sizes must be a pair (min, max), got {step_sizes!r}")

    def _init_state(self, param: jax.Array, group: dict[str, Any]) -> dict[str, jax.Array]:
        return {
            "step": jnp.zeros((), jnp.float32),
            "prev": jnp.zeros_like(param),
            "step_size": jnp.full_like(param, group["lr"]),
        }

    def _update(
        self,
        params: list[jax.Array],
        grads: list[jax.Array],
        states: list[dict[str, jax.Array]],
        hparams: dict[str, Any],
    ) -> tuple[list[jax.Array], list[dict[str, jax.Array]]]:
        etaminus, etaplus = hparams["etas"]
        step_size_min, step_size_max = hparams["step_sizes"]
        if hparams["maximize"]:
            grads = [-g for g in grads]
        steps = self._next_steps(states, hparams)
        new_params, new_states = [], []
        for p, g, state, step in zip(params, grads, states, steps, strict=True):
            sign = jnp.sign(g * state["prev"])
            factor = jnp.where(sign > 0, etaplus, jnp.where(sign < 0, etaminus, 1.0))
            step_size = jnp.clip(
                state["step_size"] * factor.astype(p.dtype), step_size_min, step_size_max
            ).astype(p.dtype)
            # A flipped sign: skip this element now, and forget its gradient for the next step.
            g = jnp.where(sign < 0, jnp.zeros_like(g), g)
            new_params.append((p - jnp.sign(g) * step_size).astype(p.dtype))
            new_states.append({"step": step, "prev": g, "step_size": step_size})
        return new_params, new_states
