"""``Gamma``: shape ``concentration``, ``rate`` (mirrors ``torch.distributions.Gamma``)."""

from __future__ import annotations

from typing import Any, ClassVar

import spx
from spx._tensor._dims import Size
from spx._tensor.tensor import Tensor
from spx.distributions import constraints
from spx.distributions._sampling import standard_gamma
from spx.distributions.exp_family import ExponentialFamily
from spx.distributions.utils import as_tensor, broadcast_all, is_number

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Gamma distribution with shape ``concentration`` (alpha) and ``rate`` (beta, the
    inverse scale) (``torch.distributions.Gamma``).

    ``rsample`` is reparameterized (implicit gradients of JAX's Gamma sampler).

    Args:
        concentration: shape parameter, > 0 (float or Tensor).
        rate: rate = 1 / scale, > 0 (float or Tensor).
        validate_args: check the parameters and ``log_prob`` values.

    Example:
        >>> import spx
        >>> from spx.distributions import Gamma
        >>> m = Gamma(spx.tensor([1.0]), spx.tensor([1.0]))
        >>> m.sample().shape
        spx.Size([1])
        >>> round(m.log_prob(spx.tensor([1.0])).item(), 4)
        -1.0
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration": constraints.positive,
        "rate": constraints.positive,
    }
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        scalar = is_number(concentration) and is_number(rate)
        batch_shape = Size() if scalar else self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Gamma:
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        # torch clamps the draw to the smallest normal number without recording the clamp.
        tiny = spx.finfo(value.dtype).tiny
        return value + (value.clamp(min=tiny) - value).detach()

    def log_prob(self, value: Any) -> Tensor:
        value = spx.as_tensor(as_tensor(value), dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        return (
            spx.xlogy(self.concentration, self.rate)
            + spx.xlogy(self.concentration - 1, value)
            - self.rate * value
            - spx.lgamma(self.concentration)
        )

    def cdf(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        # torch.special.gammainc: the regularized lower incomplete gamma function.
        return spx.igamma(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        return (
            self.concentration
            - spx.log(self.rate)
            + spx.lgamma(self.concentration)
            + (1.0 - self.concentration) * spx.digamma(self.concentration)
        )

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return spx.lgamma(x + 1) + (x + 1) * spx.log(-y.reciprocal())
