"""torch's autograd entry points on recorded tensors: ``backward`` and ``grad``.

Both run :func:`spx._tensor.program.run` with the outputs as grad roots: one compiled program
replays the recorded forward under ``jax.vjp`` and returns the gradients (already added to the
existing ``.grad`` of each leaf, for ``backward``), together with every pending value of the
thread. The program is cached by the structure of the recorded graph, so a training loop pays
for tracing and compiling once.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp

from spx._tensor import graph, program
from spx._tensor.graph import Storage, value_node

_NO_GRAD_FN = (
    "element {i} of tensors does not require grad and does not have a grad_fn. Did the loss "
    "come from parameters? Check requires_grad on the inputs, that the forward pass did not "
    "run under spx.no_grad(), and that no value went through .detach(), .item() or numpy."
)
_IMPLICIT = "grad can be implicitly created only for scalar outputs (got shape {shape})"
_UNUSED = (
    "One of the differentiated Tensors appears to not have been used in the graph. Set "
    "allow_unused=True if this is the desired behavior."
)


def _as_list(x: Any) -> list:
    if x is None:
        return []
    if isinstance(x, Sequence) and not hasattr(x, "_ref"):
        return list(x)
    return [x]


def _roots_and_cotangents(tensors: list, grads: list) -> tuple[list, list | None]:
    from spx._tensor.tensor import Tensor

    if grads and len(grads) != len(tensors):
        raise RuntimeError(
            f"grad_tensors/grad_outputs has {len(grads)} entries but there are {len(tensors)} "
            "outputs; pass one gradient per output"
        )
    roots, cots = [], []
    explicit = any(g is not None for g in grads)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensors to differentiate, got {type(t).__name__} at {i}")
        if not t.requires_grad:
            raise RuntimeError(_NO_GRAD_FN.format(i=i))
        g = grads[i] if grads else None
        if g is None:
            if t.numel() != 1:
                raise RuntimeError(_IMPLICIT.format(shape=list(t.shape)))
            if t.is_complex():
                raise RuntimeError(
                    "grad can be implicitly created only for real scalar outputs but got "
                    f"spx.{t.dtype}; pass gradient= (or backward a real loss: .abs(), .real)"
                )
            cots.append(None)
        else:
            g_val = g._value() if isinstance(g, Tensor) else jnp.asarray(g)
            if tuple(g_val.shape) != tuple(t.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {list(g_val.shape)} "
                    f"and output[{i}] has a shape of {list(t.shape)}."
                )
            cots.append(g_val.astype(t.dtype))
        roots.append(t._ref(True))
    if not explicit:
        return roots, None  # the program differentiates with ones (scalar outputs)
    return roots, [
        jnp.ones(t.shape, t.dtype) if c is None else c for c, t in zip(cots, tensors, strict=False)
    ]


def run_hooks(hooks: Any, value: Any) -> Any:
    """``value`` through torch's tensor hooks: each may return a replacement, or change the
    gradient it is given in place and return None."""
    from spx._tensor.tensor import Tensor

    for hook in list(hooks):
        given = Tensor._of(value)
        out = hook(given)
        if out is None:
            # A hook may change the gradient in place (``g.clamp_(-c, c)``) and return None:
            # torch's gradient is that tensor, written to.
            value = given._value()
        else:
            new = out._value() if isinstance(out, Tensor) else jnp.asarray(out)
            if tuple(new.shape) != tuple(value.shape):
                raise RuntimeError(
                    f"hook {getattr(hook, '__name__', hook)!r} has changed the size of value: "
                    f"expected {list(value.shape)}, got {list(new.shape)}"
                )
            value = new.astype(value.dtype)
    return value


def _set_grad(t: Any, value: Any, add: bool = False) -> None:
    """Give ``t`` the gradient ``value``; ``add``: added to its current ``.grad``.

    Without ``add`` the caller already added the old ``.grad`` inside the program (not for a
    tensor with hooks: they see this backward's gradient alone, as torch's do).
    """
    from spx._tensor.tensor import Tensor

    grad = t._grad
    if grad is None:
        t._grad = Tensor._of(value)
    else:
        if add:
            value = grad._value() + value
        if grad._view is not None:  # torch adds in place: a view writes through to its base
            grad._write_through(value)
            return
        s = grad._cur()
        s.node, s.idx = value_node(value), 0
        s.version += 1


def backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """Accumulate the gradient of ``tensors`` into the ``.grad`` of leaves (torch's form).

    Args:
        tensors: the outputs (a Tensor or a sequence); scalars need no ``grad_tensors``.
        grad_tensors: the gradient with respect to each output (None for scalars: ones).
        retain_graph: keep the graph for another backward (default: ``create_graph``).
        create_graph: record the backward, so that the ``.grad`` it gives is differentiable
            again (gradient penalties, Hessian-vector products).
        inputs: accumulate only into these tensors' ``.grad`` (leaves or not).

    Example:
        >>> import spx
        >>> w = spx.ones(3, requires_grad=True)
        >>> spx.autograd.backward((w * w).sum())
        >>> w.grad.tolist()
        [2.0, 2.0, 2.0]
    """
    outs = _as_list(tensors)
    roots, cots = _roots_and_cotangents(outs, _as_list(grad_tensors))
    targets = None if inputs is None else _as_list(inputs)
    cuts = None if targets is None else [t._ref(True) for t in targets]

    def receiver(diff: Any) -> Any:
        # A LEAF node or a Retained names its tensor; with ``inputs`` a position names one.
        return targets[diff] if type(diff) is int else diff.leaf

    if create_graph:
        _recorded_backward(roots, cots, cuts, receiver)
        return

    def hooks(diff: Any) -> list:
        # A leaf's hooks, run on this backward's gradient before it is added to .grad (those
        # of results run inside _run_through_hooks).
        return receiver(diff).__dict__.get("_grad_hooks") or []

    stops = _hooked_results(cuts)
    if stops:
        # Hooks on results: the gradient stops at each to run them (see _run_through_hooks),
        # so nothing is accumulated inside the programs.
        grads, diffs = _run_through_hooks(
            roots, cots, cuts, _retained(cuts), stops, bool(retain_graph)
        )
    else:

        def accumulate(diff: Any) -> Any:
            grad = receiver(diff)._grad
            return None if grad is None or hooks(diff) else grad._ref(False)

        grads, diffs = program.run(
            roots=roots,
            cotangents=cots,
            cuts=cuts,
            accumulate=accumulate,
            retain_graph=bool(retain_graph),
            retained=_retained(cuts),
            none_for_zero=True,
        )
    leaves = []
    for g, diff in zip(grads, diffs, strict=True):
        if g is None:  # no gradient reaches it (see spx._tensor.zero_grads): .grad is kept
            continue
        leaf, tensor_hooks = receiver(diff), hooks(diff)
        _set_grad(leaf, run_hooks(tensor_hooks, g), add=bool(stops or tensor_hooks))
        leaves.append(leaf)
    run_post_accumulate_hooks(leaves, create_graph=False)
    run_post_backward(leaves)


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """The gradients of ``outputs`` with respect to ``inputs`` (torch's ``autograd.grad``).

    Nothing is accumulated into ``.grad``. An input the outputs do not depend on raises unless
    ``allow_unused`` (then its gradient is None, or zeros with ``materialize_grads``).

    Example:
        >>> import spx
        >>> x = spx.tensor([1.0, 2.0], requires_grad=True)
        >>> (g,) = spx.autograd.grad((x ** 3).sum(), x)
        >>> g.tolist()
        [3.0, 12.0]
    """
    from spx._tensor.tensor import Tensor

    if is_grads_batched:
        raise NotImplementedError("autograd.grad(is_grads_batched=True) is not supported")
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    for i, t in enumerate(ins):
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise RuntimeError(
                f"One of the differentiated Tensors (input {i}) does not require grad"
            )
    roots, cots = _roots_and_cotangents(outs, _as_list(grad_outputs))
    cuts = [t._ref(True) for t in ins]
    if create_graph:
        _no_hooks_with_create_graph(cuts, ins)
        node, diffs = program.record_backward(roots, cots, cuts, lambda d: None)
        recorded = {d: Tensor._wrap(node, i) for i, d in enumerate(diffs)}
        return tuple(_grad_result(recorded.get(k), t, allow_unused, materialize_grads)
                     for k, t in enumerate(ins))  # fmt: skip
    stops = _hooked_results(cuts)
    if stops:
        grads, diffs = _run_through_hooks(
            roots, cots, cuts, _retained(cuts), stops, bool(retain_graph)
        )
    else:
        grads, diffs = program.run(
            roots=roots, cotangents=cots, cuts=cuts, accumulate=_accumulate_retained,
            retain_graph=bool(retain_graph), retained=_retained(cuts), none_for_zero=True,
        )  # fmt: skip
    found: dict[int, Any] = {}
    for d, g in zip(diffs, grads, strict=True):
        if g is None:  # no gradient reaches it: an unused input, as in torch
            continue
        if type(d) is int:
            t = ins[d]
            if cuts[d][0].fn is graph.LEAF:  # a leaf input's hooks run as in torch
                g = run_hooks(t.__dict__.get("_grad_hooks") or [], g)
            found[d] = g
            if t.__dict__.get("_retains_grad") and not t.is_leaf:
                # An input that retains its grad gets the gradient added, as in torch.
                _set_grad(t, g, add=True)
        else:  # a tensor between the outputs and the inputs that retains its grad
            _set_grad(d.leaf, g, add=bool(stops))
    return tuple(
        _grad_result(Tensor._of(found[k]) if k in found else None, t, allow_unused,
                     materialize_grads)
        for k, t in enumerate(ins)
    )  # fmt: skip


def _grad_result(g: Any, t: Any, allow_unused: bool | None, materialize: bool) -> Any:
    """``autograd.grad``'s result for input ``t``: its gradient, or for an unused input zeros
    (``materialize_grads``), None (``allow_unused``) or torch's error."""
    from spx._tensor.tensor import Tensor

    if g is not None:
        return g
    if materialize:
        return Tensor._of(jnp.zeros(t.shape, t.dtype))
    if allow_unused:
        return None
    raise RuntimeError(_UNUSED)


def _no_hooks_with_create_graph(cuts: list | None, tensors: list | None) -> None:
    if _hooked_results(cuts) or any(t.__dict__.get("_grad_hooks") for t in tensors or ()):
        raise NotImplementedError(
            "create_graph=True with tensor or module backward hooks is not supported by spx; "
            "remove the hooks for the double-backward step"
        )
    if _retained(cuts):
        raise NotImplementedError(
            "create_graph=True with tensors that retain_grad() is not supported by spx; read "
            "their gradient with spx.autograd.grad(loss, tensor, create_graph=True) instead"
        )


def _recorded_backward(roots: list, cots: list | None, cuts: list | None, receiver: Any) -> None:
    """``backward(create_graph=True)``: each ``.grad`` becomes (old ``.grad`` +) a recorded
    gradient, differentiable again; as torch, the old ``.grad`` object is not written to."""
    from spx._tensor.tensor import Tensor

    def accumulate(diff: Any) -> Any:
        grad = receiver(diff)._grad
        if grad is None:
            return None
        # Computed first: the program then reads its value, and the recorded node refers to
        # it (with its history, if an earlier create_graph gave it one).
        grad._value()
        return grad._ref(True)

    node, diffs = program.record_backward(roots, cots, cuts, accumulate)
    leaves = [receiver(d) for d in diffs]
    _no_hooks_with_create_graph(cuts, leaves)
    for i, leaf in enumerate(leaves):
        leaf._grad = Tensor._wrap(node, i)
    run_post_accumulate_hooks(leaves, create_graph=True)
    run_post_backward(leaves)


def _retained(cuts: list | None = None) -> dict[tuple[int, int], Any] | None:
    """``(id(node), idx) -> tensor`` of this thread's live tensors that called retain_grad().

    Read at each backward from the tensors' current values, so an in-place write after
    ``retain_grad()`` moves the retained gradient to the new value, as in torch. With ``cuts``
    (``inputs=``) only the tensors torch's engine passes through on its way to the inputs
    count: those from which an input is reachable, and not the inputs themselves (their
    gradient is the input's own).
    """
    tensors = graph.STATE.retained
    if not tensors:
        return None
    cut_keys = None if cuts is None else {(id(n), i) for n, i in cuts}
    out = {}
    for t in list(tensors.values()):
        s = t._cur()
        key = (id(s.node), s.idx)
        if not s.node.requires_grad:
            continue
        if cut_keys is not None and (key in cut_keys or not program.reaches(s.node, cut_keys)):
            continue
        out[key] = t
    return out


class _Hooked:
    """A result with hooks, where a backward pass stops: names its gradient in ``diffs``."""

    __slots__ = ("cut", "group", "hooks", "key", "ref", "tensors")

    def __init__(self, ref: tuple, key: tuple[int, int], cut: int | None) -> None:
        self.ref = ref  # (node, idx) of the result
        self.key = key
        self.cut = cut  # its position among autograd.grad's inputs, if it is one
        self.hooks: list = []
        self.tensors: list = []  # the tensors that registered them (for retain_grad)
        self.group: list | None = None  # the node's hooks, which see all its outputs at once


def add_node_hook(output: Any, hook: Any) -> None:
    """Call ``hook(grads)`` with the gradients of all outputs of ``output``'s operation.

    ``grads`` has one array (or None: no gradient reached it) per output of the node, after
    the outputs' own tensor hooks; a returned list replaces them (None entries: no gradient).
    Module backward hooks are built on this (see ``spx.nn._backward_hooks``).
    """
    refuse_hooks_under_jax_backward("a module backward hook (register_full_backward_hook)")
    node = output._cur().node
    graph.STATE.hooked.setdefault(node, {}).setdefault(None, []).append(hook)


HOOKS_UNDER_JAX_BACKWARD = (
    "{what} inside spx.backward(fn, model) / spx.value_and_grad would never run: there JAX takes "
    "the gradient of fn, and only spx's own backward runs hooks. Write the step torch's way "
    "(loss = loss_fn(model(x), y); loss.backward(), also inside spx.compile) to use hooks."
)


def refuse_hooks_under_jax_backward(what: str) -> None:
    """Raise if a hook is being attached while spx.backward / value_and_grad runs the user's
    function (the hook would be skipped silently)."""
    if graph.STATE.jax_backward:
        raise RuntimeError(HOOKS_UNDER_JAX_BACKWARD.format(what=what))


def _hooked_results(cuts: list | None = None) -> dict[tuple[int, int], _Hooked]:
    """``(id(node), idx) -> _Hooked`` of this thread's results with hooks."""
    hooked = graph.STATE.hooked
    if not hooked:
        return {}
    cut_at = {} if cuts is None else {(id(n), i): k for k, (n, i) in enumerate(cuts)}
    out: dict[tuple[int, int], _Hooked] = {}
    for node, table in list(hooked.items()):
        if node.freed or not node.requires_grad:
            continue
        group = table.get(None)
        for idx in range(len(node.avals)) if group else [i for i in table if i is not None]:
            hooks, tensors = table.get(idx, ((), ()))
            if hooks or group:
                key = (id(node), idx)
                entry = out[key] = _Hooked((node, idx), key, cut_at.get(key))
                entry.hooks = list(hooks)
                # Once each: a tensor with several hooks is listed once per hook, and its
                # retained gradient must be added once (it was doubled with two hooks).
                alive = [t for r in tensors if (t := r()) is not None]
                entry.tensors = list({id(t): t for t in alive}.values())
                entry.group = list(group) if group else None
    return out


def _run_node_hooks(hooks: list, grads: list) -> list:
    """``grads`` (arrays or None) through a node's hooks, each returning a replacement or None."""
    from spx._tensor.tensor import Tensor

    for hook in hooks:
        out = hook(list(grads))
        if out is None:
            continue
        new = []
        for g, o in zip(grads, out, strict=True):
            if o is None:
                new.append(None)
                continue
            v = o._value() if isinstance(o, Tensor) else jnp.asarray(o)
            if g is not None and tuple(v.shape) != tuple(g.shape):
                raise RuntimeError(
                    f"backward hook has changed the size of a gradient: expected "
                    f"{list(g.shape)}, got {list(v.shape)}"
                )
            new.append(v if g is None else v.astype(g.dtype))
        grads = new
    return grads


def _run_through_hooks(
    roots: list, cots: list | None, cuts: list | None, retained: dict | None,
    stops: dict[tuple[int, int], _Hooked], retain_graph: bool,
) -> tuple[list, list]:  # fmt: skip
    """Backpropagate in passes that stop at results with hooks, running the hooks between.

    The first pass goes from the roots; the gradient reaching a hooked result stops there
    and comes back. Then, results nearest the roots first (every contribution to a result's
    gradient comes from passes through results that depend on it), each result's hooks run
    on its whole gradient and the returned gradient flows on from it in a pass of its own,
    stopping at the hooked results further back. The outputs of a node with node hooks are
    handled together. Gradients of the same input add up. Each pass is one compiled program,
    cached like a plain backward.

    A hooked result that is an input of ``autograd.grad`` gets the hooked gradient, or, when
    the backward must go on through it to another input, the gradient before its hooks: what
    torch's engine captures (its tensor hooks run after the capture for a node it executes).
    """
    walked: list = []
    totals: dict[int, list] = {}  # id(receiver) or input position -> [diff, summed gradient]
    pending: dict[tuple[int, int], Any] = {}

    def add(k: Any, d: Any, g: Any) -> None:
        if k in totals:
            totals[k][1] = totals[k][1] + g
        else:
            totals[k] = [d, g]

    def collect(grads: list, diffs: list) -> None:
        for g, d in zip(grads, diffs, strict=True):
            if type(d) is _Hooked:
                pending[d.key] = g if d.key not in pending else pending[d.key] + g
            else:
                add(d if type(d) is int else id(d.leaf), d, g)

    collect(*program.run(
        roots=roots, cotangents=cots, cuts=cuts, retain_graph=True, retained=retained,
        stops=stops, walked=walked,
    ))  # fmt: skip
    # The first pass lists every node it went through after the nodes they depend on.
    order = {id(n): i for i, n in enumerate(walked)}
    remaining = dict(stops)
    cut_keys = set() if cuts is None else {(id(c[0]), c[1]) for c in cuts}
    for key in sorted(stops, key=lambda k: (-order.get(k[0], -1), k[1])):
        if key not in remaining:
            continue  # handled with the other outputs of its node
        first = remaining[key]
        members = [first]
        if first.group is not None:
            node = first.ref[0]
            members = [
                remaining[k] for i in range(len(node.avals)) if (k := (key[0], i)) in remaining
            ]
        for m in members:
            del remaining[m.key]
        befores = [pending.pop(m.key, None) for m in members]
        if all(b is None for b in befores):
            continue  # not on the way from the roots
        grads = [
            None if b is None else run_hooks(m.hooks, b)
            for m, b in zip(members, befores, strict=True)
        ]
        if first.group is not None:
            grads = _run_node_hooks(first.group, grads)
        node = first.ref[0]
        goes_on = cuts is None or program.reaches(node, cut_keys - {m.key for m in members})
        for m, b, g in zip(members, befores, grads, strict=True):
            if m.cut is not None and b is not None:
                add(m.cut, m.cut, b if goes_on else g)
            for t in m.tensors:
                if t.__dict__.get("_retains_grad") and graph.STATE.retained.get(id(t)) is t:
                    s = t._cur()
                    if g is not None and (s.node, s.idx) == m.ref and m.cut is None:
                        _set_grad(t, g, add=True)  # torch's retain_grad sees the hooked gradient
        live = [(m, g) for m, g in zip(members, grads, strict=True) if g is not None]
        if not goes_on or not live:
            continue
        # The results themselves are this pass's roots: neither their own retain_grad taps
        # nor (as inputs) their captures are wanted again.
        mine = {m.key for m in members}
        others = None if retained is None else {k: v for k, v in retained.items() if k not in mine}
        skip = {m.cut for m in members}
        pass_cuts = None if cuts is None else [None if k in skip else c for k, c in enumerate(cuts)]
        collect(*program.run(
            roots=[m.ref for m, _ in live], cotangents=[g for _, g in live], cuts=pass_cuts,
            retain_graph=True, retained=others, stops=remaining, walked=walked,
            with_pending=False,
        ))  # fmt: skip
    if not retain_graph:
        program.free(walked, cuts)
    return [g for _, g in totals.values()], [d for d, _ in totals.values()]


def _accumulate_retained(diff: Any) -> Any:
    """``autograd.grad`` accumulates into nothing but the ``.grad`` of retaining tensors."""
    if type(diff) is int:
        return None
    grad = diff.leaf._grad
    return None if grad is None else grad._ref(False)


# -- post-backward callbacks -------------------------------------------------------------------
# torch's DistributedDataParallel queues a callback on the autograd engine
# (``Variable._execution_engine.queue_callback``) to reduce gradients once backward is done.
# spx's analogue: callbacks registered once, held weakly (a bound method dies with its owner),
# called at the end of every ``backward()`` (and ``spx.backward``) on any thread with the
# tensors whose ``.grad`` it wrote. A callback filters the leaves it cares about itself.
_POST_BACKWARD: list[Any] = []


def register_post_backward_callback(fn: Any) -> Any:
    """Call ``fn(leaves)`` after every backward; returns a handle with ``remove()``."""
    ref = weakref.WeakMethod(fn) if hasattr(fn, "__self__") else weakref.ref(fn)
    _POST_BACKWARD.append(ref)

    class _Handle:
        def remove(self) -> None:
            if ref in _POST_BACKWARD:
                _POST_BACKWARD.remove(ref)

    return _Handle()


def run_post_accumulate_hooks(leaves: list, create_graph: bool) -> None:
    """Each leaf's ``register_post_accumulate_grad_hook`` hooks, with the leaf; as torch, under
    ``no_grad`` unless the backward records its graph."""
    from spx._tensor.grad_mode import set_grad_enabled
    from spx._tensor.tensor import Tensor

    todo = [
        (t, h)
        for t in leaves
        if t.is_leaf
        for h in t.__dict__.get("_post_accumulate_grad_hooks") or ()
    ]
    if not todo:
        return
    with set_grad_enabled(create_graph):
        for tensor, hook in todo:
            out = hook(tensor)
            # torch ignores a returned tensor (``p.add_(...)`` returns p) and refuses the rest.
            if out is not None and not isinstance(out, Tensor):
                raise TypeError(
                    f"expected Variable, but hook returned {type(out).__name__!r} (post "
                    "accumulate grad hooks return None: update the tensor or its .grad in place)"
                )


def run_post_backward(leaves: list) -> None:
    """Call the registered callbacks (dropping dead ones) with the leaves given gradients."""
    for ref in list(_POST_BACKWARD):
        fn = ref()
        if fn is None:
            _POST_BACKWARD.remove(ref)
        else:
            fn(leaves)


def compute(storages: Sequence[Storage]) -> None:
    """Compute these storages (and everything pending on this thread) now."""
    program.run(list(storages))
