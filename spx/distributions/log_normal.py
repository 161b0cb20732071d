"""``LogNormal``: ``exp`` of a :class:`Normal` (mirrors ``torch.distributions.LogNormal``)."""

from __future__ import annotations

from typing import Any, ClassVar

import spx
from spx._tensor._dims import Size
from spx._tensor.tensor import Tensor
from spx.distributions import constraints
from spx.distributions.distribution import Distribution
from spx.distributions.normal import Normal
from spx.distributions.utils import as_tensor

__all__ = ["LogNormal"]


class LogNormal(Distribution):
    """``Y = exp(X)`` with ``X ~ Normal(loc, scale)`` (``torch.distributions.LogNormal``).

    torch builds it as a ``TransformedDistribution(Normal(loc, scale), ExpTransform())``;
    spx has no general transforms yet, so this class applies the exp transform's formulas
    directly: the same ``base_dist`` attribute, values and gradients, but it is not a
    ``TransformedDistribution`` (no ``transforms`` attribute).

    Args:
        loc: mean of ``log(Y)`` (float or Tensor).
        scale: standard deviation of ``log(Y)``, > 0 (float or Tensor).
        validate_args: check the parameters and ``log_prob`` values.

    Example:
        >>> import spx
        >>> from spx.distributions import LogNormal
        >>> m = LogNormal(spx.tensor([0.0]), spx.tensor([1.0]))
        >>> bool((m.sample((10,)) > 0).all())
        True
        >>> round(m.log_prob(spx.tensor([1.0])).item(), 4)
        -0.9189
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(self.base_dist.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> LogNormal:
        new = self._get_checked_instance(LogNormal, _instance)
        batch_shape = Size(batch_shape)
        new.base_dist = self.base_dist.expand(batch_shape)
        super(LogNormal, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def loc(self) -> Tensor:
        return self.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self) -> Tensor:
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self) -> Tensor:
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with spx.no_grad():
            return self.base_dist.sample(sample_shape).exp()

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.base_dist.rsample(sample_shape).exp()

    def log_prob(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        # The base density at x = log(y), minus log|dy/dx| = x (torch's order of terms).
        x = value.log()
        return -x + self.base_dist.log_prob(x)

    def cdf(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        return self.base_dist.cdf(value.log())

    def icdf(self, value: Any) -> Tensor:
        return self.base_dist.icdf(as_tensor(value)).exp()

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc
