"""Recorded nodes -> one compiled program, cached by structure; also the backward pass.

:func:`run` is the only place values are computed. It walks back from what is asked for:

* the **value targets**: the storages someone needs now plus every alive pending storage of
  this thread (computing them together costs one dispatch instead of many, and nothing pending
  outlives a step: a BatchNorm running mean is computed with the loss);
* for ``backward()``, the **grad roots**: through every node that requires grad down to the
  differentiated inputs — the grad leaves (:data:`~spx._tensor.graph.LEAF` nodes), or, for
  ``autograd.grad(outputs, inputs)``, the given inputs ("cuts") — which become the arguments
  of ``jax.vjp``.

The walk yields a list of entries — program inputs, differentiated inputs, or
``(fn, static, input slots, n_out)`` — which is both the program and, with the output layout,
its cache key: the same loop body records the same entries every step, so it compiles once.
Shapes are not part of the key; ``jax.jit`` caches per input shapes underneath. Under a JAX
transformation (inside ``spx.compile``) the inputs are tracers and the cached program is simply
called there, so it is traced into the enclosing program.

Inside the program, entries that do not depend on a differentiated input run first; the rest
run inside the function given to ``jax.vjp``, so XLA sees forward and backward together. A
leaf's existing ``.grad`` is an input and the sum is an output: accumulation costs no dispatch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from spx import _user_code
from spx._tensor import checks, zero_grads
from spx._tensor.graph import LEAF, NO_GRADIENT, STATE, Node, Storage, take_pending

BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)

_PROGRAMS: dict[Any, Any] = {}
# Functions whose computed nodes drop their inputs: a packed gradient buffer (spx.compile)
# need not outlive the slices taken from it.
RELEASES_INPUTS: set[Any] = set()
# Functions of nodes (or, for recorded calls, the function called) whose one vjp covers many
# inputs that torch's graph connects separately: a recorded backward (create_graph), an
# autograd.Function. A gradient through them may be zero by structure, where torch's is None
# (see spx._tensor.zero_grads); elsewhere the graph of nodes already is torch's.
COARSE: set[Any] = set()

Ref = tuple[Node, int]


class _Walk:
    """The entries of one program, built by walking back from its outputs.

    Args:
        cuts: for ``autograd.grad``: the ``(node, idx)`` outputs to differentiate with respect
            to; None to differentiate with respect to every grad leaf reached.
        retained: ``(id(node), idx) -> tensor`` of the non-leaf tensors whose ``.grad`` is
            kept (``retain_grad()``): each output reached in the grad graph gets a tap (see
            :meth:`_retain`) whose gradient is that tensor's.
        stops: ``(id(node), idx) -> name`` of outputs where the gradient stops: it is returned
            (named ``name`` in ``diffs``) instead of flowing on to the output's ancestors.
            Tensor hooks run between the two halves (see ``spx._tensor.autograd``).
    """

    def __init__(
        self,
        cuts: Sequence[Ref] | None,
        retained: dict[tuple[int, int], Any] | None = None,
        stops: dict[tuple[int, int], Any] | None = None,
        record: bool = False,
    ) -> None:
        self.entries: list[tuple] = []
        self.deps: list[bool] = []  # per entry: depends on a differentiated input
        self.slot_dep: list[bool] = []  # per slot
        self.n_slots = 0
        self.base: dict[int, int] = {}  # id(node) -> first slot of its outputs
        # The same for nodes with history replayed only for their values (reached through a
        # node without history, e.g. detach()): a later grad-mode visit replays them again.
        self.vbase: dict[int, int] = {}
        self.input_slots: dict[tuple[int, int], int] = {}  # (id(node), idx) -> slot
        self.inputs: list[Any] = []  # concrete values fed to the program
        self.input_refs: list[Any] = []  # per input: the (node, idx) it is the value of, or None
        # For create_graph (record_backward): leaves are inputs referring to their LEAF node,
        # so that the recorded gradient is a function of them.
        self.record = record
        self.diff_avals: list[Any] = []  # per differentiated input: its abstract value
        self.replayed: list[tuple[Node, bool]] = []  # (node, in the grad graph), in order
        # Differentiated inputs in entry order: LEAF nodes, or positions in ``cuts``.
        self.diffs: list[Any] = []
        self.cuts = (
            None
            if cuts is None
            else {(id(c[0]), c[1]): k for k, c in enumerate(cuts) if c is not None}
        )
        self.cut_slots: dict[tuple[int, int], int] = {}
        self.retained = retained
        self.stops = stops
        self.redirect: dict[tuple[int, int], int] = {}  # (id(node), idx) -> its tap's slot

    def _new_slots(self, n: int, dep: bool) -> int:
        first = self.n_slots
        self.n_slots += n
        self.slot_dep.extend([dep] * n)
        return first

    def _input(self, value: Any, key: tuple[int, int] | None, src: Ref | None = None) -> int:
        if key is not None:
            slot = self.input_slots.get(key)
            if slot is not None:
                return slot
        slot = self._new_slots(1, False)
        self.inputs.append(value)
        self.input_refs.append(src)
        kind = type(value) if isinstance(value, int | float | bool | complex) else "a"
        self.entries.append(("in", kind))
        self.deps.append(False)
        if key is not None:
            self.input_slots[key] = slot
        return slot

    def _diff(self, source: int, what: Any, aval: Any) -> int:
        slot = self._new_slots(1, True)
        self.diff_avals.append(aval)
        self.entries.append(("diff", source))
        self.deps.append(True)
        self.diffs.append(what)
        return slot

    def _grad_through(self, node: Node) -> bool:
        """Whether a grad-mode walk goes into ``node`` (else it is a value)."""
        if not node.requires_grad:
            return False
        return not (self.cuts is not None and node.fn is LEAF)

    def ref(self, ref: Any, grad: bool) -> int:
        """The slot holding ``ref`` (a ``(node, idx)`` pair or a Python scalar)."""
        if type(ref) is not tuple:
            return self._input(ref, None)
        node, idx = ref
        if grad and self.cuts is not None:
            key = (id(node), idx)
            k = self.cuts.get(key)
            # A hooked result given as input stops like other hooked results (the caller
            # captures its gradient there).
            if k is not None and not (self.stops and key in self.stops):
                slot = self.cut_slots.get(key)
                if slot is None:
                    slot = self.cut_slots[key] = self._cut(node, idx, k)
                return slot
        if grad and self._grad_through(node):
            first = self.base.get(id(node))
            if first is None:
                self._visit(node, True)
                first = self.base[id(node)]
        else:
            # A value: computed already, or replayed (a slot of the grad walk serves too: the
            # entries reading it then run inside the vjp).
            first = self._value_slot(node)
            if first is None:
                if node.values is not None:
                    return self._input(node.values[idx], (id(node), idx), (node, idx))
                self._visit(node, False)
                first = self._value_slot(node)
        if grad and self.redirect:
            tap = self.redirect.get((id(node), idx))
            if tap is not None:
                return tap
        return first + idx

    def _value_slot(self, node: Node) -> int | None:
        first = self.base.get(id(node))
        return self.vbase.get(id(node)) if first is None else first

    def _cut(self, node: Node, idx: int, k: int) -> int:
        """The slot of an ``autograd.grad`` input: a differentiated variable in its place.

        A leaf (or a value) is the variable itself. A result of an operation is a *tap*: its
        value computed with its history, plus a zero variable. The zero's gradient is the
        gradient with respect to the result, and the paths through the result still reach
        its ancestors, which may be inputs too (``grad(loss, [w, h])`` with ``h = f(w)``).
        """
        if node.fn is LEAF or not node.requires_grad:
            return self._diff(self.ref((node, idx), False), k, node.avals[idx])
        self._visit(node, True)
        return self._tapped(self.base[id(node)] + idx, node.avals[idx], k)

    def _tapped(self, slot: int, aval: Any, what: Any) -> int:
        """A new slot holding ``slot``'s value plus a differentiated zero (named ``what`` in
        ``diffs``): reading through it, the zero's gradient is the gradient of that value."""
        zero = self._diff(self._input(_zeros_of(aval), None), what, aval)
        tap = self._new_slots(1, True)
        self.entries.append((_tap, (), (slot, zero), 1))
        self.deps.append(True)
        return tap

    def _visit(self, root: Node, grad: bool) -> None:
        # Iterative post-order: graphs of thousands of nodes must not hit the recursion limit.
        # Each entry carries its mode: a node without history (recorded under no_grad,
        # detach()'s stop_gradient, an integer result) is a value, and so are its inputs,
        # even those with history (whose graph an earlier backward may have freed).
        stack: list[tuple[Node, bool, bool]] = [(root, False, grad)]
        base, vbase = self.base, self.vbase
        while stack:
            node, expanded, mode = stack.pop()
            grad = mode and node.requires_grad
            seen = base if grad or not node.requires_grad else vbase
            if id(node) in seen or (not grad and id(node) in base):
                continue
            if node.freed and (grad or node.values is None):
                raise RuntimeError(BACKWARD_TWICE)
            if grad and node.fn is NO_GRADIENT:
                raise RuntimeError(node.static[0])
            if self.record and node.fn is LEAF:
                slot = self._input(None, (id(node), 0), (node, 0))
                if grad and self.cuts is None:
                    slot = self._diff(slot, node, node.avals[0])
                seen[id(node)] = slot
                continue
            is_leaf = grad and node.fn is LEAF and self.cuts is None
            if not expanded:
                stack.append((node, True, mode))
                for inp in node.inputs:
                    if type(inp) is not tuple:
                        continue
                    child = inp[0]
                    if grad and not is_leaf and self._grad_through(child):
                        if id(child) not in base and (
                            self.cuts is None or (id(child), inp[1]) not in self.cuts
                        ):
                            stack.append((child, False, True))
                    elif child.values is None and self._value_slot(child) is None:
                        stack.append((child, False, False))
                continue
            if is_leaf:
                base[id(node)] = self._diff(self.ref(node.inputs[0], False), node, node.avals[0])
                continue
            slots = tuple([self.ref(inp, grad) for inp in node.inputs])
            dep = any(self.slot_dep[s] for s in slots)
            first = self._new_slots(len(node.avals), dep)
            self.entries.append((node.fn, node.static, slots, len(node.avals)))
            self.deps.append(dep)
            self.replayed.append((node, grad))
            seen[id(node)] = first
            if grad and self.stops:
                for idx in range(len(node.avals)):
                    name = self.stops.get((id(node), idx))
                    if name is not None:
                        aval = node.avals[idx]
                        zero = self._diff(self._input(_zeros_of(aval), None), name, aval)
                        tap = self._new_slots(1, True)
                        self.entries.append((_stop_tap, (), (first + idx, zero), 1))
                        self.deps.append(True)
                        self.redirect[(id(node), idx)] = tap
            if grad and self.retained:
                for idx in range(len(node.avals)):
                    tensor = self.retained.get((id(node), idx))
                    if tensor is not None and (id(node), idx) not in self.redirect:
                        self._retain(node, idx, first + idx, tensor)

    def _retain(self, node: Node, idx: int, slot: int, tensor: Any) -> None:
        """Tap output ``idx`` of ``node`` for ``tensor.retain_grad()``: later uses in the grad
        graph read the tap (as :meth:`_cut` does for ``autograd.grad``)."""
        tap = self._tapped(slot, node.avals[idx], Retained(tensor))
        self.redirect[(id(node), idx)] = tap


