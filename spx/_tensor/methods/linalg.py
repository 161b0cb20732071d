"""Matrix products and linear algebra of :class:`spx.Tensor` (``@``, ``mm``, ``bmm``, ``addmm``,
``outer``, ``cross``, ``det``, ``inverse``, ...).

Shapes are checked before recording so that a mismatch is torch's ``RuntimeError`` with torch's
message (``mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)``), not JAX's ``TypeError``.
Decompositions and inverses are JAX's (``jnp.linalg``), differentiated by JAX.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from spx._tensor import _dims
from spx._tensor.dispatch import apply


class SignLogAbsDet(NamedTuple):
    """``(sign, logabsdet)`` of ``slogdet`` (torch's ``return_types.slogdet``)."""

    sign: Any
    logabsdet: Any


_OPERANDS = (int, float, complex, np.ndarray, np.generic, jax.Array)


def _checked(other: Any) -> bool:
    """Whether a binary operator should handle ``other`` (else NotImplemented)."""
    return hasattr(other, "_ref") or isinstance(other, _OPERANDS)


# Shape checks run inside the recorded functions: they run while shapes are inferred, once
# per signature, so a well-shaped call pays nothing for them; a bad one raises torch's error.
def _matmul(x: Any, y: Any) -> Any:
    _matmul_shapes(x.shape, y.shape)
    if x.ndim > 2 and y.ndim == 2:
        # One GEMM over the flattened leading dims (see spx.nn.functional.linear for why: XLA's
        # CPU gradient of a multi-dim contraction is much slower). The reshapes are free.
        return jnp.matmul(x.reshape(math.prod(x.shape[:-1]), x.shape[-1]), y).reshape(
            *x.shape[:-1], y.shape[-1]
        )
    return jnp.matmul(x, y)


def _mm(x: Any, y: Any) -> Any:
    if x.ndim != 2:
        raise RuntimeError(f"self must be a matrix (mm got a {x.ndim}-D tensor)")
    if y.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix (mm got a {y.ndim}-D tensor)")
    return _matmul(x, y)


def _bmm(x: Any, y: Any) -> Any:
    if x.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor (got {x.ndim}-D)")
    if y.ndim != 3:
        raise RuntimeError(f"batch2 must be a 3D tensor (got {y.ndim}-D)")
    if y.shape[:2] != (x.shape[0], x.shape[2]):
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{x.shape[0]}, {x.shape[2]}] but got: [{y.shape[0]}, {y.shape[1]}]."
        )
    return jnp.matmul(x, y)


def _mv(x: Any, y: Any) -> Any:
    if x.ndim != 2 or y.ndim != 1 or x.shape[1] != y.shape[0]:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got {y.ndim}, {x.ndim}, {y.ndim} "
            f"(shapes {list(x.shape)} and {list(y.shape)})"
        )
    return jnp.matmul(x, y)


def _dot(x: Any, y: Any) -> Any:
    if x.ndim != 1 or y.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {x.ndim}D and {y.ndim}D tensors")
    if x.shape != y.shape:
        a, b = x.shape[0], y.shape[0]
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a}] and src [{b}] to have the same "
            f"number of elements, but got {a} and {b} elements respectively"
        )
    return jnp.dot(x, y)


def _vdot(x: Any, y: Any) -> Any:
    return jnp.vdot(x, y)


def _inner(x: Any, y: Any) -> Any:
    return jnp.inner(x, y)


def _outer(x: Any, y: Any) -> Any:
    return jnp.outer(x, y)


def _kron(x: Any, y: Any) -> Any:
    return jnp.kron(x, y)


def _addmm(x: Any, a: Any, b: Any, beta: Any, alpha: Any) -> Any:
    return beta * x + alpha * _matmul(a, b)


def _addmv(x: Any, mat: Any, vec: Any, beta: Any, alpha: Any) -> Any:
    # _addmm's arithmetic, apart for autocast: torch's CPU list has addmm but not addmv.
    return _addmm(x, mat, vec, beta, alpha)


def _addbmm(x: Any, a: Any, b: Any, beta: Any, alpha: Any) -> Any:
    return beta * x + alpha * jnp.sum(_matmul(a, b), axis=0)


def _addr(x: Any, a: Any, b: Any, beta: Any, alpha: Any) -> Any:
    return beta * x + alpha * jnp.outer(a, b)


def _cross(x: Any, y: Any, axis: int) -> Any:
    return jnp.cross(x, y, axis=axis)


def _det(x: Any) -> Any:
    return jnp.linalg.det(x)


def _inverse(x: Any) -> Any:
    return jnp.linalg.inv(x)


def _slogdet(x: Any) -> tuple:
    sign, logabs = jnp.linalg.slogdet(x)
    return sign, logabs


def _logdet(x: Any) -> Any:
    sign, logabs = jnp.linalg.slogdet(x)
    return jnp.where(sign < 0, jnp.nan, jnp.where(sign == 0, -jnp.inf, logabs))


