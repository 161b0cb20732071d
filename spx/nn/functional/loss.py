"""Regression and binary losses: mse, l1, smooth-L1, Huber, (logit) BCE, KL divergence,
soft-margin and margin-ranking, mirroring ``torch.nn.functional``.

Each takes ``reduction="none" | "mean" | "sum"`` (plus torch's deprecated ``size_average`` /
``reduce`` where torch has them). Elementwise losses broadcast ``input`` and ``target`` with
torch's "different size" warning. Class-dimension losses live in ``cross_entropy.py``.

See https://pytorch.org/docs/stable/nn.functional.html#loss-functions
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from spx import _user_code
from spx._tensor.methods.math import _abs
from spx.nn.functional._utils import check_reduction, hinge, legacy_reduction, reduce_loss

Array = jax.Array


def _broadcast(x: Array, t: Array, name: str) -> tuple[Array, Array]:
    if x.shape != t.shape:
        _user_code.warn(
            f"{name}: using a target size ({t.shape}) that is different to the input size "
            f"({x.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            UserWarning,
        )
    return jnp.broadcast_arrays(x, t)


def _weighted(loss: Array, weight: Array | None, x: Array, reduction: str, name: str) -> Array:
    # torch's weighted mse/l1: "mean" divides by the summed weights.
    if weight is None:
        return reduce_loss(loss, reduction)
    w = jnp.asarray(weight)
    if w.shape != x.shape:
        raise ValueError(f"{name}: weight {w.shape} and input {x.shape} must have the same size")
    loss = loss * w
    if reduction == "mean":
        return jnp.sum(loss) / jnp.sum(w)
    return reduce_loss(loss, reduction)


def mse_loss(
    input: Array,
    target: Array,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Array | None = None,
) -> Array:
    """Squared error ``(x - y)^2`` (mirrors ``torch.nn.functional.mse_loss``).

    Args:
        input: any shape.
        target: same shape (broadcast with a warning otherwise).
        size_average, reduce: deprecated torch flags.
        reduction: ``"none"`` | ``"mean"`` | ``"sum"``.
        weight: optional elementwise weight shaped like ``input``; ``"mean"`` then divides by
            ``weight.sum()``.

    Example:
        >>> F.mse_loss(jnp.zeros(3), jnp.ones(3))  # 1.0
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = _broadcast(jnp.asarray(input), jnp.asarray(target), "mse_loss")
    return _weighted(jnp.square(x - t), weight, jnp.asarray(input), reduction, "mse_loss")


