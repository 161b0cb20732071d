"""``spx.func.grad`` and ``grad_and_value``: torch.func's gradient transforms on ``jax.grad``.

``grad(f, argnums)(*args)`` differentiates a function returning a scalar Tensor with respect to
the arguments ``argnums`` names; each may be a Tensor or a (torch) pytree of Tensors — a dict of
parameters for :func:`spx.func.functional_call` — and its gradient comes back with the same
structure and key order. The transforms compose with :func:`spx.func.vmap` (per-sample
gradients) and with each other (higher derivatives), as JAX's do.

Gradients are values: a Tensor that requires grad given as an input is differentiated like any
other, and the results do not carry spx autograd history back to it (torch.func would let
``backward()`` go through the transform; differentiate with another ``spx.func.grad`` instead).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax

from spx._tensor.tensor import Tensor
from spx.func._wrap import (
    Argnums,
    AuxBox,
    call,
    check_has_aux,
    diff_arrays,
    guard_history,
    normalize_argnums,
    tensors,
)

_API = "grad_and_value(f)(*args)"


def grad_and_value(
    func: Callable[..., Any], argnums: Argnums = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """Return a function computing ``(gradient, value)`` of ``func`` (mirrors torch.func).

    Args:
        func: returns a scalar Tensor (or ``(scalar, aux)`` with ``has_aux``).
        argnums: the positional argument (int) or arguments (tuple) to differentiate.
        has_aux: whether ``func`` returns ``(output, aux)``; aux is returned untouched.

    Returns:
        A function returning ``(grad, value)``, or ``(grad, (value, aux))`` with ``has_aux``.
        ``grad`` is shaped like the argument (a tuple of those for a tuple ``argnums``).

    Example:
        >>> import spx
        >>> g, v = spx.func.grad_and_value(lambda x: (x**2).sum())(spx.tensor([1.0, 2.0]))
        >>> g.tolist(), v.item()
        ([2.0, 4.0], 5.0)
    """

    @guard_history("grad")
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = normalize_argnums(argnums, len(args))
        flat = [diff_arrays(args[n]) for n in nums]
        box = AuxBox()

        def inner(diff: list[list[jax.Array]]) -> tuple[jax.Array, Any]:
            new_args = list(args)
            for n, (_, spec), values in zip(nums, flat, diff, strict=True):
                new_args[n] = tensors(spec, values, requires_grad=True)
            out = call(func, new_args, kwargs, "reverse")
            aux = None
            if has_aux:
                out, aux = check_has_aux(out, _API)
            if not isinstance(out, Tensor):
                raise RuntimeError(f"{_API}: Expected f(*args) to return a Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(
                    f"{_API}: Expected f(*args) to return a scalar Tensor, got tensor with "
                    f"{out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
                )
            value = out._data
            return value, (value, box.put(aux))

        grads, (value, aux) = jax.grad(inner, has_aux=True)([arrays for arrays, _ in flat])
        trees = tuple(tensors(spec, g) for (_, spec), g in zip(flat, grads, strict=True))
        result = trees if isinstance(argnums, tuple) else trees[0]
        value = Tensor._of(value)
        if has_aux:
            return result, (value, box.get(aux))
        return result, value

    return wrapper


def grad(
    func: Callable[..., Any], argnums: Argnums = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """Return a function computing the gradient of ``func`` (mirrors ``torch.func.grad``).

    Args:
        func: returns a scalar Tensor (or ``(scalar, aux)`` with ``has_aux``).
        argnums: the positional argument (int) or arguments (tuple) to differentiate.
        has_aux: whether ``func`` returns ``(output, aux)``.

    Returns:
        A function returning the gradient (``(grad, aux)`` with ``has_aux``), shaped like the
        differentiated argument, or a tuple of those for a tuple ``argnums``.

    Raises:
        RuntimeError: (when called) ``func`` returned a non-Tensor or a non-scalar, or bad
            ``argnums``, with torch.func's messages.

    Example:
        >>> import spx
        >>> spx.func.grad(lambda x: x.sin().sum())(spx.zeros(2)).tolist()
        [1.0, 1.0]
    """
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = inner(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper
