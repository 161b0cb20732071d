"""``Gumbel``: the type-I extreme value distribution (mirrors ``torch.distributions.Gumbel``)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import spx
from spx._tensor._dims import Size
from spx._tensor.tensor import Tensor
from spx.distributions import constraints
from spx.distributions.distribution import Distribution
from spx.distributions.utils import as_tensor, broadcast_all, euler_constant, is_number

__all__ = ["Gumbel"]


class Gumbel(Distribution):
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

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = Size() if is_number(loc) and is_number(scale) else self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Gumbel:
        new = self._get_checked_instance(Gumbel, _instance)
        batch_shape = Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        super(Gumbel, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

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
