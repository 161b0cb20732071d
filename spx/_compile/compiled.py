"""``spx.compile``: a torch-style training step as one XLA program.

The step function is ordinary torch-shaped code that receives modules and optimizers and
mutates them::

    @spx.compile
    def train_step(model, opt, x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()  # or: loss = spx.backward(lambda m: F.cross_entropy(m(x), y), model)
        opt.step()
        return loss

``spx.compile`` traces it once with the objects' state (parameters, grads, buffers, optimizer
state and hyperparameters, the RNG key) bound to tracers, and compiles forward, backward and
update into one program. Each call feeds the current state in, donates the buffers it replaces,
and writes the results back into the same Python objects.

How a call stays cheap: the walk from the arguments to their state (a :class:`Binding`) is
cached and re-validated by identity plus the global structure counter
(``spx.nn._structure.EPOCH``); a compiled program is cached under a structural key (module
pytree structure, optimizer static hyperparameters, static arguments, which grads and optimizer
states exist), so structurally equal calls reuse it. It recompiles when shapes, dtypes,
structure or train/eval mode change, and — once — after the first step creates grads and
optimizer state.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx import _transforms, _user_code
from spx._compile import diagnostics, packing, sharing, unbound
from spx._compile.binding import Binding, flatten_args, is_stateful, same_slot
from spx._compile.captured import Captured
from spx._tensor import graph
from spx._tensor import program as recorded
from spx._tensor.graph import NO_GRADIENT, Node, value_node
from spx._tensor.tensor import Tensor
from spx.nn import _hooks, _structure
from spx.nn.module import Module
from spx.nn.parameter import Parameter

_RETURNED_STATE = (
    "spx.compile: the compiled function returned a {kind}. Compiled steps update modules and "
    "optimizers in place and should return arrays (e.g. the loss); return `model(x)` values, "
    "not the model itself."
)
_ARGUMENT_WITH_HISTORY = (
    "spx.compile: a Tensor argument (shape {shape}) has autograd history: it was computed "
    "outside the compiled function from tensors that require grad. Gradients can't flow out "
    "of a compiled step through its arguments, so a loss.backward() inside would silently "
    "miss that path. Compute it inside the compiled function, or pass t.detach() if no "
    "gradient should flow there."
)


def _leaf_kind(x: Any) -> str:
    """How a non-stateful argument leaf enters the program: 'dyn' (traced) or 'static'."""
    if isinstance(x, Tensor | jax.Array | np.ndarray | float | complex) and not isinstance(x, bool):
        return "dyn"
    return "static"


@dataclass
class _Plan:
    """The walk for one set of argument objects (valid while the structure epoch holds)."""

    epoch: int
    treedef: Any
    stateful_ids: tuple[int, ...]
    binding: Binding
    kinds: tuple[str, ...]
    static_key: Any
    static_leaves: tuple[Any, ...]
    last_mask: list[bool] | None = None
    hparams_seen: list[Any] | None = None  # the last numeric hyperparameters, as read ...
    hparams_arrays: list[Any] | None = None  # ... and as device scalars

    def hparam_arrays(self, values: list[Any]) -> list[Any]:
        """The optimizers' numeric hyperparameters as device scalars, converted when they change.

        jit would convert each Python float on every call (a device transfer each); an lr
        scheduler changes them at most once per step, usually not at all.
        """
        if not _plain_numbers(values):
            return values
        if values != self.hparams_seen:
            # jnp.asarray keeps Python scalars weakly typed, so the trace sees what it would
            # see for the Python value (a bf16 parameter times lr stays bf16).
            self.hparams_arrays = jax.tree.map(jax.numpy.asarray, values)
            self.hparams_seen = values
        return self.hparams_arrays

    last: tuple[_Program, Callable[[list[Any]], None]] | None = None
    # For a call with positional arguments only, each one a stateful object or an array: per
    # argument the object itself (state) or None (an array input). A later call with the same
    # objects in the same places and arrays elsewhere skips flattening and re-planning.
    positional: tuple[Any, ...] | None = None


@dataclass
class _Program:
    """A compiled program and the slot partition it was traced with."""

    jitted: Any
    mutable: tuple[int, ...]  # flat state slots the program updates (and returns)
    live: tuple[int, ...]  # the mutable slots whose old value it reads
    donated: int  # live[:donated] are donated; the rest share arrays with other slots
    constant: tuple[int, ...]  # slots it reads but leaves unchanged
    cacheable: bool
    in_shared: sharing.Pattern  # entries of the live inputs passed once (see sharing.py)
    args_written: tuple[int, ...]  # the Tensor arguments (positions in dyn) written in place
    record: dict[str, Any]  # "out_shared": the same for the outputs, known once traced
    fresh_grads: frozenset[int]  # parameters whose .grad the step makes a new tensor

    def __call__(self, live: list[Any], const: list[Any], hparams: list[Any], dyn: list[Any]):
        d = self.donated
        return self.jitted(live[:d], live[d:], const, hparams, dyn)


_NO_GRADIENT_OUT = (
    "backward() reached a result of spx.compile({name}), a compiled forward: its results "
    "carry no gradient out of the program, so the parameters would get none. Compile the "
    "whole training step (forward, loss.backward(), optimizer.step()) instead, or compile "
    "the module: spx.compile(model) returns torch's OptimizedModule, whose outputs "
    "backpropagate."
)


def _no_gradient(x: Any, message: str) -> Any:
    """A result of a compiled forward: requires grad as in torch; backward through it raises."""
    if not isinstance(x, Tensor) or not jnp.issubdtype(x.dtype, jnp.inexact):
        return x
    value = x._value()
    node = Node(NO_GRADIENT, (message,), ((value_node(value), 0),), (value.aval,), (value,), True)
    return Tensor._wrap(node, 0)


def _slot_leaf_counts(flat_state: list[Any]) -> list[int]:
    return [len(jax.tree_util.tree_leaves(x)) for x in flat_state]


def _unused_slots(closed: Any, counts: list[int]) -> set[int]:
    """Flat state slots none of whose leaves the traced program reads."""
    jaxpr = closed.jaxpr
    used = {v for eqn in jaxpr.eqns for v in eqn.invars if not hasattr(v, "val")}
    used.update(v for v in jaxpr.outvars if not hasattr(v, "val"))
    unused, pos = set(), 0
    for i, n in enumerate(counts):
        if n and all(v not in used for v in jaxpr.invars[pos : pos + n]):
            unused.add(i)
        pos += n
    return unused


def _placeholder(spec: Any) -> Any:
    # Stands in for a state value the step overwrites without reading (e.g. gradients that
    # zero_grad() discards): same structure and shapes, so Python code sees what it saw while
    # probing, and XLA drops the unused zeros.
    return jax.tree.map(lambda s: jax.numpy.zeros(s.shape, s.dtype), spec)


def _fast_flatten(args: tuple, kwargs: dict) -> tuple[list[Any], Any] | None:
    """Positional-only calls with array/module leaves skip jax's is_leaf callback walk."""
    if kwargs:
        return None
    for a in args:
        if not isinstance(a, _LEAF_TYPES) and not is_stateful(a):
            return None
    n = len(args)
    treedef = _TREEDEFS.get(n)
    if treedef is None:
        treedef = _TREEDEFS[n] = jax.tree_util.tree_structure(((0,) * n, {}))
    return list(args), treedef


