"""torch's ``LinAlgError`` for a matrix that is singular or not positive-definite, and the
``info`` of the ``*_ex`` functions that report it instead of raising.

LAPACK reports a failed factorization through ``info``: for a Cholesky factorization the
order of the first leading minor that is not positive-definite, for an LU factorization the
1-based index of the first zero pivot. torch raises ``torch.linalg.LinAlgError`` with that
number (``cholesky``, ``inv``, ``solve``); JAX returns NaNs and infs. Here ``info`` is
computed on the device only when the result shows a failure (a ``lax.cond`` on a cheap test of
the result), and checked as the other value checks are (:mod:`spx._tensor.checks`): once the
step's program has run, at the latest at the next read on the host, without splitting the
step. Inside ``spx.compile`` nothing is checked (the NaNs stand), as for the other checks.

Example:
    >>> import spx
    >>> A = spx.tensor([[1.0, 2.0], [2.0, 1.0]])
    >>> spx.linalg.cholesky_ex(A).info.item()  # the leading minor of order 2 is not PD
    2
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from spx._tensor import checks, graph
from spx._tensor.dispatch import apply
from spx._tensor.tensor import Tensor
from spx.linalg._common import from_triangle

__all__ = [
    "LinAlgError", "check_later", "check_now", "cholesky_info", "first_zero_pivot", "lu_info",
    "solve_info",
]  # fmt: skip


class LinAlgError(RuntimeError):
    """A matrix is singular or not positive-definite (mirrors ``torch.linalg.LinAlgError``, a
    ``RuntimeError``): raised by ``cholesky``, ``inv``, ``solve`` and ``check_errors=True``."""


def _batch_all(ok: Any) -> Any:
    return jnp.all(ok, axis=(-2, -1))


def _failing_minor(a: Any) -> Any:
    """``(*)`` int32: the order of the first leading minor of the Hermitian ``a (*, n, n)``
    (lower triangle) that is not positive-definite, 0 if none: the unpivoted Cholesky
    factorization LAPACK's potrf runs, one column at a time."""
    n = a.shape[-1]
    below = jnp.arange(n)

    def column(j: Any, carry: tuple) -> tuple:
        m, info = carry
        d = jnp.real(m[..., j, j])
        bad = ~(d > 0)  # NaN too
        info = jnp.where(bad & (info == 0), j + 1, info)
        col = m[..., :, j] / jnp.sqrt(jnp.where(bad, 1, d))[..., None].astype(m.dtype)
        col = jnp.where(below > j, col, 0)
        return m - col[..., :, None] * jnp.conj(col[..., None, :]), info

    info = jnp.zeros(a.shape[:-2], jnp.int32)
    return lax.fori_loop(0, n, column, (a, info))[1]


def first_zero_pivot(a: Any) -> Any:
    """``(*)`` int32: getrf's info, the 1-based index of the first zero pivot of ``a``'s
    (partially pivoted) LU factorization, 0 if none."""
    lu, _, _ = lax.linalg.lu(lax.stop_gradient(a))
    zero = jnp.diagonal(lu, axis1=-2, axis2=-1) == 0
    return jnp.where(jnp.any(zero, axis=-1), jnp.argmax(zero, axis=-1) + 1, 0).astype(jnp.int32)


def _only_if(failed: Any, info_of: Callable[[Any], Any], a: Any) -> Any:
    # The factorization runs again only when some matrix failed (lax.cond runs one branch).
    zeros = jnp.zeros(failed.shape, jnp.int32)
    if a.shape[-1] == 0:
        return zeros  # 0 x 0 matrices factorize (there is no column to trace the loop over)
    return lax.cond(jnp.any(failed), lambda m: jnp.where(failed, info_of(m), 0), lambda m: zeros, a)


def _cholesky_info(a: Any, factor: Any, upper: bool) -> Any:
    # JAX's Cholesky factor of a matrix that is not positive-definite is all NaN (so is that
    # of a matrix holding a NaN, for which potrf fails too).
    failed = ~_batch_all(jnp.isfinite(factor))
    hermitian = from_triangle(lax.stop_gradient(a), upper)
    return _only_if(failed, _failing_minor, hermitian)


