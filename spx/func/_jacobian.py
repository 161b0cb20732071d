"""``spx.func.jacrev``, ``jacfwd`` and ``hessian``: torch.func's Jacobians on JAX's.

The Jacobian of output ``o`` with respect to input ``x`` has shape ``o.shape + x.shape``. For a
pytree output and pytree inputs the result nests as torch's does: the output's structure
outside, and inside it the differentiated argument's structure (a tuple of those when
``argnums`` is a tuple). ``jacrev`` pulls back one basis vector per output element (reverse
mode, cheap for few outputs); ``jacfwd`` pushes one per input element (forward mode, cheap for
few inputs); the numbers are the same.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from spx.func._pytree import tree_flatten
from spx.func._randomness import check_randomness, randomness_guard
from spx.func._vjp import check_outputs
from spx.func._wrap import (
    Argnums,
    AuxBox,
    array_of,
    call,
    check_has_aux,
    diff_arrays,
    guard_history,
    normalize_argnums,
    tensors,
)


def _jacobian(
    transform: Callable[..., Any],
    api: str,
    func: Callable[..., Any],
    argnums: Argnums,
    has_aux: bool,
    randomness: str = "same",
) -> Callable[..., Any]:
    """A Jacobian function over ``transform`` (``jax.jacrev`` or ``jax.jacfwd``)."""
    mode = "forward" if transform is jax.jacfwd else "reverse"

    @guard_history(transform.__name__)
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = normalize_argnums(argnums, len(args))
        flat = [diff_arrays(args[n]) for n in nums]
        box = AuxBox()
        out_box: dict[str, Any] = {}

        def inner(diff: list[list[jax.Array]]) -> tuple[list[jax.Array], list[jax.Array]]:
            new_args = list(args)
            for n, (_, spec), values in zip(nums, flat, diff, strict=True):
                new_args[n] = tensors(spec, values, requires_grad=True)
            out = call(func, new_args, kwargs, mode)
            aux = None
            if has_aux:
                out, aux = check_has_aux(out, api)
            leaves, spec = tree_flatten(out)
            check_outputs(leaves, api)
            arrays = [array_of(x) for x in leaves]
            for a in arrays:
                if not jnp.issubdtype(a.dtype, jnp.inexact):
                    raise RuntimeError(
                        f"{api}: All outputs of f must be floating-point or complex Tensors, "
                        f"got Tensor with dtype {a.dtype}"
                    )
            out_box["spec"] = spec
            return arrays, box.put(aux)

        with randomness_guard(randomness):
            jac, aux = transform(inner, has_aux=True)([arrays for arrays, _ in flat])
        # jac[i][k][j]: output leaf i by leaf j of differentiated argument k.
        per_output = []
        for rows in jac:
            trees = tuple(tensors(spec, row) for (_, spec), row in zip(flat, rows, strict=True))
            per_output.append(trees if isinstance(argnums, tuple) else trees[0])
        result = out_box["spec"].unflatten(per_output)
        return (result, box.get(aux)) if has_aux else result

    return wrapper


def jacrev(
    func: Callable[..., Any],
    argnums: Argnums = 0,
    *,
    has_aux: bool = False,
    chunk_size: int | None = None,
) -> Callable[..., Any]:
    """Return a function computing the Jacobian of ``func`` in reverse mode (mirrors torch).

    Args:
        func: returns a Tensor or a pytree of Tensors (``(output, aux)`` with ``has_aux``).
        argnums: the positional argument (int) or arguments (tuple) to differentiate.
        has_aux: whether ``func`` returns ``(output, aux)``.
        chunk_size: torch computes the Jacobian ``chunk_size`` rows at a time to save memory;
            XLA schedules the rows itself here, so only the value is checked.

    Returns:
        A function returning the Jacobian (``(jacobian, aux)`` with ``has_aux``).

    Example:
        >>> import spx
        >>> spx.func.jacrev(lambda x: x.sin())(spx.zeros(2)).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    if chunk_size is not None and not chunk_size > 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jacobian(jax.jacrev, "jacrev(f, ...)", func, argnums, has_aux)


def jacfwd(
    func: Callable[..., Any],
    argnums: Argnums = 0,
    has_aux: bool = False,
    *,
    randomness: str = "error",
) -> Callable[..., Any]:
    """Return a function computing the Jacobian of ``func`` in forward mode (mirrors torch).

    Args:
        func: returns a Tensor or a pytree of Tensors (``(output, aux)`` with ``has_aux``).
        argnums: the positional argument (int) or arguments (tuple) to differentiate.
        has_aux: whether ``func`` returns ``(output, aux)``.
        randomness: as :func:`spx.func.vmap`'s (``"error"`` or ``"same"``): forward mode maps
            over the tangents.

    Returns:
        A function returning the Jacobian (``(jacobian, aux)`` with ``has_aux``).

    Example:
        >>> import spx
        >>> spx.func.jacfwd(lambda x: x * 2)(spx.ones(2)).tolist()
        [[2.0, 0.0], [0.0, 2.0]]
    """
    check_randomness(randomness)
    return _jacobian(jax.jacfwd, "jvp(f, primals, tangents)", func, argnums, has_aux, randomness)


def hessian(func: Callable[..., Any], argnums: Argnums = 0) -> Callable[..., Any]:
    """Return a function computing the Hessian of ``func``: ``jacfwd(jacrev(func))``.

    Args:
        func: returns a Tensor (a scalar for the usual Hessian).
        argnums: the positional argument (int) or arguments (tuple) to differentiate.

    Returns:
        A function returning the Hessian, shaped ``out.shape + x.shape + x.shape``.

    Example:
        >>> import spx
        >>> spx.func.hessian(lambda x: (x**3).sum())(spx.tensor([1.0, 2.0])).tolist()
        [[6.0, 0.0], [0.0, 12.0]]
    """
    return jacfwd(jacrev(func, argnums), argnums)
