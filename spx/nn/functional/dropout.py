"""Dropout: elementwise, channel-wise (1d/2d/3d), alpha and feature-alpha dropout.

Signatures and defaults are torch's — note ``training=True`` by default in the functional
form, as in torch (the Dropout *module* passes its own ``self.training``). Kept elements are
scaled by ``1 / (1 - p)`` so the expectation is unchanged; ``p = 1`` returns zeros and ``p = 0``
or ``training=False`` returns the input itself.

Randomness: pass ``key=`` (a jax PRNG key) for an explicit, reproducible mask; without it the
mask draws from the calling rank's generator seeded by ``spx.manual_seed`` (the same key gives
the same mask). ``inplace=True`` writes into a Tensor input (``spx.nn.functional``); a jax
array is immutable: a new one is returned.

See https://pytorch.org/docs/stable/generated/torch.nn.functional.dropout.html
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from spx import _user_code
from spx.nn.functional._utils import resolve_key

Array = jax.Array


def _check_p(p: float) -> None:
    # Only Python numbers can be checked; a traced p (rare) is taken as valid.
    if isinstance(p, int | float) and not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout(x: Array, p: float, mask_shape: tuple[int, ...], key: jax.Array | None) -> Array:
    if p == 1.0:
        # torch multiplies by a zero mask; avoid the 1 / (1 - p) division by zero.
        return jnp.zeros_like(x)
    keep = jax.random.bernoulli(resolve_key(key), 1.0 - p, mask_shape)
    # where + one multiply: XLA fuses mask generation, select and scale into one loop.
    return jnp.where(keep, x * jnp.asarray(1.0 / (1.0 - p), x.dtype), jnp.zeros((), x.dtype))


def dropout(
    input: Array,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    key: jax.Array | None = None,
) -> Array:
    """Zero each element with probability ``p``, scale the rest by ``1/(1-p)``.

    Mirrors ``torch.nn.functional.dropout``.

    Args:
        input: any shape.
        p: drop probability in ``[0, 1]`` (ValueError otherwise).
        training: apply dropout (default True, like torch); False returns ``input``.
        inplace: writes into a Tensor input (``spx.nn.functional``); a jax array is
            immutable: a new one is returned.
        key: jax PRNG key for the mask; default: the next key of ``spx.manual_seed``'s
            generator.

    Example:
        >>> y = F.dropout(jnp.ones((4, 4)), p=0.5, key=jax.random.key(0))  # 0s and 2s
    """
    _check_p(p)
    x = jnp.asarray(input)
    if not training or p == 0.0:
        return x
    return _dropout(x, p, x.shape, key)


def _feature_dropout(
    x: Array, p: float, training: bool, key: jax.Array | None, unbatched: bool
) -> Array:
    _check_p(p)
    if not training or p == 0.0:
        return x
    if unbatched:
        x = x[None]
    # One draw per (sample, channel), broadcast over the spatial dims.
    mask_shape = x.shape[:2] + (1,) * (x.ndim - 2)
    y = _dropout(x, p, mask_shape, key)
    return y[0] if unbatched else y


def dropout1d(
    input: Array,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    key: jax.Array | None = None,
) -> Array:
    """Zero whole channels of ``(N, C, L)`` / ``(C, L)`` input (mirrors ``torch...dropout1d``).

    Example:
        >>> F.dropout1d(jnp.ones((2, 3, 5)), 0.5, key=jax.random.key(0)).shape  # (2, 3, 5)
    """
    x = jnp.asarray(input)
    if x.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: expected a 2-D (C, L) or 3-D (N, C, L) input, got shape {x.shape}"
        )
    return _feature_dropout(x, p, training, key, unbatched=x.ndim == 2)


def dropout2d(
    input: Array,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    key: jax.Array | None = None,
) -> Array:
    """Zero whole channels of ``(N, C, H, W)`` input (mirrors ``torch...dropout2d``).

    As in torch, a 3-D input is treated as ``(N, C, L)`` (with torch's warning), not as an
    unbatched ``(C, H, W)``.

    Example:
        >>> F.dropout2d(jnp.ones((2, 3, 4, 4)), 0.5, key=jax.random.key(0)).shape
    """
    x = jnp.asarray(input)
    if x.ndim not in (3, 4):
        _user_code.warn(
            f"dropout2d: received a {x.ndim}-D input; dropout2d expects (N, C, H, W). "
            "Use dropout for elementwise dropout.",
            UserWarning,
        )
    if x.ndim == 3:
        _user_code.warn(
            "dropout2d: received a 3-D input and, like torch, treats it as (N, C, L); use "
            "dropout1d for that, or add a batch dim for an unbatched (C, H, W) image.",
            UserWarning,
        )
    return _feature_dropout(x, p, training, key, unbatched=False)


def dropout3d(
    input: Array,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    key: jax.Array | None = None,
) -> Array:
    """Zero whole channels of ``(N, C, D, H, W)`` / ``(C, D, H, W)`` input (torch's dropout3d).

    Example:
        >>> F.dropout3d(jnp.ones((2, 3, 2, 2, 2)), 0.5, key=jax.random.key(0)).shape
    """
    x = jnp.asarray(input)
    if x.ndim not in (4, 5):
        _user_code.warn(
            f"dropout3d: received a {x.ndim}-D input; dropout3d expects (N, C, D, H, W).",
            UserWarning,
        )
    return _feature_dropout(x, p, training, key, unbatched=x.ndim != 5)


def _alpha_dropout(x: Array, p: float, mask_shape: tuple[int, ...], key: jax.Array | None) -> Array:
    if p == 1.0:
        return jnp.zeros_like(x)
    # torch's _dropout_impl constants: alpha' = -scale * alpha of SELU.
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha**2 * p + 1) * (1 - p))
    keep = jax.random.bernoulli(resolve_key(key), 1.0 - p, mask_shape).astype(x.dtype)
    b = (keep - 1.0) * (alpha * a) + alpha * a * p
    return x * (keep * a) + b


def alpha_dropout(
    input: Array,
    p: float = 0.5,
    training: bool = False,
    inplace: bool = False,
    *,
    key: jax.Array | None = None,
) -> Array:
    """Dropout that keeps SELU's mean and variance (mirrors ``torch...alpha_dropout``).

    Dropped elements are set to SELU's negative saturation value and an affine correction
    restores zero mean / unit variance. Note torch's default here is ``training=False``.

    Example:
        >>> F.alpha_dropout(jnp.ones(8), 0.5, training=True, key=jax.random.key(0)).shape
    """
    _check_p(p)
    x = jnp.asarray(input)
    if not training or p == 0.0:
        return x
    return _alpha_dropout(x, p, x.shape, key)


def feature_alpha_dropout(
    input: Array,
    p: float = 0.5,
    training: bool = False,
    inplace: bool = False,
    *,
    key: jax.Array | None = None,
) -> Array:
    """Alpha dropout of whole channels (mirrors ``torch.nn.functional.feature_alpha_dropout``).

    One draw per ``(sample, channel)`` of an ``(N, C, *)`` input: a dropped channel is set to
    SELU's negative saturation value, then the affine correction of :func:`alpha_dropout`
    (``a * x + b`` with ``a = 1 / sqrt((alpha^2 p + 1)(1 - p))``) keeps zero mean and unit
    variance. As in torch the input needs at least 2 dims (the first two are ``N`` and ``C``;
    an unbatched ``(C, *)`` input is read the same way) and ``training`` defaults to False.

    Args:
        input: ``(N, C, *)``.
        p: channel drop probability in ``[0, 1]``.
        training: apply dropout (default False, as torch's).
        inplace: writes into a Tensor input (``spx.nn.functional``); a jax array is
            immutable: a new one is returned.
        key: jax PRNG key for the mask; default: the next key of ``spx.manual_seed``'s
            generator.

    Example:
        >>> F.feature_alpha_dropout(jnp.ones((2, 3, 4)), 0.5, True, key=jax.random.key(0)).shape
    """
    _check_p(p)
    x = jnp.asarray(input)
    if not training or p == 0.0 or x.size == 0:
        return x
    if x.ndim < 2:
        raise RuntimeError(
            f"feature_alpha_dropout: feature dropout requires at least 2 dimensions (N, C, *) "
            f"in the input, got shape {x.shape}; use alpha_dropout for elementwise dropout"
        )
    return _alpha_dropout(x, p, x.shape[:2] + (1,) * (x.ndim - 2), key)
