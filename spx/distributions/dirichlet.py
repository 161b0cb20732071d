"""``Dirichlet``: distributions over the simplex (mirrors ``torch.distributions.Dirichlet``)."""

from __future__ import annotations

from typing import Any, ClassVar

import spx
import spx.nn.functional as F
from spx._tensor._dims import Size
from spx._tensor.tensor import Tensor
from spx.distributions import constraints
from spx.distributions._sampling import sample_dirichlet
from spx.distributions.exp_family import ExponentialFamily
from spx.distributions.utils import as_tensor

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution with ``concentration`` (alpha) over the last dim
    (``torch.distributions.Dirichlet``).

    ``rsample`` is reparameterized (implicit gradients of JAX's Dirichlet sampler).

    Args:
        concentration: shape ``batch_shape + (K,)``, > 0.
        validate_args: check the parameters and ``log_prob`` values.

    Example:
        >>> import spx
        >>> from spx.distributions import Dirichlet
        >>> m = Dirichlet(spx.tensor([0.5, 0.5]))
        >>> m.sample().shape
        spx.Size([2])
        >>> round(m.log_prob(spx.tensor([0.5, 0.5])).item(), 4)
        -0.4516
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration": constraints.independent(constraints.positive, 1)
    }
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Any, validate_args: bool | None = None) -> None:
        concentration = spx.as_tensor(concentration)
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Dirichlet:
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return sample_dirichlet(self.concentration.expand(shape))

    def log_prob(self, value: Any) -> Tensor:
        value = as_tensor(value)
        if self._validate_args:
            self._validate_sample(value)
        return (
            spx.xlogy(self.concentration - 1.0, value).sum(-1)
            + spx.lgamma(self.concentration.sum(-1))
            - spx.lgamma(self.concentration).sum(-1)
        )

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self) -> Tensor:
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        # Where every concentration is < 1 the density peaks at a vertex: torch puts the mode
        # at the one-hot vector of the largest (NaN-free) entry of the normalized ratio.
        mask = (self.concentration < 1).all(-1, keepdim=True)
        corner = F.one_hot(mode.argmax(-1), concentrationm1.shape[-1]).to(mode.dtype)
        return spx.where(mask, corner, mode)

    @property
    def variance(self) -> Tensor:
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self) -> Tensor:
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (
            spx.lgamma(self.concentration).sum(-1)
            - spx.lgamma(a0)
            - (k - a0) * spx.digamma(a0)
            - ((self.concentration - 1.0) * spx.digamma(self.concentration)).sum(-1)
        )

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.concentration,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return x.lgamma().sum(-1) - spx.lgamma(x.sum(-1))
