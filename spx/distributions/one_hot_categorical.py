"""``OneHotCategorical``: a :class:`Categorical` whose samples are one-hot vectors (mirrors
``torch.distributions.OneHotCategorical``)."""

from __future__ import annotations

from typing import Any, ClassVar

import spx
import spx.nn.functional as F
from spx._tensor._dims import Size
from spx._tensor.tensor import Tensor
from spx.distributions import constraints
from spx.distributions.categorical import Categorical
from spx.distributions.distribution import Distribution
from spx.distributions.utils import as_tensor

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


class OneHotCategorical(Distribution):
    """One-hot vectors of size ``K``, from ``probs`` or ``logits`` (not both), normalized as
    :class:`Categorical`'s (``torch.distributions.OneHotCategorical``).

    Args:
        probs: event probabilities, shape ``batch_shape + (K,)``.
        logits: event log-probabilities (unnormalized), shape ``batch_shape + (K,)``.
        validate_args: check the parameters and ``log_prob`` values.

    Example:
        >>> import spx
        >>> from spx.distributions import OneHotCategorical
        >>> m = OneHotCategorical(spx.tensor([0.25, 0.25, 0.25, 0.25]))
        >>> m.sample().sum().item()
        1.0
        >>> m.event_shape
        spx.Size([4])
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.simplex,
        "logits": constraints.real_vector,
    }
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(
        self, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        self._categorical = Categorical(probs, logits)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> OneHotCategorical:
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = Size(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        super(OneHotCategorical, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def mean(self) -> Tensor:
        return self._categorical.probs

    @property
    def mode(self) -> Tensor:
        probs = self._categorical.probs
        mode = probs.argmax(dim=-1)
        return F.one_hot(mode, num_classes=probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self) -> Tensor:
        return self._categorical.probs * (1 - self._categorical.probs)

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    def sample(self, sample_shape: Any = ()) -> Tensor:
        sample_shape = Size(sample_shape)
        probs = self._categorical.probs
        num_events = self._categorical._num_events
        indices = self._categorical.sample(sample_shape)
        return F.one_hot(indices, num_events).to(probs.dtype)

    def log_prob(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        indices = value.max(-1)[1]
        return self._categorical.log_prob(indices)

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self.event_shape[0]
        values = spx.eye(n, dtype=self._param.dtype)
        values = values.view((n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = values.expand((n, *self.batch_shape, n))
        return values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """:class:`OneHotCategorical` with a straight-through ``rsample``: the forward value is
    the one-hot sample, the gradient that of ``probs`` (Bengio et al., 2013)
    (``torch.distributions.OneHotCategoricalStraightThrough``).

    Example:
        >>> import spx
        >>> from spx.distributions import OneHotCategoricalStraightThrough
        >>> logits = spx.zeros(3, requires_grad=True)
        >>> x = OneHotCategoricalStraightThrough(logits=logits).rsample()
        >>> (x * spx.tensor([1.0, 2.0, 3.0])).sum().backward()
        >>> logits.grad.shape
        spx.Size([3])
    """

    has_rsample = True

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
