"""Margin and embedding losses: hinge-embedding, cosine-embedding, multi-margin, multilabel
(soft) margin and triplet margin, plus Poisson and Gaussian negative log likelihoods, mirroring
``torch.nn.functional``.

Each takes ``reduction="none" | "mean" | "sum"`` (plus torch's deprecated ``size_average`` /
``reduce`` where torch has them) and computes torch's formula, including its small constants
(``1e-12`` in the cosine, ``eps`` in the distances and the Poisson log).

See https://pytorch.org/docs/stable/nn.functional.html#loss-functions
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from spx.nn.functional._utils import check_reduction, hinge, legacy_reduction, reduce_loss
from spx.nn.functional.distance import pairwise_distance

Array = jax.Array


def poisson_nll_loss(
    input: Array,
    target: Array,
    log_input: bool = True,
    full: bool = False,
    size_average: bool | None = None,
    eps: float = 1e-8,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Array:
    """Poisson negative log likelihood (mirrors ``torch.nn.functional.poisson_nll_loss``).

    ``exp(x) - y x`` with ``log_input`` (``x`` is the log-rate), else ``x - y log(x + eps)``;
    ``full`` adds Stirling's ``y log y - y + 0.5 log(2 pi y)`` where ``y > 1``.

    Args:
        input: the predicted (log-)rate, any shape.
        target: counts, same shape.
        log_input, full, eps: as above.
        size_average, reduce: deprecated torch flags.
        reduction: ``"none"`` | ``"mean"`` | ``"sum"``.

    Example:
        >>> F.poisson_nll_loss(jnp.zeros(2), jnp.ones(2))  # 1.0
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = jnp.asarray(input), jnp.asarray(target).astype(jnp.asarray(input).dtype)
    loss = jnp.exp(x) - t * x if log_input else x - t * jnp.log(x + eps)
    if full:
        safe = jnp.where(t > 1, t, 2.0)
        stirling = safe * jnp.log(safe) - safe + 0.5 * jnp.log(2 * math.pi * safe)
        loss = loss + jnp.where(t > 1, stirling, 0.0)
    return reduce_loss(loss, reduction)


