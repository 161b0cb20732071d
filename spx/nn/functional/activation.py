"""Elementwise activations and softmax, mirroring ``torch.nn.functional``.

Every function takes and returns a ``jax.Array`` of the same shape (``glu`` halves one dim).
``inplace=`` is accepted for torch compatibility: jax arrays are immutable, so the result here
is always a new array; ``spx.nn.functional`` writes it into a Tensor input, as torch does.

Gradients follow torch's backward formulas at the kinks (e.g. ``relu'(0) = 0``,
``hardtanh'`` is 0 at the clip bounds, ``leaky_relu'(0) = negative_slope``), which is why some
functions use ``jnp.where`` instead of ``jnp.maximum``/``jnp.clip`` (those split the gradient
at ties).

See https://pytorch.org/docs/stable/nn.functional.html#non-linear-activation-functions
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from spx import _user_code
from spx._tensor.methods.math import _log_softmax_of, _softmax_of
from spx.nn.functional._utils import resolve_key

Array = jax.Array

# torch's SELU constants (torch/csrc/.../Activation.cpp), for bitwise-equal forward values.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def relu(input: Array, inplace: bool = False) -> Array:
    """``max(0, x)`` (mirrors ``torch.nn.functional.relu``; gradient 0 at x = 0 like torch).

    Args:
        input: any shape.
        inplace: writes into a Tensor input (``spx.nn.functional``); a jax array is
            immutable: a new one is returned.

    Example:
        >>> F.relu(jnp.array([-1.0, 2.0]))  # [0., 2.]
    """
    return jax.nn.relu(jnp.asarray(input))


def relu6(input: Array, inplace: bool = False) -> Array:
    """``min(max(0, x), 6)`` (mirrors ``torch.nn.functional.relu6``).

    Example:
        >>> F.relu6(jnp.array([-1.0, 7.0]))  # [0., 6.]
    """
    return hardtanh(input, 0.0, 6.0)


def leaky_relu(input: Array, negative_slope: float = 0.01, inplace: bool = False) -> Array:
    """``x if x > 0 else negative_slope * x`` (mirrors ``torch.nn.functional.leaky_relu``).

    Args:
        input: any shape.
        negative_slope: slope for negative inputs.
        inplace: writes into a Tensor input (``spx.nn.functional``); a jax array is
            immutable: a new one is returned.

    Example:
        >>> F.leaky_relu(jnp.array([-1.0, 2.0]), 0.1)  # [-0.1, 2.]
    """
    x = jnp.asarray(input)
    return jnp.where(x > 0, x, x * negative_slope)


def check_rrelu_bounds(lower: float, upper: float, name: str = "rrelu") -> None:
    """torch's check that the slope range is not empty (Python numbers only)."""
    if isinstance(lower, int | float) and isinstance(upper, int | float) and lower > upper:
        raise RuntimeError(
            f"{name}: lower bound ({lower}) should be less than or equal to the upper bound "
            f"({upper}); swap them"
        )


def rrelu(
    input: Array,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
    *,
    key: jax.Array | None = None,
) -> Array:
    """Randomized leaky ReLU (mirrors ``torch.nn.functional.rrelu``).

    ``x`` if ``x > 0`` else ``a * x``. While training, ``a`` is drawn per element from
    ``U(lower, upper)`` (the gradient of a non-positive element is its drawn ``a``, as torch's);
    otherwise ``a = (lower + upper) / 2``. Note torch's default here is ``training=False``.

    Args:
        input: any shape, floating point.
        lower: lower bound of the slope distribution.
        upper: upper bound (``lower <= upper``, else RuntimeError).
        training: draw random slopes (True) or use their mean (False).
        inplace: writes into a Tensor input (``spx.nn.functional``); a jax array is
            immutable: a new one is returned.
        key: jax PRNG key for the slopes; default: the next key of ``spx.manual_seed``'s
            generator (drawn only while training).

    Example:
        >>> F.rrelu(jnp.array([-3.0, 2.0]), 0.1, 0.3)  # [-0.6, 2.]
    """
    check_rrelu_bounds(lower, upper)
    x = jnp.asarray(input)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise NotImplementedError(
            f"rrelu: input must be floating point, got {x.dtype}; convert it first, e.g. x.float()"
        )
    if not training:
        return leaky_relu(x, (lower + upper) / 2)
    # Drawn in float32 at least: bfloat16's few mantissa bits would bunch up the slopes.
    draw_dtype = jnp.promote_types(x.dtype, jnp.float32)
    slope = jax.random.uniform(resolve_key(key), x.shape, draw_dtype, lower, upper)
    return jnp.where(x > 0, x, x * slope.astype(x.dtype))


