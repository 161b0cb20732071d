"""``orthogonal``: an orthogonal (unitary) parametrization of a matrix or a batch of matrices
(mirrors ``torch.nn.utils.parametrizations.orthogonal``).

Three maps from an unconstrained tensor to an orthogonal ``Q``: the matrix exponential and the
Cayley map of a skew-symmetric matrix, and a product of Householder reflectors. The Householder
product is computed here (:func:`_householder_product`) because JAX's LAPACK one has no
derivative and ``spx.linalg`` has no ``householder_product`` yet; ``torch.geqrf``'s reflectors
come from ``jnp.linalg.qr(mode="raw")``.
"""

from __future__ import annotations

from enum import Enum, auto
from typing import Any, TypeVar

import jax.numpy as jnp
from jax import lax

from spx._tensor.dispatch import apply
from spx._tensor.grad_mode import no_grad
from spx._tensor.tensor import Tensor
from spx.linalg import solve
from spx.nn.module import Module
from spx.nn.utils import parametrize
from spx.ops.creation import eye, randn
from spx.ops.shape import cat

M = TypeVar("M", bound=Module)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


# -- array functions (recorded with ``apply``; JAX differentiates them) -----------------------
def _householder_product(a: Any, tau: Any) -> Any:
    """``H_1 ... H_k`` times the first ``n`` columns of the identity, ``H_i = I - tau_i v_i
    v_i^H``, ``v_i`` the ``i``-th column of ``a`` below the diagonal with a 1 on it
    (``torch.linalg.householder_product``). ``a``: ``(*, m, n)``, ``tau``: ``(*, k)``."""
    m, k = a.shape[-2], tau.shape[-1]
    rows = jnp.arange(m)
    q = jnp.broadcast_to(jnp.eye(m, a.shape[-1], dtype=a.dtype), a.shape)

    def reflect(q: Any, i: Any) -> tuple[Any, None]:
        v = jnp.where(rows > i, jnp.take(a, i, axis=-1), (rows == i).astype(a.dtype))
        w = jnp.einsum("...m,...mn->...n", jnp.conj(v), q)
        t = jnp.take(tau, i, axis=-1)[..., None, None]
        return q - t * v[..., :, None] * w[..., None, :], None

    # The last reflector acts first; a scan keeps the program one loop for any k.
    q, _ = lax.scan(reflect, q, jnp.arange(k - 1, -1, -1))
    return q


def _sign(d: Any) -> Any:
    if jnp.iscomplexobj(d):
        return jnp.where(d == 0, 0, d / jnp.where(d == 0, 1, jnp.abs(d)))
    return jnp.sign(d)