class Retained:
    """A differentiated input standing for a non-leaf tensor that retains its grad.

    ``leaf`` is the tensor whose ``.grad`` receives the gradient (named as a LEAF node's is).
    """

    __slots__ = ("leaf",)

    def __init__(self, tensor: Any) -> None:
        self.leaf = tensor


_ZEROS: dict[tuple, Any] = {}
_ZEROS_KEPT = 16  # the most recent shapes (a loop retains the same few every step)


def _zeros(shape: tuple, dtype: Any) -> Any:
    """An array of zeros, cached for the most recent shapes (immutable, so one serves every
    tap of its shape; the cache is bounded for loops whose shapes vary)."""
    key = (shape, dtype)
    z = _ZEROS.pop(key, None)
    if z is None:
        with jax.ensure_compile_time_eval():
            z = jnp.zeros(shape, dtype)
        if len(_ZEROS) >= _ZEROS_KEPT:
            del _ZEROS[next(iter(_ZEROS))]
    _ZEROS[key] = z
    return z


def _zeros_of(aval: Any) -> Any:
    return _zeros(aval.shape, aval.dtype)


def reaches(node: Node, keys: set[tuple[int, int]]) -> bool:
    """Whether some ``(id(node), idx)`` of ``keys`` is among ``node``'s autograd ancestors."""
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        for inp in n.inputs:
            if type(inp) is not tuple:
                continue
            if (id(inp[0]), inp[1]) in keys:
                return True
            child = inp[0]
            if child.requires_grad and id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return False