def elu(input: Array, alpha: float = 1.0, inplace: bool = False) -> Array:
    """``x if x > 0 else alpha * (exp(x) - 1)`` (mirrors ``torch.nn.functional.elu``).

    Example:
        >>> F.elu(jnp.array([-1.0, 2.0]))
    """
    x = jnp.asarray(input)
    # where, not minimum: minimum splits the gradient at x = 0 (torch gives alpha there).
    return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0.0, x)))


def selu(input: Array, inplace: bool = False) -> Array:
    """``scale * elu(x, alpha)`` with SELU's fixed constants (mirrors ``torch...selu``).

    Example:
        >>> F.selu(jnp.array([-1.0, 2.0]))
    """
    return _SELU_SCALE * elu(input, _SELU_ALPHA)


def celu(input: Array, alpha: float = 1.0, inplace: bool = False) -> Array:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` (mirrors ``torch...celu``).

    Example:
        >>> F.celu(jnp.array([-1.0, 2.0]), alpha=2.0)
    """
    x = jnp.asarray(input)
    return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0.0, x) / alpha))


def gelu(input: Array, approximate: str = "none") -> Array:
    """Gaussian error linear unit (mirrors ``torch.nn.functional.gelu``).

    Args:
        input: any shape.
        approximate: ``"none"`` for the exact ``x * Phi(x)``, ``"tanh"`` for
            ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.

    Example:
        >>> F.gelu(jnp.array([1.0]), approximate="tanh")
    """
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    x = jnp.asarray(input)
    if approximate == "none":
        return jax.nn.gelu(x, approximate=False)
    # 0.5 (1 + tanh(u)) == sigmoid(2u); the sigmoid form's gradient is accurate in the tails
    # (jax.nn.gelu's tanh form loses ~3 digits there; torch's hand-written backward ~1).
    u = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)
    return x * jax.nn.sigmoid(2.0 * u)


def silu(input: Array, inplace: bool = False) -> Array:
    """``x * sigmoid(x)``, a.k.a. swish (mirrors ``torch.nn.functional.silu``).

    Example:
        >>> F.silu(jnp.array([1.0]))
    """
    return jax.nn.silu(jnp.asarray(input))


def mish(input: Array, inplace: bool = False) -> Array:
    """``x * tanh(softplus(x))`` (mirrors ``torch.nn.functional.mish``).

    Example:
        >>> F.mish(jnp.array([1.0]))
    """
    x = jnp.asarray(input)
    return x * jnp.tanh(jax.nn.softplus(x))


def sigmoid(input: Array) -> Array:
    """``1 / (1 + exp(-x))`` (mirrors ``torch.sigmoid`` / ``F.sigmoid``).

    Example:
        >>> F.sigmoid(jnp.array([0.0]))  # [0.5]
    """
    return jax.nn.sigmoid(jnp.asarray(input))


def tanh(input: Array) -> Array:
    """Hyperbolic tangent (mirrors ``torch.tanh`` / ``F.tanh``).

    Example:
        >>> F.tanh(jnp.array([0.0]))  # [0.]
    """
    return jnp.tanh(jnp.asarray(input))


def hardtanh(
    input: Array, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Array:
    """Clip to ``[min_val, max_val]`` (mirrors ``torch.nn.functional.hardtanh``).

    Gradient is 1 strictly inside the interval and 0 at or beyond the bounds, as in torch.

    Example:
        >>> F.hardtanh(jnp.array([-3.0, 0.5, 3.0]))  # [-1., 0.5, 1.]
    """
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
    x = jnp.asarray(input)
    inside = (x > min_val) & (x < max_val) | jnp.isnan(x)  # NaN stays NaN, as in torch
    return jnp.where(inside, x, jnp.where(x <= min_val, min_val, max_val).astype(x.dtype))


def hardsigmoid(input: Array, inplace: bool = False) -> Array:
    """``relu6(x + 3) / 6`` (mirrors ``torch.nn.functional.hardsigmoid``).

    Example:
        >>> F.hardsigmoid(jnp.array([0.0]))  # [0.5]
    """
    return hardtanh(jnp.asarray(input) + 3.0, 0.0, 6.0) / 6.0


def hardswish(input: Array, inplace: bool = False) -> Array:
    """``x * relu6(x + 3) / 6`` (mirrors ``torch.nn.functional.hardswish``).

    Example:
        >>> F.hardswish(jnp.array([1.0]))
    """
    x = jnp.asarray(input)
    # Piecewise so the gradient is torch's hardswish_backward: 0 at or below -3, x/3 + 1/2
    # strictly inside, 1 at or above 3.
    return jnp.where(x <= -3.0, 0.0, jnp.where(x >= 3.0, x, x * (x + 3.0) / 6.0)).astype(x.dtype)


def softplus(input: Array, beta: float = 1.0, threshold: float = 20.0) -> Array:
    """``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold`` (mirrors torch).

    Args:
        input: any shape.
        beta: sharpness.
        threshold: above ``beta * x > threshold`` the function returns ``x`` (as torch does, for
            stability).

    Example:
        >>> F.softplus(jnp.array([0.0]))  # [log 2]
    """
    x = jnp.asarray(input)
    bx = x * beta
    # Clamp the argument of the unused branch so its gradient stays finite (the where-NaN trap).
    soft = jnp.log1p(jnp.exp(jnp.where(bx > threshold, 0.0, bx))) / beta
    return jnp.where(bx > threshold, x, soft)


def softsign(input: Array) -> Array:
    """``x / (1 + |x|)`` (mirrors ``torch.nn.functional.softsign``).

    Example:
        >>> F.softsign(jnp.array([1.0]))  # [0.5]
    """
    x = jnp.asarray(input)
    return x / (1 + jnp.abs(x))


def logsigmoid(input: Array) -> Array:
    """``log(sigmoid(x))`` computed stably (mirrors ``torch.nn.functional.logsigmoid``).

    Example:
        >>> F.logsigmoid(jnp.array([0.0]))  # [-log 2]
    """
    return jax.nn.log_sigmoid(jnp.asarray(input))


def tanhshrink(input: Array) -> Array:
    """``x - tanh(x)`` (mirrors ``torch.nn.functional.tanhshrink``).

    Example:
        >>> F.tanhshrink(jnp.array([0.0]))  # [0.]
    """
    x = jnp.asarray(input)
    return x - jnp.tanh(x)


def softshrink(input: Array, lambd: float = 0.5) -> Array:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0 (torch's).

    Args:
        input: any shape.
        lambd: the threshold (>= 0).

    Example:
        >>> F.softshrink(jnp.array([-1.0, 0.2, 1.0]))  # [-0.5, 0., 0.5]
    """
    if lambd < 0:
        raise ValueError(f"softshrink: lambd must be >= 0, got {lambd}")
    x = jnp.asarray(input)
    kept = jnp.where(x < -lambd, x + lambd, jnp.where(jnp.isnan(x), x, 0.0))  # NaN stays NaN
    return jnp.where(x > lambd, x - lambd, kept).astype(x.dtype)


def hardshrink(input: Array, lambd: float = 0.5) -> Array:
    """``x`` where ``|x| > lambd``, else 0 (mirrors ``torch.nn.functional.hardshrink``).

    Example:
        >>> F.hardshrink(jnp.array([-1.0, 0.2]))  # [-1., 0.]
    """
    x = jnp.asarray(input)
    return jnp.where((jnp.abs(x) > lambd) | jnp.isnan(x), x, 0.0).astype(x.dtype)


def threshold(input: Array, threshold: float, value: float, inplace: bool = False) -> Array:
    """``x if x > threshold else value`` (mirrors ``torch.nn.functional.threshold``).

    Args:
        input: any shape.
        threshold: values at or below it are replaced.
        value: the replacement.
        inplace: writes into a Tensor input (``spx.nn.functional``); a jax array is
            immutable: a new one is returned.

    Example:
        >>> F.threshold(jnp.array([0.1, 2.0]), 1.0, -1.0)  # [-1., 2.]
    """
    x = jnp.asarray(input)
    return jnp.where(x <= threshold, value, x).astype(x.dtype)  # NaN is kept, as in torch


def prelu(input: Array, weight: Array) -> Array:
    """``max(0, x) + weight * min(0, x)``, one slope per channel (mirrors ``torch...prelu``).

    Args:
        input: ``(N, C, *)``, ``(C,)``-free 1-D or 0-D input (channel dim is 1 when ndim >= 2).
        weight: ``(1,)`` (shared slope) or ``(C,)``.

    Example:
        >>> F.prelu(jnp.ones((2, 3, 4)), jnp.full((3,), 0.25))
    """
    x, w = jnp.asarray(input), jnp.asarray(weight)
    if w.ndim > 1:
        raise RuntimeError(f"prelu: weight must be 0-D or 1-D, got shape {w.shape}")
    channels = x.shape[1] if x.ndim >= 2 else 1
    if w.size not in (1, channels):
        raise RuntimeError(
            f"prelu: weight has {w.size} slopes but the input has {channels} channels "
            f"(input shape {x.shape}); pass 1 slope or one per channel"
        )
    # One slope per channel broadcasts over dim 1; a single slope is a scalar.
    w = w.reshape((channels,) + (1,) * (x.ndim - 2)) if w.size > 1 else w.reshape(())
    return jnp.where(x > 0, x, w * x)


def glu(input: Array, dim: int = -1) -> Array:
    """Gated linear unit: split ``dim`` in halves ``a, b`` and return ``a * sigmoid(b)``.

    Mirrors ``torch.nn.functional.glu``.

    Args:
        input: any shape whose size along ``dim`` is even.
        dim: the dimension to split.

    Example:
        >>> F.glu(jnp.ones((2, 4))).shape  # (2, 2)
    """
    x = jnp.asarray(input)
    if x.ndim == 0:
        raise RuntimeError("glu does not support 0-D (scalar) inputs")
    if x.shape[dim] % 2:
        raise RuntimeError(
            f"glu: halving dimension must be even, but dimension {dim} has size {x.shape[dim]}"
        )
    a, b = jnp.split(x, 2, axis=dim)
    return a * jax.nn.sigmoid(b)


def _softmax_dim(name: str, ndim: int, dim: int | None) -> int:
    # torch's deprecated implicit choice (_get_softmax_dim): kept, with torch's warning, so a
    # port behaves identically; pass dim explicitly to silence it.
    if dim is not None:
        return dim
    _user_code.warn(
        f"Implicit dimension choice for {name} has been deprecated. "
        "Change the call to include dim=X as an argument.",
        UserWarning,
    )
    return 0 if ndim in (0, 1, 3) else 1


def _cast(x: Array, dtype: jnp.dtype | None) -> Array:
    # torch casts the input *before* the op so the computation runs in ``dtype``.
    if dtype is not None:
        return x.astype(dtype)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        raise TypeError(
            f"softmax needs a floating input, got dtype {x.dtype}; cast it or pass dtype="
        )
    return x


def softmax(
    input: Array, dim: int | None = None, _stacklevel: int = 3, dtype: jnp.dtype | None = None
) -> Array:
    """Softmax along ``dim`` (mirrors ``torch.nn.functional.softmax``).

    Args:
        input: any shape.
        dim: the dimension that sums to 1. ``None`` reproduces torch's deprecated implicit
            choice (dim 0 for 0-D, 1-D and 3-D inputs, else 1) with torch's warning.
        _stacklevel: accepted for signature compatibility, unused.
        dtype: if given, the input is cast to it before the softmax (as in torch).

    Example:
        >>> F.softmax(jnp.zeros((2, 4)), dim=-1)  # all 0.25
    """
    x = jnp.asarray(input)
    d = _softmax_dim("softmax", x.ndim, dim)
    x = _cast(x, dtype)
    if x.ndim == 0:
        return jnp.ones_like(x)
    return _softmax_of(x, axis=d)


def log_softmax(
    input: Array, dim: int | None = None, _stacklevel: int = 3, dtype: jnp.dtype | None = None
) -> Array:
    """Log of the softmax along ``dim``, computed stably (mirrors ``torch...log_softmax``).

    Args:
        input: any shape.
        dim: as in :func:`softmax` (``None`` = torch's implicit choice, with a warning).
        _stacklevel: unused.
        dtype: if given, the input is cast to it first.

    Example:
        >>> F.log_softmax(jnp.zeros((2, 4)), dim=1)  # all log(0.25)
    """
    x = jnp.asarray(input)
    d = _softmax_dim("log_softmax", x.ndim, dim)
    x = _cast(x, dtype)
    if x.ndim == 0:
        return jnp.zeros_like(x)
    return _log_softmax_of(x, axis=d)


def softmin(
    input: Array, dim: int | None = None, _stacklevel: int = 3, dtype: jnp.dtype | None = None
) -> Array:
    """``softmax(-x)`` along ``dim`` (mirrors ``torch.nn.functional.softmin``).

    Example:
        >>> F.softmin(jnp.array([0.0, 1.0]), dim=0)  # [0.73, 0.27]
    """
    x = jnp.asarray(input)
    d = _softmax_dim("softmin", x.ndim, dim)
    return softmax(-_cast(x, dtype), dim=d)


def gumbel_softmax(
    logits: Array,
    tau: float = 1.0,
    hard: bool = False,
    eps: float = 1e-10,
    dim: int = -1,
    *,
    key: jax.Array | None = None,
) -> Array:
    """Sample from the Gumbel-softmax distribution (mirrors ``torch...gumbel_softmax``).

    Args:
        logits: ``(*, num_features)`` unnormalized log-probabilities.
        tau: temperature.
        hard: return one-hot samples whose gradient is the soft sample's (straight-through).
        eps: unused (kept for signature compatibility, as in torch).
        dim: the class dimension.
        key: jax PRNG key; defaults to the next key of ``spx.manual_seed``'s generator.

    Example:
        >>> F.gumbel_softmax(jnp.zeros((2, 5)), hard=True, key=jax.random.key(0)).sum(-1)
    """
    x = jnp.asarray(logits)
    gumbels = jax.random.gumbel(resolve_key(key), x.shape, x.dtype)
    y_soft = jax.nn.softmax((x + gumbels) / tau, axis=dim)
    if not hard:
        return y_soft
    index = jnp.argmax(y_soft, axis=dim, keepdims=True)
    positions = jax.lax.broadcasted_iota(index.dtype, x.shape, dim % x.ndim)
    y_hard = (positions == index).astype(x.dtype)
    return y_hard - jax.lax.stop_gradient(y_soft) + y_soft
