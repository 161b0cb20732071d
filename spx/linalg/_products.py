"""Determinants, powers and products of ``spx.linalg``: ``det``, ``slogdet``,
``matrix_power``, ``matrix_exp``, ``cross``, ``vecdot``, ``multi_dot``, ``diagonal``,
``matmul``, ``vander`` (mirror ``torch.linalg``'s; the ones ``spx`` already has at top level
are the same computations).

Example:
    >>> import spx
    >>> spx.linalg.vecdot(spx.ones(2, 3), spx.ones(3)).tolist()
    [3.0, 3.0]
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from spx._tensor import _dims, numpy_names
from spx._tensor.dispatch import apply
from spx._tensor.methods.linalg import SignLogAbsDet, _cross
from spx._tensor.tensor import Tensor
from spx._validate import as_int
from spx.linalg._common import floating, square, tensor_arg
from spx.ops._args import tensor_list
from spx.ops.linalg import matmul as matmul

__all__ = [
    "cross", "det", "diagonal", "matmul", "matrix_exp", "matrix_power", "multi_dot", "slogdet",
    "vander", "vecdot",
]  # fmt: skip


def _vecdot(x: Any, y: Any, axis: int) -> Any:
    return jnp.sum(jnp.conj(x) * y, axis=axis)


def _multi_dot(*xs: Any) -> Any:
    return jnp.linalg.multi_dot(xs)


def _vander(x: Any, n: int) -> Any:
    # Running products (as torch's cumprod), so the gradient at x = 0 is finite.
    powers = jnp.cumprod(jnp.broadcast_to(x[..., None], (*x.shape, n - 1)), axis=-1)
    return jnp.concatenate([jnp.ones_like(x)[..., None], powers], axis=-1)


def _broadcast_shape(x: Tensor, y: Tensor, what: str) -> tuple:
    try:
        return tuple(np.broadcast_shapes(tuple(x.shape), tuple(y.shape)))
    except ValueError:
        raise RuntimeError(
            f"linalg.{what}: the shapes {list(x.shape)} and {list(y.shape)} do not broadcast"
        ) from None


def det(A: Any) -> Tensor:
    """Determinants of ``(*, n, n)``: ``(*)`` (mirrors ``torch.linalg.det``).

    Example:
        >>> import spx
        >>> spx.linalg.det(spx.eye(3) * 2).item()
        8.0
    """
    return floating(square(A, "det"), "det").det()


def slogdet(A: Any) -> SignLogAbsDet:
    """``(sign, logabsdet)`` of ``(*, n, n)``, each ``(*)`` (mirrors ``torch.linalg.slogdet``):
    ``det = sign * exp(logabsdet)``, stable where ``det`` would over- or underflow.

    Example:
        >>> import spx
        >>> spx.linalg.slogdet(-spx.eye(3)).sign.item()
        -1.0
    """
    return floating(square(A, "slogdet"), "slogdet").slogdet()


def matrix_power(A: Any, n: int) -> Tensor:
    """``A`` ``(*, m, m)`` multiplied by itself ``n`` times; the inverse's for ``n < 0``, the
    identity for ``n = 0`` (mirrors ``torch.linalg.matrix_power``).

    Example:
        >>> import spx
        >>> spx.linalg.matrix_power(spx.eye(2) * 2, 3).tolist()
        [[8.0, 0.0], [0.0, 8.0]]
    """
    return square(A, "matrix_power").matrix_power(as_int(n, "n", "linalg.matrix_power"))


def matrix_exp(A: Any) -> Tensor:
    """The matrix exponential of ``(*, n, n)`` (mirrors ``torch.linalg.matrix_exp``).

    Example:
        >>> import spx
        >>> spx.linalg.matrix_exp(spx.zeros(2, 2)).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    return floating(square(A, "matrix_exp"), "matrix_exp").matrix_exp()


