"""``MixtureSameFamily``: a mixture of components of one family (mirrors
``torch.distributions.MixtureSameFamily``)."""

from __future__ import annotations

from typing import Any, ClassVar

import spx
from spx._tensor._dims import Size
from spx._tensor.tensor import Tensor
from spx.distributions import constraints
from spx.distributions.categorical import Categorical
from spx.distributions.distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """A mixture whose ``k`` components are the last batch dimension of one distribution,
    weighted by a :class:`Categorical` over ``k`` (``torch.distributions.MixtureSameFamily``).

    Args:
        mixture_distribution: a ``Categorical`` of batch shape ``B`` (or broadcastable to it)
            over the ``k`` components.
        component_distribution: any distribution of batch shape ``B + (k,)``.
        validate_args: check ``log_prob`` values against the components' support.

    ``log_prob`` is ``logsumexp(log_softmax(logits) + components' log_prob)`` and differentiable
    in both; ``sample`` draws a component, then a value from it (no ``rsample``, as in torch).

    Example:
        >>> import spx
        >>> from spx.distributions import Categorical, MixtureSameFamily, Normal
        >>> gmm = MixtureSameFamily(
        ...     Categorical(spx.tensor([0.5, 0.5])),
        ...     Normal(spx.tensor([-1.0, 1.0]), spx.tensor([1.0, 1.0])),
        ... )
        >>> gmm.mean.item(), gmm.variance.item()  # 1 + the means' spread
        (0.0, 2.0)
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {}
    has_rsample = False

    def __init__(
        self,
        mixture_distribution: Categorical,
        component_distribution: Distribution,
        validate_args: bool | None = None,
    ) -> None:
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(
                " The Mixture distribution needs to be an  instance of "
                "torch.distributions.Categorical (spx.distributions.Categorical)"
            )
        if not isinstance(component_distribution, Distribution):
            raise ValueError(
                "The Component distribution needs to be an instance of "
                "torch.distributions.Distribution (an spx.distributions distribution)"
            )
        mdbs = mixture_distribution.batch_shape
        cdbs = component_distribution.batch_shape[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs), strict=False):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(
                    f"`mixture_distribution.batch_shape` ({mdbs}) is not compatible with "
                    f"`component_distribution.batch_shape`({cdbs})"
                )
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1] if component_distribution.batch_shape else None
        if km != kc:
            raise ValueError(
                f"`mixture_distribution component` ({km}) does not equal "
                f"`component_distribution.batch_shape[-1]` ({kc})"
            )
        self._num_component = km
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(batch_shape=cdbs, event_shape=event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> MixtureSameFamily:
        batch_shape = Size(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(
            Size((*batch_shape, self._num_component))
        )
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        super(MixtureSameFamily, new).__init__(
            batch_shape=batch_shape,
            event_shape=new._component_distribution.event_shape,
            validate_args=False,
        )
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self) -> Categorical:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    @property
    def mean(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return spx.sum(probs * self.component_distribution.mean, dim=-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        # The law of total variance: E[Var(X | k)] + Var(E[X | k]).
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        dim = -1 - self._event_ndims
        mean_cond_var = spx.sum(probs * self.component_distribution.variance, dim=dim)
        spread = (self.component_distribution.mean - self._pad(self.mean)).pow(2.0)
        return mean_cond_var + spx.sum(probs * spread, dim=dim)

    def cdf(self, x: Any) -> Tensor:
        cdf_x = self.component_distribution.cdf(self._pad(spx.as_tensor(x)))
        return spx.sum(cdf_x * self.mixture_distribution.probs, dim=-1)

    def log_prob(self, x: Any) -> Tensor:
        x = spx.as_tensor(x)
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))  # (*S, *B, k)
        log_mix_prob = spx.log_softmax(self.mixture_distribution.logits, dim=-1)  # (*B, k)
        return spx.logsumexp(log_prob_x + log_mix_prob, dim=-1)  # (*S, *B)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        sample_shape = Size(sample_shape)
        with spx.no_grad():
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = self.event_shape
            mixture = self.mixture_distribution
            if mixture.batch_shape != self.batch_shape:
                # A Categorical shared by the batch (torch's sample() fails there): each batch
                # entry is its own mixture and draws its own component, as log_prob has it.
                mixture = mixture.expand(self.batch_shape)
            mix_sample = mixture.sample(sample_shape)  # (*S, *B)
            comp_samples = self.component_distribution.sample(sample_shape)  # (*S, *B, k, *E)
            index = mix_sample.reshape((*mix_sample.shape, *([1] * (len(es) + 1))))
            index = index.repeat((*([1] * mix_sample.ndim), 1, *es))
            return spx.gather(comp_samples, gather_dim, index).squeeze(gather_dim)

    def _pad(self, x: Tensor) -> Tensor:
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x: Tensor) -> Tensor:
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = tuple(x.shape)
        return x.reshape((*xs[:-1], *([1] * pad_ndims), xs[-1], *([1] * self._event_ndims)))

    def __repr__(self) -> str:
        return (
            f"MixtureSameFamily(\n  {self.mixture_distribution},\n  {self.component_distribution})"
        )
