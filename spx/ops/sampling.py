"""torch's random sampling functions that take tensors (``spx.multinomial``, ``spx.normal``,
``spx.bernoulli``, ``spx.poisson``).

Draws come from the calling rank's generator (``spx.manual_seed``; :mod:`spx.random`), one
fresh key per call, so a seeded run is reproducible and every call differs. As in torch, the
samples carry no gradient with respect to the distribution's parameters.

Example:
    >>> import spx
    >>> _ = spx.manual_seed(0)
    >>> spx.multinomial(spx.tensor([0.0, 1.0]), 3, replacement=True).tolist()
    [1, 1, 1]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx import random as spx_random
from spx._tensor import numpy_names
from spx._tensor.dispatch import apply
from spx._tensor.tensor import Tensor
from spx.ops._args import is_number, tensor_arg

__all__ = ["bernoulli", "multinomial", "normal", "poisson"]


def _key(generator: Any) -> Any:
    return spx_random.key_for(generator, lazy=False)


def multinomial(
    input: Any, num_samples: int, replacement: bool = False, *, generator: Any = None
) -> Tensor:
    """Category indices drawn with probabilities proportional to ``input``'s rows.

    Args:
        input: non-negative weights, ``(k,)`` or ``(n, k)`` (need not sum to one).
        num_samples: draws per row.
        replacement: draw with replacement; without it, each category at most once.

    Returns:
        ``(num_samples,)`` or ``(n, num_samples)`` int32 indices (torch: int64).
    """
    x = tensor_arg(input, "multinomial")
    return x.multinomial(num_samples, replacement, generator=generator)


def bernoulli(input: Any, p: float | None = None, *, generator: Any = None) -> Tensor:
    """0/1 draws with probability ``input`` (or ``p``), in ``input``'s dtype."""
    return tensor_arg(input, "bernoulli").bernoulli(p, generator=generator)


def _normal_shaped(key: Any, mean: Any, std: Any, shape: tuple, dtype: Any) -> Any:
    return mean + std * jax.random.normal(key, shape, dtype)


def _normal_of(key: Any, mean: Any, std: Any) -> Any:
    mean, std = jax.lax.stop_gradient(mean), jax.lax.stop_gradient(std)
    shape = jnp.broadcast_shapes(jnp.shape(mean), jnp.shape(std))
    dtype = jnp.result_type(mean, std)
    return mean + std * jax.random.normal(key, shape, dtype)


def normal(
    mean: Any,
    std: Any = 1.0,
    size: Sequence[int] | None = None,
    *,
    generator: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Normal samples (mirrors ``torch.normal``'s overloads).

    ``normal(mean_tensor, std_tensor)`` and mixes of tensors and numbers give one sample per
    element of the broadcast shape; ``normal(mean, std, size)`` with two numbers gives
    ``size`` samples.

    Example:
        >>> import spx
        >>> spx.normal(0.0, 1.0, size=(2, 3)).shape
        spx.Size([2, 3])
        >>> spx.normal(spx.zeros(4), 2.0).shape
        spx.Size([4])
    """
    if is_number(mean) and is_number(std):
        if size is None:
            raise TypeError(
                "spx.normal(mean, std) with two numbers needs size=, e.g. "
                "spx.normal(0.0, 1.0, size=(2, 3))"
            )
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        shape = tuple(int(s) for s in size)
        dt = np.dtype(jnp.float32 if dtype is None else dtype)
        out = apply(_normal_shaped, (shape, dt), (_key(generator), mean, std))
    else:
        if size is not None:
            raise TypeError("spx.normal: size= is only for numbers mean and std")
        m = mean if is_number(mean) else tensor_arg(mean, "normal", "mean")
        s = std if is_number(std) else tensor_arg(std, "normal", "std")
        if is_number(s) and s < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {s}")
        for t in (m, s):
            if isinstance(t, Tensor) and not jnp.issubdtype(t.dtype, jnp.floating):
                raise RuntimeError(
                    f"normal expects floating-point mean and std, got {t.dtype}; cast: t.float()"
                )
        out = apply(_normal_of, (), (_key(generator), m, s))
    if device is not None:
        out = out.to(device)
    return out.requires_grad_() if requires_grad else out


def _poisson(key: Any, rate: Any) -> Any:
    rate = jax.lax.stop_gradient(rate)
    return jax.random.poisson(key, rate, rate.shape).astype(rate.dtype)


def poisson(input: Any, generator: Any = None) -> Tensor:
    """Poisson draws with rates ``input`` (floats, like ``input``; mirrors ``torch.poisson``)."""
    x = tensor_arg(input, "poisson")
    return apply(_poisson, (), (_key(generator), x))


# numpy's axis=/keepdims= as torch accepts them (torch.sum(x, axis=0)).
numpy_names.accept(globals(), __all__)