def l1_loss(
    input: Array,
    target: Array,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Array | None = None,
) -> Array:
    """Absolute error ``|x - y|`` (mirrors ``torch.nn.functional.l1_loss``).

    Args:
        input: any shape.
        target: same shape (broadcast with a warning otherwise).
        size_average, reduce: deprecated torch flags.
        reduction: ``"none"`` | ``"mean"`` | ``"sum"``.
        weight: optional elementwise weight; ``"mean"`` then divides by ``weight.sum()``.

    Example:
        >>> F.l1_loss(jnp.zeros(3), jnp.full(3, -2.0))  # 2.0
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = _broadcast(jnp.asarray(input), jnp.asarray(target), "l1_loss")
    return _weighted(_abs(x - t), weight, jnp.asarray(input), reduction, "l1_loss")


def smooth_l1_loss(
    input: Array,
    target: Array,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Array:
    """``0.5 d^2 / beta`` if ``|d| < beta`` else ``|d| - 0.5 beta`` (torch's smooth_l1_loss).

    Args:
        input: any shape.
        target: same shape.
        size_average, reduce: deprecated torch flags.
        reduction: ``"none"`` | ``"mean"`` | ``"sum"``.
        beta: the switch point (>= 0); ``beta=0`` is exactly the L1 loss.

    Example:
        >>> F.smooth_l1_loss(jnp.zeros(2), jnp.array([0.5, 3.0]))  # (0.125 + 2.5) / 2
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    x, t = _broadcast(jnp.asarray(input), jnp.asarray(target), "smooth_l1_loss")
    if beta == 0:
        # torch's L1 loss, including its zero slope where input equals target (jnp.abs: 1).
        return reduce_loss(_abs(x - t), reduction)
    d = jnp.abs(x - t)
    # The quadratic branch's argument is clamped so its (unused) gradient stays bounded.
    loss = jnp.where(d < beta, 0.5 * jnp.square(jnp.minimum(d, beta)) / beta, d - 0.5 * beta)
    return reduce_loss(loss, reduction)


def huber_loss(
    input: Array,
    target: Array,
    reduction: str = "mean",
    delta: float = 1.0,
    weight: Array | None = None,
) -> Array:
    """``0.5 d^2`` if ``|d| < delta`` else ``delta (|d| - 0.5 delta)`` (torch's huber_loss).

    Args:
        input: any shape.
        target: same shape.
        reduction: ``"none"`` | ``"mean"`` | ``"sum"``.
        delta: the switch point (> 0).
        weight: optional elementwise weight; unlike mse/l1, torch's weighted Huber ``"mean"``
            is the plain mean of the weighted losses (reproduced here).

    Example:
        >>> F.huber_loss(jnp.zeros(2), jnp.array([0.5, 3.0]))  # (0.125 + 2.5) / 2
    """
    check_reduction(reduction)
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    x, t = _broadcast(jnp.asarray(input), jnp.asarray(target), "huber_loss")
    d = jnp.abs(x - t)
    loss = jnp.where(d < delta, 0.5 * jnp.square(jnp.minimum(d, delta)), delta * (d - 0.5 * delta))
    if weight is not None:
        w = jnp.asarray(weight)
        if w.shape != jnp.shape(input):
            raise ValueError(
                f"huber_loss: weight {w.shape} and input {jnp.shape(input)} must have the same size"
            )
        loss = loss * w
    return reduce_loss(loss, reduction)


@jax.custom_vjp
def _bce_elementwise(x: Array, t: Array) -> Array:
    # torch clamps each log at -100 so that x = 0 or 1 gives a finite loss.
    return -(t * jnp.maximum(jnp.log(x), -100.0) + (1 - t) * jnp.maximum(jnp.log1p(-x), -100.0))


def _bce_fwd(x: Array, t: Array) -> tuple[Array, tuple[Array, Array]]:
    return _bce_elementwise(x, t), (x, t)


def _bce_bwd(res: tuple[Array, Array], g: Array) -> tuple[Array, Array]:
    # torch's binary_cross_entropy_backward: (x - t) / max(x (1 - x), 1e-12). Autodiff of the
    # clamped logs would give 0 * inf = NaN at x = 0 or 1 instead.
    x, t = res
    dx = g * (x - t) / jnp.maximum(x * (1 - x), 1e-12)
    dt = g * (jnp.maximum(jnp.log1p(-x), -100.0) - jnp.maximum(jnp.log(x), -100.0))
    return dx, dt


_bce_elementwise.defvjp(_bce_fwd, _bce_bwd)


def binary_cross_entropy(
    input: Array,
    target: Array,
    weight: Array | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Array:
    """Binary cross entropy of probabilities (mirrors ``torch...binary_cross_entropy``).

    ``-w (y log x + (1 - y) log(1 - x))`` with each log clamped at -100 as in torch.

    Args:
        input: probabilities in ``[0, 1]``, any shape.
        target: same shape, values in ``[0, 1]``.
        weight: broadcastable to ``target``, or None.
        size_average, reduce: deprecated torch flags.
        reduction: ``"none"`` | ``"mean"`` | ``"sum"``.

    Example:
        >>> F.binary_cross_entropy(jnp.array([0.5, 0.5]), jnp.array([0.0, 1.0]))  # log 2
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = jnp.asarray(input), jnp.asarray(target)
    if x.shape != t.shape:
        raise ValueError(
            f"binary_cross_entropy: target size {t.shape} must equal input size {x.shape}"
        )
    loss = _bce_elementwise(x, t.astype(x.dtype))
    if weight is not None:
        loss = loss * jnp.broadcast_to(jnp.asarray(weight), t.shape)
    return reduce_loss(loss, reduction)


def binary_cross_entropy_with_logits(
    input: Array,
    target: Array,
    weight: Array | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    pos_weight: Array | None = None,
) -> Array:
    """BCE on logits, computed stably (mirrors ``torch...binary_cross_entropy_with_logits``).

    ``loss = (1 - y) x - (1 + (pos_weight - 1) y) log_sigmoid(x)``, times ``weight``.

    Args:
        input: logits, any shape.
        target: same shape, values in ``[0, 1]``.
        weight: broadcastable elementwise weight, or None.
        size_average, reduce: deprecated torch flags.
        reduction: ``"none"`` | ``"mean"`` | ``"sum"``.
        pos_weight: weight of positive examples, broadcast along the trailing (class) dim,
            e.g. ``(C,)`` for ``(N, C)`` input.

    Example:
        >>> F.binary_cross_entropy_with_logits(jnp.zeros(2), jnp.array([0.0, 1.0]))  # log 2
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = jnp.asarray(input), jnp.asarray(target)
    if x.shape != t.shape:
        raise ValueError(
            f"binary_cross_entropy_with_logits: target size {t.shape} must be the same as "
            f"input size {x.shape}"
        )
    t = t.astype(x.dtype)
    log_sig = jax.nn.log_sigmoid(x)
    if pos_weight is None:
        loss = (1 - t) * x - log_sig
    else:
        log_weight = (jnp.asarray(pos_weight) - 1) * t + 1
        loss = (1 - t) * x - log_weight * log_sig
    if weight is not None:
        loss = loss * jnp.asarray(weight)
    return reduce_loss(loss, reduction)


def kl_div(
    input: Array,
    target: Array,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Array:
    """Pointwise KL divergence ``target * (log target - input)`` (mirrors ``torch...kl_div``).

    Args:
        input: log-probabilities, any shape.
        target: probabilities (or log-probabilities with ``log_target=True``), same shape.
        size_average, reduce: deprecated torch flags.
        reduction: ``"none"`` | ``"mean"`` (over all elements, with torch's warning) |
            ``"batchmean"`` (sum / batch size: the true KL) | ``"sum"``.
        log_target: whether ``target`` is given in log space.

    Example:
        >>> p = jnp.full((2, 4), 0.25)
        >>> F.kl_div(jnp.log(p), p, reduction="batchmean")  # 0.0
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, "mean")
    else:
        check_reduction(reduction, ("none", "mean", "batchmean", "sum"))
        if reduction == "mean":
            _user_code.warn(
                "kl_div: reduction='mean' divides the total loss by both the batch size and the "
                "support size; 'batchmean' divides only by the batch size and matches the KL "
                "definition.",
                UserWarning,
            )
    x, t = jnp.asarray(input), jnp.asarray(target)
    # xlogy makes 0 * log 0 = 0, as torch.
    loss = jnp.exp(t) * (t - x) if log_target else jax.scipy.special.xlogy(t, t) - t * x
    if reduction == "batchmean":
        total = jnp.sum(loss)
        return total / x.shape[0] if x.ndim else total
    return reduce_loss(loss, reduction)


def soft_margin_loss(
    input: Array,
    target: Array,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Array:
    """Two-class logistic loss ``log(1 + exp(-y x))`` for ``y`` in {-1, 1} (torch's version).

    Example:
        >>> F.soft_margin_loss(jnp.zeros(2), jnp.array([1.0, -1.0]))  # log 2
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = jnp.asarray(input), jnp.asarray(target)
    return reduce_loss(jax.nn.softplus(-t * x), reduction)


def margin_ranking_loss(
    input1: Array,
    input2: Array,
    target: Array,
    margin: float = 0.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Array:
    """``max(0, -y (x1 - x2) + margin)`` (mirrors ``torch...margin_ranking_loss``).

    Example:
        >>> F.margin_ranking_loss(jnp.ones(2), jnp.zeros(2), jnp.ones(2), margin=0.5)  # 0.0
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x1, x2, t = jnp.asarray(input1), jnp.asarray(input2), jnp.asarray(target)
    if not x1.ndim == x2.ndim == t.ndim:
        raise RuntimeError(
            f"margin_ranking_loss: input1 {x1.shape}, input2 {x2.shape} and target {t.shape} "
            "must have the same number of dims"
        )
    return reduce_loss(hinge(-t * (x1 - x2) + margin), reduction)
