"""Split a stage's backward program into backward-input (I) and backward-weight (W) programs.

Zero-bubble schedules run ``I`` (the gradient w.r.t. the stage's inputs, which the previous
stage is waiting for) early and ``W`` (the gradient w.r.t. the weights) later to fill bubbles.
The split only pays off if ``I + W`` costs what the full backward ``B`` costs. Computing each
half with its own ``jax.vjp`` would redo the cotangent chain in ``W``. Instead, this module
partitions the equations of ``B``'s jaxpr:

* ``I`` = the equations the input gradients depend on; it also returns the intermediate
  values (*bridge* values, typically the cotangents at each layer's output) that ``W``'s
  remaining equations read;
* ``W`` = the equations only the weight gradients need, fed by residuals, the output cotangent
  and the bridge values.

Every equation runs exactly once across ``I`` and ``W``. Nested ``jit`` calls are inlined first
so that a stage written with jitted helpers still splits at the op level.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jax.core import eval_jaxpr
from jax.extend.core import ClosedJaxpr, DebugInfo, DropVar, Jaxpr, Literal, Var, new_jaxpr_eqn

_INLINE = frozenset({"pjit", "jit", "closed_call", "core_call"})


def _inline(jaxpr: Jaxpr, consts: list[Any]) -> tuple[Jaxpr, list[Any]]:
    """Inline nested jit/call equations, renaming their variables (a callee can repeat)."""
    constvars = list(jaxpr.constvars)
    consts = list(consts)
    eqns = []

    def emit(eqns_in, env: dict) -> None:
        def read(a):
            return a if isinstance(a, Literal) else env.get(a, a)

        for eqn in eqns_in:
            inner = eqn.params.get("jaxpr") if eqn.primitive.name in _INLINE else None
            if isinstance(inner, ClosedJaxpr):
                sub_env: dict = {}
                for v, c in zip(inner.jaxpr.constvars, inner.consts, strict=True):
                    new = Var(v.aval)
                    constvars.append(new)
                    consts.append(c)
                    sub_env[v] = new
                for v, a in zip(inner.jaxpr.invars, eqn.invars, strict=True):
                    sub_env[v] = read(a)
                # Inner variables get fresh names in the callee's scope.
                for e in inner.jaxpr.eqns:
                    for o in e.outvars:
                        if not isinstance(o, DropVar):
                            sub_env[o] = Var(o.aval)
                emit(inner.jaxpr.eqns, sub_env)
                for o, inner_o in zip(eqn.outvars, inner.jaxpr.outvars, strict=True):
                    if isinstance(o, DropVar):
                        continue
                    src = inner_o if isinstance(inner_o, Literal) else sub_env.get(inner_o, inner_o)
                    env[o] = src
                continue
            outvars = [o if isinstance(o, DropVar) else env.setdefault(o, o) for o in eqn.outvars]
            eqns.append(
                new_jaxpr_eqn(
                    [read(a) for a in eqn.invars],
                    outvars,
                    eqn.primitive,
                    eqn.params,
                    eqn.effects,
                    eqn.source_info,
                    eqn.ctx,
                )
            )

    env: dict = {}
    emit(jaxpr.eqns, env)
    outvars = [o if isinstance(o, Literal) else env.get(o, o) for o in jaxpr.outvars]
    new = Jaxpr(
        constvars,
        list(jaxpr.invars),
        outvars,
        eqns,
        jaxpr.effects,
        _debug_info("inlined", len(constvars) + len(jaxpr.invars), len(outvars)),
    )
    return new, consts


def _debug_info(what: str, n_in: int, n_out: int) -> DebugInfo:
    # JAX wants every Jaxpr to say where it came from; these are synthesized pieces.
    return DebugInfo(
        "spx pipeline",
        what,
        tuple(f"in{i}" for i in range(n_in)),
        tuple(f"out{i}" for i in range(n_out)),
    )


def _needed(eqns: Sequence[Any], outs: Sequence[Any]) -> list[Any]:
    """The equations (in order) that the atoms ``outs`` depend on."""
    need = {v for v in outs if isinstance(v, Var)}
    kept = []
    for eqn in reversed(eqns):
        if any(not isinstance(o, DropVar) and o in need for o in eqn.outvars):
            kept.append(eqn)
            need.update(v for v in eqn.invars if isinstance(v, Var))
    kept.reverse()
    return kept


def _ordered_unique(atoms: Sequence[Any], keep: set) -> list[Var]:
    out, seen = [], set()
    for a in atoms:
        if isinstance(a, Var) and a in keep and a not in seen:
            seen.add(a)
            out.append(a)
    return out


@dataclass
class BackwardSplit:
    """The two halves of a backward program.

    ``run_input(*inputs)`` returns ``(input_grads, bridge)``; ``run_weight(*w_inputs, *bridge)``
    returns the weight gradients, where ``w_inputs = [inputs[i] for i in weight_input_index]``.
    ``inputs`` are the backward jaxpr's inputs (residuals, then cotangents).
    """

    input_jaxpr: Jaxpr
    weight_jaxpr: Jaxpr
    consts: list[Any]
    weight_input_index: tuple[int, ...]
    n_bridge: int

    def run_input(self, *inputs: Any) -> tuple[list[Any], list[Any]]:
        outs = eval_jaxpr(self.input_jaxpr, self.consts, *inputs)
        n_in = len(outs) - self.n_bridge
        return list(outs[:n_in]), list(outs[n_in:])

    def run_weight(self, w_inputs: Sequence[Any], bridge: Sequence[Any]) -> list[Any]:
        return list(eval_jaxpr(self.weight_jaxpr, self.consts, *w_inputs, *bridge))


def split_backward(closed: ClosedJaxpr, n_weight_grads: int) -> BackwardSplit:
    """Partition a backward jaxpr whose first ``n_weight_grads`` outputs are weight grads.

    Args:
        closed: jaxpr of ``(residuals..., cotangents...) -> (weight_grads..., input_grads...)``.
        n_weight_grads: how many leading outputs are weight gradients.

    Returns:
        A :class:`BackwardSplit` whose halves together evaluate every equation once.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> f = lambda w, x: jnp.tanh(x @ w)
        >>> _, vjp = jax.vjp(f, jnp.ones((3, 3)), jnp.ones((2, 3)))
        >>> res, tree = jax.tree.flatten(vjp)
        >>> cj = jax.make_jaxpr(lambda r, g: tree.unflatten(r)(g))(res, jnp.ones((2, 3)))
        >>> split = split_backward(cj, 1)
    """
    jaxpr, consts = _inline(closed.jaxpr, list(closed.consts))
    w_outs = list(jaxpr.outvars[:n_weight_grads])
    i_outs = list(jaxpr.outvars[n_weight_grads:])
    i_eqns = _needed(jaxpr.eqns, i_outs)
    i_ids = {id(e) for e in i_eqns}
    w_eqns = [e for e in _needed(jaxpr.eqns, w_outs) if id(e) not in i_ids]
    i_defined = {o for e in i_eqns for o in e.outvars if not isinstance(o, DropVar)}
    w_reads = [v for e in w_eqns for v in e.invars] + w_outs
    bridge = _ordered_unique(w_reads, i_defined)
    top = _ordered_unique(w_reads, set(jaxpr.invars))
    index = {v: i for i, v in enumerate(jaxpr.invars)}
    n_const = len(jaxpr.constvars)
    input_jaxpr = Jaxpr(
        jaxpr.constvars,
        jaxpr.invars,
        i_outs + bridge,
        i_eqns,
        jaxpr.effects,
        _debug_info("backward input", n_const + len(jaxpr.invars), len(i_outs) + len(bridge)),
    )
    weight_jaxpr = Jaxpr(
        jaxpr.constvars,
        top + bridge,
        w_outs,
        w_eqns,
        jaxpr.effects,
        _debug_info("backward weight", n_const + len(top) + len(bridge), len(w_outs)),
    )
    return BackwardSplit(
        input_jaxpr=input_jaxpr,
        weight_jaxpr=weight_jaxpr,
        consts=consts,
        weight_input_index=tuple(index[v] for v in top),
        n_bridge=len(bridge),
    )
