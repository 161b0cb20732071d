"""Inverses and linear solves: ``inv``, ``inv_ex``, ``solve``, ``solve_triangular``,
``lstsq``, ``tensorinv``, ``tensorsolve`` (mirror ``torch.linalg``'s).

For a singular matrix ``inv``/``solve`` raise torch's ``LinAlgError`` once the value is
computed (see :mod:`spx.linalg._errors`); ``inv_ex``/``solve_ex`` report it as ``info``.

Example:
    >>> import spx
    >>> A = spx.tensor([[2.0, 0.0], [0.0, 4.0]])
    >>> spx.linalg.solve(A, spx.tensor([2.0, 2.0])).tolist()
    [1.0, 0.5]
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np
from jax import lax

from spx._tensor import _dims
from spx._tensor.dispatch import apply
from spx._tensor.methods.linalg import _inverse
from spx._tensor.tensor import Tensor
from spx._validate import as_int
from spx.linalg._common import at_least_matrix, floating, square, tensor_arg
from spx.linalg._errors import check_later, check_now, first_zero_pivot, solve_info

__all__ = [
    "InvEx", "Lstsq", "SolveEx", "inv", "inv_ex", "lstsq", "solve", "solve_ex",
    "solve_triangular", "tensorinv", "tensorsolve",
]  # fmt: skip

_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


class InvEx(NamedTuple):
    """``(inverse, info)`` of :func:`inv_ex` (torch's ``return_types.linalg_inv_ex``)."""

    inverse: Tensor
    info: Tensor


class SolveEx(NamedTuple):
    """``(result, info)`` of :func:`solve_ex` (torch's ``return_types.linalg_solve_ex``)."""

    result: Tensor
    info: Tensor


class Lstsq(NamedTuple):
    """``(solution, residuals, rank, singular_values)`` of :func:`lstsq` (torch's
    ``return_types.linalg_lstsq``)."""

    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


def _batched(a: Any, b: Any) -> tuple[Any, Any]:
    """``a (*, n, n)`` and ``b (*, n, k)`` with their batch dimensions broadcast."""
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return jnp.broadcast_to(a, batch + a.shape[-2:]), jnp.broadcast_to(b, batch + b.shape[-2:])


def _solve(a: Any, b: Any, vector: bool, left: bool) -> Any:
    if vector:
        b = b[..., None]
    if not left:  # X A = B  <=>  A^T X^T = B^T
        a, b = jnp.swapaxes(a, -1, -2), jnp.swapaxes(b, -1, -2)
    a, b = _batched(a, b)
    x = jnp.linalg.solve(a, b)
    if vector:
        return x[..., 0]
    return x if left else jnp.swapaxes(x, -1, -2)


def _solve_triangular(a: Any, b: Any, upper: bool, left: bool, unit: bool) -> Any:
    a, b = _batched(a, b)
    return lax.linalg.triangular_solve(
        a, b, left_side=left, lower=not upper, unit_diagonal=unit, transpose_a=False
    )


def _lstsq(a: Any, b: Any, rcond: float, vector: bool, driver: str) -> tuple:
    m, n = a.shape[-2:]
    if vector:
        b = b[..., None]
    a, b = _batched(a, b)
    # The minimum-norm solution through the pseudo-inverse (gelsd's answer; gelsy's and gels's
    # for full-rank A), differentiated by JAX's pinv rule.
    x = jnp.linalg.pinv(a, rtol=rcond) @ b
    s = lax.stop_gradient(jnp.linalg.svd(a, compute_uv=False))  # torch: not differentiable
    empty = jnp.zeros((0,), s.dtype)
    rank = jnp.sum(s > rcond * s[..., :1], axis=-1).astype(jnp.int32)
    if driver != "gelsy" and m > n:
        # (*, k); torch keeps the k = 1 of a vector right-hand side.
        residuals = lax.stop_gradient(jnp.sum(jnp.abs(a @ x - b) ** 2, axis=-2))
    else:
        residuals = empty
    singular_values = s if driver in ("gelsd", "gelss") else empty
    if driver == "gels":
        rank = jnp.zeros((0,), jnp.int32)
    return (x[..., 0] if vector else x), residuals, rank, singular_values


def inv(A: Any) -> Tensor:
    """The inverses of square matrices ``(*, n, n)`` (mirrors ``torch.linalg.inv``).

    Example:
        >>> import spx
        >>> spx.linalg.inv(spx.tensor([[2.0, 0.0], [0.0, 4.0]])).tolist()
        [[0.5, 0.0], [0.0, 0.25]]
    """
    return floating(square(A, "inv"), "inv").inverse()


def inv_ex(A: Any, *, check_errors: bool = False) -> InvEx:
    """``(inverse, info)`` (mirrors ``torch.linalg.inv_ex``): ``info (*)`` int32 is 0 for an
    invertible matrix, else the 1-based index of the first zero pivot of its LU factorization.

    Args:
        A: ``(*, n, n)``.
        check_errors: raise if some matrix is singular. This reads ``info`` now (a
            synchronization point, as in torch), so it cannot run inside ``spx.compile``.

    Example:
        >>> import spx
        >>> spx.linalg.inv_ex(spx.zeros(2, 2)).info.item()
        1
    """
    t = floating(square(A, "inv_ex"), "inv_ex")
    inverse = apply(_inverse, (), (t,))
    out = InvEx(inverse, apply(first_zero_pivot, (), (t,)))
    if check_errors:
        check_now(out.info, "linalg.inv_ex", "inv", t.ndim > 2)
    return out


def _is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    """torch's rule: ``B`` is a (batch of) vector(s) if it is 1-D or has ``A``'s shape but the
    last dimension."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve(A: Any, B: Any, *, left: bool = True) -> Tensor:
    """The solution ``X`` of ``A @ X = B`` (``left=False``: ``X @ A = B``) (mirrors
    ``torch.linalg.solve``), batch dimensions broadcast.

    Args:
        A: ``(*, n, n)`` invertible.
        B: ``(*, n, k)``, or ``(*, n)`` / ``(n,)`` for vectors (torch's rule: ``B`` is a vector
            if it is 1-D or has the shape of ``A`` without its last dimension).
        left: solve ``A X = B`` (default) or ``X A = B``.

    Returns:
        ``X`` with the shape of ``B`` (batch dimensions broadcast).

    Example:
        >>> import spx
        >>> spx.linalg.solve(spx.eye(3) * 2, spx.ones(3, 2)).tolist()
        [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]]
    """
    x, info = solve_ex(A, B, left=left)
    check_later(info, "torch.linalg.solve", "solve", info.ndim > 0)
    return x


def solve_ex(A: Any, B: Any, *, left: bool = True, check_errors: bool = False) -> SolveEx:
    """``(result, info)`` (mirrors ``torch.linalg.solve_ex``): :func:`solve`'s solution (infs or
    NaNs for a singular matrix) and ``info (*)`` int32 over ``A``'s batch: 0, or the 1-based
    index of the first zero pivot of that matrix's LU factorization.

    Args:
        A, B, left: as :func:`solve`.
        check_errors: raise :class:`LinAlgError` for a singular matrix: reads ``info`` now (a
            synchronization point, as in torch), so it cannot run inside ``spx.compile``.

    Example:
        >>> import spx
        >>> spx.linalg.solve_ex(spx.tensor([[1.0, 2.0], [2.0, 4.0]]), spx.ones(2)).info.item()
        2
    """
    a = floating(square(A, "solve"), "solve")
    b = tensor_arg(B, "linalg.solve", "B")
    vector = _is_vector_rhs(a, b)
    n = a.shape[-1]
    rows, cols = (b.shape[-1], 1) if vector else tuple(b.shape[-2:]) if b.ndim >= 2 else (0, 0)
    ok = b.ndim >= 1 and (rows == n if left else cols == n) and (left or not vector)
    if not ok:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(
            f"linalg.solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
            f"{rows}x{cols})"
        )
    _broadcast("solve", a, b, vector)
    x = apply(_solve, (vector, bool(left)), (a, b))
    info = solve_info(a, b, x, vector)
    if check_errors:
        check_now(info, "torch.linalg.solve_ex", "solve", info.ndim > 0)
    return SolveEx(x, info)


def _broadcast(what: str, a: Tensor, b: Tensor, vector: bool) -> None:
    b_batch = tuple(b.shape[:-1] if vector else b.shape[:-2])
    try:
        np.broadcast_shapes(tuple(a.shape[:-2]), b_batch)
    except ValueError:
        raise RuntimeError(
            f"linalg.{what}: the batch dimensions of A {list(a.shape[:-2])} and B "
            f"{list(b_batch)} do not broadcast"
        ) from None


def solve_triangular(
    A: Any, B: Any, *, upper: bool, left: bool = True, unitriangular: bool = False
) -> Tensor:
    """The solution of a triangular system ``A X = B`` (``left=False``: ``X A = B``) (mirrors
    ``torch.linalg.solve_triangular``); only the ``upper`` (or lower) triangle of ``A`` is read.

    Args:
        A: ``(*, n, n)`` triangular. B: ``(*, n, k)`` (``(*, k, n)`` with ``left=False``).
        upper: whether ``A`` is upper triangular (keyword-only, no default, as torch).
        left: solve ``A X = B`` (default) or ``X A = B``.
        unitriangular: assume ones on the diagonal of ``A`` (its diagonal is not read).

    Example:
        >>> import spx
        >>> A = spx.tensor([[2.0, 1.0], [0.0, 1.0]])
        >>> spx.linalg.solve_triangular(A, spx.tensor([[3.0], [1.0]]), upper=True).tolist()
        [[1.0], [1.0]]
    """
    a = floating(square(A, "solve_triangular"), "solve_triangular")
    b = at_least_matrix(B, "solve_triangular")
    n = a.shape[-1]
    if (b.shape[-2] if left else b.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(
            f"linalg.solve_triangular: Incompatible shapes of A and B for the equation {eq} "
            f"({n}x{n} and {b.shape[-2]}x{b.shape[-1]})"
        )
    _broadcast("solve_triangular", a, b, False)
    return apply(_solve_triangular, (bool(upper), bool(left), bool(unitriangular)), (a, b))


def lstsq(A: Any, B: Any, rcond: float | None = None, *, driver: str | None = None) -> Lstsq:
    """The least-squares solution of ``A X = B`` (mirrors ``torch.linalg.lstsq``).

    Computed through the SVD for every driver, so rank-deficient ``A`` gets the minimum-norm
    solution; ``driver`` (default ``'gelsy'``, torch's CPU default) decides which extra outputs
    are filled, as on torch's CPU: ``residuals`` (the squared residual norms, when ``m > n``)
    for ``'gels'``, ``'gelsd'``, ``'gelss'``; ``rank`` for all but ``'gels'``;
    ``singular_values`` for ``'gelsd'`` and ``'gelss'``; the others are empty tensors. (torch
    also leaves ``residuals`` empty for ``gelsd``/``gelss`` when a matrix is rank-deficient;
    spx cannot make a shape depend on values, and fills them.) Only ``solution`` is
    differentiable, as in torch.

    Args:
        A: ``(*, m, n)``. B: ``(*, m, k)``, or ``(*, m)`` for vectors (as :func:`solve`).
        rcond: singular values below ``rcond * max(S)`` count as zero. Default: machine epsilon
            of ``A``'s dtype times ``max(m, n)``.
        driver: ``'gels'``, ``'gelsy'``, ``'gelsd'`` or ``'gelss'``.

    Returns:
        ``(solution (*, n, k), residuals (*, k), rank (*), singular_values (*, min(m, n)))``.

    Example:
        >>> import spx
        >>> A = spx.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
        >>> spx.linalg.lstsq(A, spx.tensor([[1.0], [2.0], [3.0]])).solution.tolist()
        [[1.0], [2.0]]
    """
    driver = "gelsy" if driver is None else driver
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError(
            f"torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, "
            f"gelss), got {driver!r}"
        )
    a = floating(at_least_matrix(A, "lstsq"), "lstsq")
    b = tensor_arg(B, "linalg.lstsq", "B")
    vector = b.ndim == a.ndim - 1  # torch's rule for lstsq: one dimension fewer than A
    rows = b.shape[-1] if vector else b.shape[-2] if b.ndim >= 2 else -1
    if rows != a.shape[-2]:
        raise RuntimeError(
            f"torch.linalg.lstsq: input.size(-2) should match other.size(-2) (A has shape "
            f"{list(a.shape)}, B {list(b.shape)})"
        )
    _broadcast("lstsq", a, b, vector)
    if rcond is None:
        eps = float(np.finfo(np.dtype(jnp.finfo(a.dtype).dtype)).eps)
        rcond = eps * max(a.shape[-2:])
    static = (float(rcond), vector, driver)
    return Lstsq(*apply(_lstsq, static, (a, b), n_out=4))


def tensorinv(A: Any, ind: int = 2) -> Tensor:
    """The inverse of ``A`` seen as a linear map from its first ``ind`` dimensions to the rest
    (mirrors ``torch.linalg.tensorinv``): shape ``A.shape[ind:] + A.shape[:ind]``.

    Example:
        >>> import spx
        >>> spx.linalg.tensorinv(spx.eye(4).reshape(4, 2, 2), ind=1).shape
        spx.Size([2, 2, 4])
    """
    t = tensor_arg(A, "linalg.tensorinv", "A")
    ind = as_int(ind, "ind", "linalg.tensorinv")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(t.shape[:ind]), math.prod(t.shape[ind:])
    if rows != cols:
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[ind:]) == "
            f"prod(self.shape[:ind]), but got {cols} != {rows}"
        )
    out = inv(t.reshape(rows, cols))
    return out.reshape(*t.shape[ind:], *t.shape[:ind])


def tensorsolve(A: Any, B: Any, dims: Any = None) -> Tensor:
    """The ``X`` with ``tensordot(A, X, X.ndim) == B`` (mirrors ``torch.linalg.tensorsolve``).

    Args:
        A: ``B.shape + X.shape`` (after moving ``dims`` of ``A`` to the end).
        B: any shape with ``prod(B.shape) == prod(X.shape)``.
        dims: dimensions of ``A`` moved to the end first.

    Example:
        >>> import spx
        >>> spx.linalg.tensorsolve(spx.eye(6).reshape(2, 3, 6), spx.ones(2, 3)).shape
        spx.Size([6])
    """
    a = tensor_arg(A, "linalg.tensorsolve", "A")
    b = tensor_arg(B, "linalg.tensorsolve", "B")
    if dims is not None:
        src = _dims.dims(dims, a.ndim)
        a = a.movedim(src, tuple(range(a.ndim - len(src), a.ndim)))
    x_shape = tuple(a.shape[b.ndim :])
    rows, cols = b.numel(), math.prod(x_shape)
    if tuple(a.shape[: b.ndim]) != tuple(b.shape) or rows != cols:
        raise RuntimeError(
            f"linalg.tensorsolve: A's shape {list(a.shape)} must be B's shape {list(b.shape)} "
            f"followed by X's, with as many elements in X as in B (got {cols} != {rows})"
        )
    return solve(a.reshape(rows, cols), b.reshape(rows)).reshape(x_shape)
