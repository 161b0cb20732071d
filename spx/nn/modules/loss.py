"""Loss modules mirroring torch.nn's: cross entropy, NLL, MSE, L1, smooth L1 and (logit) BCE.

Each is a thin module over the ``spx.nn.functional`` loss of the same name. As in torch, the
class ``weight`` (and ``pos_weight``) are registered *buffers*: they appear in ``state_dict``
when given (and not when None), move with ``.to()`` and are leaves of the module's pytree, so a
compiled step sees their current values. Arguments are validated at construction, where torch
waits for the first call, and torch's deprecated ``size_average``/``reduce`` flags are accepted
(in torch's positional order) and mapped to ``reduction`` with a deprecation warning.
"""

from __future__ import annotations

from typing import Any

import jax

from spx import _validate
from spx.nn import functional as F
from spx.nn.functional._utils import check_reduction, legacy_reduction
from spx.nn.module import Module


class _Loss(Module):
    """Base of the losses: resolves and validates ``reduction``."""

    def __init__(
        self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"
    ) -> None:
        super().__init__()
        self.reduction: str = legacy_reduction(size_average, reduce, reduction)


class _WeightedLoss(_Loss):
    """A loss with an optional per-class ``weight`` buffer."""

    def __init__(
        self,
        weight: jax.Array | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


def _check_ignore_index(cls: str, ignore_index: Any) -> int:
    return _validate.as_int(ignore_index, "ignore_index", cls)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy between logits and class indices or class probabilities.

    Mirrors ``torch.nn.CrossEntropyLoss``: ``log_softmax`` over dim 1 followed by the negative
    log likelihood, with per-class ``weight``, ``ignore_index`` and ``label_smoothing``.

    Args:
        weight: optional ``(C,)`` rescaling weight per class (a buffer, as in torch).
        size_average: deprecated; use ``reduction``.
        ignore_index: target value that contributes nothing (index targets only).
        reduce: deprecated; use ``reduction``.
        reduction: ``'none'``, ``'mean'`` (weighted mean over non-ignored targets) or ``'sum'``.
        label_smoothing: amount in ``[0, 1]`` of uniform smoothing of the targets.

    Shapes:
        input ``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``; target ``(N,)``/``(N, d1, ...)`` int
        class indices, or float probabilities of input's shape. Output: a scalar, or the
        target's batch shape with ``reduction='none'``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> loss = nn.CrossEntropyLoss(label_smoothing=0.1)
        >>> loss(jnp.zeros((4, 3)), jnp.array([0, 1, 2, 1])).shape
        spx.Size([])
    """

    def __init__(
        self,
        weight: jax.Array | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        ignore_index = _check_ignore_index(type(self).__name__, ignore_index)
        label_smoothing = _validate.as_float(
            label_smoothing, "label_smoothing", "CrossEntropyLoss", minimum=0, maximum=1
        )
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: jax.Array, target: jax.Array) -> jax.Array:
        return F.cross_entropy(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of log-probabilities (mirrors ``torch.nn.NLLLoss``).

    Args:
        weight: optional ``(C,)`` rescaling weight per class (a buffer, as in torch).
        size_average: deprecated; use ``reduction``.
        ignore_index: target value that contributes nothing.
        reduce: deprecated; use ``reduction``.
        reduction: ``'none'``, ``'mean'`` (weighted mean over non-ignored targets) or ``'sum'``.

    Shapes:
        input ``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)`` log-probabilities; target ``(N,)``
        or ``(N, d1, ...)`` int class indices. Output: a scalar, or target's shape with
        ``reduction='none'``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from spx import nn
        >>> logp = jax.nn.log_softmax(jnp.zeros((2, 3)), axis=1)
        >>> round(float(nn.NLLLoss()(logp, jnp.array([0, 2]))), 4)
        1.0986
    """

    def __init__(
        self,
        weight: jax.Array | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = _check_ignore_index(type(self).__name__, ignore_index)

    def forward(self, input: jax.Array, target: jax.Array) -> jax.Array:
        return F.nll_loss(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
        )


class MSELoss(_Loss):
    """Mean squared error ``(input - target) ** 2`` (mirrors ``torch.nn.MSELoss``).

    Args:
        size_average: deprecated; use ``reduction``.
        reduce: deprecated; use ``reduction``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shapes:
        input ``(*)``, target ``(*)`` (broadcast as in torch) -> a scalar, or ``(*)`` with
        ``reduction='none'``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> float(nn.MSELoss()(jnp.array([1.0, 2.0]), jnp.array([1.0, 4.0])))
        2.0
    """

    def forward(self, input: jax.Array, target: jax.Array) -> jax.Array:
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error ``|input - target|`` (mirrors ``torch.nn.L1Loss``).

    Args:
        size_average: deprecated; use ``reduction``.
        reduce: deprecated; use ``reduction``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shapes:
        input ``(*)``, target ``(*)`` -> a scalar, or ``(*)`` with ``reduction='none'``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> float(nn.L1Loss(reduction="sum")(jnp.array([1.0, 2.0]), jnp.array([0.0, 4.0])))
        3.0
    """

    def forward(self, input: jax.Array, target: jax.Array) -> jax.Array:
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Huber-like loss: quadratic below ``beta``, linear above (mirrors ``torch.nn.SmoothL1Loss``).

    Per element ``0.5 * d**2 / beta`` if ``|d| < beta`` else ``|d| - 0.5 * beta`` with
    ``d = input - target``; ``beta=0`` is the L1 loss.

    Args:
        size_average: deprecated; use ``reduction``.
        reduce: deprecated; use ``reduction``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.
        beta: the non-negative threshold between the two regimes.

    Shapes:
        input ``(*)``, target ``(*)`` -> a scalar, or ``(*)`` with ``reduction='none'``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> float(nn.SmoothL1Loss()(jnp.array([0.5, 3.0]), jnp.zeros(2)))
        1.3125
    """

    def __init__(
        self,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        beta: float = 1.0,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = _validate.as_float(
            beta, "beta", "SmoothL1Loss", minimum=0, hint="beta=0 gives the L1 loss"
        )

    def forward(self, input: jax.Array, target: jax.Array) -> jax.Array:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class BCELoss(_WeightedLoss):
    """Binary cross entropy between probabilities and targets (mirrors ``torch.nn.BCELoss``).

    As in torch, each log term is clamped at ``-100`` so a probability of exactly 0 or 1 gives
    a finite loss.

    Args:
        weight: optional rescaling weight broadcast against the input (a buffer, as in torch).
        size_average: deprecated; use ``reduction``.
        reduce: deprecated; use ``reduction``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shapes:
        input ``(*)`` probabilities in ``[0, 1]``, target ``(*)`` -> a scalar, or ``(*)`` with
        ``reduction='none'``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> round(float(nn.BCELoss()(jnp.array([0.5, 0.5]), jnp.array([0.0, 1.0]))), 4)
        0.6931
    """

    def __init__(
        self,
        weight: jax.Array | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)

    def forward(self, input: jax.Array, target: jax.Array) -> jax.Array:
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid plus binary cross entropy in one stable step (mirrors ``BCEWithLogitsLoss``).

    Args:
        weight: optional rescaling weight broadcast against the input (a buffer).
        size_average: deprecated; use ``reduction``.
        reduce: deprecated; use ``reduction``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.
        pos_weight: optional weight of the positive examples, broadcast along the last
            (class) dim, e.g. ``(C,)`` (a buffer, registered after ``weight`` as in torch).

    Shapes:
        input ``(*)`` logits, target ``(*)`` -> a scalar, or ``(*)`` with ``reduction='none'``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> loss = nn.BCEWithLogitsLoss(pos_weight=jnp.array([2.0]))
        >>> round(float(loss(jnp.zeros(2), jnp.array([0.0, 1.0]))), 4)
        1.0397
    """

    def __init__(
        self,
        weight: jax.Array | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        pos_weight: jax.Array | None = None,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: jax.Array, target: jax.Array) -> jax.Array:
        return F.binary_cross_entropy_with_logits(
            input,
            target,
            weight=self.weight,
            reduction=self.reduction,
            pos_weight=self.pos_weight,
        )


class HuberLoss(_Loss):
    """Quadratic below ``delta``, linear above (mirrors ``torch.nn.HuberLoss``).

    Per element ``0.5 * d**2`` if ``|d| < delta`` else ``delta * (|d| - 0.5 * delta)``.

    Args:
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.
        delta: the positive switch point.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> float(nn.HuberLoss(delta=2.0)(jnp.array([0.5, 3.0]), jnp.zeros(2)))
        2.0625
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        _validate.as_float(delta, "delta", "HuberLoss")
        if delta <= 0:
            raise ValueError(f"HuberLoss: delta must be positive, got {delta}")
        self.delta = delta

    def forward(self, input: jax.Array, target: jax.Array) -> jax.Array:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence of log-probabilities (mirrors ``torch.nn.KLDivLoss``).

    Per element ``target * (log target - input)`` (``exp(t) * (t - input)`` with
    ``log_target``). Use ``reduction='batchmean'`` for the true KL divergence; ``'mean'``
    also divides by the support size, with torch's warning.

    Args:
        size_average, reduce: deprecated; use ``reduction``.
        reduction: ``'none'``, ``'batchmean'``, ``'mean'`` or ``'sum'``.
        log_target: whether ``target`` is given as log-probabilities.

    Shapes:
        input ``(*)`` log-probabilities, target ``(*)`` -> a scalar, or ``(*)`` with 'none'.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from spx import nn
        >>> logp = jax.nn.log_softmax(jnp.zeros((2, 4)))
        >>> float(nn.KLDivLoss(reduction="batchmean", log_target=True)(logp, logp))
        0.0
    """

    def __init__(
        self,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        log_target: bool = False,
    ) -> None:
        if size_average is None and reduce is None:
            # 'batchmean' is KL's own; _Loss checks the three common ones.
            Module.__init__(self)
            check_reduction(reduction, ("none", "mean", "batchmean", "sum"))
            self.reduction = reduction
        else:
            super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: jax.Array, target: jax.Array) -> jax.Array:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class PoissonNLLLoss(_Loss):
    """Poisson negative log likelihood (mirrors ``torch.nn.PoissonNLLLoss``).

    ``exp(input) - target * input`` with ``log_input``, else ``input - target * log(input +
    eps)``; ``full`` adds Stirling's approximation of ``log(target!)`` where ``target > 1``.

    Args:
        log_input: whether the input is the log-rate.
        full: add the Stirling term.
        size_average, reduce: deprecated; use ``reduction``.
        eps: keeps the log finite when ``log_input=False``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> float(nn.PoissonNLLLoss()(jnp.zeros(2), jnp.ones(2)))
        1.0
    """

    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        size_average: bool | None = None,
        eps: float = 1e-8,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: jax.Array, target: jax.Array) -> jax.Array:
        return F.poisson_nll_loss(
            log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
            reduction=self.reduction,
        )  # fmt: skip


class GaussianNLLLoss(_Loss):
    """Gaussian negative log likelihood (mirrors ``torch.nn.GaussianNLLLoss``).

    ``0.5 * (log(var) + (input - target)**2 / var)`` with ``var`` clamped at ``eps`` (the
    gradient passes the clamp, as in torch); ``full`` adds ``0.5 * log(2 * pi)``.

    Args:
        full: include the constant term.
        eps: the clamp of ``var``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shapes:
        input ``(N, *)``, target like input, var like input or with the last dim 1 or dropped.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> float(nn.GaussianNLLLoss()(jnp.zeros(3), jnp.zeros(3), jnp.ones(3)))
        0.0
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: jax.Array, target: jax.Array, var: jax.Array) -> jax.Array:
        return F.gaussian_nll_loss(
            input, target, var, full=self.full, eps=self.eps, reduction=self.reduction
        )
