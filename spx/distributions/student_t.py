"""``StudentT``: Student's t-distribution (mirrors ``torch.distributions.StudentT``)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import spx
from spx._tensor._dims import Size
from spx._tensor.tensor import Tensor
from spx.distributions import constraints
from spx.distributions.chi2 import Chi2
from spx.distributions.distribution import Distribution
from spx.distributions.utils import as_tensor, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t-distribution with ``df`` degrees of freedom, shifted by ``loc`` and scaled
    by ``scale`` (``torch.distributions.StudentT``).

    ``rsample`` is reparameterized: a standard normal over the square root of a Chi2 draw
    divided by ``df`` (gradients reach ``df`` through the Chi2's implicit gradient).

    Args:
        df: degrees of freedom, > 0 (float or Tensor).
        loc: location (float or Tensor), 0 by default.
        scale: scale, > 0 (float or Tensor), 1 by default.
        validate_args: check the parameters and ``log_prob`` values.

    Example:
        >>> import spx
        >>> from spx.distributions import StudentT
        >>> m = StudentT(spx.tensor([3.0]))
        >>> m.variance.tolist()  # df / (df - 2)
        [3.0]
        >>> StudentT(spx.tensor([1.0])).mean.isnan().item()  # no mean for df <= 1
        True
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    def __init__(
        self, df: Any, loc: Any = 0.0, scale: Any = 1.0, validate_args: bool | None = None
    ) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> StudentT:
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = Size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        super(StudentT, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return spx.where(self.df <= 1, math.nan, self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        # df - 2 is replaced where it is not used, so that no inf/NaN reaches the gradient.
        finite = self.scale.pow(2) * df / spx.where(df > 2, df - 2, 1.0)
        value = spx.where(df > 2, finite, math.inf)
        return spx.where(df <= 1, math.nan, value)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x = spx.randn(shape, dtype=self.df.dtype)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * spx.rsqrt(z / self.df)

    def log_prob(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (
            spx.log(self.scale)
            + 0.5 * spx.log(self.df)
            + 0.5 * math.log(math.pi)
            + spx.lgamma(0.5 * self.df)
            - spx.lgamma(0.5 * (self.df + 1.0))
        )
        return -0.5 * (self.df + 1.0) * spx.log1p(y**2.0 / self.df) - z

    def entropy(self) -> Tensor:
        df = self.df
        lbeta = spx.lgamma(0.5 * df) + math.lgamma(0.5) - spx.lgamma(0.5 * (df + 1))
        return (
            spx.log(self.scale)
            + 0.5 * (df + 1) * (spx.digamma(0.5 * (df + 1)) - spx.digamma(0.5 * df))
            + 0.5 * spx.log(df)
            + lbeta
        )