def _matrix_power(x: Any, n: int) -> Any:
    return jnp.linalg.matrix_power(x, n)


def _matrix_exp(x: Any) -> Any:
    return jax.scipy.linalg.expm(x)


def _pinverse(x: Any, rcond: float) -> Any:
    return jnp.linalg.pinv(x, rtol=rcond)


def _adjoint(x: Any) -> Any:
    return jnp.conj(jnp.swapaxes(x, -1, -2))


def _matmul_shapes(a: tuple, b: tuple) -> None:
    """torch's error for ``a @ b`` whose inner sizes differ (JAX's would be a TypeError)."""
    if not a or not b:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {len(a)}D and {len(b)}D"
        )
    k_a = a[-1]
    k_b = b[0] if len(b) == 1 else b[-2]
    if k_a != k_b:
        rows = a if len(a) < 2 else (math.prod(a[:-1]), a[-1])
        cols = b if len(b) < 2 else (b[-2], b[-1])
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, rows))} and "
            f"{'x'.join(map(str, cols))})"
        )


def _shape_of(x: Any) -> tuple:
    return tuple(x._aval.shape) if hasattr(x, "_ref") else tuple(jnp.shape(x))


def _square(what: str, shape: tuple) -> None:
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise RuntimeError(
            f"linalg.{what}: A must be batches of square matrices, but they are "
            f"{' by '.join(map(str, shape[-2:])) if len(shape) >= 2 else f'{len(shape)}-D'} "
            "matrices"
        )


class SVDResult(NamedTuple):
    """``(U, S, V)`` of the older ``Tensor.svd`` / ``spx.svd`` (torch's ``return_types.svd``)."""

    U: Any
    S: Any
    V: Any