def _conj(x: Any) -> Any:
    return jnp.conj(x) if jnp.iscomplexobj(x) else x


def _tap(value: Any, zero: Any) -> Any:
    return value + zero


def _stop_tap(value: Any, zero: Any) -> Any:
    # The value flows on; its gradient goes to ``zero`` only (a hook decides what flows back).
    return jax.lax.stop_gradient(value) + zero


def _program(key: tuple) -> Any:
    """The jitted function for a walk's entries and output layout (cached by ``key``)."""
    program = _PROGRAMS.get(key)
    if program is not None:
        return program
    entries, deps, value_slots, root_slots, has_cot, acc_slots, none_for_zero = key
    # Per entry: ("in", slot) | ("diff", slot, source slot) | ("op", slot, dep, fn, static, ...)
    inputs_at, diffs_at, ops = [], [], []
    slot_dep: list[bool] = []
    ordered: list[tuple] = []  # ops and diffs in slot order (for forward_all)
    slot = 0
    for entry, dep in zip(entries, deps, strict=True):
        if entry[0] == "in":
            inputs_at.append(slot)
            slot += 1
        elif entry[0] == "diff":
            diffs_at.append((slot, entry[1]))
            ordered.append((None, slot, None, None, (entry[1],), 1))
            slot += 1
        else:
            fn, static, ins, n_out = entry
            ops.append((dep, slot, fn, static, ins, n_out))
            ordered.append(ops[-1])
            slot += n_out
        slot_dep.extend([dep] * (slot - len(slot_dep)))
    n_slots = slot
    none_for_zero = none_for_zero and any(
        fn in COARSE or (static and static[0] in COARSE) for _, _, fn, static, _, _ in ops
    )
    # A differentiated input whose value is computed from other differentiated inputs (a leaf
    # made by ``y.detach().requires_grad_()`` from a pending ``y``): its value is needed before
    # the vjp, where only the entries that depend on no differentiated input have run.
    dependent_primals = any(slot_dep[source] for _, source in diffs_at)

    def replay(env: list, want_dep: bool) -> None:
        with _user_code.replaying():
            _replay(env, want_dep)

    def _replay(env: list, want_dep: bool) -> None:
        for dep, first, fn, static, ins, n_out in ops:
            if dep is want_dep:
                out = fn(*[env[s] for s in ins], *static)
                if n_out == 1:
                    env[first] = out
                else:
                    env[first : first + n_out] = out

    def forward_all(env: list) -> None:
        """Every entry's value, a differentiated input taking its source's (in slot order)."""
        for _, first, fn, static, ins, n_out in ordered:
            if fn is None:
                env[first] = env[ins[0]]
                continue
            out = fn(*[env[s] for s in ins], *static)
            if n_out == 1:
                env[first] = out
            else:
                env[first : first + n_out] = out

    def run(inputs: list, cotangents: list) -> tuple:
        env: list[Any] = [None] * n_slots
        for s, v in zip(inputs_at, inputs, strict=True):
            env[s] = v
        if dependent_primals:
            forward_all(env)  # the vjp below recomputes the dependent entries from the diffs
        else:
            replay(env, False)
        if not root_slots:
            return [env[s] for s in value_slots], []
        primals = [env[source] for _, source in diffs_at]

        def f(diff_values: list) -> tuple:
            local = list(env)
            for (s, _), v in zip(diffs_at, diff_values, strict=True):
                local[s] = v
            replay(local, True)
            # The .grad a gradient accumulates into may itself be computed here: a recorded
            # gradient (backward(create_graph=True)) differentiated into its own leaf.
            accs = [None if a is None else local[a] for a in acc_slots]
            return [local[s] for s in root_slots], ([local[s] for s in value_slots], accs)

        roots, vjp, (values, accs) = jax.vjp(f, primals, has_aux=True)
        cots = cotangents if has_cot else [jnp.ones_like(r) for r in roots]
        # Complex numbers: torch's gradient is the conjugate of JAX's vjp (conjugate Wirtinger
        # convention), and so is the gradient torch takes in: conj(vjp(conj(cotangent))).
        conj_cots = [_conj(c) for c in cots]
        if none_for_zero:
            grads, zero = zero_grads.pull_back(lambda c: vjp(c)[0], conj_cots)
        else:
            (grads,), zero = vjp(conj_cots), [False] * len(diffs_at)
        grads = [
            None if z else _conj(g) if a is None else _conj(g) + a
            for g, a, z in zip(grads, accs, zero, strict=True)
        ]
        return values, grads

    # keep_unused: an input the program does not read still places it (``x.zero_()`` reads no
    # value of ``x`` but must run, and leave its result, on ``x``'s device).
    program = jax.jit(run, keep_unused=True)
    _PROGRAMS[key] = program
    return program


