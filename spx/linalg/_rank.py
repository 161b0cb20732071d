"""The pseudo-inverse and the numerical rank (``spx.linalg.pinv``, ``matrix_rank``), with
torch's tolerance rule: a singular value ``s`` (an eigenvalue's magnitude with
``hermitian=True``) counts when ``s > max(atol, rtol * s_max)``.

Example:
    >>> import spx
    >>> spx.linalg.matrix_rank(spx.ones(3, 3)).item()
    1
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

from spx._tensor.dispatch import apply
from spx._tensor.tensor import Tensor
from spx.linalg._common import at_least_matrix, floating, from_triangle, tolerances

__all__ = ["matrix_rank", "pinv"]


def _spectrum(x: Any, hermitian: bool) -> Any:
    """The magnitudes the tolerance applies to: singular values, or ``|eigenvalues|``."""
    if hermitian:
        return jnp.abs(jnp.linalg.eigh(from_triangle(x, False), symmetrize_input=True)[0])
    return jnp.linalg.svd(x, compute_uv=False)


def _cutoff(s: Any, atol: float, rtol: float) -> Any:
    return jnp.maximum(atol, rtol * jnp.max(s, axis=-1, keepdims=True))


def _H(x: Any) -> Any:
    return jnp.conj(jnp.swapaxes(x, -1, -2))


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2, 3))
def _pinv(x: Any, atol: float, rtol: float, hermitian: bool) -> Any:
    if hermitian:
        w, v = jnp.linalg.eigh(from_triangle(x, False), symmetrize_input=True)
        keep = jnp.abs(w) > _cutoff(jnp.abs(w), atol, rtol)
        w_inv = jnp.where(keep, 1 / jnp.where(keep, w, 1), 0).astype(v.dtype)
        return (v * w_inv[..., None, :]) @ _H(v)
    u, s, vh = jnp.linalg.svd(x, full_matrices=False)
    keep = s > _cutoff(s, atol, rtol)
    s_inv = jnp.where(keep, 1 / jnp.where(keep, s, 1), 0).astype(u.dtype)
    return (_H(vh) * s_inv[..., None, :]) @ _H(u)


@_pinv.defjvp
def _pinv_jvp(atol: float, rtol: float, hermitian: bool, primals: tuple, tangents: tuple):
    # Golub & Pereyra's derivative of the pseudo-inverse at fixed rank, the formula torch's
    # pinv_backward (and jnp.linalg.pinv) use, also with hermitian=True: the truncated
    # decomposition's own derivative would differ where singular values were cut off.
    (a,), (da,) = primals, tangents
    p = _pinv(a, atol, rtol, hermitian)
    s = (p @ _H(p)) @ _H(da)
    t = (_H(da) @ _H(p)) @ p
    return p, -(p @ da) @ p + s - (s @ a) @ p + t - (p @ a) @ t


def _matrix_rank(x: Any, atol: float, rtol: float, hermitian: bool) -> Any:
    s = _spectrum(x, hermitian)
    return jnp.sum(s > _cutoff(s, atol, rtol), axis=-1).astype(jnp.int32)


def pinv(
    A: Any, rcond: Any = None, hermitian: bool = False, *, atol: Any = None, rtol: Any = None
) -> Tensor:
    """The Moore-Penrose pseudo-inverse (mirrors ``torch.linalg.pinv``).

    Args:
        A: ``(*, m, n)``, floating or complex.
        rcond: torch's older name for ``rtol`` (positional).
        hermitian: ``A`` is Hermitian: use its eigendecomposition (lower triangle read).
        atol: absolute tolerance (a number or 0-d tensor). Default: 0.
        rtol: relative tolerance. Default: ``eps * max(m, n)`` if ``atol`` is unset or zero,
            else 0 (torch's rule).

    Returns:
        ``(*, n, m)``.

    Example:
        >>> import spx
        >>> spx.linalg.pinv(spx.tensor([[2.0, 0.0], [0.0, 0.0]])).tolist()
        [[0.5, 0.0], [0.0, 0.0]]
    """
    t = floating(at_least_matrix(A, "pinv"), "pinv")
    if rcond is not None:
        if rtol is not None:
            raise TypeError("linalg.pinv: pass rtol= or its older name rcond, not both")
        rtol = rcond
    a, r = tolerances(t, atol, rtol, "pinv")
    return apply(_pinv, (a, r, bool(hermitian)), (t,))


def matrix_rank(
    A: Any, tol: Any = None, hermitian: bool = False, *, atol: Any = None, rtol: Any = None
) -> Tensor:
    """The numerical rank of matrices ``(*, m, n)``: ``(*)`` int (mirrors
    ``torch.linalg.matrix_rank``; int32 in spx, torch's int64).

    Args:
        A: ``(*, m, n)``, floating or complex.
        tol: torch's older form, ``atol=tol, rtol=0`` (positional).
        hermitian: ``A`` is Hermitian: count eigenvalue magnitudes (lower triangle read).
        atol: absolute tolerance. Default: 0.
        rtol: relative tolerance. Default as :func:`pinv`.

    Example:
        >>> import spx
        >>> spx.linalg.matrix_rank(spx.eye(4)).item()
        4
    """
    t = floating(at_least_matrix(A, "matrix_rank"), "matrix_rank")
    if tol is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg.matrix_rank: pass tol or atol=/rtol=, not both")
        atol, rtol = tol, 0.0
    a, r = tolerances(t, atol, rtol, "matrix_rank")
    return apply(_matrix_rank, (a, r, bool(hermitian)), (t,))