def _positional(leaves: list[Any], kinds: tuple[str, ...], treedef: Any) -> tuple | None:
    """The plan's ``positional`` pattern, or None when the call is not of that form."""
    expected = _TREEDEFS.get(len(leaves))
    if expected is None or treedef != expected:
        return None
    pattern = []
    for x, kind in zip(leaves, kinds, strict=True):
        if kind == "state":
            pattern.append(x)
        elif kind == "dyn" and _plain_array(x):
            pattern.append(None)
        else:
            return None
    return tuple(pattern)


def _plain_array(x: Any) -> bool:
    """An array input as such (not state): a Tensor without requires_grad, or a jax array."""
    return (type(x) is Tensor and not x._rg) or isinstance(x, jax.Array)


def _is_plain_tensor(x: Any) -> bool:
    """A Tensor (of any subclass) that is not a Parameter: state only while it requires grad."""
    return isinstance(x, Tensor) and not isinstance(x, Parameter)


def _same_positional(plan: _Plan, args: tuple) -> bool:
    """Whether ``args`` fit the plan's positional pattern (see :attr:`_Plan.positional`)."""
    pattern = plan.positional
    if pattern is None or len(args) != len(pattern) or plan.epoch != _structure.EPOCH:
        return False
    for x, obj in zip(args, pattern, strict=True):
        if obj is None:
            if not _plain_array(x):
                return False
        elif x is not obj or (_is_plain_tensor(x) and not x._rg):
            return False  # another object, or a leaf tensor that stopped requiring grad
    return True


