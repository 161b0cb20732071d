"""``Poisson``: counts with a constant ``rate`` (mirrors ``torch.distributions.Poisson``)."""

from __future__ import annotations

from typing import Any, ClassVar

import spx
from spx._tensor._dims import Size
from spx._tensor.tensor import Tensor
from spx.distributions import constraints
from spx.distributions.exp_family import ExponentialFamily
from spx.distributions.utils import as_tensor, broadcast_all, is_number

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """Poisson distribution over ``{0, 1, 2, ...}`` with mean ``rate``
    (``torch.distributions.Poisson``). Samples are floats, like ``rate``. As in torch there is
    no ``entropy()`` (no closed form; it raises ``NotImplementedError``).

    Args:
        rate: >= 0 (number or Tensor).
        validate_args: check the parameter and ``log_prob`` values.

    Example:
        >>> import spx
        >>> from spx.distributions import Poisson
        >>> m = Poisson(spx.tensor([4.0]))
        >>> m.sample((3,)).shape
        spx.Size([3, 1])
        >>> round(m.log_prob(spx.tensor([2.0])).item(), 4)
        -1.9206
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        batch_shape = Size() if is_number(rate) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Poisson:
        new = self._get_checked_instance(Poisson, _instance)
        batch_shape = Size(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Poisson, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with spx.no_grad():
            return spx.poisson(self.rate.expand(shape))

    def log_prob(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (spx.log(self.rate),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return spx.exp(x)
