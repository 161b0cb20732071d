"""spx's own transforms versus foreign ones: who may write traced values into spx state.

torch-shaped code mutates state during a forward: BatchNorm assigns new running statistics,
Dropout advances the rank's RNG key. spx's own transforms (``spx.compile``, ``spx.backward``,
``spx.value_and_grad``, the pipeline stages) *bind* that state — they put tracers in, run the
code, read the results out and write them back — so the mutation becomes part of the program.

Under a plain ``jax.jit`` / ``jax.grad`` / ``jax.vmap`` ("a foreign transform") nobody reads
the state back: a traced key stored in the rank's generator breaks every later eager draw
(``UnexpectedTracerError``) and makes every call reuse one mask; traced statistics assigned to a
module the function closes over leak into it. Such writes are refused here with an error that
shows the code that works.

A module passed *as an argument* to a foreign transform is a traced copy (JAX unflattens it
with tracer leaves). Updating its buffers is JAX's functional style — the function returns the
module to hand the new buffers out (``jax.jit(lambda m, x: (m(x), m))``) — so it is allowed.
Whether the copy is returned is only known once the trace is over, so a copy that is dropped
with updates nobody received is reported then, with a ``RuntimeWarning`` that shows the fix.

spx's transforms mark the thread while they run user code (:func:`binding`); a rank whose RNG
key is itself a tracer is also inside a binding (the pipeline stages bind the key that way).
"""

from __future__ import annotations

import contextlib
import threading
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import jax
from jax._src.core import trace_state_clean

from spx import _context, _user_code
from spx._tensor import graph
from spx.nn import _pytree

_WHY = (
    "Under a plain jax.jit / jax.grad / jax.vmap nothing writes this state back: the update "
    "would be lost, and the traced value would leak into spx's state."
)

MSG_RANDOM = (
    "spx.random: a random draw (nn.Dropout in training mode, spx.randn, creating a layer) ran "
    "inside a plain JAX transform (jax.jit, jax.vmap, jax.eval_shape, ...), which would store a "
    "traced key in the rank's generator. " + _WHY + "\n"
    "Wrong:\n"
    "    loss = jax.jit(lambda m, x: m(x).sum())(model, x)      # Dropout in training mode\n"
    "Right, any of:\n"
    "    step = spx.compile(lambda m, x: m(x).sum())             # threads the key as state\n"
    "    model.eval()                                             # no dropout, no draw\n"
    "    F.dropout(x, p, training=True, key=key)                  # pass a key into the jit"
)

MSG_BUFFER = (
    "{owner}.{name}: a traced value was assigned to this buffer inside a plain JAX transform "
    "(jax.jit, jax.grad, jax.vmap, ...), e.g. BatchNorm updating its running statistics in "
    "training mode. " + _WHY + "\n"
    "Wrong:\n"
    "    loss = jax.jit(lambda m, x: loss_fn(m(x)))(model, x)\n"
    "Right, any of:\n"
    "    step = spx.compile(train_step)   # the same code; the new buffers are written back\n"
    "    spx.backward(lambda m: loss_fn(m(x)), model)   # eager gradients, buffers updated\n"
    "    model.eval()                     # use the running statistics, update nothing"
)

MSG_INPLACE = (
    "An in-place write ({what}) into a tensor that exists outside the transformation ran inside a "
    "plain JAX transform (jax.jit, jax.grad, jax.vmap, ...), e.g. BatchNorm updating its running "
    "statistics or an optimizer step. " + _WHY + "\n"
    "Wrong:\n"
    "    loss = jax.jit(lambda x: loss_fn(model(x)))(x)      # model closed over, BatchNorm\n"
    "Right, any of:\n"
    "    step = spx.compile(train_step)   # the same code; the updates are written back\n"
    "    loss = loss_fn(model(x)); loss.backward()   # eager: runs as compiled programs anyway\n"
    "    model.eval()                     # use the running statistics, update nothing"
)