_LEAF_TYPES = (Tensor, jax.Array, np.ndarray)
# XLA's messages when a call would donate an array twice or donate one it also reads.
_DONATION_REFUSED = ("donate the same buffer twice", "previously donated in the same call")
_TREEDEFS: dict[int, Any] = {}


class CompiledFunction:
    """The callable returned by :func:`compile`."""

    def __init__(self, fn: Callable[..., Any], donate: bool = True) -> None:
        self.fn = fn
        self.donate = donate
        self._plan: _Plan | None = None
        self._programs: dict[Any, _Program] = {}
        self.trace_count = 0  # how many programs were traced (for tests and diagnostics)
        self.signatures = diagnostics.SignatureLog(fn)
        self._collect_warned: set[str] = set()
        self._captured = Captured(fn)  # the models and optimizers fn reaches by name
        functools.update_wrapper(self, fn)

    # -- planning ----------------------------------------------------------------------------
    def _make_plan(self, leaves: list[Any], treedef: Any, captured: tuple[Any, ...]) -> _Plan:
        stateful = [x for x in leaves if is_stateful(x)]
        # State fn names (a global model, an optimizer in its closure) is bound like state
        # passed in: listed after the arguments' so their slots keep their order.
        stateful_all = [*stateful, *captured]
        binding = Binding(stateful_all)
        kinds = tuple("state" if is_stateful(x) else _leaf_kind(x) for x in leaves)
        static_leaves = []
        for x, kind in zip(leaves, kinds, strict=True):
            if kind == "static":
                try:
                    hash(x)
                except TypeError:
                    raise TypeError(
                        f"spx.compile: argument {x!r:.60} of type {type(x).__name__} is neither "
                        "an array nor hashable, so it can't be a static argument; pass arrays "
                        "for data and hashable values (int, str, tuple) for settings"
                    ) from None
                static_leaves.append(x)
        index = {id(p): i for i, p in enumerate(binding.params)}
        static_key = (
            treedef,
            kinds,
            tuple(static_leaves),
            # Tensors as leaves: the key must not compute (or, for a lazy parameter, fail to
            # read) their values, whether or not a Tensor subclass is a pytree node.
            tuple(
                jax.tree_util.tree_structure(x, is_leaf=_is_tensor)
                for x in stateful_all
                if isinstance(x, Module)
            ),
            tuple(
                (type(o), tuple(o._static_and_dynamic(g)[0] for g in o.param_groups))
                for o in binding.optimizers
            ),
            tuple(index[id(p)] for _, p in binding.opt_slots),
            tuple(type(p) for p in binding.params),
            # _rg: a lazy parameter has no value to ask requires_grad of (all are leaves).
            tuple(p._rg for p in binding.params),
            # Which stateful argument is which object (the same model passed twice, ...).
            tuple(index[id(x)] if isinstance(x, Tensor) else -1 for x in stateful_all),
        )
        return _Plan(
            epoch=_structure.EPOCH,
            treedef=treedef,
            stateful_ids=tuple(id(x) for x in stateful_all),
            binding=binding,
            kinds=kinds,
            static_key=static_key,
            static_leaves=tuple(static_leaves),
            positional=_positional(leaves, kinds, treedef),
        )

    def _plan_for(self, leaves: list[Any], treedef: Any) -> _Plan:
        plan = self._plan
        cap = self._captured
        # (A call with keyword arguments comes here every time: rescan only when a name the
        # last scan found was rebound or a structure changed.)
        if plan is None or plan.epoch != _structure.EPOCH or not cap.same():
            captured = cap.scan()
        else:
            captured = cap.objects
        if (
            plan is not None
            and plan.epoch == _structure.EPOCH
            and plan.treedef == treedef
            and plan.stateful_ids
            == tuple(id(x) for x in (*(x for x in leaves if is_stateful(x)), *captured))
            and plan.static_leaves
            == tuple(x for x, k in zip(leaves, plan.kinds, strict=True) if k == "static")
        ):
            return plan
        plan = self._plan = self._make_plan(leaves, treedef, captured)
        return plan

    # -- tracing -----------------------------------------------------------------------------
    def _pure(self, plan: _Plan, leaves: list[Any], layout: tuple | None):
        """The function jax traces: bind the state, run the step, read the state back.

        ``layout`` is None for the probe (every slot is an input, the state changes are
        recorded), else ``(mutable, live, constant, dead_specs, in_shared, args_written)`` of
        the final program. Tensor arguments the step writes in place (``metric.add_(loss)``)
        are recorded too; the final program returns their new values, which the call writes
        into the caller's objects, as torch's in-place ops would have changed them.
        """
        binding = plan.binding
        fn = self.fn
        treedef = plan.treedef
        kinds = plan.kinds
        record: dict[str, Any] = {}

        def pure(live_donated, live_kept, const_state, hparams, dyn):
            # (A retrace by jax.jit itself reads gradients a program packed: compute them.)
            before = packing.materialize(binding.read_flat())
            before_hparams = binding.read_hparams()
            live_state = [*live_donated, *live_kept]
            if layout is None:
                flat_in = live_state
            else:
                _mutable, live, constant, dead_specs, in_shared, _written, pack = layout
                sharing.restore(live_state, in_shared)
                flat_in = [None] * len(before)
                for i, v in zip(live, live_state, strict=True):
                    flat_in[i] = v
                for i, v in zip(constant, const_state, strict=True):
                    flat_in[i] = v
                for i, spec in dead_specs.items():
                    flat_in[i] = _placeholder(spec)
            grad_objects = [q._grad for q in binding.params]
            try:
                binding.bind_state(binding.unflatten(flat_in))
                binding.write_hparams(hparams)
                it = iter(dyn)
                call_leaves = [
                    next(it) if k == "dyn" else x for x, k in zip(leaves, kinds, strict=True)
                ]
                args, kwargs = treedef.unflatten(call_leaves)
                storages = [(x._s, x._s.node) if isinstance(x, Tensor) else None for x in dyn]
                if layout is not None:
                    self._note_signature(
                        kinds, call_leaves, args, kwargs, dyn, live_state, const_state
                    )
                backwards_before = graph.STATE.backwards
                deferred: list[tuple[Any, str, tuple]] = []
                state = graph.STATE
                views = state.bound_views
                state.bound_views = {
                    id(g)
                    for q in binding.params
                    if (g := q._grad) is not None and g._view is not None
                }
                try:
                    with _transforms.binding(), _transforms.deferring(deferred):
                        out = fn(*args, **kwargs)
                except Exception as e:
                    clearer = diagnostics.explain_trace_error(e, fn)
                    if clearer is None:
                        raise
                    raise clearer from None
                finally:
                    state.bound_views = views
                # Python-only updates (an LR scheduler's step()): run after each call.
                record["deferred"] = tuple(deferred)
                record["plan"] = plan
                flat_out = binding.read_flat()
                # Gradients the step gave a new tensor object (zero_grad() set None, backward
                # made a new one): the call does too, as torch does (a reference kept to the
                # old .grad keeps its old value).
                record["fresh_grads"] = frozenset(
                    i
                    for i, (q, g) in enumerate(zip(binding.params, grad_objects, strict=True))
                    if q._grad is not g and q._grad is not None
                )
                history = any(
                    isinstance(x, Tensor) and x._cur().node.requires_grad
                    for x in jax.tree_util.tree_leaves(out, is_leaf=_is_tensor)
                )
                # Returned tensors that are state (``return model.weight.grad``) are the same
                # objects the restore below writes the old values back into: take their traced
                # values now, or the program would return the state from before the step.
                out = jax.tree_util.tree_map(_snapshot, out, is_leaf=_is_tensor)
            finally:
                # Classes first: a lazy parameter materialized by the trace takes back its
                # "no value yet" (None), which only UninitializedParameter can hold.
                binding.restore_classes()
                binding.write_state(binding.unflatten(before))
                binding.write_hparams(before_hparams)
                # The traced values were bound into the caller's gradient objects: give each
                # its value back, and its place (write_state makes a new one for a slot the
                # step cleared), or a reference the caller keeps would hold a tracer.
                n_p = len(binding.params)
                for q, g, value in zip(
                    binding.params, grad_objects, before[n_p : 2 * n_p], strict=True
                ):
                    if g is not None:
                        g._data = value
                        q._grad = g
            for x in jax.tree_util.tree_leaves(out, is_leaf=is_stateful):
                if isinstance(x, Module | Parameter):
                    raise TypeError(_RETURNED_STATE.format(kind=type(x).__name__))
            if layout is None:
                record["changed"] = tuple(
                    i
                    for i, (a, b) in enumerate(zip(flat_in, flat_out, strict=True))
                    if not same_slot(a, b)
                )
                n_p = len(binding.params)
                if (
                    history
                    and graph.STATE.backwards == backwards_before
                    and not any(n_p <= i < 2 * n_p for i in record["changed"])
                ):
                    # A forward whose results someone may differentiate outside: they carry
                    # no gradient out of the program, so a backward reaching them raises.
                    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "fn")
                    record["no_gradient"] = _NO_GRADIENT_OUT.format(name=name)
                record["args_written"] = tuple(
                    i
                    for i, (x, s) in enumerate(zip(dyn, storages, strict=True))
                    if s is not None and (x._s is not s[0] or x._s.node is not s[1])
                )
                return out
            # The updated state first, in the order of the donated inputs, and the user's outputs
            # last: jax pairs each donated input with the first unclaimed output of its shape
            # and dtype, so this order lets XLA update every buffer in place (otherwise an Adam
            # moment could claim a gradient's output, a step counter the loss's, and XLA would
            # copy inputs to keep them alive).
            new = [flat_out[i] for i in layout[0]]
            record["out_shared"] = sharing.find_shared(new)
            buffers: list[Any] = []
            record["packed"] = ()
            if pack:
                n_p = len(binding.params)
                unread = set(dead_specs) | {i for i in live if flat_in[i] is None}
                record["packed"], buffers = packing.pack(
                    new, layout[0], range(n_p, 2 * n_p), unread
                )
            written = [dyn[i]._value() for i in layout[5]]
            return sharing.strip(new, record["out_shared"]), buffers, out, written

        return pure, record

    def _new_program(self, plan: _Plan, leaves, flat_state, hparams, dyn) -> _Program:
        # Probe trace: which slots the step changes (only those are returned and donated) and
        # which old values it never reads (those are not passed at all).
        probe, record = self._pure(plan, leaves, None)
        hooks = _hooks.snapshot(plan.binding.modules)
        state = unbound.Snapshot()  # what a step changes or reads without binding it
        try:
            traced = jax.jit(probe).trace(flat_state, [], [], hparams, dyn)
        except BaseException:
            state.restore()
            raise
        _hooks.restore(hooks)  # the real trace below runs them as the step does
        state.check(traced.jaxpr.consts, self.fn)
        self._warn_collected()
        changed = record["changed"]
        unused = _unused_slots(traced.jaxpr, _slot_leaf_counts(flat_state))
        mutable = tuple(changed)
        dead = {
            i: jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), flat_state[i])
            for i in mutable
            if i in unused and flat_state[i] is not None and _numeric(flat_state[i])
        }
        live = tuple(i for i in mutable if i not in dead)
        # A live slot holding an array that another slot also holds (a shared ``step`` of
        # which only some parameters step now) is passed without donation: XLA would
        # otherwise free an array the other slot still needs.
        others = {
            id(x) for i, v in enumerate(flat_state) if i not in live for x in sharing.arrays_of(v)
        }
        kept = tuple(
            i for i in live if any(id(x) in others for x in sharing.arrays_of(flat_state[i]))
        )
        live = tuple(i for i in live if i not in kept) + kept
        mutable = live + tuple(i for i in mutable if i in dead)
        changed_set = set(changed)
        constant = tuple(i for i in range(len(flat_state)) if i not in changed_set)
        in_shared = sharing.find_shared([flat_state[i] for i in live])
        written = record["args_written"]
        fresh_grads = record["fresh_grads"]
        no_gradient = record.get("no_gradient")
        pack = packing.packable(flat_state, len(plan.binding.params))
        layout = (mutable, live, constant, dead, in_shared, written, pack)
        pure, record = self._pure(plan, leaves, layout)
        record["no_gradient"] = no_gradient
        jitted = jax.jit(pure, donate_argnums=(0,) if self.donate else ())
        self.trace_count += 1
        # Lazy parameters materialized in this trace change the structure: a program keyed on
        # the pre-materialization structure is used for this call only.
        cacheable = not plan.binding.has_uninitialized()
        donated = len(live) - len(kept)
        return _Program(
            jitted, mutable, live, donated, constant, cacheable, in_shared, written, record,
            fresh_grads,
        )  # fmt: skip

    # -- diagnostics -------------------------------------------------------------------------
    def _note_signature(self, kinds, leaves, args, kwargs, dyn, live_state, const_state) -> None:
        """Count the signatures traced (a new shape, dtype or static Python value each)."""
        names = diagnostics.argument_names(self.fn, args, kwargs)
        arrays = [n for n, k in zip(names, kinds, strict=True) if k == "dyn"]
        statics = {n: x for n, x, k in zip(names, leaves, kinds, strict=True) if k == "static"}
        sig = diagnostics.signature(arrays, dyn, [live_state, const_state], statics)
        message = self.signatures.record(sig)
        if message is not None:
            _user_code.warn(message, RuntimeWarning)

    def _warn_collected(self) -> None:
        """Warn (once per container) when the probe trace left placeholders in a list."""
        name = getattr(self.fn, "__qualname__", None) or getattr(self.fn, "__name__", "step")
        for what in diagnostics.collected_tracers(self.fn):
            if what not in self._collect_warned:
                self._collect_warned.add(what)
                short = what.split("'")[1] if "'" in what else "values"
                message = diagnostics.MSG_COLLECTED.format(name=name, what=what, short=short)
                _user_code.warn(message, UserWarning)

    # -- calling -----------------------------------------------------------------------------
    def _choose(
        self, plan: _Plan, leaves, flat_state, hparams, dyn, mask, aliased: bool = False
    ) -> tuple:
        """The program for this call's state (compiled if new), its writer and live inputs.

        ``aliased``: XLA refused the cached program's donation (two slots hold one array):
        the key then names which slots share arrays, so that a program that knows it is used.
        """
        key = (
            plan.static_key,
            tuple(mask),
            sharing.find_shared(flat_state),
            sharing.slot_aliases(flat_state) if aliased else (),
        )
        program = self._programs.get(key)
        if program is not None and program.record["deferred"]:
            # Its deferred calls name the objects of the plan it was traced with (an LR
            # scheduler): other objects (a new fold's model, optimizer and scheduler) retrace.
            program = program if program.record["plan"] is plan else None
        if program is None:
            flat_state = packing.materialize(flat_state)
            program = self._new_program(plan, leaves, flat_state, hparams, dyn)
            if program.cacheable:
                self._programs[key] = program
        write = plan.binding.writer(program.mutable, program.fresh_grads)
        if program.cacheable:
            plan.last, plan.last_mask = (program, write), mask
        return program, write, packing.materialize([flat_state[i] for i in program.live])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if graph.STATE.pending:
            # Values recorded before the call and not computed yet (``c = w.detach().clone()``)
            # are computed now, from the arrays they were recorded on: inside the trace they
            # would become tracers, and the program donates the parameters' old arrays.
            recorded.flush()
        plan = self._plan
        if (
            plan is not None
            and not kwargs
            and _same_positional(plan, args)
            and self._captured.same()
        ):
            leaves, dyn = args, [x for x, o in zip(args, plan.positional, strict=True) if o is None]
        else:
            flat = _fast_flatten(args, kwargs)
            leaves, treedef = flat if flat is not None else flatten_args((args, kwargs))
            plan = self._plan_for(leaves, treedef)
            dyn = [x for x, k in zip(leaves, plan.kinds, strict=True) if k == "dyn"]
        binding = plan.binding
        flat_state = binding.read_flat()
        # (Read now: tracing a new program below reads the state again.)
        packed = binding.packed_read
        hparams = plan.hparam_arrays(binding.read_hparams())
        for x in dyn:
            if type(x) is Tensor and x._cur().node.requires_grad:
                raise TypeError(_ARGUMENT_WITH_HISTORY.format(shape=list(x.shape)))
        mask = [x is None for x in flat_state]
        # An autocast region changes the program (casts are traced in): part of the key, as
        # torch.compile guards on it.
        policy = graph.STATE.autocast
        if policy is not None:
            mask.append((policy.device_type, policy.dtype))
        last = plan.last
        if last is not None and mask == plan.last_mask:
            program, write = last
            live = [flat_state[i] for i in program.live]
            if program.in_shared and not sharing.holds(live, program.in_shared):
                last = None  # the state was replaced between calls: choose the program anew
        else:
            last = None
        if last is None:
            program, write, live = self._choose(plan, leaves, flat_state, hparams, dyn, mask)
        const = [flat_state[i] for i in program.constant]
        if packed:  # gradients the last step packed, read by this one
            live, const = packing.materialize(live), packing.materialize(const)
        try:
            new_values, buffers, out, written = program(
                sharing.strip(live, program.in_shared), const, hparams, dyn
            )
        except jax.errors.UnexpectedTracerError as e:
            clearer = diagnostics.explain_trace_error(e, self.fn)
            if clearer is None:
                raise
            raise clearer from e
        except (jax.errors.JaxRuntimeError, ValueError) as e:
            if last is None or not any(m in str(e) for m in _DONATION_REFUSED):
                raise
            # Arrays the caller made shared between state entries since the last call: XLA
            # refused before running anything; a program that knows the sharing does the step.
            program, write, live = self._choose(
                plan, leaves, flat_state, hparams, dyn, mask, aliased=True
            )
            const = packing.materialize([flat_state[i] for i in program.constant])
            new_values, buffers, out, written = program(
                sharing.strip(live, program.in_shared), const, hparams, dyn
            )
        sharing.restore(new_values, program.record["out_shared"])
        if buffers:
            packing.unpack(new_values, program.record["packed"], buffers)
        message = program.record["no_gradient"]
        if message is not None and graph.STATE.grad_enabled:
            out = jax.tree_util.tree_map(
                lambda x: _no_gradient(x, message), out, is_leaf=_is_tensor
            )
        write(new_values)
        if written:
            _write_arguments(dyn, program.args_written, written)
        for obj, method, call_args in program.record["deferred"]:
            getattr(obj, method)(*call_args)
        if not program.cacheable:
            # The trace materialized lazy parameters; the written-back values make them real.
            for p in binding.params:
                if p._data is not None and p.is_uninitialized:
                    p.__class__ = Parameter
            _structure.bump()
        return out


