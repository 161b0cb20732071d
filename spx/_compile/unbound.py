"""State a compiled step reaches without binding it: found after its first trace, put back,
and reported.

:mod:`spx._compile.captured` binds the Modules and Optimizers a step names (arguments, globals,
closure variables, attributes and dict entries it names). State reached any other way (an
entry of a list, ``getattr(obj, name)``) is not bound, and a trace goes wrong on it silently or
late:

* **read**: its arrays become constants of the program, which never sees later updates (an
  optimizer step, ``load_state_dict``, a target network's sync) — a silently wrong result;
* **changed**: the trace writes placeholders into it, so the model or optimizer is broken for
  every later use, eager ones included.

:class:`Snapshot` records every live Module's parameters, buffers and gradients and every live
Optimizer's state before the first (probe) trace of a program. After it, :meth:`Snapshot.check`
puts back what the trace changed and raises an error that names the tensor and the fix; it
raises too when a program constant is one of those arrays. The cost is one walk over the live
Modules and Optimizers per traced program, none per call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import jax

from spx._compile import diagnostics

MSG_CHANGED = (
    "spx.compile: the step {name!r} changed the {what} {attr!r} of a {cls} that spx.compile "
    "did not bind: a Module or Optimizer it reaches neither through its arguments nor by a "
    "name it uses (a global, a closure variable, an attribute or a dict entry it names), e.g. "
    "an entry of a list. Its value is put back as it was before the call.\n"
    "Fix: pass the model and the optimizer as arguments, step(model, opt, x), or name them "
    "directly in the step."
)

MSG_CONSTANT = (
    "spx.compile: the step {name!r} reads the {what} {attr!r} of a {cls} that spx.compile did "
    "not bind: a Module it reaches neither through its arguments nor by a name it uses (a "
    "global, a closure variable, an attribute or a dict entry it names), e.g. an entry of a "
    "list. The program would keep today's values as constants and never see later updates "
    "(an optimizer step, load_state_dict, a target network's sync).\n"
    "Fix: pass the model as an argument, step(model, x), or name it directly in the step."
)


class Snapshot:
    """Every live Module's tensors and Optimizer's state, taken before a step is traced.

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(2, 1)
        >>> snap = Snapshot()
        >>> snap.check([], "step")  # nothing changed, no constants: passes
    """

    def __init__(self) -> None:
        from spx.nn.module import live_modules  # (spx.nn and spx.optim import spx._compile)
        from spx.optim.optimizer import live_optimizers

        # (tensor, its value, its .grad, the grad's value, what, attr, owner's class); a value
        # is the (node, index) the tensor's storage holds: pending ones too (packed gradients).
        self._tensors: list[tuple[Any, Any, Any, Any, str, str, str]] = []
        self._arrays: dict[int, tuple[str, str, str]] = {}
        # This thread's Modules: checked for placeholders left in them and for constants.
        # Other threads' (a model built on the main thread, compiled on a worker) only for
        # constants: another rank's trace may hold placeholders in its own model right now.
        for other, modules in ((False, live_modules()), (True, live_modules(other_threads=True))):
            for module in modules:
                cls = type(module).__name__
                for what, tensors in (
                    ("parameter", list(module._parameters.items())),
                    ("buffer", list(module._buffers.items())),
                ):
                    for attr, t in tensors:
                        if t is None:
                            continue
                        if not other:
                            grad = t._grad
                            self._tensors.append(
                                (t, _value(t), grad, _value(grad), what, attr, cls)
                            )
                        values = t._s.node.values
                        if values is None and other:
                            # A value another thread recorded and never computed (a fresh
                            # model's initialization): computed now, or the trace would compute
                            # it into a constant unseen. (This thread's were computed before
                            # the call.)
                            with contextlib.suppress(Exception):
                                t._data  # noqa: B018
                            values = t._s.node.values
                        if values is not None:
                            self._arrays[id(values[t._s.idx])] = (what, attr, cls)
        self._optimizers = [(opt, dict(opt.state)) for opt in live_optimizers()]

    def restore(self) -> list[tuple[str, str, str]]:
        """Put back every tensor and optimizer state that holds a trace's placeholder now;
        return ``(what, attr, class)`` of each."""
        changed = []
        for t, value, grad, grad_value, what, attr, cls in self._tensors:
            if _traced(t):
                _put(t, value)
                changed.append((what, attr, cls))
            if _traced(t._grad) or (t._grad is not grad and _traced(grad)):
                t._grad = grad
                _put(grad, grad_value)
                changed.append(("gradient of the parameter", attr, cls))
        for opt, state in self._optimizers:
            leaves = jax.tree.leaves(list(opt.state.values()))  # (keys are tensors: not sorted)
            if any(isinstance(x, jax.core.Tracer) for x in leaves):
                opt.state.clear()
                opt.state.update(state)
                changed.append(("state", "state", type(opt).__name__))
        return changed

    def check(self, consts: list[Any], fn: Callable[..., Any] | str) -> None:
        """After a trace: put back and report state it changed, and report parameters and
        buffers held as constants of the program.

        Args:
            consts: the constants of the traced program (``jax.jit(f).trace(...).jaxpr.consts``).
            fn: the step function (named in the messages).

        Raises:
            RuntimeError: :data:`MSG_CHANGED` or :data:`MSG_CONSTANT`, naming the tensor.
        """
        name = fn if isinstance(fn, str) else diagnostics.step_name(fn)
        changed = self.restore()
        if changed:
            what, attr, cls = changed[0]
            raise RuntimeError(MSG_CHANGED.format(name=name, what=what, attr=attr, cls=cls))
        for c in consts:
            found = self._arrays.get(id(c))
            if found is not None:
                what, attr, cls = found
                raise RuntimeError(MSG_CONSTANT.format(name=name, what=what, attr=attr, cls=cls))


def _value(t: Any) -> Any:
    return None if t is None else (t._s.node, t._s.idx)


def _put(t: Any, value: Any) -> None:
    if t is not None:
        s = t._s
        s.node, s.idx = value
        s.version += 1


def _traced(t: Any) -> bool:
    """Whether ``t`` holds a placeholder of a trace, or a pending value computed from one."""
    if t is None:
        return False
    stack, seen = [t._s.node], set()
    while stack:
        node = stack.pop()
        if node.values is not None:
            if any(isinstance(v, jax.core.Tracer) for v in node.values):
                return True
            continue
        for ref in node.inputs:
            if isinstance(ref, tuple) and id(ref[0]) not in seen:
                seen.add(id(ref[0]))
                stack.append(ref[0])
    return False