def gaussian_nll_loss(
    input: Array,
    target: Array,
    var: Array | float,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Array:
    """Gaussian negative log likelihood (mirrors ``torch.nn.functional.gaussian_nll_loss``).

    ``0.5 (log max(var, eps) + (x - y)^2 / max(var, eps))`` (+ ``0.5 log(2 pi)`` if ``full``).
    As in torch the clamp of ``var`` passes the gradient through unchanged.

    Args:
        input: the predicted mean, ``(N, *)`` or ``(*)``.
        target: same shape as ``input``.
        var: the predicted variance: input's shape, input's shape with the last dim 1 or
            dropped (one variance per sample), or a float.
        full: include the constant term.
        eps: the clamp of ``var``.
        reduction: ``"none"`` | ``"mean"`` | ``"sum"``.

    Example:
        >>> F.gaussian_nll_loss(jnp.zeros(3), jnp.zeros(3), jnp.ones(3))  # 0.0
    """
    x, t = jnp.asarray(input), jnp.asarray(target)
    v = jnp.asarray(var, x.dtype)
    if v.ndim == 0:
        v = jnp.full(x.shape, v)
    if v.shape != x.shape:
        if x.shape[:-1] == v.shape:
            v = v[..., None]
        elif not (x.shape[:-1] == v.shape[:-1] and v.shape[-1] == 1):
            raise ValueError(
                f"gaussian_nll_loss: var is of incorrect size {v.shape} for input {x.shape}; "
                "expected input's shape, or it with the last dim 1 or dropped"
            )
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not valid")
    # torch clamps a copy of var under no_grad: the gradient ignores the clamp.
    v = v + jax.lax.stop_gradient(jnp.maximum(v, eps) - v)
    loss = 0.5 * (jnp.log(v) + jnp.square(x - t) / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_loss(loss, reduction)


def hinge_embedding_loss(
    input: Array,
    target: Array,
    margin: float = 1.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Array:
    """``x`` where ``y = 1``, ``max(0, margin - x)`` where ``y = -1`` (torch's version).

    Example:
        >>> F.hinge_embedding_loss(jnp.array([0.3, 2.0]), jnp.array([1, -1]))  # (0.3 + 0) / 2
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = jnp.asarray(input), jnp.asarray(target)
    # torch's exact formula: an entry whose target is neither 1 nor -1 gets both terms.
    loss = jnp.where(t != 1, hinge(margin - x), 0.0) + jnp.where(t != -1, x, 0.0)
    return reduce_loss(loss, reduction)


def cosine_embedding_loss(
    input1: Array,
    input2: Array,
    target: Array,
    margin: float = 0.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Array:
    """``1 - cos(x1, x2)`` for ``y = 1``, ``max(0, cos - margin)`` for ``y = -1`` (torch's).

    Args:
        input1, input2: ``(N, D)`` or ``(D,)``.
        target: ``(N,)`` or ``()`` of 1 / -1.
        margin: in ``[-1, 1]``.
        size_average, reduce: deprecated torch flags.
        reduction: ``"none"`` | ``"mean"`` | ``"sum"``.

    Example:
        >>> F.cosine_embedding_loss(jnp.ones((1, 2)), jnp.ones((1, 2)), jnp.array([1]))  # 0.0
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x1, x2, t = jnp.asarray(input1), jnp.asarray(input2), jnp.asarray(target)
    if x1.shape != x2.shape or x1.ndim not in (1, 2):
        raise RuntimeError(
            f"cosine_embedding_loss: input1 {x1.shape} and input2 {x2.shape} must be the same "
            "1-D or 2-D shape"
        )
    if t.ndim != x1.ndim - 1:
        raise RuntimeError(
            f"cosine_embedding_loss: expected a {x1.ndim - 1}-D target for {x1.ndim}-D inputs, "
            f"got target shape {t.shape}"
        )
    eps = 1e-12  # torch's EPSILON
    prod = jnp.sum(x1 * x2, -1)
    mag = jnp.sqrt((jnp.sum(x1 * x1, -1) + eps) * (jnp.sum(x2 * x2, -1) + eps))
    cos = prod / mag
    loss = jnp.where(t == 1, 1 - cos, 0.0) + jnp.where(t == -1, hinge(cos - margin), 0.0)
    return reduce_loss(loss, reduction)


def _class_input(x: Array, name: str) -> tuple[Array, bool]:
    if x.ndim == 1:
        return x[None], True
    if x.ndim != 2:
        raise RuntimeError(f"{name}: expected a 1-D (C,) or 2-D (N, C) input, got {x.shape}")
    return x, False


def multi_margin_loss(
    input: Array,
    target: Array,
    p: int = 1,
    margin: float = 1.0,
    weight: Array | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Array:
    """Multi-class hinge loss (mirrors ``torch.nn.functional.multi_margin_loss``).

    Per sample ``sum_{i != y} w[y] max(0, margin - x[y] + x[i])^p / C``.

    Args:
        input: ``(N, C)`` or ``(C,)`` scores.
        target: ``(N,)`` or ``()`` class indices.
        p: 1 or 2.
        margin: the margin.
        weight: optional ``(C,)`` per-class weight.
        size_average, reduce: deprecated torch flags.
        reduction: ``"none"`` | ``"mean"`` | ``"sum"``.

    Example:
        >>> F.multi_margin_loss(jnp.array([[0.1, 0.2, 0.4, 0.8]]), jnp.array([3]))  # 0.325
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: only p == 1 and p == 2 supported, got p={p}")
    x, unbatched = _class_input(jnp.asarray(input), "multi_margin_loss")
    t = jnp.asarray(target).reshape(-1).astype(jnp.int32)
    if t.shape[0] != x.shape[0]:
        raise RuntimeError(
            f"multi_margin_loss: inconsistent target size {jnp.shape(target)} for input "
            f"{jnp.shape(input)}"
        )
    c = x.shape[1]
    picked = jnp.take_along_axis(x, t[:, None], axis=1)
    z = jax.nn.relu(margin - picked + x)
    z = z if p == 1 else jnp.square(z)
    if weight is not None:
        z = z * jnp.asarray(weight, x.dtype)[t][:, None]
    z = jnp.where(jnp.arange(c)[None] == t[:, None], 0.0, z)
    loss = jnp.sum(z, 1) / c
    if unbatched and reduction == "none":
        loss = loss[0]
    return reduce_loss(loss, reduction)


def multilabel_margin_loss(
    input: Array,
    target: Array,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Array:
    """Multi-label hinge loss (mirrors ``torch.nn.functional.multilabel_margin_loss``).

    ``target`` holds each sample's class indices, ended by the first ``-1``; per sample the
    loss is ``sum_{j in targets, i not in targets} max(0, 1 - (x[j] - x[i])) / C``.

    Args:
        input: ``(N, C)`` or ``(C,)`` scores.
        target: int, same shape; the indices before the first ``-1`` are the labels.
        size_average, reduce: deprecated torch flags.
        reduction: ``"none"`` | ``"mean"`` | ``"sum"``.

    Example:
        >>> x = jnp.array([[0.1, 0.2, 0.4, 0.8]])
        >>> F.multilabel_margin_loss(x, jnp.array([[3, 0, -1, 1]]))  # 0.85
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, unbatched = _class_input(jnp.asarray(input), "multilabel_margin_loss")
    t = jnp.asarray(target).astype(jnp.int32)
    t = t[None] if unbatched else t
    if t.shape != x.shape:
        raise RuntimeError(
            f"multilabel_margin_loss: inconsistent target size {jnp.shape(target)} for input "
            f"{jnp.shape(input)}"
        )
    c = x.shape[1]
    # A label counts only before the sample's first -1.
    valid = jnp.cumprod(t >= 0, axis=1).astype(bool)
    idx = jnp.where(valid, t, 0)
    is_target = jnp.any(valid[:, :, None] & (idx[:, :, None] == jnp.arange(c)), axis=1)
    picked = jnp.take_along_axis(x, idx, axis=1)  # (N, C): x at each listed label
    hinge = jax.nn.relu(1 - picked[:, :, None] + x[:, None, :])  # [n, j, i]
    mask = valid[:, :, None] & ~is_target[:, None, :]
    loss = jnp.sum(jnp.where(mask, hinge, 0.0), axis=(1, 2)) / c
    if unbatched and reduction == "none":
        loss = loss[0]
    return reduce_loss(loss, reduction)


def multilabel_soft_margin_loss(
    input: Array,
    target: Array,
    weight: Array | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Array:
    """Per-class logistic loss averaged over classes (torch's multilabel_soft_margin_loss).

    ``-mean_c(w_c (y_c log sigmoid(x_c) + (1 - y_c) log sigmoid(-x_c)))`` per sample.

    Args:
        input: ``(N, C)`` logits.
        target: ``(N, C)`` of 0 / 1.
        weight: optional ``(C,)`` per-class weight.
        size_average, reduce: deprecated torch flags.
        reduction: ``"none"`` (shape ``(N,)``) | ``"mean"`` | ``"sum"``.

    Example:
        >>> F.multilabel_soft_margin_loss(jnp.zeros((1, 2)), jnp.array([[1.0, 0.0]]))  # log 2
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x = jnp.asarray(input)
    t = jnp.asarray(target).astype(x.dtype)
    loss = -(t * jax.nn.log_sigmoid(x) + (1 - t) * jax.nn.log_sigmoid(-x))
    if weight is not None:
        loss = loss * jnp.asarray(weight, x.dtype)
    class_dim = x.ndim - 1
    loss = jnp.sum(loss, axis=class_dim) / x.shape[class_dim]
    return reduce_loss(loss, reduction)


def triplet_margin_loss(
    anchor: Array,
    positive: Array,
    negative: Array,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Array:
    """``max(0, margin + d(a, pos) - d(a, neg))`` with the p-norm distance (torch's version).

    Args:
        anchor, positive, negative: ``(N, D)`` or ``(D,)``.
        margin: the margin.
        p: the norm degree of :func:`pairwise_distance`.
        eps: added to the differences, as in ``pairwise_distance``.
        swap: use ``min(d(a, neg), d(pos, neg))`` as the negative distance.
        size_average, reduce: deprecated torch flags.
        reduction: ``"none"`` | ``"mean"`` | ``"sum"``.

    Example:
        >>> a = jnp.zeros((2, 3))
        >>> F.triplet_margin_loss(a, a, a + 1)  # max(0, 1 + ~0 - ~sqrt(3)) = 0
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    a, pos, neg = jnp.asarray(anchor), jnp.asarray(positive), jnp.asarray(negative)
    if not a.ndim == pos.ndim == neg.ndim or a.ndim not in (1, 2):
        raise RuntimeError(
            f"triplet_margin_loss: anchor {a.shape}, positive {pos.shape} and negative "
            f"{neg.shape} must all be 1-D or all be 2-D"
        )
    d_pos = pairwise_distance(a, pos, p, eps)
    d_neg = pairwise_distance(a, neg, p, eps)
    if swap:
        d_neg = jnp.minimum(d_neg, pairwise_distance(pos, neg, p, eps))
    return reduce_loss(hinge(margin + d_pos - d_neg), reduction)


def triplet_from_distances(
    d_pos: Array, d_neg: Array, d_swap: Array | None, margin: float, reduction: str
) -> Array:
    """The last step of ``triplet_margin_with_distance_loss``, given the distances."""
    check_reduction(reduction)
    d_neg = jnp.asarray(d_neg)
    if d_swap is not None:
        d_neg = jnp.minimum(d_neg, jnp.asarray(d_swap))
    return reduce_loss(hinge(margin + jnp.asarray(d_pos) - d_neg), reduction)
