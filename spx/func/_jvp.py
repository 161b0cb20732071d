"""``spx.func.jvp``: torch.func's Jacobian-vector product (forward mode) on ``jax.jvp``.

``jvp(f, primals, tangents)`` evaluates ``f(*primals)`` and the directional derivative of its
output along ``tangents``, in one forward pass. ``primals`` is a tuple (``f`` is called as
``f(*primals)``) and ``tangents`` must have the same (torch) pytree structure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from spx.func._pytree import tree_flatten
from spx.func._vjp import check_outputs
from spx.func._wrap import (
    AuxBox,
    array_of,
    call,
    check_has_aux,
    diff_arrays,
    is_array,
    outside_history,
    tensors,
    without_history,
)

_API = "jvp(f, primals, tangents)"


def jvp(
    func: Callable[..., Any],
    primals: Any,
    tangents: Any,
    *,
    strict: bool = False,
    has_aux: bool = False,
) -> tuple[Any, ...]:
    """Evaluate ``func(*primals)`` and its JVP along ``tangents`` (mirrors torch.func.jvp).

    Args:
        func: returns a Tensor or a pytree of Tensors (``(output, aux)`` with ``has_aux``).
        primals: a tuple of Tensors (or pytrees of Tensors), the arguments of ``func``.
        tangents: the direction, structured exactly as ``primals``.
        strict: raise if an output does not depend on the primals (as torch's ``strict``).
        has_aux: whether ``func`` returns ``(output, aux)``.

    Returns:
        ``(output, jvp_out)``, or ``(output, jvp_out, aux)`` with ``has_aux``; ``jvp_out`` is
        structured like ``output``.

    Example:
        >>> import spx
        >>> out, t = spx.func.jvp(lambda x: x**2, (spx.tensor([3.0]),), (spx.tensor([1.0]),))
        >>> out.tolist(), t.tolist()
        ([9.0], [6.0])
    """
    if not isinstance(primals, tuple):
        raise RuntimeError(
            f"{_API}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals)."
        )
    p_leaves, p_spec = tree_flatten(primals)
    t_leaves, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(
            f"{_API}: Expected primals and tangents to have the same python structure. For "
            "example, if primals is a tuple of 3 tensors, tangents also must be. Got primals "
            f"with structure {p_spec} and tangents with structure {t_spec}"
        )
    for leaves, name in ((p_leaves, "primals"), (t_leaves, "tangents")):
        if not leaves:
            raise RuntimeError(f"{_API}: Expected {name} to contain at least one Tensor.")
        for x in leaves:
            if not is_array(x):
                raise RuntimeError(
                    f"{_API}: Expected {name} to only contain Tensors, got {type(x)}"
                )
    p_arrays, _ = diff_arrays(primals)
    t_arrays = []
    for t, p in zip(t_leaves, p_arrays, strict=True):
        t = array_of(t)
        if t.shape != p.shape:
            raise RuntimeError(
                f"{_API}: Trying to set a forward gradient that has a different size than that "
                f"of the original Tensor, this is not supported. Tensor is of size "
                f"{list(p.shape)} while the given forward gradient is of size {list(t.shape)}."
            )
        t_arrays.append(t.astype(p.dtype))
    box = AuxBox()
    out_box: dict[str, Any] = {}

    def inner(values: list[jax.Array]) -> tuple[list[jax.Array], list[jax.Array]]:
        out = call(func, tensors(p_spec, values, requires_grad=True), {}, "forward")
        aux = None
        if has_aux:
            out, aux = check_has_aux(out, _API)
        leaves, spec = tree_flatten(out)
        check_outputs(leaves, _API)
        arrays = [array_of(x) for x in leaves]
        if strict and any(not _depends(a, values) for a in arrays):
            raise RuntimeError(
                f"{_API}: The output of f is independent of the inputs. This is not allowed "
                "with strict=True."
            )
        out_box["spec"] = spec
        return arrays, box.put(aux)

    with outside_history((primals, tangents)) as outside:
        out, tangent_out, aux = jax.jvp(inner, (p_arrays,), (t_arrays,), has_aux=True)
    spec = out_box["spec"]
    result = (tensors(spec, out), tensors(spec, tangent_out))
    if outside:
        result = without_history(result, "jvp")
    return (*result, box.get(aux)) if has_aux else result


def _depends(out: jax.Array, inputs: list[jax.Array]) -> bool:
    # Under jax.jvp an output computed from the primals is a tracer of the jvp's own trace;
    # one that is not (a constant, or a value of an enclosing transform) is independent.
    trace = getattr(inputs[0], "_trace", None)
    return isinstance(out, jax.core.Tracer) and getattr(out, "_trace", None) is trace
