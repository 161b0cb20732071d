"""Shape helpers used by layers: ``flatten``, ``unflatten``, ``pixel_shuffle`` and
``pixel_unshuffle`` (the functional forms of ``nn.Flatten``, ``nn.Unflatten``,
``nn.PixelShuffle`` and ``nn.PixelUnshuffle``). All are reshapes/transposes, free under ``jit``.

See https://pytorch.org/docs/stable/generated/torch.flatten.html
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from spx import _validate

Array = jax.Array


def flatten(input: Array, start_dim: int = 0, end_dim: int = -1) -> Array:
    """Merge dims ``start_dim..end_dim`` into one (mirrors ``torch.flatten``).

    Args:
        input: any shape (a 0-D input becomes 1-D, as in torch).
        start_dim: first dim to merge.
        end_dim: last dim to merge (inclusive).

    Example:
        >>> F.flatten(jnp.ones((2, 3, 4)), 1).shape  # (2, 12)
    """
    x = jnp.asarray(input)
    if x.ndim == 0:
        return x.reshape(1)
    s, e = start_dim % x.ndim, end_dim % x.ndim
    if not (-x.ndim <= start_dim < x.ndim and -x.ndim <= end_dim < x.ndim) or s > e:
        raise ValueError(
            f"flatten: start_dim={start_dim} and end_dim={end_dim} must be valid dims of the "
            f"{x.ndim}-D input with start_dim <= end_dim"
        )
    # math.prod rather than -1: -1 is ambiguous when another dim is 0.
    return x.reshape(*x.shape[:s], math.prod(x.shape[s : e + 1]), *x.shape[e + 1 :])


def unflatten(input: Array, dim: int, sizes: Sequence[int]) -> Array:
    """Split dim ``dim`` into ``sizes`` (mirrors ``torch.unflatten``; one entry may be -1).

    Example:
        >>> F.unflatten(jnp.ones((2, 12)), 1, (3, 4)).shape  # (2, 3, 4)
    """
    x = jnp.asarray(input)
    d = dim % x.ndim
    return x.reshape(*x.shape[:d], *sizes, *x.shape[d + 1 :])


def _check_factor(x: Array, r: Any, name: str, factor: str) -> int:
    r = _validate.as_int(r, factor, name, wrong_type=TypeError)
    if r <= 0:
        raise RuntimeError(f"{name} expects a positive {factor}, but got {r}")
    if x.ndim < 3:
        raise RuntimeError(
            f"{name} expects input to have at least 3 dimensions, but got input with {x.ndim} "
            "dimension(s); pass (*, C, H, W)"
        )
    return r


def pixel_shuffle(input: Array, upscale_factor: int) -> Array:
    """``(*, C r^2, H, W) -> (*, C, H r, W r)`` (mirrors ``torch...pixel_shuffle``).

    Output channel ``c`` at ``(h * r + i, w * r + j)`` is input channel ``c * r^2 + i * r + j``
    at ``(h, w)``, torch's order, so it inverts a conv laid out for torch.

    Example:
        >>> F.pixel_shuffle(jnp.ones((1, 8, 3, 3)), 2).shape  # (1, 2, 6, 6)
    """
    x = jnp.asarray(input)
    r = _check_factor(x, upscale_factor, "pixel_shuffle", "upscale_factor")
    if x.shape[-3] % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
            f"square of upscale_factor, but input.size(-3)={x.shape[-3]} is not divisible by "
            f"{r * r}"
        )
    *lead, c, h, w = x.shape
    x = x.reshape(*lead, c // (r * r), r, r, h, w)
    n = len(lead)
    x = x.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Array, downscale_factor: int) -> Array:
    """``(*, C, H r, W r) -> (*, C r^2, H, W)`` (mirrors ``torch...pixel_unshuffle``).

    The inverse of :func:`pixel_shuffle`.

    Example:
        >>> F.pixel_unshuffle(jnp.ones((1, 2, 6, 6)), 2).shape  # (1, 8, 3, 3)
    """
    x = jnp.asarray(input)
    r = _check_factor(x, downscale_factor, "pixel_unshuffle", "downscale_factor")
    for axis, what in ((-2, "height"), (-1, "width")):
        if x.shape[axis] % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {what} to be divisible by downscale_factor, but "
                f"input.size({axis})={x.shape[axis]} is not divisible by {r}"
            )
    *lead, c, h, w = x.shape
    x = x.reshape(*lead, c, h // r, r, w // r, r)
    n = len(lead)
    x = x.transpose(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)
