"""Shared pieces of ``spx.special``: argument conversion, torch's float promotion, and the two
ways a torch special function can lack a derivative.

torch's special functions fall in three groups for autograd:

* differentiable (``erf``, ``i1``, ``zeta`` in ``other`` ...): spx gives torch's derivative,
  written out with a ``jax.custom_jvp`` where JAX's own differs at edge values;
* differentiable in some arguments only (``zeta`` in ``input``, ``gammainc`` in ``input``):
  torch raises "the derivative for ... is not implemented" at ``backward()``, and so does spx
  (:func:`no_derivative`), when and only when that argument needs a gradient;
* not differentiable at all (the Bessel functions of ``torch.special``'s newer set, ``airy_ai``,
  the orthogonal polynomials): torch's result has no ``grad_fn``, and spx's result does not
  require grad (:func:`constant`).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero

from spx._tensor.dispatch import apply
from spx._tensor.methods.math import _zero_dim
from spx._tensor.tensor import Tensor
from spx.ops._args import first_operand, operand, tensor_arg

__all__ = [
    "as_float", "binary", "constant", "float_pair", "floating", "floating_pair", "half_back",
    "no_derivative", "unary",
]  # fmt: skip

_NOT_IMPLEMENTED = (
    "the derivative for 'special.{fn}' with respect to '{arg}' is not implemented (torch does "
    "not implement it either); detach that argument first: {fix}"
)


def as_float(x: Any) -> Any:
    """``x`` as torch computes a float function of it: ints and bools as float32,
    float16/bfloat16 as float32 (cast back by :func:`half_back`), other floats as they are."""
    if x.dtype in (jnp.float32, jnp.float64):
        return x
    return x.astype(jnp.float32)


def half_back(out: Any, x: Any) -> Any:
    """``out`` in ``x``'s dtype when ``x`` was float16/bfloat16 (computed in float32)."""
    if x.dtype in (jnp.float16, jnp.bfloat16):
        return out.astype(x.dtype)
    return out


def floating(core: Any) -> Any:
    """``core`` (a function of one float32/float64 array) applied as torch applies a float
    function: ints and bools computed as float32, float16/bfloat16 in float32 and cast back."""

    def fn(x: Any) -> Any:
        return half_back(core(as_float(x)), x)

    fn.__name__ = fn.__qualname__ = getattr(core, "__name__", "special")
    return fn


def float_pair(x: Any, y: Any) -> tuple[Any, Any]:
    """Two operands promoted as torch promotes a binary float function's arguments (0-d and
    wrapped-number rules, then ints to float32)."""
    x, y = _zero_dim(x, y)
    dtype = jnp.result_type(x, y)
    if not jnp.issubdtype(dtype, jnp.floating) or dtype in (jnp.float16, jnp.bfloat16):
        dtype = jnp.float32
    return jnp.asarray(x, dtype), jnp.asarray(y, dtype)


def floating_pair(core: Any) -> Any:
    """``core`` (a function of two arrays of one float32/float64 dtype) applied as torch applies
    a binary float function: operands promoted by :func:`float_pair`, float16/bfloat16 computed
    in float32 and cast back (``xlogy`` of two float16 tensors is float16, as torch's)."""

    def fn(x: Any, y: Any) -> Any:
        x, y = _zero_dim(x, y)
        dtype = jnp.result_type(x, y)
        x, y = float_pair(x, y)
        out = core(x, y)
        return out.astype(dtype) if dtype in (jnp.float16, jnp.bfloat16) else out

    fn.__name__ = fn.__qualname__ = getattr(core, "__name__", "special")
    return fn


def unary(fn: Any, static: tuple, input: Any, name: str) -> Tensor:
    """Record ``fn(input, *static)`` on ``input`` as a Tensor (``name`` for error messages)."""
    return apply(fn, static, (tensor_arg(input, f"special.{name}"),))


def binary(fn: Any, input: Any, other: Any, name: str, other_name: str = "other") -> Tensor:
    """Record ``fn(input, other)``; either side may be a Python number (not both)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        input = tensor_arg(input, f"special.{name}")
    else:
        input = first_operand(input, other, f"special.{name}")
    return apply(fn, (), (input, operand(other, f"special.{name}", other_name)))


def constant(fn: Any, args: tuple, name: str) -> Tensor:
    """Record ``fn(*args)`` as torch records a function it does not differentiate: the result
    does not require grad, whatever its inputs do (torch's has no ``grad_fn``)."""
    values = []
    for a in args:
        if isinstance(a, Tensor):
            values.append(a.detach())
        elif hasattr(a, "shape") or isinstance(a, bool | int | float):
            values.append(a)
        else:
            values.append(operand(a, f"special.{name}"))
    if not any(isinstance(v, Tensor) for v in values):
        values[0] = tensor_arg(values[0], f"special.{name}")
    return apply(fn, (), tuple(values))


def no_derivative(tangent: Any, fn: str, arg: str, fix: str) -> None:
    """Raise torch's "derivative not implemented" error if ``tangent`` (an argument's tangent
    inside a ``custom_jvp`` rule with ``symbolic_zeros``) is not a symbolic zero, i.e. if
    the argument needs a gradient. Runs while spx traces the backward program, so the error
    comes from ``loss.backward()`` as torch's does."""
    if not isinstance(tangent, SymbolicZero):
        raise RuntimeError(_NOT_IMPLEMENTED.format(fn=fn, arg=arg, fix=fix))
