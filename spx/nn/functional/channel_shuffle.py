"""``channel_shuffle``: interleave groups of channels (the functional ``nn.ChannelShuffle``).

See https://pytorch.org/docs/stable/generated/torch.nn.ChannelShuffle.html
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array


def channel_shuffle(input: Array, groups: int) -> Array:
    """``(N, C, *) -> (N, C, *)``, channels regrouped (mirrors ``torch...channel_shuffle``).

    Channel ``k * g + i`` of the output is input channel ``i * (C // g) + k``.

    Example:
        >>> F.channel_shuffle(spx.arange(4.0).reshape(1, 4, 1), 2).flatten()  # 0, 2, 1, 3
    """
    x = jnp.asarray(input)
    if x.ndim <= 2:
        raise RuntimeError(
            f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(x.shape)}"
        )
    if groups <= 0:
        raise RuntimeError(
            f"Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    n, c, *rest = x.shape
    if c % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups."
        )
    x = x.reshape(n, groups, c // groups, *rest).swapaxes(1, 2)
    return x.reshape(n, c, *rest)
