"""``Cauchy``: the Lorentz distribution (mirrors ``torch.distributions.Cauchy``)."""

from __future__ import annotations

import math
from typing import Any

import spx
from spx._tensor.tensor import Tensor
from spx.distributions.loc_scale import LocScaleDistribution
from spx.distributions.utils import as_tensor

__all__ = ["Cauchy"]


class Cauchy(LocScaleDistribution):
    """Cauchy distribution with median ``loc`` and half width ``scale``
    (``torch.distributions.Cauchy``): the ratio of two independent standard normals.

    It has no mean (``mean`` is NaN) and no variance (``variance`` is inf), as in torch.

    Args:
        loc: the median and mode (float or Tensor).
        scale: half width at half maximum, > 0 (float or Tensor).
        validate_args: check the parameters and ``log_prob`` values.

    Example:
        >>> import spx
        >>> from spx.distributions import Cauchy
        >>> m = Cauchy(spx.tensor([0.0]), spx.tensor([1.0]))
        >>> m.sample((2,)).shape
        spx.Size([2, 1])
        >>> round(m.log_prob(spx.tensor([0.0])).item(), 4)  # -log(pi)
        -1.1447
    """

    @property
    def mean(self) -> Tensor:
        return spx.full(self._extended_shape(), math.nan, dtype=self.loc.dtype)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return spx.full(self._extended_shape(), math.inf, dtype=self.loc.dtype)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = spx.empty(shape, dtype=self.loc.dtype).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - spx.log(self.scale) - spx.log1p(z**2)

    def cdf(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        return spx.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Any) -> Tensor:
        value = as_tensor(value)
        return spx.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + spx.log(self.scale)