def _lu_info(a: Any, result: Any, result_batch: int, others_ok: Any = True) -> Any:
    # A zero pivot makes infs in the result; NaNs or infs in the inputs do too but are no
    # error in torch (getrf finds no exact zero then). info has a's batch shape, which the
    # result's may broadcast: a matrix fails if any of its results does.
    a = lax.stop_gradient(a)
    batch = result.shape[: result.ndim - result_batch]
    failed = ~jnp.all(jnp.isfinite(result), axis=tuple(range(len(batch), result.ndim)))
    lead = len(batch) - (a.ndim - 2)
    failed = jnp.any(failed, axis=tuple(range(lead)))
    spread = tuple(i for i, n in enumerate(a.shape[:-2]) if n == 1 and failed.shape[i] != 1)
    failed = jnp.any(failed, axis=spread, keepdims=True)
    failed = failed & _batch_all(jnp.isfinite(a)) & others_ok
    return _only_if(failed, first_zero_pivot, a)


def _solve_info(a: Any, x: Any, b: Any, vector: bool) -> Any:
    return _lu_info(a, x, 1 if vector else 2, jnp.all(jnp.isfinite(b)))


def _info(fn: Callable[..., Any], static: tuple, args: tuple) -> Tensor:
    previous = graph.set_grad_enabled_flag(False)
    try:
        return apply(fn, static, args)
    finally:
        graph.set_grad_enabled_flag(previous)


def cholesky_info(a: Tensor, factor: Tensor, upper: bool) -> Tensor:
    """``(*)`` int32: potrf's info for ``a`` (the triangle ``upper`` names), given JAX's
    Cholesky factor of it."""
    return _info(_cholesky_info, (upper,), (a, factor))


def lu_info(a: Tensor, inverse: Tensor) -> Tensor:
    """``(*)`` int32: getrf's info for ``a``, given the inverse computed from it."""
    return _info(_lu_info, (2,), (a, inverse))


def solve_info(a: Tensor, b: Tensor, x: Tensor, vector: bool) -> Tensor:
    """``(*)`` int32 over ``a``'s batch: getrf's info for ``a``, given the solution ``x`` of
    ``a x = b`` (``vector``: ``b`` and ``x`` are batches of vectors)."""
    return _info(_solve_info, (vector,), (a, x, b))


def _message(what: str, kind: str, batched: bool, index: int, number: int) -> str:
    where = f"(Batch element {index}): " if batched else ""
    if kind == "cholesky":
        return (
            f"{what}: {where}The factorization could not be completed because the input is not "
            f"positive-definite (the leading minor of order {number} is not positive-definite)."
        )
    if kind == "inv":
        return (
            f"{what}: {where}The diagonal element {number} is zero, the inversion could not be "
            "completed because the input matrix is singular."
        )
    return f"{what}: {where}The solver failed because the input matrix is singular."


def _raiser(what: str, kind: str, batched: bool) -> Callable[[np.ndarray], None]:
    def check(info: np.ndarray) -> None:
        flat = np.asarray(info).reshape(-1)
        bad = np.flatnonzero(flat)
        if bad.size:
            raise LinAlgError(_message(what, kind, batched, int(bad[0]), int(flat[bad[0]])))

    return check


def check_later(info: Tensor, what: str, kind: str, batched: bool) -> None:
    """Raise torch's LinAlgError once ``info`` is computed, if it reports a failure.

    Args:
        info: the ``(*)`` info of the factorizations.
        what: the function's name in the message (``"linalg.cholesky"``).
        kind: ``"cholesky"``, ``"inv"`` or ``"solve"`` (torch's message for each).
        batched: whether the input had batch dimensions (the message names the element).
    """
    checks.when_known(info, _raiser(what, kind, batched))


def check_now(info: Tensor, what: str, kind: str, batched: bool) -> None:
    """``check_errors=True``: read ``info`` now (a synchronization, as in torch) and raise."""
    _raiser(what, kind, batched)(np.asarray(info.numpy()))
