"""Draws spx's Tensor functions don't offer: Gamma, Dirichlet and Binomial variates.

Each is one recorded operation over a key from the calling rank's generator
(``spx.manual_seed``; :func:`spx.random.key_for`), so draws are reproducible from the seed,
fresh on every call, and threaded through ``spx.compile`` like ``spx.randn``'s. JAX's Gamma and
Dirichlet samplers carry implicit reparameterization gradients with respect to the
concentration (the role of torch's ``_standard_gamma_grad``/``_dirichlet_grad``), so
``rsample().backward()`` reaches the parameters.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from spx import random as spx_random
from spx._tensor.dispatch import apply
from spx._tensor.tensor import Tensor


def _standard_gamma(key: Any, concentration: Any) -> Any:
    return jax.random.gamma(key, concentration, concentration.shape, concentration.dtype)


def _dirichlet(key: Any, concentration: Any) -> Any:
    x = jax.random.dirichlet(key, concentration, concentration.shape[:-1], concentration.dtype)
    # torch clamps Dirichlet draws into (0, 1) so that their logs stay finite.
    tiny = jnp.finfo(x.dtype).tiny
    return jnp.clip(x, tiny, 1 - jnp.finfo(x.dtype).eps)


def _binomial(key: Any, total_count: Any, probs: Any) -> Any:
    n = jax.lax.stop_gradient(total_count)
    p = jax.lax.stop_gradient(probs)
    return jax.random.binomial(key, n, p, p.shape, p.dtype)


def standard_gamma(concentration: Tensor) -> Tensor:
    """Gamma(concentration, 1) draws of ``concentration``'s shape, differentiable with respect
    to ``concentration`` (torch's ``_standard_gamma``)."""
    return apply(_standard_gamma, (), (spx_random.key_for(None), concentration))


def sample_dirichlet(concentration: Tensor) -> Tensor:
    """Dirichlet draws, one per row of ``concentration`` (shape ``(..., K)``), differentiable
    with respect to ``concentration`` (torch's ``_sample_dirichlet`` with its backward)."""
    return apply(_dirichlet, (), (spx_random.key_for(None), concentration))


def binomial(total_count: Tensor, probs: Tensor) -> Tensor:
    """Binomial draws (floats, like ``probs``) for same-shaped ``total_count`` and ``probs``;
    no gradient, as ``torch.binomial``."""
    return apply(_binomial, (), (spx_random.key_for(None), total_count, probs))