def run(
    wanted: Sequence[Storage] = (),
    roots: Sequence[Ref] = (),
    cotangents: Sequence[Any] | None = None,
    cuts: Sequence[Ref] | None = None,
    accumulate: Callable[[Any], Ref | None] | None = None,
    retain_graph: bool = False,
    with_pending: bool = True,
    retained: dict[tuple[int, int], Any] | None = None,
    stops: dict[tuple[int, int], Any] | None = None,
    walked: list[Node] | None = None,
    none_for_zero: bool = False,
) -> tuple[list[Any], list[Any]]:
    """Compute ``wanted`` and every alive pending storage; with ``roots``, backpropagate.

    Args:
        wanted: storages whose values are needed now.
        roots: ``(node, idx)`` outputs to differentiate (the gradient of
            ``sum(cotangent * root)``).
        cotangents: one array per root, or None for ones (scalar losses).
        cuts: differentiate with respect to these outputs instead of the grad leaves (None
            entries stand for inputs not differentiated in this pass).
        accumulate: given a differentiated input (a LEAF node, or a position in ``cuts``),
            the reference of the gradient to add the new one to, or None.
        retain_graph: keep the traversed graph for another backward.
        with_pending: also compute the thread's other pending storages (False: ``wanted``
            only, e.g. module state that must become concrete under a foreign transform).
        retained: ``(id(node), idx) -> tensor`` of non-leaf tensors that retain their grad;
            their gradients come back with the others, each with a :class:`Retained`.
        stops: ``(id(node), idx) -> name``: outputs whose gradient comes back (named ``name``)
            without flowing on to their ancestors.
        walked: if given, the nodes this backward went through are appended (for the caller
            to free, with ``retain_graph=True`` here, once its last pass is done).
        none_for_zero: a gradient zero by structure (no path from the roots carries one: see
            :mod:`~spx._tensor.zero_grads`) comes back as None, torch's undefined gradient.

    Returns:
        ``(grads, diffs)``: the gradients, and for each the LEAF node, position in ``cuts`` or
        :class:`Retained`.
    """
    if roots:
        STATE.backwards += 1
    walk = _Walk(cuts, retained if roots else None, stops if roots else None)
    for node, _ in roots:
        if node.freed:
            raise RuntimeError(BACKWARD_TWICE)
    root_slots = tuple(walk.ref(r, True) for r in roots)
    acc_slots = tuple(
        None if (r := accumulate(d) if accumulate else None) is None else walk.ref(r, False)
        for d in walk.diffs
    )
    targets: list[Node] = []
    seen: set[int] = set()
    for storage in (*wanted, *take_pending()) if with_pending else wanted:
        node = storage.node
        if node.values is None and id(node) not in seen:
            seen.add(id(node))
            targets.append(node)
    value_slots: list[int] = []
    for node in targets:
        first = walk.ref((node, 0), False)
        value_slots.extend(range(first, first + len(node.avals)))
    if not walk.replayed and not roots:
        checks.run_ready()
        return [], []
    key = (
        tuple(walk.entries),
        tuple(walk.deps),
        tuple(value_slots),
        root_slots,
        cotangents is not None,
        acc_slots,
        none_for_zero,
    )
    try:
        values, grads = _program(key)(walk.inputs, list(cotangents or ()))
    except (jax.errors.UnexpectedTracerError, ValueError) as e:
        if not with_pending or len(targets) == len(wanted):
            raise
        if not isinstance(
            e, jax.errors.UnexpectedTracerError
        ) and "incompatible devices" not in str(e):
            raise
        # Other pending values could not join this program: one recorded inside a JAX trace
        # that has ended (an exception raised under jax.jit left it behind, kept alive by the
        # traceback) can never be computed, and values on another device cannot share one
        # program. Compute what is needed now; the others are computed when they are read
        # (and only their own reader sees an error).
        out = run(
            wanted, roots, cotangents, cuts, accumulate, retain_graph, False, retained, stops,
            walked, none_for_zero,
        )  # fmt: skip
        checks.settle()  # the checked values the combined program left out
        return out
    it = iter(values)
    for node in targets:
        node.values = tuple(next(it) for _ in node.avals)
        if node.fn in RELEASES_INPUTS:
            node.inputs = ()
    if roots:
        if walked is not None:
            walked.extend(n for n, in_grad_graph in walk.replayed if in_grad_graph)
        if not retain_graph:
            free([n for n, in_grad_graph in walk.replayed if in_grad_graph], cuts)
        if STATE.func_modes:
            # A backward without create_graph inside a function JAX differentiates (spx.func,
            # spx.backward(fn, model)): torch's result is a constant there (first-order MAML).
            grads = [None if g is None else jax.lax.stop_gradient(g) for g in grads]
    checks.run_ready()
    return grads, walk.diffs


