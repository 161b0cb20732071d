"""Which gradients of a backward are zero by structure, not by value (torch's ``None``).

torch's engine leaves ``.grad`` None for a leaf that no gradient reaches: one that only feeds
outputs the backward does not come through (a parameter off the path of a double backward's
``autograd.grad(..., create_graph=True)`` result), or whose ``autograd.Function.backward``
returns None. spx computes a backward as one ``jax.vjp`` of the replayed graph, which gives
such a leaf an instantiated zero; an optimizer with weight decay or momentum would then move
a parameter torch leaves alone. A gradient is zero by structure exactly when it does not
depend on the cotangent (the pullback is linear in it), which the pullback's jaxpr shows.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.extend.core import ClosedJaxpr, Jaxpr, Var, jaxpr_as_fun


def pull_back(vjp: Any, cotangents: list) -> tuple[list, list[bool]]:
    """``vjp(cotangents)``'s gradients, and per gradient whether it is zero by structure.

    Traced once, inside the program being traced (the cost is at compile time only): the
    pullback is staged to a jaxpr, read for dependence, then evaluated as is.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> _, vjp = jax.vjp(lambda a, c: (a * 2.0, c * 0.0), jnp.ones(2), jnp.ones(2))
        >>> grads, zero = pull_back(lambda cots: vjp(cots[0]), [(jnp.ones(2), jnp.zeros(2))])
        >>> zero
        [False, False]
        >>> _, vjp = jax.vjp(lambda a, c: a * 2.0, jnp.ones(2), jnp.ones(2))
        >>> pull_back(lambda cots: vjp(cots[0]), [jnp.ones(2)])[1]
        [False, True]
    """
    flat, tree = jax.tree.flatten(cotangents)

    def linear(*leaves: Any) -> list:
        return jax.tree.leaves(vjp(jax.tree.unflatten(tree, leaves)))

    closed = jax.make_jaxpr(linear)(*flat)
    grads = jaxpr_as_fun(closed)(*flat)
    depends = _depends_on_inputs(closed.jaxpr, [True] * len(closed.jaxpr.invars))
    return list(grads), [not d for d in depends]


def _depends_on_inputs(jaxpr: Jaxpr, marked: list[bool]) -> list[bool]:
    """Per output of ``jaxpr``: whether it depends on an input marked True.

    Calls with a jaxpr of their own (``jax.jit`` inside the program: pjit, closed_call; see
    ``_CALLS``) are looked into; any other equation's outputs, loops' included, depend on all
    its inputs (an over-estimate, which keeps a zero as a zero, as before).
    """
    live = {v for v, m in zip(jaxpr.invars, marked, strict=True) if m}
    for eqn in jaxpr.eqns:
        ins = [isinstance(v, Var) and v in live for v in eqn.invars]
        if not any(ins):
            continue
        inner = _inner_jaxpr(eqn)
        outs = [True] * len(eqn.outvars) if inner is None else _depends_on_inputs(inner, ins)
        live.update(v for v, d in zip(eqn.outvars, outs, strict=True) if d)
    return [isinstance(v, Var) and v in live for v in jaxpr.outvars]


# Primitives that run their jaxpr once on exactly their inputs and outputs. Others with a
# jaxpr of the same arity are not calls: ``scan`` feeds its body's outputs back as inputs (a
# parameter can reach the cotangent only through the carry, after several iterations), so
# they stay opaque (every output depends on every input).
_CALLS = frozenset({
    "pjit", "jit", "closed_call", "core_call", "remat", "remat2", "checkpoint",
    "custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr", "shard_map",
})  # fmt: skip


def _inner_jaxpr(eqn: Any) -> Jaxpr | None:
    """The jaxpr a call equation runs on exactly its inputs and outputs, or None."""
    if eqn.primitive.name not in _CALLS:
        return None
    inner = eqn.params.get("jaxpr", eqn.params.get("call_jaxpr"))
    if isinstance(inner, ClosedJaxpr):
        inner = inner.jaxpr
    if not isinstance(inner, Jaxpr) or inner.constvars:
        return None
    if len(inner.invars) != len(eqn.invars) or len(inner.outvars) != len(eqn.outvars):
        return None
    return inner
