"""``MultivariateNormal``: the Gaussian on vectors (mirrors
``torch.distributions.MultivariateNormal``).

Everything is computed from the lower Cholesky factor ``L`` of the covariance (``L @ L.mT``):
the log-determinant is ``2 * sum(log(diag(L)))`` and Mahalanobis distances are triangular
solves, as in torch.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import spx
from spx._tensor._dims import Size
from spx._tensor.tensor import Tensor
from spx.distributions import constraints
from spx.distributions.distribution import Distribution
from spx.distributions.utils import as_tensor, lazy_property

__all__ = ["MultivariateNormal"]


def batch_mv(bmat: Tensor, bvec: Tensor) -> Tensor:
    """``bmat @ bvec`` for batches of ``(n, n)`` matrices and ``(n,)`` vectors whose batch
    shapes broadcast."""
    return spx.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def batch_mahalanobis(bL: Tensor, bx: Tensor) -> Tensor:
    """``x^T (L L^T)^{-1} x`` for a factored ``M = L L^T``; ``bL``'s batch shape broadcasts
    to ``bx``'s.

    As torch does, ``bx`` is reshaped so that its extra leading dims become columns of one
    triangular solve per matrix, instead of copying ``bL`` once per sample.
    """
    n = bx.size(-1)
    bx_batch_shape = tuple(bx.shape[:-1])
    bx_batch_dims = len(bx_batch_shape)
    bl_batch_dims = bL.dim() - 2
    outer_batch_dims = bx_batch_dims - bl_batch_dims
    old_batch_dims = outer_batch_dims + bl_batch_dims
    new_batch_dims = outer_batch_dims + 2 * bl_batch_dims
    # Reshape bx to (..., 1, i, j, 1, n).
    bx_new_shape = tuple(bx.shape[:outer_batch_dims])
    for s_l, s_x in zip(bL.shape[:-2], bx.shape[outer_batch_dims:-1], strict=True):
        bx_new_shape += (s_x // s_l, s_l)
    bx_new_shape += (n,)
    bx = bx.reshape(bx_new_shape)
    # Permute to (..., 1, j, i, 1, n).
    permute_dims = (
        list(range(outer_batch_dims))
        + list(range(outer_batch_dims, new_batch_dims, 2))
        + list(range(outer_batch_dims + 1, new_batch_dims, 2))
        + [new_batch_dims]
    )
    bx = bx.permute(permute_dims)

    flat_l = bL.reshape(-1, n, n)  # b x n x n
    flat_x = bx.reshape(-1, flat_l.size(0), n)  # c x b x n
    flat_x_swap = flat_x.permute(1, 2, 0)  # b x n x c
    m_swap = spx.linalg.solve_triangular(flat_l, flat_x_swap, upper=False).pow(2).sum(-2)
    m = m_swap.t()  # c x b

    # Undo the reshape and permutation.
    permuted_m = m.reshape(tuple(bx.shape[:-1]))
    permute_inv_dims = list(range(outer_batch_dims))
    for i in range(bl_batch_dims):
        permute_inv_dims += [outer_batch_dims + i, old_batch_dims + i]
    reshaped_m = permuted_m.permute(permute_inv_dims)
    return reshaped_m.reshape(bx_batch_shape)


def _precision_to_scale_tril(P: Tensor) -> Tensor:
    # The lower Cholesky factor of P^{-1} without forming the inverse (torch's recipe).
    lf = spx.linalg.cholesky(spx.flip(P, (-2, -1)))
    l_inv = spx.transpose(spx.flip(lf, (-2, -1)), -2, -1)
    eye = spx.eye(P.shape[-1], dtype=P.dtype)
    return spx.linalg.solve_triangular(l_inv, eye, upper=False)


class MultivariateNormal(Distribution):
    """Multivariate normal distribution with mean ``loc`` and one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril`` (``torch.distributions.MultivariateNormal``).

    ``scale_tril`` is the most efficient: everything is computed from the lower Cholesky
    factor, which the other two are factored into.

    Args:
        loc: mean, shape ``(*batch, n)``.
        covariance_matrix: positive-definite covariance, shape ``(*batch, n, n)``.
        precision_matrix: positive-definite precision (inverse covariance),
            ``(*batch, n, n)``.
        scale_tril: lower-triangular factor of the covariance with a positive diagonal,
            ``(*batch, n, n)``.
        validate_args: check the parameters and ``log_prob`` values.

    Example:
        >>> import spx
        >>> from spx.distributions import MultivariateNormal
        >>> m = MultivariateNormal(spx.zeros(2), spx.eye(2))
        >>> m.sample((5,)).shape
        spx.Size([5, 2])
        >>> round(m.log_prob(spx.zeros(2)).item(), 4)
        -1.8379
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc: Any,
        covariance_matrix: Any = None,
        precision_matrix: Any = None,
        scale_tril: Any = None,
        validate_args: bool | None = None,
    ) -> None:
        loc = spx.as_tensor(loc)
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        if scale_tril is not None:
            scale_tril = spx.as_tensor(scale_tril)
            matrix, name = scale_tril, "scale_tril matrix"
        elif covariance_matrix is not None:
            covariance_matrix = spx.as_tensor(covariance_matrix)
            matrix, name = covariance_matrix, "covariance_matrix"
        else:
            precision_matrix = spx.as_tensor(precision_matrix)
            matrix, name = precision_matrix, "precision_matrix"
        if matrix.dim() < 2:
            raise ValueError(
                f"{name} must be at least two-dimensional, with optional leading batch dimensions"
            )
        batch_shape = Size(spx.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        expanded = matrix.expand((*batch_shape, -1, -1))
        if scale_tril is not None:
            self.scale_tril = expanded
        elif covariance_matrix is not None:
            self.covariance_matrix = expanded
        else:
            self.precision_matrix = expanded
        self.loc = loc.expand((*batch_shape, -1))

        event_shape = self.loc.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = spx.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape: Any, _instance: Any = None) -> MultivariateNormal:
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = batch_shape + self.event_shape
        cov_shape = batch_shape + self.event_shape + self.event_shape
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        super(MultivariateNormal, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple[int, ...]:
        return (*self._batch_shape, *self._event_shape, *self._event_shape)

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        tril = self._unbroadcasted_scale_tril
        return spx.matmul(tril, tril.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        # torch.cholesky_inverse(L) = (L L^T)^{-1} = L^{-T} L^{-1}.
        tril = self._unbroadcasted_scale_tril
        eye = spx.eye(tril.shape[-1], dtype=tril.dtype)
        tril_inv = spx.linalg.solve_triangular(tril, eye, upper=False)
        return spx.matmul(tril_inv.mT, tril_inv).expand(self._matrix_shape())

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return (
            self._unbroadcasted_scale_tril.pow(2)
            .sum(-1)
            .expand((*self._batch_shape, *self._event_shape))
        )

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = spx.randn(shape, dtype=self.loc.dtype)
        return self.loc + batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        if len(self._batch_shape) == 0:
            return h
        return h.expand(self._batch_shape)
