"""``Binomial``: successes in ``total_count`` trials (mirrors
``torch.distributions.Binomial``)."""

from __future__ import annotations

from typing import Any, ClassVar

import spx
from spx._tensor._dims import Size
from spx._tensor.tensor import Tensor
from spx.distributions import constraints
from spx.distributions._sampling import binomial
from spx.distributions.distribution import Distribution
from spx.distributions.utils import (
    as_tensor,
    broadcast_all,
    is_traced,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["Binomial"]


def _clamp_by_zero(x: Tensor) -> Tensor:
    # clamp(x, min=0) with torch's gradient of 0.5 at 0.
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


def _homogeneous_count(total_count: Tensor, what: str) -> int:
    """The one total count every batch element shares (``entropy``/``enumerate_support``)."""
    counts = total_count.detach()
    if is_traced(counts):
        raise NotImplementedError(
            f"Binomial.{what}() needs the total count's value to size its support, and it is "
            "traced here (inside spx.compile or jax.jit); call it outside the compiled function"
        )
    high = int(counts.max().item())
    if int(counts.min().item()) != high:
        raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
    return high


class Binomial(Distribution):
    """Number of successes in ``total_count`` independent trials with success probability
    ``probs`` (or log-odds ``logits``, not both) (``torch.distributions.Binomial``). Samples
    are floats, like ``probs``.

    Args:
        total_count: number of trials, a non-negative integer (int or Tensor), broadcast with
            ``probs``/``logits``.
        probs: success probability in ``[0, 1]`` (Tensor).
        logits: success log-odds (Tensor).
        validate_args: check the parameters and ``log_prob`` values.

    Example:
        >>> import spx
        >>> from spx.distributions import Binomial
        >>> m = Binomial(100, spx.tensor([0.0, 0.2, 0.8, 1.0]))
        >>> m.sample().shape
        spx.Size([4])
        >>> m.mean.tolist()
        [0.0, 20.0, 80.0, 100.0]
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(
        self,
        total_count: Any = 1,
        probs: Any = None,
        logits: Any = None,
        validate_args: bool | None = None,
    ) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Binomial:
        new = self._get_checked_instance(Binomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(Binomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with spx.no_grad():
            return binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = spx.lgamma(self.total_count + 1)
        log_factorial_k = spx.lgamma(value + 1)
        log_factorial_nmk = spx.lgamma(self.total_count - value + 1)
        # total_count * log1p(exp(logits)), computed without overflow.
        normalize_term = (
            self.total_count * _clamp_by_zero(self.logits)
            + self.total_count * spx.log1p(spx.exp(-spx.abs(self.logits)))
            - log_factorial_n
        )
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self) -> Tensor:
        _homogeneous_count(self.total_count, "entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(spx.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        total_count = _homogeneous_count(self.total_count, "enumerate_support")
        values = spx.arange(1 + total_count, dtype=self._param.dtype)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1, *self._batch_shape))
        return values
