"""``spx.unravel_index``: flat indices to coordinates in a shape, as ``torch.unravel_index``.

Like torch, indices are taken modulo the shape's size (``-1`` is the last element, and an
index past the end wraps) rather than checked, so no value has to be read back to the host.

Example:
    >>> import spx
    >>> [c.tolist() for c in spx.unravel_index(spx.tensor([4, 5]), (2, 3))]
    [[1, 1], [1, 2]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp

from spx._tensor.dispatch import apply
from spx._tensor.tensor import Tensor
from spx.ops._args import tensor_arg

__all__ = ["unravel_index"]


def _unravel(indices: Any, shape: tuple) -> tuple:
    out = []
    rest = indices
    for size in reversed(shape):
        out.append(jnp.remainder(rest, size))
        rest = jnp.floor_divide(rest, size)
    return tuple(reversed(out))


def unravel_index(indices: Any, shape: int | Sequence[int]) -> tuple[Tensor, ...]:
    """The coordinates of the flat ``indices`` in a row-major tensor of ``shape``.

    Args:
        indices: ``(*)`` integer tensor of flat indices.
        shape: the tensor's shape (an int or a sequence of non-negative ints).

    Returns:
        one ``(*)`` tensor per dimension of ``shape``. Mirrors ``torch.unravel_index``.
    """
    t = tensor_arg(indices, "unravel_index", "indices")
    if not jnp.issubdtype(t.dtype, jnp.integer):
        raise TypeError(
            f"expected 'indices' to be integer dtype, but got {t.dtype}; cast first: x.long()"
        )
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if not all(isinstance(d, int) for d in dims) or any(d < 0 for d in dims):
        raise TypeError(f"expected 'shape' to be int or sequence of non-negative ints, got {shape}")
    if any(d == 0 for d in dims) and t.numel():
        raise ValueError(f"can't unravel indices into a shape with a zero-size dim: {dims}")
    return tuple(apply(_unravel, (dims,), (t,), n_out=len(dims)))
