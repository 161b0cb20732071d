"""Classification losses over a class dimension: ``cross_entropy``, ``nll_loss`` and
``linear_cross_entropy``, with torch's ``weight``, ``ignore_index``, ``reduction``,
``label_smoothing`` and class-probability targets, for ``(C)``, ``(N, C)`` and K-dimensional
``(N, C, d1, ..., dK)`` inputs.

Cross entropy never builds a one-hot matrix nor a full ``log_softmax`` array in the forward pass:
with ``lse = logsumexp(x)`` over classes, ``-log p[t] = lse - x[t]`` (one gather), and the
smoothing term ``sum_c w_c log p_c = sum_c w_c x_c - lse * sum_c w_c`` is one more reduction.
Backward is ``softmax(x)`` minus a scatter, which XLA fuses; this matters for big vocabularies.

Invalid class indices (outside ``[0, C)`` and not ``ignore_index``) raise IndexError as in torch
when the targets are concrete; inside ``jit`` they cannot be checked and yield NaN instead.

See https://pytorch.org/docs/stable/generated/torch.nn.functional.cross_entropy.html
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from spx.nn.functional._utils import is_concrete, legacy_reduction

Array = jax.Array


def _class_dim(x: Array, name: str) -> int:
    if x.ndim == 0:
        raise ValueError(f"{name}: input must have a class dim, got a 0-D input")
    return 0 if x.ndim == 1 else 1


def _check_index_target(x: Array, target: Array, cdim: int, ignore_index: int, name: str) -> None:
    if not jnp.issubdtype(target.dtype, jnp.integer):
        raise TypeError(
            f"{name}: class-index targets must be integers, got dtype {target.dtype}; "
            f"class-probability targets must be floating and shaped like the input {x.shape}"
        )
    expected = x.shape[:cdim] + x.shape[cdim + 1 :]
    if target.shape != expected:
        if cdim == 1 and target.ndim >= 1 and target.shape[0] != x.shape[0]:
            raise ValueError(
                f"{name}: expected input batch_size ({x.shape[0]}) to match target batch_size "
                f"({target.shape[0]})"
            )
        raise RuntimeError(
            f"{name}: input {x.shape} (class dim {cdim}) needs a target of shape {expected}, "
            f"got {target.shape}"
        )
    if is_concrete(target) and target.size:
        # numpy, not jnp: inside a jit trace even ops on a concrete array become tracers.
        t = np.asarray(target)
        n_classes = x.shape[cdim]
        bad = (t != ignore_index) & ((t < 0) | (t >= n_classes))
        if bad.any():
            value = int(t[bad][0])
            raise IndexError(
                f"{name}: target {value} is out of bounds for {n_classes} classes "
                f"(and is not ignore_index={ignore_index})"
            )


def _check_weight(weight: Array | None, n_classes: int, name: str) -> Array | None:
    if weight is None:
        return None
    w = jnp.asarray(weight)
    if w.shape != (n_classes,):
        raise RuntimeError(
            f"{name}: weight must be a 1-D array of one weight per class ({n_classes},), "
            f"got shape {w.shape}"
        )
    return w


def _gather(x: Array, index: Array, cdim: int) -> Array:
    """``x[..., index, ...]`` along ``cdim``; NaN for out-of-range indices."""
    picked = jnp.take_along_axis(
        x, jnp.expand_dims(index, cdim), axis=cdim, mode="fill", wrap_negative_indices=False
    )
    return jnp.squeeze(picked, cdim)


def _nll_from_picked(
    picked_logp: Array,
    target: Array,
    w: Array | None,
    ignore_index: int,
    reduction: str,
) -> tuple[Array, Array]:
    """Weighted, masked ``-log p[t]`` reduced like torch's nll_loss; also the per-item weights."""
    valid = target != ignore_index
    if w is None:
        item_w = valid.astype(picked_logp.dtype)
    else:
        safe = jnp.where(valid, target, 0)
        item_w = jnp.where(valid, jnp.take(w, safe, mode="fill"), 0).astype(picked_logp.dtype)
    # where (not multiply) so an ignored item's -inf/NaN log-prob cannot leak into the sum.
    loss = jnp.where(valid, -picked_logp * item_w, 0)
    if reduction == "none":
        return loss, item_w
    if reduction == "sum":
        return jnp.sum(loss), item_w
    # torch divides by the summed weights of the non-ignored targets (NaN if all are ignored).
    return jnp.sum(loss) / jnp.sum(item_w), item_w


