"""Helpers shared by the distributions (mirrors ``torch.distributions.utils``).

Parameters become Tensors here (:func:`broadcast_all`), so every formula downstream is spx
Tensor arithmetic: ``loss.backward()`` reaches the parameters and ``spx.compile`` traces it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import update_wrapper
from typing import Any

import jax
import numpy as np

import spx
from spx._tensor.tensor import Tensor

__all__ = [
    "broadcast_all",
    "clamp_probs",
    "euler_constant",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant

# torch's ``_Number``: what a distribution treats as a scalar parameter.
_NUMBER = (bool, int, float)
_ARRAY = (jax.Array, np.ndarray, np.generic)


def is_number(x: Any) -> bool:
    return isinstance(x, _NUMBER)


def as_tensor(x: Any) -> Any:
    """``x`` as a Tensor if it is an array (jax or numpy); Tensors and numbers as they are."""
    if isinstance(x, _ARRAY) and not isinstance(x, Tensor):
        return spx.as_tensor(x)
    return x


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Tensors broadcast to one shape; numbers become tensors of the first tensor's dtype.

    Args:
        *values: Tensors, jax/numpy arrays or Python numbers. With numbers only, the result
            has the default dtype (``spx.get_default_dtype()``).

    Returns:
        A tuple of Tensors of the broadcast shape.

    Example:
        >>> import spx
        >>> from spx.distributions.utils import broadcast_all
        >>> [t.shape for t in broadcast_all(spx.zeros(3), 1.0)]
        [spx.Size([3]), spx.Size([3])]
    """
    values = tuple(as_tensor(v) for v in values)
    if not all(isinstance(v, Tensor) or is_number(v) for v in values):
        raise ValueError(
            "Input arguments must all be instances of Number, torch.Tensor or objects "
            f"implementing __torch_function__. (spx: got {[type(v).__name__ for v in values]}; "
            "pass spx Tensors, jax/numpy arrays or Python numbers)"
        )
    dtype = next((v.dtype for v in values if isinstance(v, Tensor)), spx.get_default_dtype())
    tensors = [v if isinstance(v, Tensor) else spx.tensor(v, dtype=dtype) for v in values]
    if len(tensors) == 1:
        return (tensors[0],)
    return tuple(spx.broadcast_tensors(*tensors))


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape((*tuple(value.shape[:-dim]), -1)).sum(-1)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Log-odds (``is_binary``) or unnormalized log-probabilities over the last dim, to
    probabilities."""
    if is_binary:
        return spx.sigmoid(logits)
    return spx.softmax(logits, dim=-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities clamped to ``[eps, 1 - eps]`` (``eps`` of ``probs``'s dtype)."""
    eps = spx.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities to log-odds (``is_binary``) or log-probabilities (clamped away from 0)."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return spx.log(ps_clamped) - spx.log1p(-ps_clamped)
    return spx.log(ps_clamped)


class lazy_property:
    """A property computed on first access, then stored on the instance (torch's).

    Computed with grad enabled, so a ``probs`` derived from ``logits`` under ``no_grad`` still
    carries the history later uses need.
    """

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        update_wrapper(self, wrapped)  # type: ignore[arg-type]

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        with spx.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def concrete_all(valid: Any) -> bool:
    """Whether every element of ``valid`` is true; True when it is traced (inside
    ``spx.compile`` or ``jax.jit`` the values are unknown, so the check is skipped)."""
    if not isinstance(valid, Tensor):
        return bool(valid)
    value = valid.all()._value()
    if isinstance(value, jax.core.Tracer):
        return True
    return bool(value)


def is_traced(t: Any) -> bool:
    """Whether ``t``'s value is a JAX tracer (inside ``spx.compile`` or ``jax.jit``)."""
    return isinstance(t, Tensor) and isinstance(t._value(), jax.core.Tracer)
