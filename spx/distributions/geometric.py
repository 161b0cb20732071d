"""``Geometric``: failures before the first success (mirrors
``torch.distributions.Geometric``)."""

from __future__ import annotations

from typing import Any, ClassVar

import spx
import spx.nn.functional as F
from spx._tensor._dims import Size
from spx._tensor.tensor import Tensor
from spx.distributions import constraints
from spx.distributions.distribution import Distribution
from spx.distributions.utils import (
    as_tensor,
    broadcast_all,
    concrete_all,
    is_number,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["Geometric"]


class Geometric(Distribution):
    """The number of failures before the first success of Bernoulli trials with success
    probability ``probs``; give ``probs`` or ``logits`` (log-odds), not both
    (``torch.distributions.Geometric``). Samples are in ``{0, 1, 2, ...}``.

    Args:
        probs: success probability, in ``(0, 1]`` (number or Tensor of the batch shape).
        logits: log-odds of success (number or Tensor of the batch shape).
        validate_args: check the parameters and ``log_prob`` values.

    Example:
        >>> import spx
        >>> from spx.distributions import Geometric
        >>> m = Geometric(spx.tensor([0.25]))
        >>> m.mean.tolist()  # 1 / p - 1
        [3.0]
        >>> round(m.log_prob(spx.tensor([0.0])).item(), 4)  # log(0.25)
        -1.3863
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(
        self, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            param, given = self.probs, probs
        else:
            (self.logits,) = broadcast_all(logits)
            param, given = self.logits, logits
        batch_shape = Size() if is_number(given) else param.size()
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            # unit_interval admits 0, but no trial ever succeeds then: torch refuses it too.
            valid = self.probs > 0
            if not concrete_all(valid):
                raise ValueError(
                    f"Expected parameter probs (Tensor of shape {tuple(self.probs.shape)}) "
                    f"of distribution {self!r} to be positive but found invalid values:\n"
                    f"{self.probs[~valid]}"
                )

    def expand(self, batch_shape: Any, _instance: Any = None) -> Geometric:
        new = self._get_checked_instance(Geometric, _instance)
        batch_shape = Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
        super(Geometric, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return spx.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        tiny = spx.finfo(self.probs.dtype).tiny
        with spx.no_grad():
            u = spx.empty(shape, dtype=self.probs.dtype).uniform_(tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # p = 1 and k = 0: log(1 - p) is -inf and 0 * -inf NaN; the probability is 1 (torch
        # zeroes p there, off the gradient's path, as its in-place write does).
        certain = (probs == 1) & (value == 0)
        probs = spx.where(certain, 0.0, probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        bce = F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")
        return bce / self.probs