def nll_loss(
    input: Array,
    target: Array,
    weight: Array | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Array:
    """Negative log-likelihood of log-probabilities (mirrors ``torch.nn.functional.nll_loss``).

    Args:
        input: log-probabilities ``(C)``, ``(N, C)`` or ``(N, C, d1, ..., dK)``.
        target: class indices ``()``, ``(N)`` or ``(N, d1, ..., dK)``, integers in ``[0, C)``.
        weight: ``(C,)`` per-class weights, or None.
        size_average, reduce: torch's deprecated flags (override ``reduction``, with a warning).
        ignore_index: targets equal to this contribute nothing (not even to the mean divisor).
        reduction: ``"none"`` | ``"mean"`` (divided by the summed target weights) | ``"sum"``.

    Example:
        >>> F.nll_loss(jax.nn.log_softmax(jnp.zeros((2, 3))), jnp.array([0, 2]))  # log 3
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = jnp.asarray(input), jnp.asarray(target)
    cdim = _class_dim(x, "nll_loss")
    _check_index_target(x, t, cdim, ignore_index, "nll_loss")
    w = _check_weight(weight, x.shape[cdim], "nll_loss")
    safe = jnp.where(t != ignore_index, t, 0)
    return _nll_from_picked(_gather(x, safe, cdim), t, w, ignore_index, reduction)[0]


def _prob_target_loss(
    x: Array, lse: Array, target: Array, w: Array | None, cdim: int, ls: float, reduction: str
) -> Array:
    n_classes = x.shape[cdim]
    t = target.astype(x.dtype)
    if ls > 0:
        t = t * (1 - ls) + ls / n_classes
    if w is not None:
        t = t * w.reshape((n_classes,) + (1,) * (x.ndim - cdim - 1))
    # -(sum_c t_c log p_c) = lse * sum_c t_c - sum_c t_c x_c
    loss = lse * jnp.sum(t, axis=cdim) - jnp.sum(t * x, axis=cdim)
    if reduction == "none":
        return loss
    total = jnp.sum(loss)
    # torch's mean over probability targets divides by the number of items, never by weights.
    return total / loss.size if reduction == "mean" else total


def cross_entropy(
    input: Array,
    target: Array,
    weight: Array | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Array:
    """Cross entropy between logits and targets (mirrors ``torch.nn.functional.cross_entropy``).

    Args:
        input: unnormalized logits ``(C)``, ``(N, C)`` or ``(N, C, d1, ..., dK)``.
        target: class indices (integer, ``()``/``(N)``/``(N, d1, ..., dK)``) or class
            probabilities (floating, same shape as ``input``).
        weight: ``(C,)`` per-class rescaling, or None.
        size_average, reduce: torch's deprecated flags (override ``reduction``, with a warning).
        ignore_index: index targets equal to this are skipped (no loss, no gradient, not in the
            mean's divisor). Not used with probability targets.
        reduction: ``"none"`` | ``"mean"`` | ``"sum"``. With index targets ``"mean"`` divides by
            the summed weights of the non-ignored targets; with probability targets by the
            number of items.
        label_smoothing: in ``[0, 1]``; mixes the target with the uniform distribution.

    Returns:
        A scalar, or the per-item loss shaped like the target (``"none"``).

    Example:
        >>> logits, labels = jnp.zeros((4, 10)), jnp.array([1, 2, 3, -100])
        >>> F.cross_entropy(logits, labels, label_smoothing=0.1)  # log 10
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(
            f"cross_entropy: label_smoothing must be between 0.0 and 1.0, got {label_smoothing}"
        )
    x, t = jnp.asarray(input), jnp.asarray(target)
    cdim = _class_dim(x, "cross_entropy")
    n_classes = x.shape[cdim]
    w = _check_weight(weight, n_classes, "cross_entropy")
    out_dtype = x.dtype
    # Low-precision logits are reduced in float32 (converts fuse into the reduction).
    x = x.astype(jnp.promote_types(x.dtype, jnp.float32))
    lse = jax.nn.logsumexp(x, axis=cdim)

    if jnp.issubdtype(t.dtype, jnp.floating):
        if t.shape != x.shape:
            raise RuntimeError(
                f"cross_entropy: probability targets must have the input's shape {x.shape}, "
                f"got {t.shape} (class-index targets must be integers)"
            )
        return _prob_target_loss(x, lse, t, w, cdim, label_smoothing, reduction).astype(out_dtype)

    _check_index_target(x, t, cdim, ignore_index, "cross_entropy")
    valid = t != ignore_index
    safe = jnp.where(valid, t, 0)
    picked_logp = _gather(x, safe, cdim) - lse
    nll, item_w = _nll_from_picked(picked_logp, t, w, ignore_index, reduction)
    if label_smoothing == 0:
        return nll.astype(out_dtype)

    # torch's cross_entropy_loss_label_smoothing: (1 - ls) * nll + ls / C * smooth, where
    # smooth = -sum_c w_c log p_c over non-ignored items, normalized like the nll term.
    bshape = (n_classes,) + (1,) * (x.ndim - cdim - 1)
    if w is None:
        smooth = n_classes * lse - jnp.sum(x, axis=cdim)
    else:
        wb = w.reshape(bshape).astype(x.dtype)
        smooth = lse * jnp.sum(w).astype(x.dtype) - jnp.sum(wb * x, axis=cdim)
    smooth = jnp.where(valid, smooth, 0)
    if reduction == "sum":
        smooth = jnp.sum(smooth)
    elif reduction == "mean":
        smooth = jnp.sum(smooth) / jnp.sum(item_w)
    loss = (1 - label_smoothing) * nll + (label_smoothing / n_classes) * smooth
    return loss.astype(out_dtype)


def linear_cross_entropy(
    input: Array,
    linear_weight: Array,
    target: Array,
    *,
    linear_bias: Array | None = None,
    weight: Array | None = None,
    reduction: str = "mean",
    ignore_index: int | None = None,
    label_smoothing: float = 0.0,
    options: object | None = None,
) -> Array:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target)`` in one call.

    Mirrors ``torch.nn.functional.linear_cross_entropy``'s reference path (``options=None``);
    ``options`` (torch's chunking strategy) is accepted and ignored — XLA fuses the projection
    and the loss itself.

    Args:
        input: ``(in_features)`` or ``(N, in_features)``.
        linear_weight: ``(C, in_features)`` or ``(C, d1, ..., dK, in_features)``.
        target: as for :func:`cross_entropy`.
        linear_bias: ``(C,)`` or ``(C, d1, ..., dK)``, or None.
        weight, reduction, label_smoothing: as for :func:`cross_entropy`.
        ignore_index: None means -100 (torch's default).
        options: ignored.

    Example:
        >>> F.linear_cross_entropy(jnp.ones((4, 8)), jnp.zeros((10, 8)), jnp.array([0, 1, 2, 3]))
    """
    x, lw = jnp.asarray(input), jnp.asarray(linear_weight)
    if x.ndim not in (1, 2) or x.shape[-1] != lw.shape[-1]:
        raise RuntimeError(
            f"linear_cross_entropy: input must be (in_features,) or (N, in_features) with "
            f"in_features={lw.shape[-1]} (linear_weight {lw.shape}), got {x.shape}"
        )
    logits = jnp.tensordot(x, lw, axes=((x.ndim - 1,), (lw.ndim - 1,)))
    if linear_bias is not None:
        logits = logits + jnp.asarray(linear_bias)
    return cross_entropy(
        logits,
        target,
        weight=weight,
        ignore_index=-100 if ignore_index is None else ignore_index,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )
