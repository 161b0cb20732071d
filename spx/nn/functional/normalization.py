"""Normalization layers' math: layer/RMS/batch/group/instance norm and ``normalize``.

Statistics are computed in at least float32 (bf16/fp16 inputs are upcast for the mean and
variance, as torch's CPU kernels accumulate in float) and the result is cast back to the input
dtype. Variances are two-pass (``mean((x - mean)^2)``), which XLA fuses into one loop.

**Running statistics.** torch's ``F.batch_norm(..., training=True)`` updates ``running_mean``
and ``running_var`` *in place*. jax arrays are immutable, so here:

* :func:`batch_norm` returns only the output (same signature and numbers as torch); the running
  statistics you pass are read in eval mode and left untouched in training mode.
* :func:`batch_norm_with_stats` returns ``BatchNormResult(output, running_mean, running_var)``
  with the updated statistics. A ``BatchNorm`` module calls it and stores the two new arrays in
  its buffers — inside a compiled step they are simply more outputs of the program.

See https://pytorch.org/docs/stable/nn.functional.html#normalization-functions
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from spx.nn.functional._utils import vector_norm

Array = jax.Array


def _stat_dtype(x: Array) -> jnp.dtype:
    # Accumulate low-precision inputs in float32, keep float64 if x64 is on.
    return jnp.promote_types(x.dtype, jnp.float32)


def _moments(x: Array, axes: tuple[int, ...]) -> tuple[Array, Array]:
    """Mean and biased variance over ``axes`` (kept as size-1 dims)."""
    mean = jnp.mean(x, axis=axes, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=axes, keepdims=True)
    return mean, var


def layer_norm(
    input: Array,
    normalized_shape: int | Sequence[int],
    weight: Array | None = None,
    bias: Array | None = None,
    eps: float = 1e-5,
) -> Array:
    """Normalize over the trailing ``normalized_shape`` dims (mirrors ``torch...layer_norm``).

    Args:
        input: ``(*, *normalized_shape)``.
        normalized_shape: the trailing shape to normalize over (int for one dim).
        weight: ``normalized_shape``-shaped scale, or None.
        bias: ``normalized_shape``-shaped shift, or None.
        eps: added to the biased variance.

    Example:
        >>> F.layer_norm(jnp.ones((4, 8)), (8,)).shape  # (4, 8)
    """
    x = jnp.asarray(input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or x.shape[x.ndim - k :] != shape or x.ndim < k:
        raise RuntimeError(
            f"layer_norm: given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(map(str, shape))}], but got input of size {list(x.shape)}"
        )
    xf = x.astype(_stat_dtype(x))
    mean, var = _moments(xf, tuple(range(x.ndim - k, x.ndim)))
    y = (xf - mean) * jax.lax.rsqrt(var + eps)
    if weight is not None:
        y = y * jnp.asarray(weight)
    if bias is not None:
        y = y + jnp.asarray(bias)
    return y.astype(x.dtype)


def rms_norm(
    input: Array,
    normalized_shape: int | Sequence[int],
    weight: Array | None = None,
    eps: float | None = None,
) -> Array:
    """Root-mean-square norm over trailing dims (mirrors ``torch.nn.functional.rms_norm``).

    ``y = x / sqrt(mean(x^2) + eps) * weight``.

    Args:
        input: ``(*, *normalized_shape)``.
        normalized_shape: the trailing shape to normalize over.
        weight: ``normalized_shape``-shaped scale, or None.
        eps: default ``None``: the eps of the dtype the norm computes in (float32 for float16
            and bfloat16 inputs), as in torch.

    Example:
        >>> F.rms_norm(jnp.ones((4, 8)), (8,)).shape  # (4, 8)
    """
    x = jnp.asarray(input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or x.ndim < k or x.shape[x.ndim - k :] != shape:
        raise RuntimeError(
            f"rms_norm: given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(map(str, shape))}], but got input of size {list(x.shape)}"
        )
    xf = x.astype(_stat_dtype(x))
    if eps is None:
        # torch's default is the eps of the dtype it computes in: float32 for a half input
        # (bfloat16's own eps, 2**-7, would swamp the mean square of small activations).
        eps = float(jnp.finfo(xf.dtype).eps)
    ms = jnp.mean(jnp.square(xf), axis=tuple(range(x.ndim - k, x.ndim)), keepdims=True)
    y = xf * jax.lax.rsqrt(ms + eps)
    if weight is not None:
        y = y * jnp.asarray(weight)
    return y.astype(x.dtype)


class BatchNormResult(NamedTuple):
    """What :func:`batch_norm_with_stats` returns.

    Attributes:
        output: the normalized input, same shape as the input.
        running_mean: the updated running mean (or the one passed in, or None).
        running_var: the updated running variance (or the one passed in, or None).
    """

    output: Array
    running_mean: Array | None
    running_var: Array | None


def _channel_shape(x: Array) -> tuple[int, ...]:
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def batch_norm_with_stats(
    input: Array,
    running_mean: Array | None,
    running_var: Array | None,
    weight: Array | None = None,
    bias: Array | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> BatchNormResult:
    """Batch norm that also returns the updated running statistics.

    Same arguments as :func:`batch_norm`. In training mode the output uses the batch's mean and
    biased variance, and (when running stats are given) they are updated as torch does:
    ``new = (1 - momentum) * old + momentum * batch_stat``, with the *unbiased* variance for
    ``running_var``. For torch's cumulative average (``momentum=None`` on the module) pass
    ``momentum = 1 / num_batches_tracked``. In eval mode the running stats are used and returned
    unchanged.

    Returns:
        ``BatchNormResult(output, running_mean, running_var)``.

    Example:
        >>> x = jnp.arange(12.0).reshape(4, 3)
        >>> out, rm, rv = F.batch_norm_with_stats(x, jnp.zeros(3), jnp.ones(3), training=True)
    """
    x = jnp.asarray(input)
    if x.ndim < 2:
        raise RuntimeError(f"batch_norm: expected input of shape (N, C, *), got {x.shape}")
    c = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):  # fmt: skip
        if t is not None and jnp.shape(t) != (c,):
            raise RuntimeError(
                f"batch_norm: {name} must have shape ({c},) for input {x.shape}, got {jnp.shape(t)}"
            )
    if (running_mean is None) != (running_var is None):
        raise ValueError("batch_norm: pass both running_mean and running_var, or neither")
    xf = x.astype(_stat_dtype(x))
    axes = (0, *range(2, x.ndim))
    cshape = _channel_shape(x)
    new_mean, new_var = running_mean, running_var
    if training:
        count = x.size // c
        if count == 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size {x.shape}"
            )
        mean, var = _moments(xf, axes)
        if running_mean is not None:
            rm, rv = jnp.asarray(running_mean), jnp.asarray(running_var)
            # Running stats are state, not part of the differentiated graph (torch updates
            # them under no_grad).
            batch_mean = jax.lax.stop_gradient(mean.reshape(c))
            unbiased = jax.lax.stop_gradient(var.reshape(c)) * (count / (count - 1))
            new_mean = ((1 - momentum) * rm + momentum * batch_mean).astype(rm.dtype)
            new_var = ((1 - momentum) * rv + momentum * unbiased).astype(rv.dtype)
    else:
        if running_mean is None:
            raise RuntimeError(
                "batch_norm: running_mean and running_var must be given when training=False "
                "(or pass training=True to normalize with the batch statistics)"
            )
        mean = jnp.asarray(running_mean).astype(xf.dtype).reshape(cshape)
        var = jnp.asarray(running_var).astype(xf.dtype).reshape(cshape)
    y = (xf - mean) * jax.lax.rsqrt(var + eps)
    if weight is not None:
        y = y * jnp.asarray(weight).reshape(cshape)
    if bias is not None:
        y = y + jnp.asarray(bias).reshape(cshape)
    return BatchNormResult(y.astype(x.dtype), new_mean, new_var)


def batch_norm(
    input: Array,
    running_mean: Array | None,
    running_var: Array | None,
    weight: Array | None = None,
    bias: Array | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Array:
    """Batch normalization over the channel dim 1 (mirrors ``torch...batch_norm``).

    Returns only the output, like torch. Unlike torch, training mode cannot update
    ``running_mean``/``running_var`` in place (arrays are immutable): use
    :func:`batch_norm_with_stats` to get the updated statistics.

    Args:
        input: ``(N, C)`` or ``(N, C, *)``.
        running_mean: ``(C,)`` or None (required when ``training=False``).
        running_var: ``(C,)`` or None.
        weight: ``(C,)`` scale or None.
        bias: ``(C,)`` shift or None.
        training: normalize with batch statistics (True) or the running ones (False).
        momentum: running-statistics momentum (only used by ``batch_norm_with_stats``).
        eps: added to the variance.

    Example:
        >>> F.batch_norm(jnp.ones((4, 3)), jnp.zeros(3), jnp.ones(3)).shape  # (4, 3)
    """
    return batch_norm_with_stats(
        input, running_mean, running_var, weight, bias, training, momentum, eps
    ).output


def instance_norm(
    input: Array,
    running_mean: Array | None = None,
    running_var: Array | None = None,
    weight: Array | None = None,
    bias: Array | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Array:
    """Normalize each (sample, channel) over its spatial dims (mirrors ``torch...instance_norm``).

    Args:
        input: ``(N, C, *spatial)``.
        running_mean, running_var: ``(C,)``; used when ``use_input_stats=False``. With
            ``use_input_stats=True``, ``spx.nn.functional.instance_norm`` updates Tensors
            given here in place, as torch does (arrays here are immutable: not updated).
        weight, bias: ``(C,)`` affine parameters or None.
        use_input_stats: normalize with each instance's own statistics.
        momentum: of that running-statistics update.
        eps: added to the variance.

    Example:
        >>> F.instance_norm(jnp.ones((2, 3, 5))).shape  # (2, 3, 5)
    """
    x = jnp.asarray(input)
    if x.ndim < 3:
        raise RuntimeError(f"instance_norm: expected (N, C, *spatial) input, got {x.shape}")
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    xf = x.astype(_stat_dtype(x))
    mean, var = _moments(xf, tuple(range(2, x.ndim)))
    y = (xf - mean) * jax.lax.rsqrt(var + eps)
    cshape = _channel_shape(x)
    if weight is not None:
        y = y * jnp.asarray(weight).reshape(cshape)
    if bias is not None:
        y = y + jnp.asarray(bias).reshape(cshape)
    return y.astype(x.dtype)


def group_norm(
    input: Array,
    num_groups: int,
    weight: Array | None = None,
    bias: Array | None = None,
    eps: float = 1e-5,
) -> Array:
    """Normalize over channel groups (mirrors ``torch.nn.functional.group_norm``).

    Args:
        input: ``(N, C, *)`` with ``C`` divisible by ``num_groups``.
        num_groups: number of channel groups; statistics are per (sample, group).
        weight: ``(C,)`` per-channel scale or None.
        bias: ``(C,)`` per-channel shift or None.
        eps: added to the variance.

    Example:
        >>> F.group_norm(jnp.ones((2, 6, 4, 4)), 3).shape  # (2, 6, 4, 4)
    """
    x = jnp.asarray(input)
    if x.ndim < 2 or num_groups < 1 or x.shape[1] % num_groups:
        raise RuntimeError(
            "group_norm: expected number of channels in input to be divisible by num_groups, "
            f"but got input of shape {list(x.shape)} and num_groups={num_groups}"
        )
    n = x.shape[0]
    xf = x.astype(_stat_dtype(x)).reshape(n, num_groups, -1)
    mean, var = _moments(xf, (2,))
    y = ((xf - mean) * jax.lax.rsqrt(var + eps)).reshape(x.shape)
    cshape = _channel_shape(x)
    if weight is not None:
        y = y * jnp.asarray(weight).reshape(cshape)
    if bias is not None:
        y = y + jnp.asarray(bias).reshape(cshape)
    return y.astype(x.dtype)


def normalize(
    input: Array, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: None = None
) -> Array:
    """``x / max(||x||_p, eps)`` along ``dim`` (mirrors ``torch.nn.functional.normalize``).

    Args:
        input: any shape.
        p: the norm's exponent (``float('inf')`` for the max norm).
        dim: the dimension to normalize.
        eps: lower bound on the norm, avoiding division by zero.
        out: must be None (no out= arrays in jax).

    Example:
        >>> F.normalize(jnp.array([[3.0, 4.0]]), dim=1)  # [[0.6, 0.8]]
    """
    if out is not None:
        raise TypeError("normalize: out= is not supported (jax arrays are immutable)")
    x = jnp.asarray(input)
    norm = vector_norm(x, p, dim)
    return x / jnp.maximum(norm, eps)


def local_response_norm(
    input: Array, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Array:
    """Normalize by the activity of neighbouring channels (mirrors ``torch...local_response_norm``).

    ``y = x / (k + alpha * mean_window(x^2)) ** beta``, the mean over ``size`` channels centred
    on each (zero-padded by ``size // 2`` before and ``(size - 1) // 2`` after, the padding
    counted in the mean), as torch computes it.

    Args:
        input: ``(N, C, *)`` with at least one spatial dim.
        size: number of neighbouring channels.
        alpha, beta, k: the scale, exponent and additive constant.

    Example:
        >>> F.local_response_norm(jnp.ones((1, 4, 3)), 2).shape  # (1, 4, 3)
    """
    x = jnp.asarray(input)
    if x.ndim < 3:
        raise ValueError(
            f"local_response_norm: expected 3D or higher dimensionality input (got {x.ndim} "
            "dimensions)"
        )
    if x.size == 0:
        return x
    sq = jnp.square(x)
    pads = [(0, 0)] * x.ndim
    pads[1] = (size // 2, (size - 1) // 2)
    window = [1] * x.ndim
    window[1] = size
    summed = jax.lax.reduce_window(
        jnp.pad(sq, pads), np.zeros((), x.dtype), jax.lax.add, window, (1,) * x.ndim, "VALID"
    )
    div = (summed / size * alpha + k) ** beta
    return x / div
