"""The shared parameterization of Cauchy, Gumbel and Laplace: ``loc`` and ``scale``, broadcast
together, on the real line (each class holds its own formulas, as torch's)."""

from __future__ import annotations

from typing import Any, ClassVar

from spx._tensor._dims import Size
from spx.distributions import constraints
from spx.distributions.distribution import Distribution
from spx.distributions.utils import broadcast_all, is_number

__all__ = ["LocScaleDistribution"]


class LocScaleDistribution(Distribution):
    """A distribution of ``loc`` (real) and ``scale`` (> 0), broadcast to one batch shape.

    Args:
        loc: location (float or Tensor).
        scale: scale, > 0 (float or Tensor).
        validate_args: check the parameters and ``log_prob`` values.
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

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        # The spx class this is (a user subclass with its own __init__ must define expand,
        # as torch requires).
        cls = next(c for c in type(self).__mro__ if c.__module__.startswith("spx.distributions"))
        new = self._get_checked_instance(cls, _instance)
        batch_shape = Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        super(LocScaleDistribution, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new
