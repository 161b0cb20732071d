"""``spx.func.vjp``: torch.func's vector-Jacobian product on ``jax.vjp``.

``vjp(f, *primals)`` runs ``f`` once and returns its output with a function that pulls any
cotangent of that output back to the primals: ``vjp_fn(ct)`` is ``(ct^T df/dp for p in
primals)``, a tuple with one entry per primal, each shaped like it. The output and the
cotangent are (torch) pytrees of Tensors with the same structure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from spx.func._pytree import TreeSpec, tree_flatten
from spx.func._wrap import (
    AuxBox,
    array_of,
    call,
    check_has_aux,
    depends_on_outside_leaves,
    diff_arrays,
    is_array,
    outside_history,
    tensors,
    without_history,
)


def check_outputs(leaves: list[Any], api: str) -> None:
    """torch's checks on what a differentiated function returned (its leaves)."""
    if not leaves:
        raise RuntimeError(
            f"{api}: Expected f to be a function that has non-empty output (got output = {leaves})"
        )
    for x in leaves:
        if not is_array(x):
            raise RuntimeError(
                f"{api}: expected f(*primals) to return only tensors, got unsupported type "
                f"{type(x)}"
            )


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """Evaluate ``func(*primals)`` and return it with its VJP function (mirrors torch.func.vjp).

    Args:
        func: takes the primals, returns a Tensor or a pytree of Tensors (or ``(output, aux)``
            with ``has_aux``).
        *primals: Tensors or pytrees of Tensors, all differentiated.
        has_aux: whether ``func`` returns ``(output, aux)``.

    Returns:
        ``(output, vjp_fn)``, or ``(output, vjp_fn, aux)`` with ``has_aux``. ``vjp_fn(ct)``
        takes a cotangent shaped like ``output`` and returns a tuple of gradients, one per
        primal.

    Example:
        >>> import spx
        >>> out, vjp_fn = spx.func.vjp(lambda x: x * 3, spx.ones(2))
        >>> vjp_fn(spx.tensor([1.0, 2.0]))[0].tolist()
        [3.0, 6.0]
    """
    flat = [diff_arrays(p) for p in primals]
    box = AuxBox()
    out_box: dict[str, Any] = {}

    def inner(diff: list[list[jax.Array]]) -> tuple[list[jax.Array], list[jax.Array]]:
        args = [
            tensors(spec, values, requires_grad=True)
            for (_, spec), values in zip(flat, diff, strict=True)
        ]
        out = call(func, args, {}, "reverse")
        aux = None
        if has_aux:
            out, aux = check_has_aux(out, "vjp(f, *primals)")
        leaves, spec = tree_flatten(out)
        check_outputs(leaves, "vjp(f, *primals)")
        arrays = [array_of(x) for x in leaves]
        for a in arrays:
            if not jnp.issubdtype(a.dtype, jnp.inexact):
                raise RuntimeError(
                    "vjp(f, ...): All outputs of f must be floating-point or complex Tensors, "
                    f"got Tensor with dtype {a.dtype}"
                )
        out_box["spec"] = spec
        return arrays, box.put(aux)

    with outside_history(primals) as outside:
        arrays, pullback, aux = jax.vjp(inner, [a for a, _ in flat], has_aux=True)
    out_spec: TreeSpec = out_box["spec"]
    primal_specs = [spec for _, spec in flat]

    def vjp_fn(
        cotangents: Any, retain_graph: bool = True, create_graph: bool | None = None
    ) -> tuple:
        """Pull ``cotangents`` (shaped like the output) back to the primals.

        ``retain_graph``/``create_graph`` are accepted as torch's are: the function may be
        called any number of times and its results can be differentiated again.
        """
        ct_leaves, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of "
                f"outputs to the function. cotangents: {ct_spec}, primal output: {out_spec}"
            )
        cts = []
        for c, a in zip(ct_leaves, arrays, strict=True):
            if not is_array(c):
                raise RuntimeError(f"Expected tensors, got unsupported type {type(c)}")
            c = array_of(c)
            if c.shape != a.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[0] has a shape of {tuple(c.shape)} and "
                    f"output[0] has a shape of {tuple(a.shape)}."
                )
            cts.append(c.astype(a.dtype))
        (grads,) = pullback(cts)
        out = tuple(tensors(spec, g) for spec, g in zip(primal_specs, grads, strict=True))
        marked = outside or depends_on_outside_leaves(cotangents)
        return without_history(out, "vjp") if marked else out

    output = tensors(out_spec, arrays)
    if outside:
        output = without_history(output, "vjp")
    if has_aux:
        return output, vjp_fn, box.get(aux)
    return output, vjp_fn
