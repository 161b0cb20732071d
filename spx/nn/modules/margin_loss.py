"""Margin and embedding loss modules mirroring torch.nn's: margin ranking, hinge embedding,
soft margin, multi-label (soft) margin, cosine embedding, multi-margin and triplet margin.

Thin modules over the ``spx.nn.functional`` losses of the same names; a class ``weight`` is a
registered buffer, as in torch, and ``size_average``/``reduce`` map to ``reduction`` with
torch's deprecation warning.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from spx import _validate
from spx.nn import functional as F
from spx.nn.modules.distance import PairwiseDistance
from spx.nn.modules.loss import _Loss, _WeightedLoss

Array = jax.Array


class MarginRankingLoss(_Loss):
    """``max(0, -y * (x1 - x2) + margin)`` (mirrors ``torch.nn.MarginRankingLoss``).

    Args:
        margin: the margin.
        size_average, reduce: deprecated; use ``reduction``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shapes:
        input1 ``(N)``, input2 ``(N)``, target ``(N)`` of 1 / -1 -> scalar or ``(N)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> float(nn.MarginRankingLoss(0.5)(jnp.ones(2), jnp.zeros(2), -jnp.ones(2)))
        1.5
    """

    def __init__(
        self,
        margin: float = 0.0,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Array, input2: Array, target: Array) -> Array:
        return F.margin_ranking_loss(
            input1, input2, target, margin=self.margin, reduction=self.reduction
        )


class HingeEmbeddingLoss(_Loss):
    """``x`` for ``y = 1``, ``max(0, margin - x)`` for ``y = -1`` (``nn.HingeEmbeddingLoss``).

    Args:
        margin: the margin.
        size_average, reduce: deprecated; use ``reduction``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> float(nn.HingeEmbeddingLoss()(jnp.array([0.5, 0.25]), jnp.array([1, -1])))
        0.625
    """

    def __init__(
        self,
        margin: float = 1.0,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Array, target: Array) -> Array:
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss ``log(1 + exp(-y * x))`` (mirrors ``torch.nn.SoftMarginLoss``).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> round(float(nn.SoftMarginLoss()(jnp.zeros(2), jnp.array([1.0, -1.0]))), 4)
        0.6931
    """

    def forward(self, input: Array, target: Array) -> Array:
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss over class indices (mirrors ``torch.nn.MultiLabelMarginLoss``).

    Shapes:
        input ``(N, C)`` or ``(C,)``; target int of the same shape listing each sample's labels,
        ended by the first ``-1`` -> scalar or ``(N,)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> x = jnp.array([[0.1, 0.2, 0.4, 0.8]])
        >>> round(float(nn.MultiLabelMarginLoss()(x, jnp.array([[3, 0, -1, 1]]))), 4)
        0.85
    """

    def forward(self, input: Array, target: Array) -> Array:
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-class logistic loss, averaged over classes (``nn.MultiLabelSoftMarginLoss``).

    Args:
        weight: optional ``(C,)`` per-class weight (a buffer).
        size_average, reduce: deprecated; use ``reduction``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shapes:
        input ``(N, C)`` logits, target ``(N, C)`` of 0 / 1 -> scalar or ``(N,)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> loss = nn.MultiLabelSoftMarginLoss()
        >>> round(float(loss(jnp.zeros((1, 2)), jnp.array([[1.0, 0.0]]))), 4)
        0.6931
    """

    def forward(self, input: Array, target: Array) -> Array:
        return F.multilabel_soft_margin_loss(
            input, target, weight=self.weight, reduction=self.reduction
        )