def cross(input: Any, other: Any, *, dim: int = -1) -> Tensor:
    """Cross products of 3-vectors along ``dim`` (default: the last, unlike ``spx.cross``),
    inputs broadcast (mirrors ``torch.linalg.cross``).

    Example:
        >>> import spx
        >>> spx.linalg.cross(spx.tensor([1.0, 0.0, 0.0]), spx.tensor([0.0, 1.0, 0.0])).tolist()
        [0.0, 0.0, 1.0]
    """
    x, y = tensor_arg(input, "linalg.cross"), tensor_arg(other, "linalg.cross", "other")
    if x.ndim != y.ndim:
        raise RuntimeError(
            f"linalg.cross: inputs must have the same number of dimensions (got shapes "
            f"{list(x.shape)} and {list(y.shape)}); unsqueeze the smaller one"
        )
    shape = _broadcast_shape(x, y, "cross")
    d = _dims.dim(as_int(dim, "dim", "linalg.cross"), len(shape))
    if shape[d] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got "
            f"{x.shape[d - len(shape)]} and {y.shape[d - len(shape)]}"
        )
    # A negative axis: jnp.cross applies it to each input before they broadcast.
    return apply(_cross, (d - len(shape),), (x, y))


def vecdot(x: Any, y: Any, *, dim: int = -1) -> Tensor:
    """``sum(conj(x) * y, dim)``, inputs broadcast (mirrors ``torch.linalg.vecdot``).

    Example:
        >>> import spx
        >>> spx.linalg.vecdot(spx.tensor([1.0, 2.0]), spx.tensor([3.0, 4.0])).item()
        11.0
    """
    a, b = tensor_arg(x, "linalg.vecdot", "x"), tensor_arg(y, "linalg.vecdot", "y")
    shape = _broadcast_shape(a, b, "vecdot")
    d = _dims.dim(dim, len(shape))
    return apply(_vecdot, (d - len(shape),), (a, b))


def multi_dot(tensors: Any) -> Tensor:
    """The product of a chain of matrices, in the cheapest order (mirrors
    ``torch.linalg.multi_dot``). The first may be a 1-D row vector and the last a 1-D column
    vector; the others are 2-D.

    Example:
        >>> import spx
        >>> spx.linalg.multi_dot([spx.ones(2, 3), spx.ones(3, 4), spx.ones(4)]).tolist()
        [12.0, 12.0]
    """
    ts = tensor_list(tensors, "linalg.multi_dot", "tensors")
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        end = i in (0, len(ts) - 1)
        if t.ndim not in ((1, 2) if end else (2,)):
            which = "the first tensor" if i == 0 else "the last tensor" if end else f"tensor {i}"
            need = "1D or 2D" if end else "2D"
            raise RuntimeError(f"multi_dot(): {which} must be {need} but got {t.ndim}D")
    for i in range(1, len(ts)):
        left, right = ts[i - 1].shape, ts[i].shape
        if left[-1] != right[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i - 1} and {i} with shapes {list(left)} and "
                f"{list(right)} cannot be multiplied"
            )
    return apply(_multi_dot, (), tuple(ts))


def diagonal(A: Any, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The diagonals of the matrices in ``dim1``/``dim2`` (default: the last two), as the last
    dimension (mirrors ``torch.linalg.diagonal``).

    Example:
        >>> import spx
        >>> spx.linalg.diagonal(spx.eye(3).expand(2, 3, 3)).shape
        spx.Size([2, 3])
    """
    return tensor_arg(A, "linalg.diagonal", "A").diagonal(offset, dim1, dim2)


def vander(x: Any, *, N: int | None = None) -> Tensor:
    """The Vandermonde matrix ``[x**0, x**1, ..., x**(N-1)]`` along a new last dimension:
    ``(*, n)`` -> ``(*, n, N)``, ``N`` defaulting to ``n`` (mirrors ``torch.linalg.vander``).

    Example:
        >>> import spx
        >>> spx.linalg.vander(spx.tensor([1, 2, 3])).tolist()
        [[1, 1, 1], [1, 2, 4], [1, 3, 9]]
    """
    t = tensor_arg(x, "linalg.vander", "x")
    if t.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = t.shape[-1] if N is None else as_int(N, "N", "linalg.vander")
    if n <= 1:
        raise RuntimeError(f"N must be greater than 1. Got {n}")
    return apply(_vander, (n,), (t,))


# numpy's axis=/keepdims= as torch accepts them.
numpy_names.accept(globals(), __all__)