_GRAD_FNS: dict[Any, Any] = {}


def _grad_fn(key: tuple, n_inputs: int) -> Any:
    """The gradient program of ``key`` as an operation: ``fn(*inputs, *cotangents)``, one
    object per key (a recorded node's function is part of later programs' keys)."""
    fn = _GRAD_FNS.get(key)
    if fn is None:
        program = _program(key)

        def fn(*args: Any) -> Any:
            _, grads = program(list(args[:n_inputs]), list(args[n_inputs:]))
            return grads[0] if len(grads) == 1 else tuple(grads)

        _GRAD_FNS[key] = fn
        COARSE.add(fn)
    return fn


def record_backward(
    roots: Sequence[Ref],
    cotangents: Sequence[Any] | None,
    cuts: Sequence[Ref] | None,
    accumulate: Callable[[Any], Ref | None],
) -> tuple[Node | None, list[Any]]:
    """``create_graph=True``: the backward of :func:`run`, recorded as one operation.

    The node's inputs are what the gradient program reads, as references: each leaf as its
    LEAF node (not replayed from its value), every other value through the node it comes
    from. Its outputs, the gradients, are thereby functions of the leaves and differentiable
    again (a later backward replays the node, i.e. differentiates the first backward, under
    ``jax.vjp``). Nothing is
    computed or freed now.

    Returns:
        ``(node, diffs)``: the node (None when nothing is differentiated) and, per output, the
        LEAF node or position in ``cuts`` it is the gradient of.
    """
    STATE.backwards += 1
    walk = _Walk(cuts, record=True)
    for node, _ in roots:
        if node.freed:
            raise RuntimeError(BACKWARD_TWICE)
    root_slots = tuple(walk.ref(r, True) for r in roots)
    acc_slots = tuple(
        None if (r := accumulate(d)) is None else walk.ref(r, False) for d in walk.diffs
    )
    if not walk.diffs:
        return None, []
    key = (
        tuple(walk.entries),
        tuple(walk.deps),
        (),
        root_slots,
        cotangents is not None,
        acc_slots,
        False,
    )
    inputs: list[Any] = []
    for value, src in zip(walk.inputs, walk.input_refs, strict=True):
        if src is not None:
            inputs.append(src)
        elif type(value) in (int, float, bool, complex):
            inputs.append(value)
        else:  # a tap's zeros
            inputs.append(_value_ref(value))
    inputs.extend(_value_ref(c) for c in cotangents or ())
    requires_grad = any(type(r) is tuple and r[0].requires_grad for r in inputs)
    node = Node(
        _grad_fn(key, len(walk.inputs)), (), tuple(inputs), tuple(walk.diff_avals), None,
        requires_grad,
    )  # fmt: skip
    return node, walk.diffs


