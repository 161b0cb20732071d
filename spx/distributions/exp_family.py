"""``ExponentialFamily``: the base of distributions with densities
``exp(<t(x), theta> - F(theta) + k(x))`` (mirrors ``torch.distributions.ExponentialFamily``)."""

from __future__ import annotations

from typing import Any

from spx import autograd
from spx._tensor.tensor import Tensor
from spx.distributions.distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base class of exponential-family distributions (``Normal``, ``Bernoulli``, ``Gamma``...).

    Subclasses define ``_natural_params`` (the ``theta`` tensors), ``_log_normalizer`` (``F``)
    and ``_mean_carrier_measure``. spx's subclasses compute ``entropy()`` in closed form; the
    generic one here (torch's) differentiates ``F`` with ``autograd.grad(create_graph=True)``,
    so it stays differentiable with respect to the parameters. The same-family KL divergence
    falls back to the Bregman divergence of ``F`` (see :mod:`spx.distributions.kl`).

    Example:
        >>> import spx
        >>> from spx.distributions import ExponentialFamily, Normal
        >>> isinstance(Normal(0.0, 1.0), ExponentialFamily)
        True
    """

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Any) -> Tensor:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """``-E[k(x)] + F(theta) - <theta, grad F(theta)>`` (torch's generic entropy)."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for theta, g in zip(nparams, gradients, strict=True):
            result = result - (theta * g).reshape((*self._batch_shape, -1)).sum(-1)
        return result
