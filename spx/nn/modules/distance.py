"""Distance modules: ``PairwiseDistance`` and ``CosineSimilarity`` (mirroring torch.nn's)."""

from __future__ import annotations

import jax

from spx.nn import functional as F
from spx.nn.module import Module

Array = jax.Array


class PairwiseDistance(Module):
    """``||x1 - x2 + eps||_p`` over the last dim (mirrors ``torch.nn.PairwiseDistance``).

    Args:
        p: the norm degree.
        eps: added to the difference, keeping the norm differentiable at 0.
        keepdim: keep the reduced dim.

    Shapes:
        x1 ``(N, D)`` or ``(D,)``, x2 broadcastable -> ``(N,)`` (``(N, 1)`` with keepdim).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.PairwiseDistance()(jnp.zeros((2, 4)), jnp.ones((2, 4))).shape
        spx.Size([2])
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Array, x2: Array) -> Array:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """Cosine similarity along ``dim`` (mirrors ``torch.nn.CosineSimilarity``).

    Args:
        dim: the dimension to compare along.
        eps: lower bound of the norms' product.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.CosineSimilarity()(jnp.ones((2, 4)), jnp.ones((2, 4))).shape
        spx.Size([2])
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Array, x2: Array) -> Array:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