def _value_ref(value: Any) -> Ref:
    return (Node(None, (), (), (value.aval,), (value,), False), 0)


def free(nodes: list[Node], cuts: Sequence[Ref] | None) -> None:
    """Free the nodes a backward went through, as torch frees their saved tensors.

    Nodes computed only as values stay usable for a backward of their own, and so do, with
    ``cuts``, the nodes torch's engine does not execute: those no input is reached through
    (the ancestors of a result given as input, say).
    """
    on_path = None if cuts is None else _on_path_to(nodes, cuts)
    for node in nodes:
        if node.requires_grad and (on_path is None or id(node) in on_path):
            node.freed = True
            node.inputs = ()


def _on_path_to(nodes: list[Node], cuts: Sequence[Ref]) -> set[int]:
    """ids of the replayed nodes from which some cut is reached (one pass: children first)."""
    keys = {(id(c[0]), c[1]) for c in cuts if c is not None}
    reach: set[int] = set()
    for node in nodes:
        for inp in node.inputs:
            if type(inp) is tuple and ((id(inp[0]), inp[1]) in keys or id(inp[0]) in reach):
                reach.add(id(node))
                break
    return reach


def flush() -> None:
    """Compute every alive pending value of this thread (a step boundary; see spx.data).

    Called when the next batch is fetched: values a loop keeps across iterations (a running
    sum of ``(pred == y).sum()``, a BatchNorm statistic) then never grow into one program
    spanning many iterations, and each iteration's program has the same structure.
    """
    run()
