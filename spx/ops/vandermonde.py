"""``spx.vander``: the Vandermonde matrix of a vector, as ``torch.vander`` (powers decreasing
by default; numpy's convention, unlike ``spx.linalg.vander``'s increasing one).

Example:
    >>> import spx
    >>> spx.vander(spx.tensor([1, 2, 3])).tolist()
    [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from spx._tensor.dispatch import apply
from spx._tensor.tensor import Tensor
from spx.ops._args import tensor_arg

__all__ = ["vander"]


def _vander(x: Any, n: int, increasing: bool) -> Any:
    if jnp.issubdtype(x.dtype, jnp.bool_):
        x = x.astype(jnp.int32)
    ones = jnp.ones((x.shape[0], min(n, 1)), x.dtype)
    # Running products (torch's cumprod), so gradients at x = 0 are those of x * x * ... .
    powers = jnp.cumprod(jnp.broadcast_to(x[:, None], (x.shape[0], max(n - 1, 0))), axis=1)
    out = jnp.concatenate([ones, powers], axis=1)
    return out if increasing else out[:, ::-1]


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Tensor:
    """The matrix whose columns are powers of ``x``: ``x^(N-1), ..., x, 1`` (or increasing).

    Args:
        x: ``(n,)`` tensor.
        N: the number of columns (default ``n``).
        increasing: powers from 0 up instead of down.

    Returns:
        ``(n, N)``, ``x``'s dtype (bool as int). Mirrors ``torch.vander``.
    """
    t = tensor_arg(x, "vander", "x")
    if t.ndim != 1:
        raise RuntimeError(f"x must be a one-dimensional tensor (got shape {list(t.shape)})")
    n = t.shape[0] if N is None else N
    if not isinstance(n, int) or n < 0:
        raise RuntimeError(f"N must be non-negative (got {N!r})")
    return apply(_vander, (n, bool(increasing)), (t,))