class LinalgMethods:
    """Matrix products, triangular-free linear algebra, conjugate transposes."""

    __slots__ = ()

    def matmul(self, other: Any) -> Any:
        """Matrix product with numpy/torch broadcasting (mirrors ``torch.matmul``)."""
        return apply(_matmul, (), (self, other))

    def __matmul__(self, other: Any) -> Any:
        if not _checked(other):
            return NotImplemented
        return apply(_matmul, (), (self, other))

    def __rmatmul__(self, other: Any) -> Any:
        if not _checked(other):
            return NotImplemented
        return apply(_matmul, (), (other, self))

    def mm(self, mat2: Any) -> Any:
        """``(n, k) @ (k, m)`` (both 2-D, mirrors ``torch.mm``)."""
        return apply(_mm, (), (self, mat2))

    def bmm(self, mat2: Any) -> Any:
        """``(b, n, k) @ (b, k, m)`` (both 3-D, same batch; mirrors ``torch.bmm``)."""
        return apply(_bmm, (), (self, mat2))

    def mv(self, vec: Any) -> Any:
        """``(n, m) @ (m,)`` (mirrors ``torch.mv``)."""
        return apply(_mv, (), (self, vec))

    def dot(self, other: Any) -> Any:
        """Inner product of two 1-D tensors of the same size (mirrors ``torch.dot``)."""
        return apply(_dot, (), (self, other))

    def vdot(self, other: Any) -> Any:
        return apply(_vdot, (), (self, other))

    def inner(self, other: Any) -> Any:
        """Sum over the last dimensions of both (mirrors ``torch.inner``)."""
        return apply(_inner, (), (self, other))

    def outer(self, vec2: Any) -> Any:
        """``self[:, None] * vec2[None, :]`` of two 1-D tensors (mirrors ``torch.outer``)."""
        return apply(_outer, (), (self, vec2))

    ger = outer

    def kron(self, other: Any) -> Any:
        return apply(_kron, (), (self, other))

    def addmm(self, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
        """``beta * self + alpha * (mat1 @ mat2)``."""
        return apply(_addmm, (), (self, mat1, mat2, beta, alpha))

    def baddbmm(self, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
        """``beta * self + alpha * (batch1 @ batch2)`` for batches of matrices."""
        return apply(_addmm, (), (self, batch1, batch2, beta, alpha))

    def addbmm(self, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
        """``beta * self + alpha * sum_b(batch1[b] @ batch2[b])``."""
        return apply(_addbmm, (), (self, batch1, batch2, beta, alpha))

    def addmv(self, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
        """``beta * self + alpha * (mat @ vec)``."""
        return apply(_addmv, (), (self, mat, vec, beta, alpha))

    def addr(self, vec1: Any, vec2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
        """``beta * self + alpha * outer(vec1, vec2)``."""
        return apply(_addr, (), (self, vec1, vec2, beta, alpha))

    def cross(self, other: Any, dim: int | None = None) -> Any:
        """Cross product of 3-vectors along ``dim`` (default: the first dimension of size 3)."""
        if len(self.shape) != len(_shape_of(other)):
            # torch's rule (and a dim counted on one shape would mean another in the other).
            raise RuntimeError(
                "linalg.cross: inputs must have the same number of dimensions. Got shapes "
                f"{list(self.shape)} and {list(_shape_of(other))}; unsqueeze the smaller one"
            )
        try:
            shape = tuple(np.broadcast_shapes(tuple(self.shape), _shape_of(other)))
        except ValueError:
            raise RuntimeError(
                f"linalg.cross: the shapes {list(self.shape)} and {list(_shape_of(other))} do "
                "not broadcast"
            ) from None
        if dim is None:
            dim = next((i for i, s in enumerate(shape) if s == 3), None)
            if dim is None:
                raise RuntimeError(f"no dimension of size 3 in input {list(shape)}")
        d = _dims.dim(dim, len(shape))
        if shape[d] != 3:
            raise RuntimeError(
                f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                f"{list(self.shape)} and {list(_shape_of(other))}"
            )
        return apply(_cross, (d,), (self, other))

    def dist(self, other: Any, p: float = 2.0) -> Any:
        """The p-norm of ``self - other``."""
        return (self - other).norm(p)

    # -- torch's older decompositions, on torch.linalg's --------------------------------------
    def svd(self, some: bool = True, compute_uv: bool = True) -> SVDResult:
        """``(U, S, V)`` with ``A = U @ diag(S) @ V.mH`` (``V``, not ``linalg.svd``'s ``Vh``);
        ``some=False`` gives square ``U (*, m, m)`` and ``V (*, n, n)``. With
        ``compute_uv=False``, ``U`` and ``V`` are zero-filled ``(*, m, m)`` / ``(*, n, n)``, as
        torch's."""
        from spx import linalg

        if not compute_uv:
            *batch, m, n = self.shape
            S = linalg.svdvals(self)
            zeros = jnp.zeros((*batch, m, m), self.dtype), jnp.zeros((*batch, n, n), self.dtype)
            return SVDResult(type(self)._of(zeros[0]), S, type(self)._of(zeros[1]))
        U, S, Vh = linalg.svd(self, full_matrices=not some)
        return SVDResult(U, S, Vh.mH)

    def qr(self, some: bool = True) -> Any:
        """``(Q, R)``: ``linalg.qr`` with ``mode='reduced'`` (``some=True``) or ``'complete'``."""
        from spx import linalg

        return linalg.qr(self, mode="reduced" if some else "complete")

    def cholesky(self, upper: bool = False) -> Any:
        """The Cholesky factor, lower (or ``upper``) triangular: ``linalg.cholesky``."""
        from spx.linalg._decompositions import checked_cholesky

        return checked_cholesky(self, upper, "cholesky")

    # -- square matrices (batched over leading dimensions) -------------------------------------
    def det(self) -> Any:
        _square("det", self._aval.shape)
        return apply(_det, (), (self,))

    def inverse(self) -> Any:
        """The inverse (``linalg.inv``): torch's LinAlgError for a singular matrix, raised once
        the value is computed (see ``spx.linalg._errors``)."""
        from spx.linalg import _errors

        _square("inv", self._aval.shape)
        inverse = apply(_inverse, (), (self,))
        info = _errors.lu_info(self, inverse)
        _errors.check_later(info, "linalg.inv", "inv", self.ndim > 2)
        return inverse

    def logdet(self) -> Any:
        """log(det): NaN for a negative determinant, -inf for a singular matrix (as torch)."""
        _square("logdet", self._aval.shape)
        return apply(_logdet, (), (self,))

    def slogdet(self) -> tuple:
        """``(sign, log|det|)``."""
        _square("slogdet", self._aval.shape)
        return SignLogAbsDet(*apply(_slogdet, (), (self,), n_out=2))

    def matrix_power(self, n: int) -> Any:
        _square("matrix_power", self._aval.shape)
        return apply(_matrix_power, (int(n),), (self,))

    def matrix_exp(self) -> Any:
        _square("matrix_exp", self._aval.shape)
        return apply(_matrix_exp, (), (self,))

    def pinverse(self, rcond: float = 1e-15) -> Any:
        """Moore-Penrose pseudo-inverse (singular values below ``rcond * max`` dropped)."""
        return apply(_pinverse, (float(rcond),), (self,))

    # -- conjugate transposes -------------------------------------------------------------------
    def adjoint(self) -> Any:
        """The conjugate transpose of the last two dimensions (a copy in spx)."""
        if self.ndim < 2:
            raise RuntimeError(
                "tensor.adjoint() is only supported on matrices or batches of matrices"
            )
        if not jnp.issubdtype(self.dtype, jnp.complexfloating):
            return self.transpose(-2, -1)
        return apply(_adjoint, (), (self,))

    @property
    def mH(self) -> Any:
        return self.adjoint()

    @property
    def H(self) -> Any:
        if self.ndim != 2:
            raise RuntimeError(
                f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor."
            )
        return self.adjoint()