def _make_orthogonal(a: Any) -> Any:
    """The Q of ``a = QR`` (``a`` tall) with ``diag(R)`` real and non-negative (unique)."""
    q, r = jnp.linalg.qr(a)
    return q * _sign(jnp.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def _householder_inverse(q: Any) -> Any:
    """The reflectors of ``q``'s QR decomposition (``q`` tall) with the signs of ``diag(R)``
    on the diagonal, as torch's right_inverse stores them (a reflector LAPACK skipped,
    ``tau == 0``, has its sign flipped)."""
    h, tau = jnp.linalg.qr(q, mode="raw")
    a = jnp.swapaxes(h, -1, -2)  # numpy's raw mode is geqrf's output transposed
    d = jnp.sign(jnp.diagonal(a, axis1=-2, axis2=-1))
    d = jnp.where(tau == 0.0, -d, d)
    idx = jnp.arange(d.shape[-1])
    return a.at[..., idx, idx].set(d)


def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.shape[-2], Q.shape[-1]
    eps = 10.0 * n * float(jnp.finfo(Q.dtype).eps)  # reasonable, but not too large (torch's)
    return bool((Q.mH @ Q).allclose(eye(k, dtype=Q.dtype), atol=eps))


# -- the parametrization -----------------------------------------------------------------------
class _Orthogonal(Module):
    """An orthogonal ``Q`` from an unconstrained tensor of the same shape (wide matrices are
    handled transposed). With ``use_trivialization`` the buffer ``base`` holds an orthogonal
    matrix the map's output is multiplied by ("dynamic trivialization")."""

    def __init__(
        self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True
    ) -> None:
        super().__init__()
        # Complex reflectors would need tau stored too: torch refuses them, so do we.
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            # n*k - k(k-1)/2 parameters: the lower triangle, embedded in a square matrix.
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH  # skew-symmetric (skew-Hermitian)
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = A.matrix_exp()
            else:  # the Cayley retraction (I + A/2)(I - A/2)^{-1}
                Id = eye(n, dtype=A.dtype)
                Q = solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = apply(_householder_product, (), (A, tau))
            # The diagonal of X holds the signs: cast to int, it gets no gradient (as torch).
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q: Tensor) -> Tensor:
        if Q.shape != self.shape:
            raise ValueError(
                f"Expected a matrix or batch of matrices of shape {self.shape}. "
                f"Got a tensor of shape {Q.shape}."
            )
        Q_init = Q
        n, k = Q.shape[-2], Q.shape[-1]
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                # The forward map has no known inverse there (torch's note on Cayley/expm).
                raise NotImplementedError(
                    "It is not possible to assign to the matrix exponential or the Cayley "
                    "parametrizations when use_trivialization=False."
                )
            A = apply(_householder_inverse, (), (Q,))
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else apply(_make_orthogonal, (), (Q,))
        else:
            # Complete Q to a full n x n orthogonal matrix with random columns.
            N = randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype)
            Q = apply(_make_orthogonal, (), (cat([Q, N], dim=-1),))
        self.base = Q
        # -Id: the Householder map sends it to Id (its diagonal holds the signs), and in the
        # other maps X - X.mH cancels it to 0, whose exponential is Id: forward gives base.
        n0, k0 = Q_init.shape[-2], Q_init.shape[-1]
        return -eye(n0, k0, dtype=Q_init.dtype).expand(*Q_init.shape)


def orthogonal(
    module: M,
    name: str = "weight",
    orthogonal_map: str | None = None,
    *,
    use_trivialization: bool = True,
) -> M:
    """Make ``module.<name>`` an orthogonal (unitary) matrix or batch of matrices (mirrors
    ``torch.nn.utils.parametrizations.orthogonal``).

    ``Q`` of shape ``(*, m, n)`` has orthonormal columns if ``m >= n``, rows otherwise. The
    unconstrained tensor is ``module.parametrizations.<name>.original``; with
    ``use_trivialization`` the orthogonal matrix it starts from is the buffer
    ``parametrizations.<name>.0.base``. The initial ``Q`` is the current tensor if it is
    orthogonal, else the Q of its QR decomposition.

    Args:
        module: the module holding the tensor.
        name: the tensor's name.
        orthogonal_map: ``"matrix_exp"``, ``"cayley"`` or ``"householder"``; default
            ``"matrix_exp"`` for square or complex matrices, ``"householder"`` otherwise.
        use_trivialization: keep the ``base`` buffer (dynamic trivialization).

    Returns:
        ``module``, parametrized.

    Raises:
        ValueError: no tensor ``name``, fewer than 2 dims, an unknown ``orthogonal_map``, or
            ``"householder"`` on a complex tensor.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> m = nn.utils.parametrizations.orthogonal(nn.Linear(3, 5))
        >>> Q = m.weight
        >>> bool(spx.allclose(Q.T @ Q, spx.eye(3), atol=1e-5))
        True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    # One dim would be the sphere: torch refuses it as more confusing than helpful.
    if weight.ndim < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = _OrthMaps.__members__.get(orthogonal_map)
    if orth_enum is None:
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
            f"Got: {orthogonal_map}"
        )
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
