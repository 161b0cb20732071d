"""``Flatten`` and ``Unflatten``: reshape a range of dims into one, and back (torch.nn's).

Errors: a dim out of range raises IndexError (as torch); sizes that do not fit the input raise
ValueError naming the shapes (torch raises RuntimeError from inside its kernels).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp

from spx import _validate
from spx._tensor.recorded import recorded
from spx._tensor.tensor import Tensor
from spx.nn.module import Module


@recorded
def _array_as_tensor(x: Any) -> Any:
    return jnp.asarray(x)


def _as_tensor(x: Any) -> Tensor:
    """Tensors as they are (reshaping one gives a view); arrays (tracers too) as a Tensor."""
    return x if isinstance(x, Tensor) else _array_as_tensor(x)


def _normalize_dim(dim: int, ndim: int, owner: str) -> int:
    # torch treats a 0-d tensor as having one dim for dim-wrapping purposes.
    rank = max(ndim, 1)
    if not -rank <= dim < rank:
        raise IndexError(
            f"{owner}: dimension out of range (expected to be in range of "
            f"[{-rank}, {rank - 1}], but got {dim}) for an input with {ndim} dims"
        )
    return dim % rank


class Flatten(Module):
    """Flatten dims ``start_dim..end_dim`` into one (mirrors ``torch.nn.Flatten``).

    Args:
        start_dim: first dim to flatten (default 1, keeping the batch dim).
        end_dim: last dim to flatten (inclusive; default -1).

    Shapes:
        ``(*, S_start, ..., S_end, *)`` -> ``(*, prod(S_start..S_end), *)``. A 0-d input becomes
        1-d, as in torch.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Flatten()(jnp.ones((32, 1, 5, 5))).shape
        spx.Size([32, 25])
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        start_dim = _validate.as_int(start_dim, "start_dim", "Flatten")
        end_dim = _validate.as_int(end_dim, "end_dim", "Flatten")
        if (start_dim >= 0) == (end_dim >= 0) and start_dim > end_dim:
            raise ValueError(
                f"Flatten: start_dim ({start_dim}) cannot come after end_dim ({end_dim})"
            )
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        x = _as_tensor(input)
        start = _normalize_dim(self.start_dim, x.ndim, "Flatten")
        end = _normalize_dim(self.end_dim, x.ndim, "Flatten")
        if start > end:
            raise ValueError(
                f"Flatten: start_dim ({self.start_dim}) comes after end_dim ({self.end_dim}) "
                f"for an input of shape {tuple(x.shape)}"
            )
        if x.ndim == 0:
            return x.reshape(1)
        shape = (*x.shape[:start], math.prod(x.shape[start : end + 1]), *x.shape[end + 1 :])
        return x.reshape(shape)  # a view, as torch's flatten

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size`` (mirrors ``torch.nn.Unflatten``).

    Args:
        dim: the dim to split.
        unflattened_size: tuple or list of ints whose product is that dim's size; one entry
            may be -1 (inferred).

    Shapes:
        ``(*, S_dim, *)`` -> ``(*, U_1, ..., U_n, *)`` with ``prod(U) = S_dim``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Unflatten(1, (2, 5, 5))(jnp.ones((2, 50))).shape
        spx.Size([2, 2, 5, 5])
    """

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        dim = _validate.as_int(dim, "dim", "Unflatten")
        if not isinstance(unflattened_size, tuple | list):
            raise TypeError(
                "Unflatten: unflattened_size must be a tuple or list of ints, got "
                f"{type(unflattened_size).__name__}: {unflattened_size!r}"
            )
        unflattened_size = type(unflattened_size)(
            _validate.as_int(s, f"unflattened_size[{i}]", "Unflatten")
            for i, s in enumerate(unflattened_size)
        )
        if sum(s == -1 for s in unflattened_size) > 1 or any(s < -1 for s in unflattened_size):
            raise ValueError(
                f"Unflatten: unflattened_size {unflattened_size!r} may contain at most one -1 "
                "and no other negative sizes"
            )
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        x = _as_tensor(input)
        if x.ndim == 0:
            raise ValueError("Unflatten: cannot unflatten a 0-d input")
        dim = _normalize_dim(self.dim, x.ndim, "Unflatten")
        sizes = list(self.unflattened_size)
        known = math.prod(s for s in sizes if s != -1)
        n = x.shape[dim]
        if -1 in sizes:
            if known == 0 or n % known:
                raise ValueError(
                    f"Unflatten: sizes {sizes} can't be inferred for dim {self.dim} of size {n} "
                    f"(input shape {tuple(x.shape)})"
                )
            sizes[sizes.index(-1)] = n // known
        elif known != n:
            raise ValueError(
                f"Unflatten: provided sizes {sizes} don't multiply up to the size of dim "
                f"{self.dim} ({n}) in the input of shape {tuple(x.shape)}"
            )
        return x.reshape((*x.shape[:dim], *sizes, *x.shape[dim + 1 :]))  # a view, as torch

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
