"""Flatten parameters into one vector and back (mirrors ``torch.nn.utils.convert_parameters``).

Used by second-order optimizers, evolution strategies and model averaging. Both functions only
reshape and slice, so they work unchanged inside ``jax.jit``/``spx.compile`` where ``.data``
holds tracers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx.nn.parameter import Parameter

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _param_list(parameters: Any, what: str) -> list[Parameter]:
    # One Parameter is taken as [p]; torch would iterate its rows, which flattens to the same
    # vector, so the result is identical and the intent is clearer.
    if isinstance(parameters, Parameter):
        return [parameters]
    if not isinstance(parameters, Iterable):
        raise TypeError(
            f"{what}: parameters must be an iterable of Parameters (e.g. model.parameters()), "
            f"got {type(parameters).__name__}"
        )
    params = list(parameters)
    for i, p in enumerate(params):
        if not isinstance(p, Parameter):
            raise TypeError(
                f"{what}: item {i} of parameters is a {type(p).__name__}, expected an "
                "spx.nn.Parameter; pass model.parameters()"
            )
    return params


def parameters_to_vector(parameters: Iterable[Parameter]) -> jax.Array:
    """Concatenate the flattened values of ``parameters`` into one vector.

    Args:
        parameters: an iterable (or generator) of Parameters, e.g. ``model.parameters()``.

    Returns:
        A 1-D ``jax.Array`` of length ``sum(p.numel())``; mixed dtypes promote as ``torch.cat``.

    Shapes:
        each parameter ``(*)`` -> ``(sum of numel,)``.

    Example:
        >>> from spx import nn
        >>> from spx.nn.utils import parameters_to_vector
        >>> parameters_to_vector(nn.Linear(3, 2).parameters()).shape
        (8,)
    """
    params = _param_list(parameters, "parameters_to_vector")
    if not params:
        # torch.cat of an empty list raises; say what to pass instead.
        raise RuntimeError(
            "parameters_to_vector: got no parameters; pass a non-empty iterable such as "
            "model.parameters()"
        )
    return jnp.concatenate([jnp.reshape(p.data, (-1,)) for p in params])


def vector_to_parameters(vec: jax.Array, parameters: Iterable[Parameter]) -> None:
    """Write consecutive slices of ``vec`` into ``parameters`` (sets each ``p.data``).

    The inverse of :func:`parameters_to_vector`. As in torch, each parameter takes ``vec``'s
    dtype, and a ``vec`` longer than the parameters need has its tail ignored.

    Args:
        vec: a 1-D ``jax.Array`` or ``numpy.ndarray``.
        parameters: an iterable (or generator) of Parameters, e.g. ``model.parameters()``.

    Raises:
        TypeError: ``vec`` is not an array.
        RuntimeError: ``vec`` is not 1-D, or holds fewer elements than the parameters need.

    Shapes:
        vec ``(N,)`` with ``N >= sum of numel``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> from spx.nn.utils import vector_to_parameters
        >>> layer = nn.Linear(3, 2)
        >>> vector_to_parameters(jnp.zeros(8), layer.parameters())
        >>> float(layer.weight.sum())
        0.0
    """
    if isinstance(vec, Parameter):
        vec = vec.data
    if not isinstance(vec, jax.Array | np.ndarray):
        raise TypeError(f"expected a jax.Array or numpy.ndarray for vec, but got: {type(vec)}")
    vec = jnp.asarray(vec)
    if vec.ndim != 1:
        raise RuntimeError(
            f"vector_to_parameters: vec must be 1-D, got shape {tuple(vec.shape)}; "
            "flatten it with vec.reshape(-1)"
        )
    params = _param_list(parameters, "vector_to_parameters")
    needed = sum(p.numel() for p in params)
    if vec.shape[0] < needed:
        raise RuntimeError(
            f"vector_to_parameters: vec has {vec.shape[0]} elements but the parameters hold "
            f"{needed}; build vec with parameters_to_vector over the same parameters"
        )
    pointer = 0
    for p in params:
        n = p.numel()
        p.data = jnp.reshape(vec[pointer : pointer + n], p.shape)
        pointer += n
