"""``Laplace``: the double exponential (mirrors ``torch.distributions.Laplace``)."""

from __future__ import annotations

from typing import Any

import spx
from spx._tensor.tensor import Tensor
from spx.distributions.loc_scale import LocScaleDistribution
from spx.distributions.utils import as_tensor

__all__ = ["Laplace"]


class Laplace(LocScaleDistribution):
    """Laplace distribution with location ``loc`` and scale ``scale``
    (``torch.distributions.Laplace``).

    Args:
        loc: mean (float or Tensor).
        scale: scale, > 0 (float or Tensor); the standard deviation is ``sqrt(2) * scale``.
        validate_args: check the parameters and ``log_prob`` values.

    Example:
        >>> import spx
        >>> from spx.distributions import Laplace
        >>> m = Laplace(spx.tensor([0.0]), spx.tensor([1.0]))
        >>> m.sample().shape
        spx.Size([1])
        >>> round(m.log_prob(spx.tensor([0.0])).item(), 4)
        -0.6931
    """

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return (2**0.5) * self.scale

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = spx.finfo(self.loc.dtype).eps
        # u in [eps - 1, 1): |u| < 1, so log1p(-|u|) stays finite.
        u = spx.empty(shape, dtype=self.loc.dtype).uniform_(eps - 1, 1)
        return self.loc - self.scale * u.sign() * spx.log1p(-u.abs())

    def log_prob(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        return -spx.log(2 * self.scale) - spx.abs(value - self.loc) / self.scale

    def cdf(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        return 0.5 - 0.5 * diff.sign() * spx.expm1(-diff.abs() / self.scale)

    def icdf(self, value: Any) -> Tensor:
        value = as_tensor(value)
        term = value - 0.5
        return self.loc - self.scale * term.sign() * spx.log1p(-2 * term.abs())

    def entropy(self) -> Tensor:
        return 1 + spx.log(2 * self.scale)
