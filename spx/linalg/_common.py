"""Shared pieces of ``spx.linalg``: argument checks with torch's messages, the Hermitian matrix
one triangle defines, and the tolerance rule of ``pinv``/``matrix_rank``."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from spx._tensor.methods.linalg import _square
from spx._tensor.tensor import Tensor
from spx._validate import as_float
from spx.ops._args import tensor_arg

__all__ = [
    "at_least_matrix", "floating", "from_triangle", "square", "tensor_arg", "tolerances", "uplo",
]  # fmt: skip


def floating(t: Tensor, what: str) -> Tensor:
    """``t`` if it is floating point or complex, else torch's error (integers have no LAPACK)."""
    if not jnp.issubdtype(t.dtype, jnp.inexact):
        raise RuntimeError(
            f"linalg.{what}: Expected a floating point or complex tensor as input. Got {t.dtype}; "
            f"convert it first: A.float()"
        )
    return t


def square(A: Any, what: str) -> Tensor:
    """``A`` as a Tensor of (batches of) square matrices, else torch's error naming ``what``."""
    t = tensor_arg(A, f"linalg.{what}", "A")
    _square(what, tuple(t.shape))
    return t


def at_least_matrix(A: Any, what: str) -> Tensor:
    """``A`` as a Tensor with at least two dimensions, else torch's error."""
    t = tensor_arg(A, f"linalg.{what}", "A")
    if t.ndim < 2:
        raise RuntimeError(
            f"linalg.{what}: The input tensor A must have at least 2 dimensions (got shape "
            f"{list(t.shape)}); a single vector is A.unsqueeze(0) or A.unsqueeze(-1)"
        )
    return t


def uplo(UPLO: Any) -> bool:
    """Whether ``UPLO`` names the upper triangle (torch's check of ``'L'``/``'U'``)."""
    if not isinstance(UPLO, str) or UPLO.upper() not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper() == "U"


def from_triangle(x: Any, upper: bool) -> Any:
    """The Hermitian matrix that one triangle of ``x`` defines, carrying ``x``'s gradient.

    torch's ``eigh``/``cholesky`` read one triangle and ignore the other, and their backward
    formulas give the (Hermitian) gradient of the whole matrix. The value here is the
    triangle mirrored; the gradient passes to ``x`` unchanged, and the symmetrization inside
    JAX's ``eigh``/``cholesky`` then makes it Hermitian, as torch's is.
    """
    tri = jnp.triu(x) if upper else jnp.tril(x)
    strict = jnp.triu(x, 1) if upper else jnp.tril(x, -1)
    if jnp.iscomplexobj(x):  # a Hermitian matrix's diagonal is real: LAPACK ignores its imag
        eye = jnp.eye(x.shape[-1], dtype=bool)
        tri = jnp.where(eye, jnp.real(tri).astype(x.dtype), tri)
    value = tri + jnp.conj(jnp.swapaxes(strict, -1, -2))
    # x - stop_gradient(x) is exactly 0 in value, and the identity in gradient.
    return lax.stop_gradient(value) + (x - lax.stop_gradient(x))


def tolerances(A: Tensor, atol: Any, rtol: Any, what: str) -> tuple[float, float]:
    """torch's ``(atol, rtol)`` of ``pinv``/``matrix_rank``: a singular value ``s`` counts when
    ``s > max(atol, rtol * s_max)``. Without ``rtol``, it is ``eps * max(m, n)`` if ``atol`` is
    unset or zero, and 0 if ``atol`` is positive (torch's rule)."""
    a = 0.0 if atol is None else _real(atol, "atol", what)
    if rtol is not None:
        return a, _real(rtol, "rtol", what)
    if a > 0:
        return a, 0.0
    real = np.finfo(np.dtype(jnp.finfo(A.dtype).dtype)).eps
    return a, float(real) * max(A.shape[-2:])


def _real(value: Any, name: str, what: str) -> float:
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ValueError(
                f"linalg.{what}: spx takes {name} as a number or a 0-d tensor, got shape "
                f"{list(value.shape)}; call it per matrix for per-matrix tolerances"
            )
        return float(value.item())
    return as_float(value, name, f"linalg.{what}", minimum=0)
