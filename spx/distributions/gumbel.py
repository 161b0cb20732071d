"""``Gumbel``: the type-I extreme value distribution (mirrors ``torch.distributions.Gumbel``)."""

from __future__ import annotations

import math
from typing import Any

import spx
from spx._tensor.tensor import Tensor
from spx.distributions.loc_scale import LocScaleDistribution
from spx.distributions.utils import as_tensor, euler_constant

__all__ = ["Gumbel"]


class Gumbel(LocScaleDistribution):
    """Gumbel distribution with location ``loc`` and scale ``scale``
    (``torch.distributions.Gumbel``): the law of the maximum of many draws.

    Samples are ``loc - scale * log(-log(u))`` for ``u`` uniform in ``[tiny, 1 - eps)``, as
    torch's chain of transforms draws them, and are reparameterized; ``cdf`` and ``icdf`` go
    through that uniform as torch's do (``icdf(0)`` and ``icdf(1)`` are finite).

    Args:
        loc: location, the mode (float or Tensor).
        scale: scale, > 0 (float or Tensor).
        validate_args: check the parameters and ``log_prob`` values.

    Example:
        >>> import spx
        >>> from spx.distributions import Gumbel
        >>> m = Gumbel(spx.tensor([0.0]), spx.tensor([1.0]))
        >>> round(m.mean.item(), 4)  # Euler's constant
        0.5772
        >>> round(m.log_prob(spx.tensor([0.0])).item(), 4)  # -1
        -1.0
    """

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * euler_constant

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        finfo = spx.finfo(self.loc.dtype)
        u = spx.empty(shape, dtype=self.loc.dtype).uniform_(finfo.tiny, 1 - finfo.eps)
        return self.loc - self.scale * spx.log(-spx.log(u))

    def log_prob(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - spx.log(self.scale)

    def _uniform_range(self) -> tuple[float, float]:
        # torch's Gumbel transforms Uniform(tiny, 1 - eps): its cdf and icdf go through it.
        finfo = spx.finfo(self.loc.dtype)
        return finfo.tiny, 1 - finfo.eps - finfo.tiny

    def cdf(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        low, width = self._uniform_range()
        u = spx.exp(-spx.exp((self.loc - value) / self.scale))
        # torch re-centres the probability through 0.5 (its transforms' sign is a tensor):
        # the same rounding gives torch's small tail values.
        return (((u - low) / width).clamp(0, 1) - 0.5) + 0.5

    def icdf(self, value: Any) -> Tensor:
        low, width = self._uniform_range()
        p = (as_tensor(value) - 0.5) + 0.5  # as torch rounds it (see cdf)
        u = low + p * width  # icdf(0) and icdf(1) are finite, as torch's
        return self.loc - self.scale * spx.log(-spx.log(u))

    def entropy(self) -> Tensor:
        return spx.log(self.scale) + (1 + euler_constant)
