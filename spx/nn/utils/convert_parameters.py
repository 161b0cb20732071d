"""Flatten parameters into one vector and back (mirrors ``torch.nn.utils.convert_parameters``).

Used by second-order optimizers, evolution strategies and model averaging. As in torch,
:func:`parameters_to_vector` is differentiable (one recorded concatenation of the flattened
parameters) and :func:`vector_to_parameters` writes values without autograd. Both only reshape
and slice, so they work unchanged inside ``jax.jit``/``spx.compile``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx._tensor.grad_mode import no_grad
from spx._tensor.recorded import recorded
from spx._tensor.tensor import Tensor
from spx.nn.parameter import Parameter

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _param_list(parameters: Any, what: str) -> list[Parameter]:
    # One Parameter is taken as [p]; torch would iterate its rows, which flattens to the same
    # vector, so the result is identical and the intent is clearer.
    if isinstance(parameters, Tensor):
        return [parameters]
    if not isinstance(parameters, Iterable):
        raise TypeError(
            f"{what}: parameters must be an iterable of Parameters (e.g. model.parameters()), "
            f"got {type(parameters).__name__}"
        )
    params = list(parameters)
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(
                f"{what}: item {i} of parameters is a {type(p).__name__}, expected an "
                "spx.nn.Parameter; pass model.parameters()"
            )
    return params


@recorded
def _flat_concat(*arrays: jax.Array) -> jax.Array:
    return jnp.concatenate([jnp.reshape(a, (-1,)) for a in arrays])


@recorded
def _pieces(vec: jax.Array, shapes: tuple[tuple[int, ...], ...]) -> tuple[jax.Array, ...]:
    out, start = [], 0
    for shape in shapes:
        n = math.prod(shape)
        out.append(jnp.reshape(vec[start : start + n], shape))
        start += n
    return tuple(out)


def parameters_to_vector(parameters: Iterable[Parameter]) -> Tensor:
    """Concatenate the flattened values of ``parameters`` into one vector.

    As torch's (``cat`` of ``p.view(-1)``), the result is differentiable: a loss computed from
    it backpropagates into the parameters' ``.grad``.

    Args:
        parameters: an iterable (or generator) of Parameters, e.g. ``model.parameters()``.

    Returns:
        A 1-D Tensor of length ``sum(p.numel())``; mixed dtypes promote as ``torch.cat``.

    Shapes:
        each parameter ``(*)`` -> ``(sum of numel,)``.

    Example:
        >>> from spx import nn
        >>> from spx.nn.utils import parameters_to_vector
        >>> parameters_to_vector(nn.Linear(3, 2).parameters()).shape
        spx.Size([8])
    """
    params = _param_list(parameters, "parameters_to_vector")
    if not params:
        # torch.cat of an empty list raises; say what to pass instead.
        raise RuntimeError(
            "parameters_to_vector: got no parameters; pass a non-empty iterable such as "
            "model.parameters()"
        )
    return _flat_concat(*params)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Parameter]) -> None:
    """Write consecutive slices of ``vec`` into ``parameters`` (their values, without autograd).

    The inverse of :func:`parameters_to_vector`. As in torch, each parameter takes ``vec``'s
    dtype, and a ``vec`` longer than the parameters need has its tail ignored. A parameter of
    ``vec``'s dtype is written in place (aliases such as ``state_dict()`` values see it); one of
    another dtype gets a new value of ``vec``'s dtype (torch's ``p.data = ...``).

    Args:
        vec: a 1-D Tensor, ``jax.Array`` or ``numpy.ndarray``.
        parameters: an iterable (or generator) of Parameters, e.g. ``model.parameters()``.

    Raises:
        TypeError: ``vec`` is not an array.
        RuntimeError: ``vec`` is not 1-D, or holds fewer elements than the parameters need.

    Shapes:
        vec ``(N,)`` with ``N >= sum of numel``.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> from spx.nn.utils import vector_to_parameters
        >>> layer = nn.Linear(3, 2)
        >>> vector_to_parameters(spx.zeros(8), layer.parameters())
        >>> layer.weight.sum().item()
        0.0
    """
    if not isinstance(vec, Tensor | jax.Array | np.ndarray):
        raise TypeError(
            f"expected an spx.Tensor, jax.Array or numpy.ndarray for vec, but got: {type(vec)}"
        )
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
    if not params:
        return
    with no_grad():  # torch writes through .data: no autograd history
        pieces = _pieces(vec, tuple(tuple(p.shape) for p in params))
        for p, piece in zip(params, pieces, strict=True):
            if piece.dtype == p.dtype:
                p.copy_(piece)
            else:
                p.data = piece
