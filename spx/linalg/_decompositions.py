"""Matrix decompositions: ``cholesky``, ``qr``, ``svd``/``svdvals``, ``eigh``/``eigvalsh``
(mirror ``torch.linalg``'s, with torch's named tuples).

JAX computes and differentiates them. ``eigh`` and ``cholesky`` read one triangle of ``A``, as
torch does, and their gradients are torch's (Hermitian). For a matrix that is not
positive-definite ``cholesky`` raises torch's ``LinAlgError`` once the value is computed (see
:mod:`spx.linalg._errors`), and ``cholesky_ex`` reports it as ``info``.

Example:
    >>> import spx
    >>> A = spx.tensor([[4.0, 2.0], [2.0, 3.0]])
    >>> L = spx.linalg.cholesky(A)
    >>> spx.allclose(L @ L.mT, A)
    True
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from spx._tensor.dispatch import apply
from spx._tensor.tensor import Tensor
from spx.linalg._common import at_least_matrix, floating, from_triangle, square, uplo
from spx.linalg._errors import check_later, check_now, cholesky_info

__all__ = [
    "QR", "SVD", "CholeskyEx", "Eigh", "cholesky", "cholesky_ex", "eigh", "eigvalsh", "qr", "svd",
    "svdvals",
]  # fmt: skip

_QR_MODES = ("reduced", "complete", "r")
_SVD_DRIVERS = (None, "gesvd", "gesvdj", "gesvda")


class CholeskyEx(NamedTuple):
    """``(L, info)`` of :func:`cholesky_ex` (torch's ``return_types.linalg_cholesky_ex``)."""

    L: Tensor
    info: Tensor


class QR(NamedTuple):
    """``(Q, R)`` of :func:`qr` (torch's ``return_types.linalg_qr``)."""

    Q: Tensor
    R: Tensor


class SVD(NamedTuple):
    """``(U, S, Vh)`` of :func:`svd` (torch's ``return_types.linalg_svd``)."""

    U: Tensor
    S: Tensor
    Vh: Tensor


class Eigh(NamedTuple):
    """``(eigenvalues, eigenvectors)`` of :func:`eigh` (torch's ``return_types.linalg_eigh``)."""

    eigenvalues: Tensor
    eigenvectors: Tensor


def _cholesky(x: Any, upper: bool) -> Any:
    L = lax.linalg.cholesky(from_triangle(x, upper), symmetrize_input=True)
    return jnp.conj(jnp.swapaxes(L, -1, -2)) if upper else L


def _qr(x: Any, mode: str) -> tuple:
    if mode == "r":  # torch returns an empty Q
        return jnp.zeros((0,), x.dtype), jnp.linalg.qr(x, mode="r")
    q, r = jnp.linalg.qr(x, mode=mode)
    return q, r


def _svd(x: Any, full_matrices: bool) -> tuple:
    m, n = x.shape[-2:]
    if not full_matrices or m == n:
        return jnp.linalg.svd(x, full_matrices=full_matrices)
    # JAX has no derivative for the complete U/Vh of a non-square matrix; torch's backward uses
    # only their first k columns/rows (the others are any basis of the complement). So: the
    # reduced factors, differentiable, completed by the complement from the complete SVD.
    u, s, vh = jnp.linalg.svd(x, full_matrices=False)
    u_full, _, vh_full = jnp.linalg.svd(jax.lax.stop_gradient(x), full_matrices=True)
    k = s.shape[-1]
    if m > n:
        u = jnp.concatenate([u, u_full[..., :, k:]], axis=-1)
    else:
        vh = jnp.concatenate([vh, vh_full[..., k:, :]], axis=-2)
    return u, s, vh


def _svdvals(x: Any) -> Any:
    return jnp.linalg.svd(x, compute_uv=False)


def _eigh(x: Any, upper: bool) -> tuple:
    w, v = jnp.linalg.eigh(from_triangle(x, upper), symmetrize_input=True)
    return w, v


def _eigvalsh(x: Any, upper: bool) -> Any:
    return jnp.linalg.eigh(from_triangle(x, upper), symmetrize_input=True)[0]


def cholesky(A: Any, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of Hermitian positive-definite matrices (mirrors
    ``torch.linalg.cholesky``): ``L`` lower triangular with ``A = L @ L.mH`` (``upper=True``:
    ``U = L.mH``, ``A = U.mH @ U``). Only the lower triangle of ``A`` is read (the upper one
    with ``upper=True``, as torch's LAPACK call).

    Args:
        A: ``(*, n, n)``, floating or complex.
        upper: return the upper triangular factor.

    Returns:
        ``(*, n, n)``.

    Raises:
        LinAlgError: some matrix is not positive-definite (torch's message, with the order
            of its first leading minor that is not): once the step's program has computed
            the factor, at the latest at the next read on the host (see
            :mod:`spx.linalg._errors`); :func:`cholesky_ex` reports it as ``info`` instead.
            Inside ``spx.compile`` the factor is NaN.

    Example:
        >>> import spx
        >>> spx.linalg.cholesky(spx.tensor([[4.0, 0.0], [0.0, 9.0]])).tolist()
        [[2.0, 0.0], [0.0, 3.0]]
    """
    return checked_cholesky(A, upper, "linalg.cholesky")


def checked_cholesky(A: Any, upper: bool, what: str) -> Tensor:
    """:func:`cholesky`, its failure reported under ``what`` (``Tensor.cholesky`` and the
    deprecated ``spx.cholesky`` are torch's ``cholesky:``)."""
    factor, info = cholesky_ex(A, upper=upper)
    check_later(info, what, "cholesky", factor.ndim > 2)
    return factor


def cholesky_ex(A: Any, *, upper: bool = False, check_errors: bool = False) -> CholeskyEx:
    """``(L, info)`` (mirrors ``torch.linalg.cholesky_ex``): :func:`cholesky`'s factor, NaN
    for a matrix that is not positive-definite, and ``info (*)`` int32: 0, or the order of the
    first leading minor of that matrix that is not positive-definite (LAPACK's potrf).

    Args:
        A: ``(*, n, n)``, floating or complex (one triangle read, as :func:`cholesky`).
        upper: the upper triangular factor.
        check_errors: raise :class:`LinAlgError` for a failure: reads ``info`` now (a
            synchronization point, as in torch), so it cannot run inside ``spx.compile``.

    Example:
        >>> import spx
        >>> spx.linalg.cholesky_ex(spx.tensor([[1.0, 2.0], [2.0, 1.0]])).info.item()
        2
    """
    t = floating(square(A, "cholesky"), "cholesky")
    factor = apply(_cholesky, (bool(upper),), (t,))
    info = cholesky_info(t, factor, bool(upper))
    if check_errors:
        check_now(info, "linalg.cholesky_ex", "cholesky", t.ndim > 2)
    return CholeskyEx(factor, info)


def qr(A: Any, mode: str = "reduced") -> QR:
    """The QR decomposition ``A = Q @ R`` (mirrors ``torch.linalg.qr``).

    Args:
        A: ``(*, m, n)``, floating or complex.
        mode: ``'reduced'`` (default): ``Q (*, m, k)``, ``R (*, k, n)`` with ``k = min(m, n)``;
            ``'complete'``: ``Q (*, m, m)``, ``R (*, m, n)``; ``'r'``: only ``R (*, k, n)``,
            with an empty ``Q`` (shape ``(0,)``), as torch.

    Example:
        >>> import spx
        >>> Q, R = spx.linalg.qr(spx.randn(4, 3))
        >>> tuple(Q.shape), tuple(R.shape)
        ((4, 3), (3, 3))
    """
    if mode not in _QR_MODES:
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
            "'r', or 'complete'"
        )
    t = floating(at_least_matrix(A, "qr"), "qr")
    return QR(*apply(_qr, (mode,), (t,), n_out=2))


def _driver(driver: Any) -> None:
    # torch takes driver= only for cuSOLVER; spx accepts the names and lets XLA choose.
    if driver not in _SVD_DRIVERS:
        raise RuntimeError(
            f"torch.linalg.svd: driver must be None, 'gesvd', 'gesvdj' or 'gesvda', got {driver!r}"
        )


def svd(A: Any, full_matrices: bool = True, *, driver: str | None = None) -> SVD:
    """The singular value decomposition ``A = U @ diag(S) @ Vh`` (mirrors
    ``torch.linalg.svd``; singular values in descending order).

    Args:
        A: ``(*, m, n)``, floating or complex.
        full_matrices: ``True`` (torch's default): ``U (*, m, m)``, ``Vh (*, n, n)``;
            ``False``: ``U (*, m, k)``, ``Vh (*, k, n)`` with ``k = min(m, n)``.
        driver: accepted for portability (torch's cuSOLVER choice); XLA picks the algorithm.

    Returns:
        ``(U, S, Vh)`` with ``S (*, k)`` real.

    Example:
        >>> import spx
        >>> U, S, Vh = spx.linalg.svd(spx.randn(4, 3), full_matrices=False)
        >>> tuple(U.shape), tuple(S.shape), tuple(Vh.shape)
        ((4, 3), (3,), (3, 3))
    """
    _driver(driver)
    t = floating(at_least_matrix(A, "svd"), "svd")
    return SVD(*apply(_svd, (bool(full_matrices),), (t,), n_out=3))


def svdvals(A: Any, *, driver: str | None = None) -> Tensor:
    """The singular values of ``A`` ``(*, m, n)``, descending: ``(*, min(m, n))`` (mirrors
    ``torch.linalg.svdvals``).

    Example:
        >>> import spx
        >>> spx.linalg.svdvals(spx.tensor([[3.0, 0.0], [0.0, -4.0]])).tolist()
        [4.0, 3.0]
    """
    _driver(driver)
    t = floating(at_least_matrix(A, "svdvals"), "svdvals")
    return apply(_svdvals, (), (t,))


def eigh(A: Any, UPLO: str = "L") -> Eigh:
    """Eigenvalues (ascending, real) and eigenvectors (columns) of Hermitian matrices (mirrors
    ``torch.linalg.eigh``); only the ``UPLO`` triangle of ``A`` is read.

    Args:
        A: ``(*, n, n)``, floating or complex.
        UPLO: ``'L'`` (default) or ``'U'``: the triangle that defines the matrix.

    Returns:
        ``(eigenvalues (*, n), eigenvectors (*, n, n))``. Eigenvectors are unique only up to
        sign (phase, for complex), as torch's; compare reconstructions, not vectors.

    Example:
        >>> import spx
        >>> spx.linalg.eigh(spx.tensor([[2.0, 1.0], [1.0, 2.0]])).eigenvalues.tolist()
        [1.0, 3.0]
    """
    upper = uplo(UPLO)
    t = floating(square(A, "eigh"), "eigh")
    return Eigh(*apply(_eigh, (upper,), (t,), n_out=2))


def eigvalsh(A: Any, UPLO: str = "L") -> Tensor:
    """The eigenvalues of Hermitian matrices, ascending: ``(*, n)`` real (mirrors
    ``torch.linalg.eigvalsh``).

    Example:
        >>> import spx
        >>> spx.linalg.eigvalsh(spx.tensor([[2.0, 0.0], [0.0, -1.0]])).tolist()
        [-1.0, 2.0]
    """
    upper = uplo(UPLO)
    t = floating(square(A, "eigvalsh"), "eigvalsh")
    return apply(_eigvalsh, (upper,), (t,))
