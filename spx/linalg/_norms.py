"""Vector and matrix norms and the condition number (``spx.linalg.vector_norm``,
``matrix_norm``, ``norm``, ``cond``), as ``torch.linalg`` defines them.

Example:
    >>> import spx
    >>> spx.linalg.vector_norm(spx.tensor([3.0, 4.0])).item()
    5.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp

from spx._tensor import _dims, numpy_names
from spx._tensor.dispatch import apply
from spx._tensor.methods._dtypes import canonical
from spx._tensor.methods.math import _abs
from spx._tensor.methods.reduction import _norm
from spx._tensor.tensor import Tensor
from spx._validate import as_float
from spx.linalg._common import at_least_matrix, floating, square, tensor_arg

__all__ = ["cond", "matrix_norm", "norm", "vector_norm"]

_MATRIX_ORDS = ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2)


def _vector_norm(x: Any, ord: float, axis: tuple | None, keepdims: bool) -> Any:
    if ord == 0:  # the number of non-zeros, in the real dtype (also for complex input)
        return jnp.sum(x != 0, axis=axis, keepdims=keepdims).astype(jnp.real(x).dtype)
    return _norm(x, ord, axis, keepdims)


def _svdvals_last(x: Any, row: int, col: int) -> Any:
    return jnp.linalg.svd(jnp.moveaxis(x, (row, col), (-2, -1)), compute_uv=False)


def _matrix_norm(x: Any, ord: Any, row: int, col: int, keepdims: bool) -> Any:
    if ord == "fro":
        return _norm(x, 2, (row, col), keepdims)
    if ord in ("nuc", 2, -2):
        s = _svdvals_last(x, row, col)  # descending
        out = jnp.sum(s, axis=-1) if ord == "nuc" else s[..., 0] if ord == 2 else s[..., -1]
        return jnp.expand_dims(out, tuple(sorted((row, col)))) if keepdims else out
    # 1 / -1: the largest / smallest column sum; inf / -inf: the same over row sums.
    summed, over = (row, col) if abs(ord) == 1 else (col, row)
    sums = jnp.sum(_abs(x), axis=summed, keepdims=True)
    out = (jnp.max if ord > 0 else jnp.min)(sums, axis=over, keepdims=True)
    return out if keepdims else jnp.squeeze(out, (row, col))


def _cond(x: Any, p: Any) -> Any:
    if p is None or p in (2, -2):
        s = jnp.linalg.svd(x, compute_uv=False)
        big, small = s[..., 0], s[..., -1]
        return big / small if p != -2 else small / big
    n = x.ndim
    return _matrix_norm(x, p, n - 2, n - 1, False) * _matrix_norm(
        jnp.linalg.inv(x), p, n - 2, n - 1, False
    )


def _cast(x: Tensor, dtype: Any) -> Tensor:
    return x if dtype is None else x.to(canonical(dtype))


def vector_norm(
    x: Any, ord: float = 2, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """The vector ``ord``-norm of ``x`` over ``dim`` (mirrors ``torch.linalg.vector_norm``).

    ``ord`` is any real number: ``inf``/``-inf`` are the largest/smallest ``|x|``, ``0`` the
    number of non-zeros, otherwise ``sum(|x|**ord) ** (1/ord)``. The result is real for complex
    input.

    Args:
        x: tensor of any shape, floating point or complex.
        ord: the order of the norm. Default: 2.
        dim: a dimension or a tuple of them; ``None`` (default) takes the whole tensor as one
            vector.
        keepdim: keep the reduced dimensions with size 1.
        dtype: if given, ``x`` is cast to it first.

    Example:
        >>> import spx
        >>> spx.linalg.vector_norm(spx.ones(2, 3), ord=1, dim=1).tolist()
        [3.0, 3.0]
    """
    t = _cast(floating(tensor_arg(x, "linalg.vector_norm", "x"), "vector_norm"), dtype)
    if isinstance(ord, str):
        raise TypeError(
            f"linalg.vector_norm(): argument 'ord' must be a number, not {type(ord).__name__} "
            f"({ord!r}); for the Frobenius or nuclear norm use spx.linalg.matrix_norm"
        )
    axes = None if dim is None else _dims.dims(dim, t.ndim) if t.ndim else ()
    ord = as_float(ord, "ord", "linalg.vector_norm")
    return apply(_vector_norm, (ord, axes, bool(keepdim)), (t,))


def _matrix_dims(dim: Any, ndim: int) -> tuple[int, int]:
    if not isinstance(dim, Sequence) or len(dim) != 2:
        got = ", ".join(map(str, dim)) if isinstance(dim, Sequence) else dim
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {got}")
    row, col = _dims.dim(dim[0], ndim), _dims.dim(dim[1], ndim)
    if row == col:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    return row, col


def _matrix_ord(ord: Any, what: str) -> Any:
    if isinstance(ord, bool) or ord not in _MATRIX_ORDS:
        raise RuntimeError(
            f"linalg.{what}: Order {ord} not supported. Matrix norms take 'fro', 'nuc', inf, "
            "-inf, 1, -1, 2 or -2; for a vector p-norm use spx.linalg.vector_norm"
        )
    return ord if isinstance(ord, str) else float(ord)


def matrix_norm(
    A: Any,
    ord: Any = "fro",
    dim: tuple[int, int] = (-2, -1),
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> Tensor:
    """The matrix ``ord``-norm of ``A`` over the two dimensions ``dim`` (mirrors
    ``torch.linalg.matrix_norm``).

    ``'fro'``: Frobenius; ``'nuc'``: sum of singular values; ``2``/``-2``: largest/smallest
    singular value; ``1``/``-1``: largest/smallest column sum of ``|A|``; ``inf``/``-inf``:
    largest/smallest row sum.

    Args:
        A: ``(*, m, n)`` (or any tensor with the two ``dim`` dimensions), floating or complex.
        ord: the order. Default: ``'fro'``.
        dim: the two dimensions that hold the matrices. Default: ``(-2, -1)``.
        keepdim: keep them with size 1.
        dtype: if given, ``A`` is cast to it first.

    Returns:
        ``(*)``: real.

    Example:
        >>> import spx
        >>> spx.linalg.matrix_norm(spx.eye(3), ord="nuc").item()
        3.0
    """
    t = _cast(floating(at_least_matrix(A, "matrix_norm"), "matrix_norm"), dtype)
    ord = _matrix_ord(ord, "matrix_norm")
    row, col = _matrix_dims(dim, t.ndim)
    return apply(_matrix_norm, (ord, row, col, bool(keepdim)), (t,))


def norm(
    A: Any, ord: Any = None, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """A vector or matrix norm (mirrors ``torch.linalg.norm``).

    With ``dim`` an int (or a 1-tuple), a vector norm over it; a 2-tuple, a matrix norm. With
    ``dim=None``: ``ord=None`` is the 2-norm of the flattened tensor; otherwise ``A`` must be
    1-D (vector norm) or 2-D (matrix norm). A string ``ord`` (``'fro'``, ``'nuc'``) always asks
    for a matrix norm.

    Example:
        >>> import spx
        >>> spx.linalg.norm(spx.ones(2, 2), ord=1).item()
        2.0
    """
    t = tensor_arg(A, "linalg.norm", "A")
    if dim is not None:
        dims = (dim,) if not isinstance(dim, Sequence) else tuple(dim)
        if len(dims) == 1 and not isinstance(ord, str):
            return vector_norm(t, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) == 2 or isinstance(ord, str):
            return matrix_norm(t, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        raise RuntimeError(
            f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}"
        )
    if ord is None:
        return vector_norm(t, 2, None, keepdim, dtype=dtype)
    if isinstance(ord, str) or t.ndim == 2:
        return matrix_norm(t, ord, (-2, -1), keepdim, dtype=dtype)
    if t.ndim == 1:
        return vector_norm(t, ord, None, keepdim, dtype=dtype)
    raise RuntimeError(
        "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
        f"{t.ndim}D. Pass dim= (an int for vector norms, a pair for matrix norms)"
    )


def cond(A: Any, p: Any = None) -> Tensor:
    """The condition number of ``A`` in the ``p``-norm (mirrors ``torch.linalg.cond``).

    ``p=None``/``2``/``-2``: the ratio of the extreme singular values (any ``(*, m, n)``);
    other orders (``'fro'``, ``'nuc'``, ``inf``, ``-inf``, ``1``, ``-1``):
    ``matrix_norm(A, p) * matrix_norm(inv(A), p)``, for square ``A``.

    Example:
        >>> import spx
        >>> round(spx.linalg.cond(spx.tensor([[2.0, 0.0], [0.0, 1.0]])).item(), 4)
        2.0
    """
    if p is None or (not isinstance(p, str | bool) and p in (2, -2)):
        t = floating(at_least_matrix(A, "cond"), "cond")
        return apply(_cond, (None if p is None else float(p),), (t,))
    if isinstance(p, bool) or p not in _MATRIX_ORDS:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    t = floating(square(A, "cond"), "cond")
    return apply(_cond, (p if isinstance(p, str) else float(p),), (t,))


# numpy's axis=/keepdims= as torch accepts them (torch.linalg.vector_norm(x, axis=0)).
numpy_names.accept(globals(), __all__)