MSG_DROPPED = (
    "{owner} buffers {names} were updated inside a plain JAX transform (jax.jit, jax.grad, "
    "jax.vmap, ...) on the traced copy of the module that was passed in, and the copy was "
    "dropped: the update is lost (the module you passed still holds the old values).\n"
    "Right, any of:\n"
    "    step = spx.compile(train_step)    # the same code; the new buffers are written back\n"
    "    out, model = jax.jit(lambda m, x: (m(x), m))(model, x)   # return the module\n"
    "    model.eval()                      # use the running statistics, update nothing"
)


class _Pending:
    """Buffers a foreign transform assigned on one traced copy, and whether it was handed on."""

    __slots__ = ("delivered", "names", "owner", "where")

    def __init__(self, owner: str, where: _user_code.Location | None) -> None:
        self.owner = owner
        self.where = where  # the user's line that ran the module, for the warning
        self.names: list[str] = []
        self.delivered = False


def _report_dropped(pending: _Pending) -> None:
    if pending.delivered:
        return
    message = MSG_DROPPED.format(owner=pending.owner, names=", ".join(dict.fromkeys(pending.names)))
    where = pending.where
    if where is None:
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    else:
        warnings.warn_explicit(message, RuntimeWarning, where.filename, where.lineno)


@contextlib.contextmanager
def binding() -> Iterator[None]:
    """Mark the calling thread as running user code under one of spx's own transforms.

    Example:
        >>> with binding():
        ...     assert is_binding()
    """
    # The depth lives in the Tensor engine's thread state, which reads it on hot paths.
    state = graph.STATE
    state.binding += 1
    try:
        yield
    finally:
        state.binding -= 1


class _Deferred(threading.local):
    def __init__(self) -> None:
        self.calls: list[tuple[Any, str, tuple]] | None = None


_DEFERRED = _Deferred()


@contextlib.contextmanager
def deferring(calls: list[tuple[Any, str, tuple]]) -> Iterator[None]:
    """While spx.compile traces a step: collect in ``calls`` the Python-only updates the step
    makes (an LR scheduler's ``step()``), which must run after every call of the compiled
    program rather than once, when the step is traced (see :func:`defer`)."""
    previous = _DEFERRED.calls
    _DEFERRED.calls = calls
    try:
        yield
    finally:
        _DEFERRED.calls = previous


def defer(obj: Any, method: str, args: tuple = ()) -> bool:
    """Inside a traced compiled step, record ``obj.method(*args)`` to run after each call and
    return True; elsewhere return False (the caller then runs it now).

    Example:
        >>> defer(object(), "step")  # not tracing
        False
    """
    calls = _DEFERRED.calls
    if calls is None:
        return False
    if any(isinstance(a, jax.core.Tracer) or hasattr(a, "_ref") for a in args):
        raise TypeError(
            f"{type(obj).__name__}.{method}() got a value computed inside the compiled step "
            "as an argument; it runs after each call of the compiled program, with Python "
            f"values. Return the value from the step and call {method}() after the call."
        )
    calls.append((obj, method, args))
    return True


def in_compiled_step() -> bool:
    """Whether spx.compile is tracing a step on this thread now."""
    return _DEFERRED.calls is not None


def deferred_calls() -> list[tuple[Any, str, tuple]]:
    """The calls :func:`defer` recorded so far in the step being traced (empty elsewhere)."""
    return _DEFERRED.calls or []


def is_binding() -> bool:
    """Whether spx binds state right now: inside :func:`binding`, or with a traced RNG key."""
    return graph.STATE.binding > 0 or traced_key(_context.current().key)


def traced_key(key: Any) -> bool:
    """Whether a rank key (an array, or a recorded split of one) comes from a traced value."""
    if isinstance(key, jax.core.Tracer):
        return True
    if not hasattr(key, "_ref"):
        return False
    node, idx = key._s.node, key._s.idx
    while node.values is None and node.inputs:  # back along the recorded splits
        node, idx = node.inputs[0]
    return node.values is not None and isinstance(node.values[idx], jax.core.Tracer)


def check_key(new_key: Any) -> None:
    """Refuse to store a traced RNG key that no spx transform will read back."""
    if isinstance(new_key, jax.core.Tracer) and not is_binding():
        raise RuntimeError(MSG_RANDOM)