def _write_arguments(dyn: list[Any], positions: tuple[int, ...], values: list[Any]) -> None:
    """Give the Tensor arguments the step wrote in place their new values (aliases see them)."""
    for i, value in zip(positions, values, strict=True):
        dyn[i]._write_through(value)  # a view's base too, as the step's write did


def _snapshot(x: Any) -> Any:
    """A new Tensor holding ``x``'s current value (anything else as it is)."""
    if not isinstance(x, Tensor) or isinstance(x, Parameter):
        return x  # a returned Parameter is refused with its own message
    children, aux = type(x)._tree_flatten(x)
    return type(x)._tree_unflatten(aux, children)


def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def _plain_numbers(values: list[Any]) -> bool:
    """Python ints/floats, or tuples/lists of them (Adam's betas), and nothing else."""
    for v in values:
        if type(v) in (tuple, list):
            if not all(type(u) in (int, float) for u in v):
                return False
        elif type(v) not in (int, float):
            return False
    return True


def _numeric(tree: Any) -> bool:
    # jnp's issubdtype: numpy's does not know JAX's typed PRNG keys (the rank's key is state).
    return all(
        jnp.issubdtype(x.dtype, jnp.number) or x.dtype == np.bool_
        for x in jax.tree_util.tree_leaves(tree)
    )


