"""Shape helpers used by layers: ``flatten``, ``unflatten``, ``pixel_shuffle`` and
``pixel_unshuffle`` (the functional forms of ``nn.Flatten``, ``nn.Unflatten``,
``nn.PixelShuffle`` and ``nn.PixelUnshuffle``). All are reshapes/transposes, free under ``jit``.

See https://pytorch.org/docs/stable/generated/torch.flatten.html
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp

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


def pixel_shuffle(input: Array, upscale_factor: int) -> Array:
    """``(*, C r^2, H, W) -> (*, C, H r, W r)`` (mirrors ``torch...pixel_shuffle``).

    Example:
        >>> F.pixel_shuffle(jnp.ones((1, 8, 3, 3)), 2).shape  # (1, 2, 6, 6)
    """
    x, r = jnp.asarray(input), upscale_factor
    if x.ndim < 3 or x.shape[-3] % (r * r):
        raise RuntimeError(
            f"pixel_shuffle: expected (*, C * {r}^2, H, W) input, got shape {x.shape}"
        )
    *lead, c, h, w = x.shape
    x = x.reshape(*lead, c // (r * r), r, r, h, w)
    n = len(lead)
    x = x.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Array, downscale_factor: int) -> Array:
    """``(*, C, H r, W r) -> (*, C r^2, H, W)`` (mirrors ``torch...pixel_unshuffle``).

    Example:
        >>> F.pixel_unshuffle(jnp.ones((1, 2, 6, 6)), 2).shape  # (1, 8, 3, 3)
    """
    x, r = jnp.asarray(input), downscale_factor
    if x.ndim < 3 or x.shape[-1] % r or x.shape[-2] % r:
        raise RuntimeError(
            f"pixel_unshuffle: expected (*, C, H, W) with H, W divisible by {r}, got {x.shape}"
        )
    *lead, c, h, w = x.shape
    x = x.reshape(*lead, c, h // r, r, w // r, r)
    n = len(lead)
    x = x.transpose(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)