def _traced(value: Any) -> bool:
    """A tracer, or a Tensor whose value is (or will be computed as) one under a transform."""
    if isinstance(value, jax.core.Tracer):
        return True
    if not hasattr(value, "_ref") or trace_state_clean():
        return False
    s = value._cur()
    values = s.node.values
    return values is None or isinstance(values[s.idx], jax.core.Tracer)


class _Foreign(threading.local):
    depth = 0  # > 0 while a module called under a foreign transform runs its forward
    names: dict[int, str] = {}  # noqa: RUF012 (per thread) id(storage) -> "BatchNorm1d.running_mean"


def inplace_error(target: Any) -> RuntimeError:
    """The error for an in-place write into ``target`` (state that outlives a foreign trace)."""
    what = _FOREIGN.names.get(id(target._s)) or target._describe()
    return RuntimeError(MSG_INPLACE.format(what=what))


_FOREIGN = _Foreign()


def foreign_call(module: Any, args: tuple, kwargs: dict) -> Any:
    """Run ``module``'s forward under a foreign transform (the outermost module call only).

    Its parameters and buffers that are still pending (a fresh module's initial values) are
    computed first, concretely, so none is computed as a tracer that would stay in the module,
    and an in-place update of one (BatchNorm's statistics) is refused as a write into state
    that outlives the trace. On a traced copy, in-place updates are JAX's functional style;
    those nobody hands on are reported when the copy is dropped (see :func:`check_buffer`).
    """
    if _FOREIGN.depth:
        return module.forward(*args, **kwargs)
    owners = list(module.named_modules(remove_duplicate=True))
    tensors = [
        (m, name, t, path)
        for path, m in owners
        for table in ("_parameters", "_buffers")
        for name, t in m.__dict__[table].items()
        if t is not None
    ]
    lazy = [
        t._s for _, _, t, _ in tensors
        if t._s.node.values is None and not graph.depends_on_tracer(t._s.node)
    ]  # fmt: skip
    if lazy:
        from spx._tensor import program

        with jax.ensure_compile_time_eval():
            program.run(lazy, with_pending=False)
    copies = [
        (m, name, t, t._s.node, t._s.idx)
        for m, name, t, _ in tensors
        if m.__dict__.get(_pytree.TRACED_COPY) and name in m.__dict__["_buffers"]
    ]
    _FOREIGN.names = {
        id(t._s): f"{type(m).__name__}.{name}" + (f" ({path}.{name})" if path else "")
        for m, name, t, path in tensors
    }
    _FOREIGN.depth += 1
    try:
        out = module.forward(*args, **kwargs)
    finally:
        _FOREIGN.depth -= 1
        _FOREIGN.names = {}
    for m, name, t, node, idx in copies:
        if t._s.node is not node or t._s.idx != idx:
            _note_dropped(m, name, _user_code.from_stack(2))
    return out


def _note_dropped(module: Any, name: str, where: _user_code.Location | None) -> None:
    """Remember that ``module``'s buffer ``name`` got a traced update; report it if dropped."""
    d = module.__dict__
    pending = d.get(_pytree.PENDING)
    if pending is None:
        pending = d[_pytree.PENDING] = _Pending(type(module).__name__, where)
        weakref.finalize(module, _report_dropped, pending)
    pending.delivered = False  # updated again after any earlier hand-off
    pending.names.append(name)


def check_buffer(module: Any, name: str, value: Any) -> None:
    """Refuse a traced buffer assignment that nobody will read back.

    Args:
        module: the Module whose buffer ``name`` is being assigned.
        name: the buffer's name.
        value: the new value.

    Raises:
        RuntimeError: a traced value assigned outside spx's transforms to a module that is not
            a traced copy (one the jitted function closes over).
    """
    if not _traced(value) or is_binding():
        return
    if not module.__dict__.get(_pytree.TRACED_COPY):
        raise RuntimeError(MSG_BUFFER.format(owner=type(module).__name__, name=name))
    _note_dropped(module, name, _user_code.from_stack(2))