class CosineEmbeddingLoss(_Loss):
    """``1 - cos(x1, x2)`` for ``y = 1``, ``max(0, cos - margin)`` for ``y = -1``.

    Mirrors ``torch.nn.CosineEmbeddingLoss``.

    Args:
        margin: in ``[-1, 1]``; 0 to 0.5 is suggested.
        size_average, reduce: deprecated; use ``reduction``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shapes:
        input1, input2 ``(N, D)`` or ``(D,)``; target ``(N,)`` or ``()`` -> scalar or ``(N,)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> float(nn.CosineEmbeddingLoss()(jnp.ones((1, 2)), jnp.ones((1, 2)), jnp.ones(1)))
        0.0
    """

    def __init__(
        self,
        margin: float = 0.0,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Array, input2: Array, target: Array) -> Array:
        return F.cosine_embedding_loss(
            input1, input2, target, margin=self.margin, reduction=self.reduction
        )


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss (mirrors ``torch.nn.MultiMarginLoss``).

    Per sample ``sum_{i != y} w[y] * max(0, margin - x[y] + x[i])**p / C``.

    Args:
        p: 1 or 2.
        margin: the margin.
        weight: optional ``(C,)`` per-class weight (a buffer).
        size_average, reduce: deprecated; use ``reduction``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> x = jnp.array([[0.1, 0.2, 0.4, 0.8]])
        >>> round(float(nn.MultiMarginLoss()(x, jnp.array([3]))), 4)
        0.325
    """

    def __init__(
        self,
        p: int = 1,
        margin: float = 1.0,
        weight: Array | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p == 1 and p == 2 supported, got p={p!r}")
        if weight is not None and getattr(weight, "ndim", 1) != 1:
            raise ValueError(
                f"MultiMarginLoss: weight must be None or 1D, got shape {tuple(weight.shape)}"
            )
        super().__init__(weight, size_average, reduce, reduction)
        self.p = p
        self.margin = margin

    def forward(self, input: Array, target: Array) -> Array:
        return F.multi_margin_loss(
            input, target, p=self.p, margin=self.margin, weight=self.weight,
            reduction=self.reduction,
        )  # fmt: skip


class TripletMarginLoss(_Loss):
    """``max(0, margin + d(a, pos) - d(a, neg))``, p-norm ``d`` (``nn.TripletMarginLoss``).

    Args:
        margin: the margin.
        p: the norm degree of the pairwise distance.
        eps: added to the differences (as ``F.pairwise_distance``).
        swap: use ``min(d(a, neg), d(pos, neg))`` as the negative distance.
        size_average, reduce: deprecated; use ``reduction``.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shapes:
        anchor, positive, negative ``(N, D)`` or ``(D,)`` -> scalar or ``(N,)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> a = jnp.zeros((2, 3))
        >>> float(nn.TripletMarginLoss(margin=0.5)(a, a, a + 1))
        0.0
    """

    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        _validate.as_float(margin, "margin", "TripletMarginLoss", minimum=0)
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor: Array, positive: Array, negative: Array) -> Array:
        return F.triplet_margin_loss(
            anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
            swap=self.swap, reduction=self.reduction,
        )  # fmt: skip


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet margin loss with any distance (``nn.TripletMarginWithDistanceLoss``).

    Args:
        distance_function: ``(x1, x2) -> distances``, called on the Tensors (any spx code);
            None is a :class:`~spx.nn.PairwiseDistance` submodule (Euclidean), as in torch.
        margin: a positive margin.
        swap: use ``min(d(a, neg), d(pos, neg))`` as the negative distance.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> a = spx.zeros(2, 3)
        >>> loss = nn.TripletMarginWithDistanceLoss(distance_function=nn.PairwiseDistance())
        >>> loss(a, a, a + 1).shape
        spx.Size([])
    """

    def __init__(
        self,
        *,
        distance_function: Callable[[Any, Any], Any] | None = None,
        margin: float = 1.0,
        swap: bool = False,
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginWithDistanceLoss: margin must be greater than 0, got {margin}"
            )
        # torch stores a PairwiseDistance submodule for None (so it shows in the repr).
        self.distance_function = (
            distance_function if distance_function is not None else PairwiseDistance()
        )
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Array, positive: Array, negative: Array) -> Array:
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction,
        )  # fmt: skip