def compile(
    fn: Callable[..., Any] | None = None,
    *,
    donate: bool = True,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: Any = "inductor",
    mode: str | None = None,
    options: dict | None = None,
    disable: bool = False,
) -> Any:
    """Compile a torch-style step (forward, backward, optimizer update) into one program.

    The function may take Modules, Optimizers and Parameters (anywhere in its arguments,
    including lists and dicts) or name them as a ``torch.compile`` step does (globals, closure
    variables, a bound method's ``self``: :mod:`spx._compile.captured`), Tensors and arrays,
    Python floats (traced) and other hashable values (static: a new value recompiles). A leaf
    Tensor that requires grad is state, like a Parameter; other Tensors are inputs, and in-place
    writes to them (``total.add_(loss)``) are written back to the caller's tensor, as in torch.
    A Tensor argument with autograd history (computed outside from tensors that require grad) is
    refused: gradients can't leave the program through it. The function may call
    ``opt.zero_grad()``, ``loss.backward()`` or :func:`spx.backward`, ``clip_grad_norm_`` and
    ``opt.step()``, assign BatchNorm buffers and draw randomness; all of that state is written
    back into the objects after each call. It returns Tensors.

    The step's Python runs only while it is traced (once per signature), with placeholder
    arrays. So it cannot branch on values (``if loss > 1:`` — use ``jnp.where`` or
    ``jax.lax.cond``), convert them (``float(loss)``, ``.item()`` — return the value and convert
    after the call) or index with boolean masks (``x[mask]`` — use ``jnp.where``): those raise an
    error naming your line and the fix. ``losses.append(loss)`` or ``print(loss)`` inside the
    step sees a placeholder once, at trace time, and does nothing on later calls: return the
    value and collect it after each call (a list that the step reaches through its globals or
    closure and that now holds placeholders is reported with a warning on the first call).
    Each new input shape or dtype traces and compiles again; past 8 signatures (torch's
    ``recompile_limit``) a ``RuntimeWarning`` names the argument that changed.

    Every array that survives the step is an output of the program. As in torch, ``p.grad``
    holds the step's gradients afterwards; a step that ends with ``opt.zero_grad()`` keeps none
    and saves a few microseconds per parameter (what a raw ``jax.jit`` step that returns only
    parameters and optimizer state saves too).

    A function that returns results with autograd history without running a backward
    itself (a forward to be differentiated outside) raises: its outputs would carry no
    gradient. Compile the whole step, or the module: ``spx.compile(model)`` returns torch's
    ``OptimizedModule`` wrapper (:mod:`spx._compile.module`), whose outputs backpropagate.

    Args:
        fn: the step function, or a Module (see above).
        donate: donate the replaced state buffers to XLA (default). Tensors keep working as in
            torch (``model.fc.weight.data`` and ``state_dict()`` values show the new values,
            values recorded before the call are computed first); raw ``jax.Array`` values taken
            out of a parameter (``jnp.asarray(w.detach())``) are deleted by the call.
        fullgraph, dynamic, backend, mode, options: torch's options, accepted; XLA compiles
            every program whole, for the shapes it is called with (a new shape recompiles).
        disable: return ``fn`` itself (torch's switch for debugging).

    Returns:
        A callable with the same signature; ``.trace_count`` tells how many programs were
        traced.

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(3, 1)
        >>> opt = spx.optim.SGD(model.parameters(), lr=0.1)
        >>> @spx.compile
        ... def step(model, opt, x):
        ...     opt.zero_grad()
        ...     loss = (model(x) ** 2).mean()
        ...     loss.backward()
        ...     opt.step()
        ...     return loss
        >>> loss = step(model, opt, spx.ones(4, 3))
    """
    if fn is None:
        return functools.partial(compile, donate=donate, disable=disable)
    if not callable(fn):
        raise TypeError(f"spx.compile expects a function or a Module, got {type(fn).__name__}")
    if disable:
        return fn
    if isinstance(fn, Module):
        from spx._compile.module import OptimizedModule

        return OptimizedModule(fn)
    return CompiledFunction(fn, donate=donate)
