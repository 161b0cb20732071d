"""Trace a model once and cut its program into pipeline stages at the ``pipe_split`` markers.

``pipeline()`` turns a module into stage programs in three steps:

1. **Mark.** ``split_spec`` entries wrap the named submodules' ``forward`` for the duration of
   the trace so that a marker is bound before (``BEGINNING``) or after (``END``) each call;
   ``pipe_split()`` calls in user code bind the same marker.
2. **Trace.** The forward is traced once to a jaxpr whose inputs are, in order, every
   Parameter, every buffer, the RNG key and the array leaves of the example inputs (tracers are
   bound into the Parameters and buffer slots as :class:`spx._compile.binding.Binding` does, and
   everything is restored afterwards). Nested ``jit`` calls are inlined so markers inside
   jitted helpers are seen.
3. **Cut.** Dead equations are dropped and the rest are split at the markers. Each stage reads
   the parameters and buffers it uses from its own module (they are never sent between
   stages). Every other value a stage needs from earlier stages is received from the stage
   right before it: values produced in stage ``i`` and read in stage ``j > i + 1`` are passed
   through the stages in between. What crosses boundary ``b`` is ordered by first use in the
   equation list from stage ``b`` on (the model's outputs count as used at the very end), so
   sender and receiver agree on positions without ever iterating a set.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.extend.core import DropVar, Jaxpr, Var

from spx import random as spx_random
from spx._compile.binding import Binding, _buffer_value
from spx._tensor.tensor import Tensor
from spx.distributed.pipelining.runtime.backward_split import _inline
from spx.distributed.pipelining.runtime.programs import to_arrays, to_tensors
from spx.distributed.pipelining.split.marker import (
    SplitPoint,
    check_no_nested_markers,
    pipe_split_p,
    split_points,
)
from spx.nn.module import Module
from spx.nn.parameter import Parameter


# -- tracing -----------------------------------------------------------------------------------
def _walk(module: Module, prefix: str = "") -> Iterator[tuple[str, str, Module, str]]:
    """``(kind, dotted name, owner, local name)`` in ``state_dict`` order, aliases included."""
    d = module.__dict__
    for name, p in d["_parameters"].items():
        if p is not None:
            yield "param", prefix + name, module, name
    for name, b in d["_buffers"].items():
        if b is not None:
            yield "buffer", prefix + name, module, name
    for name, m in d["_modules"].items():
        if m is not None:
            yield from _walk(m, f"{prefix}{name}.")


class _State:
    """Every Parameter and buffer slot of a module, once each, with all of its names.

    Args:
        module: the model.

    Attributes:
        params: distinct Parameters in ``state_dict`` order; ``param_names[i]`` their names
            (several when a Parameter is registered twice, as tied weights are).
        slots: distinct ``(buffer table, name)`` slots; ``buffer_names`` likewise.
        entries: ``(kind, dotted name, index into params or slots)`` for every ``state_dict``
            entry (non-persistent buffers included), in ``state_dict`` order.
    """

    def __init__(self, module: Module) -> None:
        self.params: list[Parameter] = []
        self.param_names: list[list[str]] = []
        self.slots: list[tuple[dict, str]] = []
        self.buffer_names: list[list[str]] = []
        self.buffer_persistent: list[bool] = []
        self.entries: list[tuple[str, str, int]] = []
        param_at: dict[int, int] = {}
        slot_at: dict[tuple[int, str], int] = {}
        for kind, name, owner, local in _walk(module):
            if kind == "param":
                p = owner._parameters[local]
                if p.is_uninitialized:
                    raise ValueError(
                        f"{type(module).__name__}: parameter {name!r} is not initialized yet "
                        "(a lazy layer). Run one forward first, model(*mb_args), then call "
                        "pipeline()."
                    )
                i = param_at.setdefault(id(p), len(self.params))
                if i == len(self.params):
                    self.params.append(p)
                    self.param_names.append([])
                self.param_names[i].append(name)
            else:
                i = slot_at.setdefault((id(owner._buffers), local), len(self.slots))
                if i == len(self.slots):
                    self.slots.append((owner._buffers, local))
                    self.buffer_names.append([])
                    self.buffer_persistent.append(local not in owner._non_persistent_buffers)
                self.buffer_names[i].append(name)
            self.entries.append((kind, name, i))


@dataclass(eq=False)
class Traced:
    """The whole forward as one (inlined) jaxpr plus what its inputs are.

    ``jaxpr.invars`` = ``[*params, *buffers, key, *dynamic inputs]``.
    """

    jaxpr: Jaxpr
    consts: list[Any]
    debug_info: Any
    state: _State
    buffer_values: list[Any]  # the buffers as they were when traced
    in_tree: Any  # of (args, kwargs)
    in_leaves: list[Any]
    dyn_index: tuple[int, ...]  # which of in_leaves are array inputs
    out_tree: Any


_RANDOM_MSG = (
    "The forward of {model} draws random numbers (e.g. nn.Dropout in training mode). "
    "pipeline() splits one fixed, deterministic program, so it cannot carry the RNG state "
    "between stages. Call model.eval() (or use dropout p=0) before pipeline(model, ...)."
)
_BUFFER_MSG = (
    "The forward of {model} assigns buffer {name!r} (e.g. BatchNorm updating its running "
    "statistics in training mode). Stage modules made by pipeline() cannot update buffers. "
    "Call model.eval() before pipeline(), or build the layer without running statistics "
    "(nn.BatchNorm1d(n, track_running_stats=False))."
)
_PARAM_MSG = (
    "The forward of {model} assigns parameter {name!r} (p.data = ...). A forward traced by "
    "pipeline() must only read its parameters; update them outside forward (optimizer.step())."
)


def trace(
    module: Module,
    mb_args: tuple[Any, ...],
    mb_kwargs: dict[str, Any],
    split_spec: Mapping[str, SplitPoint] | None,
) -> Traced:
    """Trace ``module(*mb_args, **mb_kwargs)`` with parameters and buffers as named inputs."""
    model = type(module).__name__
    state = _State(module)
    params, slots = state.params, state.slots

    # The program is traced over arrays; the model itself sees Tensors, as in torch.
    example = to_arrays((tuple(mb_args), dict(mb_kwargs)))
    in_leaves, in_tree = jax.tree_util.tree_flatten(example)
    # Arrays are inputs; anything else (ints, flags, None) is part of the traced program.
    dyn_index = tuple(i for i, x in enumerate(in_leaves) if isinstance(x, jax.Array | np.ndarray))
    record: dict[str, Any] = {}

    def forward(pvals: list, bvals: list, key: Any, dyn: list) -> Any:
        for p, v in zip(params, pvals, strict=True):
            p._data = v
        for (d, n), v in zip(slots, bvals, strict=True):
            d[n] = None if v is None else Tensor._of(v)
        spx_random.set_key(key)
        leaves = list(in_leaves)
        for i, v in zip(dyn_index, dyn, strict=True):
            leaves[i] = v
        args, kwargs = to_tensors(in_tree.unflatten(leaves))
        out = to_arrays(module(*args, **kwargs))
        record.update(pvals=pvals, bvals=bvals, key=key)
        record.update(
            params=[p._data for p in params], buffers=[_buffer_value(d[n]) for d, n in slots]
        )
        record["key_after"] = spx_random.get_key()
        return out

    binding = Binding([module])
    before = binding.read_state()
    try:
        with split_points(module, split_spec):
            closed, out_shape = jax.make_jaxpr(forward, return_shape=True)(
                [p._data for p in params],
                [_buffer_value(d[n]) for d, n in slots],
                spx_random.get_key(),
                [in_leaves[i] for i in dyn_index],
            )
    finally:
        binding.write_state(before)

    for i, (new, old) in enumerate(zip(record["params"], record["pvals"], strict=True)):
        if new is not old:
            raise RuntimeError(_PARAM_MSG.format(model=model, name=state.param_names[i][0]))
    for i, (new, old) in enumerate(zip(record["buffers"], record["bvals"], strict=True)):
        if new is not old:
            raise RuntimeError(_BUFFER_MSG.format(model=model, name=state.buffer_names[i][0]))
    jaxpr, consts = _inline(closed.jaxpr, list(closed.consts))
    key_var = jaxpr.invars[len(params) + len(slots)]
    if record["key_after"] is not record["key"] or _reads(jaxpr, key_var):
        raise RuntimeError(_RANDOM_MSG.format(model=model))
    return Traced(
        jaxpr=jaxpr,
        consts=consts,
        debug_info=closed.jaxpr.debug_info,
        state=state,
        buffer_values=[d[n] for d, n in slots],
        in_tree=in_tree,
        in_leaves=in_leaves,
        dyn_index=dyn_index,
        out_tree=jax.tree_util.tree_structure(out_shape),
    )


def _reads(jaxpr: Jaxpr, var: Var) -> bool:
    return any(v is var for e in jaxpr.eqns for v in e.invars) or any(
        v is var for v in jaxpr.outvars
    )


def live_equations(jaxpr: Jaxpr) -> list[Any]:
    """Markers, effectful equations and whatever the outputs depend on, in program order."""
    live = {v for v in jaxpr.outvars if isinstance(v, Var)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if (
            eqn.primitive is pipe_split_p
            or eqn.effects
            or any(not isinstance(o, DropVar) and o in live for o in eqn.outvars)
        ):
            kept.append(eqn)
            live.update(v for v in eqn.invars if isinstance(v, Var))
    kept.reverse()
    return kept


def ordered_reads(eqns: list[Any], tail: list[Any] = ()) -> list[Var]:
    """Variables read by ``eqns`` (then ``tail``), each once, in order of first use."""
    seen: dict[Var, None] = {}
    for atoms in [e.invars for e in eqns] + [list(tail)]:
        for a in atoms:
            if isinstance(a, Var):
                seen.setdefault(a, None)
    return list(seen)


# -- cutting -----------------------------------------------------------------------------------
@dataclass(eq=False)
class StagePlan:
    """One stage's program and the state it reads.

    ``jaxpr.invars`` = ``[*params, *buffers, *inputs]``, where parameter ``i`` is read from the
    stage module at ``param_paths[i]`` (likewise buffers) and the inputs are the model's array
    inputs (stage 0) or the previous stage's outputs. ``entries`` lists, in the original
    ``state_dict`` order, every ``(kind, dotted name, index into Traced params/buffers)`` the
    stage module registers.
    """

    index: int
    num_stages: int
    jaxpr: Jaxpr
    consts: list[Any]
    param_paths: tuple[str, ...]
    buffer_paths: tuple[str, ...]
    entries: list[tuple[str, str, int]]
    begins_at: str
    ends_at: str

    @property
    def is_first(self) -> bool:
        return self.index == 0

    @property
    def is_last(self) -> bool:
        return self.index == self.num_stages - 1

    @property
    def n_state(self) -> int:
        return len(self.param_paths) + len(self.buffer_paths)


def _host_const(c: Any) -> Any:
    # Closed-over constants are embedded in each stage's program wherever it runs; keeping
    # them on the host means a stage module pins no memory on the device it was traced on.
    if isinstance(c, jax.Array) and not jax.dtypes.issubdtype(c.dtype, jax.dtypes.extended):
        return np.asarray(c)
    return c


def plan_stages(traced: Traced) -> list[StagePlan]:
    """Cut the traced program at its markers into one :class:`StagePlan` per stage."""
    jaxpr = traced.jaxpr
    check_no_nested_markers(jaxpr.eqns)
    segments: list[list[Any]] = [[]]
    origins: list[str] = []
    for eqn in live_equations(jaxpr):
        if eqn.primitive is pipe_split_p:
            segments.append([])
            origins.append(eqn.params.get("origin", "pipe_split()"))
        else:
            segments[-1].append(eqn)
    n = len(segments)
    bounds = ["the start of forward", *origins, "the end of forward"]
    for s, seg in enumerate(segments):
        if not seg:
            raise ValueError(
                f"pipeline stage {s} of {n} would be empty: nothing the model's output depends "
                f"on is computed between {bounds[s]} and {bounds[s + 1]}. Remove or move one "
                "of these split points."
            )

    n_p, n_b = len(traced.state.params), len(traced.state.buffer_names)
    invars = list(jaxpr.invars)
    param_of = {v: i for i, v in enumerate(invars[:n_p])}
    buffer_of = {v: i for i, v in enumerate(invars[n_p : n_p + n_b])}
    user_vars = invars[n_p + n_b + 1 :]
    const_vars = dict.fromkeys(jaxpr.constvars)
    const_value = dict(zip(jaxpr.constvars, traced.consts, strict=True))
    # Stage that produces each value (the model's inputs enter at stage 0).
    made_in: dict[Var, int] = dict.fromkeys(user_vars, 0)
    for s, seg in enumerate(segments):
        for eqn in seg:
            made_in.update((o, s) for o in eqn.outvars if not isinstance(o, DropVar))
    reads = [
        ordered_reads(seg, jaxpr.outvars if s == n - 1 else ()) for s, seg in enumerate(segments)
    ]
    carried = [[v for v in r if v in made_in] for r in reads]

    param_stage: dict[int, int] = {}
    for s, r in enumerate(reads):
        for v in r:
            if v in param_of:
                i = param_of[v]
                if param_stage.setdefault(i, s) != s:
                    names = ", ".join(repr(x) for x in traced.state.param_names[i])
                    raise NotImplementedError(
                        f"parameter {names} is used by pipeline stages {param_stage[i]} and "
                        f"{s} (e.g. tied input/output embeddings). Sharing a parameter across "
                        "stages needs its gradients all-reduced between them, which spx does "
                        "not do yet. Untie it (give each stage its own copy) or move the split "
                        "so that one stage holds every use."
                    )
    # What crosses boundary b (between stages b-1 and b), by first use from stage b on.
    crossing: list[list[Var]] = [list(user_vars)]
    for b in range(1, n):
        wanted: dict[Var, None] = {}
        for s in range(b, n):
            for v in carried[s]:
                if made_in[v] < b:
                    wanted.setdefault(v, None)
        crossing.append(list(wanted))

    owner = _owners(traced, reads, param_of, buffer_of)
    plans = []
    for s, seg in enumerate(segments):
        p_vars = [v for v in reads[s] if v in param_of]
        b_vars = [v for v in reads[s] if v in buffer_of]
        c_vars = [v for v in reads[s] if v in const_vars]
        outs = crossing[s + 1] if s < n - 1 else list(jaxpr.outvars)
        effects = frozenset().union(*(e.effects for e in seg))
        p_names = [traced.state.param_names[param_of[v]][0] for v in p_vars]
        b_names = [traced.state.buffer_names[buffer_of[v]][0] for v in b_vars]
        names = (*p_names, *b_names, *(f"input[{i}]" for i in range(len(crossing[s]))))
        debug = traced.debug_info._replace(
            traced_for=f"pipeline stage {s}",
            arg_names=names,
            result_paths=tuple(f"output[{i}]" for i in range(len(outs))),
        )
        stage_jaxpr = Jaxpr(c_vars, p_vars + b_vars + crossing[s], outs, seg, effects, debug)
        plans.append(
            StagePlan(
                index=s,
                num_stages=n,
                jaxpr=stage_jaxpr,
                consts=[_host_const(const_value[v]) for v in c_vars],
                param_paths=tuple(p_names),
                buffer_paths=tuple(b_names),
                entries=[e for e in traced.state.entries if s in owner[e[0], e[2]]],
                begins_at=bounds[s],
                ends_at=bounds[s + 1],
            )
        )
    return plans


def _owners(
    traced: Traced, reads: list[list[Var]], param_of: dict, buffer_of: dict
) -> dict[tuple[str, int], list[int]]:
    """The stages that register each parameter and buffer.

    Parameters and buffers go to the stages that read them (a parameter to exactly one — see
    the tied-parameter check; a read-only buffer may be copied into several). State the
    forward never reads goes to the first stage that reads anything of the nearest enclosing
    module, so that the stages' ``state_dict`` keys still add up to the model's.
    """
    owners: dict[tuple[str, int], list[int]] = {}
    for s, r in enumerate(reads):
        for v in r:
            for kind, table in (("param", param_of), ("buffer", buffer_of)):
                if v in table:
                    stages = owners.setdefault((kind, table[v]), [])
                    if s not in stages:
                        stages.append(s)
    used = [(name, owners[k, i][0]) for k, name, i in traced.state.entries if (k, i) in owners]
    for kind, name, i in traced.state.entries:
        prefix = name
        while (kind, i) not in owners:
            prefix = prefix.rpartition(".")[0]
            hits = [s for other, s in used if prefix == "" or other.startswith(prefix + ".")]
            if hits or prefix == "":
                owners[kind, i] = [min(hits, default=0)]
    return owners
