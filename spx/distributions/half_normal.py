"""``HalfNormal``: the absolute value of a centred normal (mirrors
``torch.distributions.HalfNormal``)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import spx
from spx._tensor._dims import Size
from spx._tensor.tensor import Tensor
from spx.distributions import constraints
from spx.distributions.distribution import Distribution
from spx.distributions.normal import Normal
from spx.distributions.utils import as_tensor

__all__ = ["HalfNormal"]


class HalfNormal(Distribution):
    """``|X|`` for ``X ~ Normal(0, scale)`` (``torch.distributions.HalfNormal``).

    Args:
        scale: scale of the underlying normal, > 0 (float or Tensor).
        validate_args: check the parameter and ``log_prob`` values.

    Example:
        >>> import spx
        >>> from spx.distributions import HalfNormal
        >>> m = HalfNormal(spx.tensor([1.0]))
        >>> bool((m.sample((4,)) >= 0).all())
        True
        >>> round(m.log_prob(spx.tensor([0.0])).item(), 4)  # log(2) - log(sqrt(2 pi))
        -0.2258
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale: Any, validate_args: bool | None = None) -> None:
        self.base_dist = Normal(0, scale, validate_args=False)
        super().__init__(self.base_dist.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> HalfNormal:
        new = self._get_checked_instance(HalfNormal, _instance)
        batch_shape = Size(batch_shape)
        new.base_dist = self.base_dist.expand(batch_shape)
        super(HalfNormal, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def mode(self) -> Tensor:
        return spx.zeros_like(self.scale)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.base_dist.rsample(sample_shape).abs()

    def log_prob(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return spx.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Any) -> Tensor:
        return self.base_dist.icdf((as_tensor(prob) + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)
