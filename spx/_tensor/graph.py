"""The recorded computation behind every :class:`spx.Tensor`: nodes, storages, grad mode.

A Tensor does not run its operations one by one (a JAX dispatch costs 10-25 µs on CPU, torch's
~1 µs). Each operation appends a :class:`Node` — the function, its static arguments, references
to its inputs and the shapes of its outputs — and returns at once. Values are computed when
someone needs them (``item()``, printing, ``backward()``, a JAX function, the next batch of a
DataLoader), by one compiled program over everything pending (:mod:`spx._tensor.program`),
cached by the structure of what was recorded, so a training loop compiles once.

The same records are the autograd graph: a node whose inputs require grad requires grad, and
``backward()`` replays the nodes between the loss and the leaves under ``jax.vjp`` inside the
compiled program.

Pieces:

* :class:`Node` — one operation (or, with ``fn=None``, a concrete value). ``values`` is filled
  when the node is computed; ``inputs`` hold ``(node, output index)`` pairs or Python scalars.
* :class:`Storage` — what a Tensor's value currently is: ``(node, idx)``, plus a version that
  every in-place write bumps. Aliases (``t.data``, ``t.detach()``) share one Storage, so an
  in-place write through either is seen by both, as in torch.
* Grad mode (``no_grad`` & co.) and the list of pending storages are per thread (rank threads
  and DataLoader workers never see each other's), as torch's grad mode is.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import jax


class Node:
    """One recorded operation, or a concrete value (``fn is None``).

    Attributes:
        fn: the pure function over arrays, called as ``fn(*input_values, *static)``; None for a
            value node; :data:`LEAF` for the grad-leaf marker of a tensor that requires grad.
        static: hashable arguments that shape the computation (axes, sizes, flags).
        inputs: ``(node, idx)`` pairs, or Python scalars (passed to the program as weakly typed
            numbers, so a changing scalar never recompiles).
        avals: the abstract value (shape, dtype) of each output.
        values: the computed outputs, or None while pending.
        requires_grad: whether the node has autograd history (some input requires grad and grad
            mode was on).
        leaf: for a :data:`LEAF` node, the Tensor whose ``.grad`` receives the gradient.
        freed: set once ``backward()`` without ``retain_graph`` went through the node.
    """

    __slots__ = (
        "__weakref__",
        "avals",
        "fn",
        "freed",
        "inputs",
        "leaf",
        "requires_grad",
        "static",
        "values",
    )

    def __init__(
        self,
        fn: Any,
        static: tuple,
        inputs: tuple,
        avals: tuple,
        values: tuple | None,
        requires_grad: bool,
    ) -> None:
        self.fn = fn
        self.static = static
        self.inputs = inputs
        self.avals = avals
        self.values = values
        self.requires_grad = requires_grad
        self.leaf = None
        self.freed = False


def value_node(array: Any) -> Node:
    """A computed node holding ``array`` (a ``jax.Array`` or a tracer)."""
    return Node(None, (), (), (array.aval,), (array,), False)


def _leaf_marker(x: Any) -> Any:
    """Identity: a LEAF node's output is its input's value, differentiated as an input."""
    return x


LEAF = _leaf_marker


def _no_gradient_marker(x: Any, message: str) -> Any:
    """Identity over a value that has no way back to its inputs (a compiled forward's
    result): a backward reaching it raises ``message`` (see ``spx.compile``)."""
    return x


NO_GRADIENT = _no_gradient_marker


class Storage:
    """What a Tensor holds now: the output ``idx`` of ``node``; shared by aliases.

    ``version`` counts in-place writes (views compare it to know when to re-derive).
    """

    __slots__ = ("__weakref__", "idx", "node", "version")

    def __init__(self, node: Node, idx: int = 0) -> None:
        self.node = node
        self.idx = idx
        self.version = 0

    @property
    def aval(self) -> Any:
        return self.node.avals[self.idx]


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.grad_enabled = True
        self.inference = False
        # > 0 while spx binds module state to tracers itself (spx.compile, spx.backward,
        # spx.value_and_grad); a tracer seen otherwise comes from a foreign transformation.
        self.binding = 0
        # Weak references to storages that were given a pending node; the next flush computes
        # those still alive (a dead one's value is never needed again).
        self.pending: list[weakref.ref] = []
        # Value checks waiting for their values (spx._tensor.checks): run after the program
        # that computes them, or before a value goes to the host.
        self.checks: list[Any] = []
        # ids of tensors a Module's pytree flatten is handing to JAX (jax.jit(f)(model)):
        # passing a model to a JAX transform is a deliberate functional use, not a jnp call
        # that would drop gradients (see Tensor's pytree flatten).
        self.owned: set[int] = set()
        # id -> non-leaf tensor that called retain_grad(); backward() gives each its .grad.
        # (Keyed by id: a WeakSet would compare tensors with their elementwise __eq__.)
        self.retained: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        # node -> {output index: (hooks, weak refs to the tensors that registered them)} for
        # register_hook on results; backward() runs them. Keyed by the node, as torch keeps
        # such hooks on the grad_fn: the tensor object may be gone (a local of a forward).
        self.hooked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # ids of gradient tensors that view a buffer spx.compile does not bind (p.grad set to
        # a slice of a flat buffer): bound themselves, they are written alone while a step is
        # traced, and through to the buffer after the call (Tensor._assign, _write_through).
        self.bound_views: set[int] = set()
        # Backward passes run on this thread (spx.compile tells whether a step ran one).
        self.backwards = 0
        # The active spx.autocast region's policy (casts the inputs of listed operations),
        # and the thread's stack of regions it is chosen from (spx.amp.autocast_mode).
        self.autocast: Any = None
        self.autocast_regions: Any = None
        # The spx.func transforms running the current function, outermost first: "reverse"
        # (grad, vjp, jacrev) or "forward" (jvp, jacfwd). Operations under no_grad read
        # inputs with history through stop_gradient inside reverse ones (torch.func.grad
        # respects no_grad; forward-mode AD ignores it).
        self.func_modes: list[str] = []
        # Depth of spx.backward(fn, model) / spx.value_and_grad calls running the user's
        # function: JAX takes that gradient, so the hooks only spx's backward runs would be
        # skipped silently; registering them there raises (see spx._tensor.autograd).
        self.jax_backward = 0


STATE = _ThreadState()


def depends_on_tracer(node: Node) -> bool:
    """Whether a pending node's value would be traced (some value it is computed from is)."""
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.values is not None:
            if any(isinstance(v, jax.core.Tracer) for v in n.values):
                return True
            continue
        stack.extend(i[0] for i in n.inputs if isinstance(i, tuple))
    return False


def grad_enabled() -> bool:
    """Whether operations record autograd history on this thread (torch's grad mode)."""
    return STATE.grad_enabled


def set_grad_enabled_flag(mode: bool) -> bool:
    """Set this thread's grad mode; returns the previous mode."""
    state = STATE
    previous = state.grad_enabled
    state.grad_enabled = mode
    return previous


def note_pending(storage: Storage) -> None:
    """Remember that ``storage`` holds a value that is not computed yet."""
    STATE.pending.append(weakref.ref(storage))


def take_pending() -> list[Storage]:
    """The alive storages of this thread still holding pending values; clears the list."""
    state = STATE
    refs, state.pending = state.pending, []
    out = []
    for ref in refs:
        s = ref()
        if s is not None and s.node.values is None:
            out.append(s)
    return out


def is_tracer(x: Any) -> bool:
    return isinstance(x, jax.core.Tracer)
