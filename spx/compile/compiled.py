"""``spx.compile``: a torch-style training step as one XLA program.

The step function is ordinary torch-shaped code that receives modules and optimizers and
mutates them::

    @spx.compile
    def train_step(model, opt, x, y):
        opt.zero_grad()
        loss = spx.backward(lambda m: F.cross_entropy(m(x), y), model)
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
import numpy as np

from spx.compile.binding import Binding, flatten_args, is_stateful
from spx.nn import _structure
from spx.nn.module import Module
from spx.nn.parameter import Parameter

_RETURNED_STATE = (
    "spx.compile: the compiled function returned a {kind}. Compiled steps update modules and "
    "optimizers in place and should return arrays (e.g. the loss); return `model(x)` values, "
    "not the model itself."
)


def _leaf_kind(x: Any) -> str:
    """How a non-stateful argument leaf enters the program: 'dyn' (traced) or 'static'."""
    if isinstance(x, jax.Array | np.ndarray | float | complex) and not isinstance(x, bool):
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


@dataclass
class _Program:
    """A compiled program and the slot partition it was traced with."""

    jitted: Any
    mutable: tuple[int, ...]  # indices into the flat state list that the program updates
    constant: tuple[int, ...]


def _flat_state(state: list[Any]) -> list[Any]:
    datas, grads, buffers, opt_states, key = state
    return [*datas, *grads, *buffers, *opt_states, key]


def _unflat_state(flat: list[Any], binding: Binding) -> list[Any]:
    n_p, n_b, n_o = len(binding.params), len(binding.buffer_slots), len(binding.opt_slots)
    datas = flat[:n_p]
    grads = flat[n_p : 2 * n_p]
    buffers = flat[2 * n_p : 2 * n_p + n_b]
    opt_states = flat[2 * n_p + n_b : 2 * n_p + n_b + n_o]
    return [list(datas), list(grads), list(buffers), list(opt_states), flat[-1]]


class CompiledFunction:
    """The callable returned by :func:`compile`."""

    def __init__(self, fn: Callable[..., Any], donate: bool = True) -> None:
        self.fn = fn
        self.donate = donate
        self._plan: _Plan | None = None
        self._programs: dict[Any, _Program] = {}
        self.trace_count = 0  # how many programs were traced (for tests and diagnostics)
        functools.update_wrapper(self, fn)

    # -- planning ----------------------------------------------------------------------------
    def _make_plan(self, leaves: list[Any], treedef: Any) -> _Plan:
        stateful = [x for x in leaves if is_stateful(x)]
        binding = Binding(stateful)
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
            tuple(jax.tree_util.tree_structure(x) for x in stateful if isinstance(x, Module)),
            tuple(
                (type(o), tuple(o._static_and_dynamic(g)[0] for g in o.param_groups))
                for o in binding.optimizers
            ),
            tuple(index[id(p)] for _, p in binding.opt_slots),
            tuple(type(p) for p in binding.params),
            tuple(p.requires_grad for p in binding.params),
            # Which stateful argument is which object (the same model passed twice, ...).
            tuple(
                index[id(x)] if isinstance(x, Parameter) else -1
                for x in stateful
            ),
        )
        return _Plan(
            epoch=_structure.EPOCH,
            treedef=treedef,
            stateful_ids=tuple(id(x) for x in stateful),
            binding=binding,
            kinds=kinds,
            static_key=static_key,
            static_leaves=tuple(static_leaves),
        )

    def _plan_for(self, leaves: list[Any], treedef: Any) -> _Plan:
        plan = self._plan
        if (
            plan is not None
            and plan.epoch == _structure.EPOCH
            and plan.treedef == treedef
            and plan.stateful_ids == tuple(id(x) for x in leaves if is_stateful(x))
            and plan.static_leaves
            == tuple(x for x, k in zip(leaves, plan.kinds, strict=True) if k == "static")
        ):
            return plan
        plan = self._plan = self._make_plan(leaves, treedef)
        return plan

    # -- tracing -----------------------------------------------------------------------------
    def _pure(self, plan: _Plan, leaves: list[Any], mutable: tuple[int, ...] | None):
        """The function jax traces: bind the state, run the step, read the state back."""
        binding = plan.binding
        fn = self.fn
        treedef = plan.treedef
        kinds = plan.kinds
        record: dict[str, Any] = {}

        def pure(mut_state, const_state, hparams, dyn):
            before = binding.read_state()
            before_hparams = binding.read_hparams()
            flat_in = [None] * (len(mut_state) + len(const_state))
            if mutable is None:
                flat_in = list(mut_state)
            else:
                for i, v in zip(mutable, mut_state, strict=True):
                    flat_in[i] = v
                mutable_set = set(mutable)
                const_idx = [i for i in range(len(flat_in)) if i not in mutable_set]
                for i, v in zip(const_idx, const_state, strict=True):
                    flat_in[i] = v
            try:
                binding.write_state(_unflat_state(flat_in, binding))
                binding.write_hparams(hparams)
                it = iter(dyn)
                call_leaves = [
                    next(it) if k == "dyn" else x for x, k in zip(leaves, kinds, strict=True)
                ]
                args, kwargs = treedef.unflatten(call_leaves)
                out = fn(*args, **kwargs)
                flat_out = _flat_state(binding.read_state())
            finally:
                binding.write_state(before)
                binding.write_hparams(before_hparams)
                binding.restore_classes()
            for x in jax.tree_util.tree_leaves(out, is_leaf=is_stateful):
                if isinstance(x, Module | Parameter):
                    raise TypeError(_RETURNED_STATE.format(kind=type(x).__name__))
            if mutable is None:
                record["changed"] = tuple(
                    i for i, (a, b) in enumerate(zip(flat_in, flat_out, strict=True)) if a is not b
                )
                return out
            return out, [flat_out[i] for i in mutable]

        return pure, record

    def _program_for(self, plan: _Plan, leaves, flat_state, hparams, dyn) -> _Program:
        key = (plan.static_key, tuple(x is None for x in flat_state))
        program = self._programs.get(key)
        if program is not None:
            return program
        # Probe trace: find which slots the step changes. Only those are donated and returned;
        # the rest (frozen parameters, eval-mode buffers, ...) are passed as constants.
        probe, record = self._pure(plan, leaves, None)
        jax.jit(probe).trace(flat_state, [], hparams, dyn)
        changed = record["changed"]
        mutable = tuple(changed)
        changed_set = set(changed)
        constant = tuple(i for i in range(len(flat_state)) if i not in changed_set)
        pure, _ = self._pure(plan, leaves, mutable)
        jitted = jax.jit(pure, donate_argnums=(0,) if self.donate else ())
        self.trace_count += 1
        program = _Program(jitted, mutable, constant)
        # Lazy parameters materialized in this trace change the structure: don't cache a
        # program keyed on the pre-materialization structure beyond this call.
        if not plan.binding.has_uninitialized():
            self._programs[key] = program
        return program

    # -- calling -----------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves, treedef = flatten_args((args, kwargs))
        plan = self._plan_for(leaves, treedef)
        binding = plan.binding
        flat_state = _flat_state(binding.read_state())
        hparams = binding.read_hparams()
        dyn = [x for x, k in zip(leaves, plan.kinds, strict=True) if k == "dyn"]
        program = self._program_for(plan, leaves, flat_state, hparams, dyn)
        mut = [flat_state[i] for i in program.mutable]
        const = [flat_state[i] for i in program.constant]
        out, new_values = program.jitted(mut, const, hparams, dyn)
        for i, v in zip(program.mutable, new_values, strict=True):
            flat_state[i] = v
        binding.write_state(_unflat_state(flat_state, binding))
        if binding.has_uninitialized():
            # The trace materialized lazy parameters; their classes were restored with the
            # trace's values, the written-back values make them real parameters now.
            for p in binding.params:
                if p._data is not None and p.is_uninitialized:
                    p.__class__ = Parameter
            _structure.bump()
        return out


def compile(fn: Callable[..., Any] | None = None, *, donate: bool = True) -> Any:  # noqa: A001
    """Compile a torch-style step (forward, backward, optimizer update) into one program.

    The function may take Modules, Optimizers and Parameters (anywhere in its arguments,
    including lists and dicts), arrays, Python floats (traced) and other hashable values (static:
    a new value recompiles). It may call ``opt.zero_grad()``, :func:`spx.backward`,
    ``clip_grad_norm_`` and ``opt.step()``, assign BatchNorm buffers and draw randomness; all of
    that state is written back into the objects after each call. It returns arrays.

    Args:
        fn: the step function.
        donate: donate the replaced state buffers to XLA (default). Arrays you kept from before
            the call (``w = model.fc.weight.data``) are then invalid afterwards — read them
            again from the module, as torch's in-place updates would show the new values.

    Returns:
        A callable with the same signature; ``.trace_count`` tells how many programs were
        traced.

    Example:
        >>> import spx, jax.numpy as jnp
        >>> model = spx.nn.Linear(3, 1)
        >>> opt = spx.optim.SGD(model.parameters(), lr=0.1)
        >>> @spx.compile
        ... def step(model, opt, x):
        ...     opt.zero_grad()
        ...     loss = spx.backward(lambda m: (m(x) ** 2).mean(), model)
        ...     opt.step()
        ...     return loss
        >>> loss = step(model, opt, jnp.ones((4, 3)))
    """
    if fn is None:
        return functools.partial(compile, donate=donate)
    if not callable(fn):
        raise TypeError(f"spx.compile expects a function, got {type(fn).__name__}")
    return CompiledFunction(fn, donate=donate)
