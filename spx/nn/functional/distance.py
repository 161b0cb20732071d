"""Similarity and distance between vectors: ``cosine_similarity``, ``pairwise_distance`` and
``pdist``.

See https://pytorch.org/docs/stable/generated/torch.nn.functional.cosine_similarity.html
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from spx.nn.functional._utils import vector_norm
from spx.ops.linalg import difference_norm

Array = jax.Array


def cosine_similarity(x1: Array, x2: Array, dim: int = 1, eps: float = 1e-8) -> Array:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (mirrors torch's).

    Each input is divided by its own norm clamped to at least ``eps`` (torch's numerically
    stable form; the clamp, done under no_grad in torch, does not change the gradient).

    Args:
        x1: any shape broadcastable with ``x2``.
        x2: any shape broadcastable with ``x1``.
        dim: the vector dimension (of the broadcast shape); it is reduced away.
        eps: lower bound on each norm.

    Example:
        >>> F.cosine_similarity(jnp.ones((2, 3)), jnp.ones((2, 3)))  # [1., 1.]
    """
    a, b = jnp.broadcast_arrays(jnp.asarray(x1), jnp.asarray(x2))
    if not jnp.issubdtype(a.dtype, jnp.inexact):
        a, b = a.astype(jnp.float32), b.astype(jnp.float32)

    def clamped_norm(t: Array) -> Array:
        n = vector_norm(t, 2, dim)
        return n + jax.lax.stop_gradient(jnp.maximum(n, eps) - n)

    return jnp.sum((a / clamped_norm(a)) * (b / clamped_norm(b)), axis=dim)


def pairwise_distance(
    x1: Array, x2: Array, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Array:
    """``||x1 - x2 + eps||_p`` over the last dim (mirrors ``torch...pairwise_distance``).

    Args:
        x1: ``(N, D)`` or ``(D,)``.
        x2: broadcastable with ``x1``.
        p: the norm degree.
        eps: added to the difference (as torch) to keep the norm differentiable at 0.
        keepdim: keep the reduced last dim.

    Example:
        >>> F.pairwise_distance(jnp.zeros((2, 4)), jnp.ones((2, 4)))  # ~[2., 2.]
    """
    d = jnp.asarray(x1) - jnp.asarray(x2) + eps
    out = vector_norm(d, p, -1)
    return out if keepdim else jnp.squeeze(out, -1)


def pdist(input: Array, p: float = 2.0) -> Array:
    """The p-norm distance between every two rows of ``input`` ``(N, M)``: ``(N (N - 1) / 2,)``,
    the pairs ``(0, 1), (0, 2), ..., (1, 2), ...`` in order (mirrors ``torch...pdist``).

    Example:
        >>> import spx
        >>> spx.nn.functional.pdist(spx.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])).tolist()
        [5.0, 10.0, 5.0]
    """
    x = jnp.asarray(input)
    if x.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise RuntimeError(f"pdist only supports floating-point dtypes, got {x.dtype}")
    if p < 0:
        raise RuntimeError(f"pdist only supports non-negative p values, got {p}")
    rows, cols = np.triu_indices(x.shape[0], 1)
    return difference_norm(x[rows] - x[cols], float(p))
