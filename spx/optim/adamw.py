"""``AdamW``: Adam with decoupled weight decay, as torch defines it (an Adam subclass).

The decay is ``optax.add_decayed_weights`` applied to the Adam direction before the learning
rate, i.e. ``p - lr * (adam + wd * p)``, which is torch's ``p * (1 - lr * wd) - lr * adam``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax

from spx.optim.adam import Adam


class AdamW(Adam):
    """Adam with decoupled weight decay (mirrors ``torch.optim.AdamW``).

    Per parameter, at step ``t``: ``p = p * (1 - lr * weight_decay)`` and then the Adam update
    (see :class:`spx.optim.Adam`). The state and the ``param_groups`` keys are torch's, including
    ``decoupled_weight_decay=True``.

    Args:
        params: leaf Tensors (Parameters), or dicts ``{"params": [...], **overrides}``.
        lr: learning rate.
        betas: decay rates ``(beta1, beta2)`` of the first and second moment.
        eps: added to the denominator.
        weight_decay: decoupled weight decay coefficient.
        amsgrad: use the AMSGrad variant.
        maximize: maximize the objective instead of minimizing it.
        foreach: accepted for torch compatibility; XLA compiles the whole update anyway.
        capturable: accepted for torch compatibility (the step is always a device array).
        differentiable: accepted for torch compatibility (jax differentiates any update).
        fused: accepted for torch compatibility; the update is always one compiled program.

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(3, 1)
        >>> opt = spx.optim.AdamW(model.parameters(), lr=1e-3)  # torch.optim.AdamW
        >>> opt.param_groups[0]["weight_decay"]
        0.01
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | jax.Array = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )
