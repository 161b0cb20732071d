"""Probability distributions (mirrors ``torch.distributions``).

Parameters and values are spx Tensors: ``log_prob``, ``entropy``, ``rsample`` and
``kl_divergence`` are differentiable (``loss.backward()`` fills the parameters' ``.grad``) and
run inside ``spx.compile``. Samples come from ``spx.manual_seed``'s generator; they follow the
same distributions as torch's, not torch's bits.

Example:
    >>> import spx
    >>> from spx.distributions import Normal
    >>> loc = spx.zeros(3, requires_grad=True)
    >>> loss = -Normal(loc, 1.0).log_prob(spx.ones(3)).sum()
    >>> loss.backward()
    >>> loc.grad.tolist()
    [-1.0, -1.0, -1.0]
"""

from spx.distributions import constraints as constraints
from spx.distributions.bernoulli import Bernoulli as Bernoulli
from spx.distributions.beta import Beta as Beta
from spx.distributions.binomial import Binomial as Binomial
from spx.distributions.categorical import Categorical as Categorical
from spx.distributions.cauchy import Cauchy as Cauchy
from spx.distributions.chi2 import Chi2 as Chi2
from spx.distributions.dirichlet import Dirichlet as Dirichlet
from spx.distributions.distribution import Distribution as Distribution
from spx.distributions.exp_family import ExponentialFamily as ExponentialFamily
from spx.distributions.exponential import Exponential as Exponential
from spx.distributions.gamma import Gamma as Gamma
from spx.distributions.geometric import Geometric as Geometric
from spx.distributions.gumbel import Gumbel as Gumbel
from spx.distributions.half_normal import HalfNormal as HalfNormal
from spx.distributions.independent import Independent as Independent
from spx.distributions.kl import kl_divergence as kl_divergence
from spx.distributions.kl import register_kl as register_kl
from spx.distributions.laplace import Laplace as Laplace
from spx.distributions.log_normal import LogNormal as LogNormal
from spx.distributions.mixture_same_family import MixtureSameFamily as MixtureSameFamily
from spx.distributions.multivariate_normal import MultivariateNormal as MultivariateNormal
from spx.distributions.normal import Normal as Normal
from spx.distributions.one_hot_categorical import OneHotCategorical as OneHotCategorical
from spx.distributions.one_hot_categorical import (
    OneHotCategoricalStraightThrough as OneHotCategoricalStraightThrough,
)
from spx.distributions.poisson import Poisson as Poisson
from spx.distributions.student_t import StudentT as StudentT
from spx.distributions.uniform import Uniform as Uniform

__all__ = [
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Cauchy",
    "Chi2",
    "Dirichlet",
    "Distribution",
    "Exponential",
    "ExponentialFamily",
    "Gamma",
    "Geometric",
    "Gumbel",
    "HalfNormal",
    "Independent",
    "Laplace",
    "LogNormal",
    "MixtureSameFamily",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "Poisson",
    "StudentT",
    "Uniform",
    "constraints",
    "kl_divergence",
    "register_kl",
]
