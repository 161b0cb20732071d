"""What ``spx.compile`` tells the user when a step does something a trace cannot keep.

A compiled step is traced once (per signature) with placeholder arrays and then runs as one XLA
program. Three habits of eager torch code go wrong there, and each gets a message that names the
user's line and shows the fix:

* **Python that needs a value** — ``if loss > 1:``, ``float(loss)``, ``x[mask]`` with a boolean
  mask: JAX raises deep inside its tracer with a message about ``pure`` at
  ``spx/_compile/compiled.py``; :func:`explain_trace_error` turns it into an error at the
  user's line with the ``jnp.where`` / ``lax.cond`` / "move it out of the step" fix.
* **Collecting values in a list** — ``losses.append(loss)`` inside the step appends one
  placeholder while tracing and nothing on later calls. :func:`collected_tracers` finds lists,
  dicts and sets the step reaches through its globals and closure that now hold placeholders,
  and the caller warns on the first call.
* **Recompiling on every new shape** — each new input shape costs a fresh XLA compilation.
  :class:`SignatureLog` counts the signatures a compiled function was traced for and warns once
  past :data:`RECOMPILE_LIMIT` (torch's ``recompile_limit`` is 8 too), naming the argument whose
  shape or dtype changed.
"""

from __future__ import annotations

import inspect
import itertools
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import jax

from spx import _user_code
from spx._compile.captured import code_names

RECOMPILE_LIMIT = 8

_BRANCH = (
    "branch on it (if / while / and / or / not / bool())",
    "compute both sides and select: y = spx.where(loss > 1, loss * 2, loss) (torch.where; "
    "jnp.where on arrays), or jax.lax.cond(pred, true_fn, false_fn, x) / jax.lax.while_loop "
    "for loops; or move the decision out of the step: return the value and test it after "
    "the call",
)
_CONVERT = (
    "turn it into a Python or numpy value (float(), int(), .item(), np.asarray(), tolist())",
    "return the value from the step and convert it after the call "
    "(loss = step(...); print(float(loss))); use jax.debug.print('{x}', x=x) to print "
    "inside the step",
)
_MASK = (
    "index with a boolean mask (x[mask]): the result's shape would depend on the values",
    "keep the shape fixed: x.masked_fill(~mask, 0) or spx.where(mask, x, 0) (jnp.where on "
    "arrays), (x * mask).sum(); or do the masking outside the step",
)


def _kind(error: BaseException) -> tuple[str, str] | None:
    if isinstance(error, jax.errors.TracerBoolConversionError):
        return _BRANCH
    if isinstance(error, jax.errors.NonConcreteBooleanIndexError):
        return _MASK
    if isinstance(
        error,
        jax.errors.ConcretizationTypeError
        | jax.errors.TracerIntegerConversionError
        | jax.errors.TracerArrayConversionError,
    ):
        return _CONVERT
    return None


def explain_trace_error(error: BaseException, fn: Callable[..., Any]) -> BaseException | None:
    """A clearer error for a step that needed a traced value in Python, or None.

    Args:
        error: what the user's step raised while it was traced.
        fn: the step function (named in the message).

    Returns:
        A ``TypeError`` (an ``IndexError`` for boolean masks) naming the user's line and the
        fix, to be raised ``from error``; None when ``error`` is of another kind.
    """
    if isinstance(error, jax.errors.UnexpectedTracerError):
        if "key<" in str(error):
            return _nested_random_draw(error, fn)
        return RuntimeError(MSG_UNBOUND_STATE.format(name=step_name(fn)))
    kind = _kind(error)
    if kind is None:
        return None
    what, fix = kind
    where = _user_code.from_traceback(error.__traceback__)
    at = f", at\n  {where}" if where is not None else ""
    name = step_name(fn)
    message = (
        f"spx.compile: the step {name!r} uses the value of a traced array in Python{at}\n"
        "While spx.compile traces a step (once per signature, to build one XLA program) its "
        f"arrays are placeholders without values, so Python code cannot {what}.\n"
        f"Fix: {fix}."
    )
    cls = IndexError if isinstance(error, IndexError) else TypeError
    return cls(message)


MSG_UNBOUND_STATE = (
    "spx.compile: the step {name!r} changed state that spx.compile did not bind: a Module, "
    "Optimizer or tensor it reaches neither through its arguments nor by a name it uses "
    "(a global, a closure variable, an attribute or a dict entry it names), e.g. an entry of "
    "a list, so a placeholder of the trace was left in it.\n"
    "Fix: pass the model and the optimizer as arguments, step(model, opt, x), or name them "
    "directly in the step."
)


def step_name(fn: Callable[..., Any]) -> str:
    """How messages name a step function (its qualified name)."""
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))


MSG_NESTED_RANDOM = (
    "spx.compile: the step {name!r} drew random numbers (nn.Dropout in training mode, "
    "spx.randn, ...) inside a JAX transform nested in it (jax.checkpoint, jax.lax.scan, "
    "jax.vmap, ...){at}\nspx.compile threads the generator's key through the step as state, "
    "but a key split inside the nested transform belongs to that transform's trace and "
    "cannot be written back.\n"
    "Fix, any of:\n"
    "    key = spx.random.next_key()      # in the step, outside the nested transform\n"
    "    jax.checkpoint(lambda x, k: F.dropout(block(x), p, training=True, key=k))(x, key)\n"
    "    model.eval()                      # no dropout, no draw"
)


def _nested_random_draw(error: BaseException, fn: Callable[..., Any]) -> BaseException:
    where = _user_code.from_traceback(error.__traceback__)
    at = f", at\n  {where}" if where is not None else ""
    return RuntimeError(MSG_NESTED_RANDOM.format(name=step_name(fn), at=at))


# -- containers that collected placeholders ------------------------------------------------------
def _reachable(fn: Callable[..., Any]) -> Iterator[tuple[str, Any]]:
    """``(description, value)`` of the globals and closure variables ``fn``'s code uses."""
    fn = inspect.unwrap(fn)
    fn = getattr(fn, "__func__", fn)  # a bound method
    code = getattr(fn, "__code__", None)
    if code is None:
        return
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=False):
        try:
            yield f"{name!r} (a variable the step closes over)", cell.cell_contents
        except ValueError:  # an empty cell
            continue
    found = fn.__globals__
    for name in code_names(code):
        if name in found:
            yield f"{name!r} (a global the step uses)", found[name]


def _holds_tracer(value: Any, depth: int = 2) -> bool:
    """Whether ``value`` or its newest entries (appended by the step) are tracers."""
    if isinstance(value, jax.core.Tracer):
        return True
    if hasattr(value, "_ref"):  # a Tensor: its value (computed, or recorded) is traced
        s = value._s
        values = s.node.values
        return values is None or isinstance(values[s.idx], jax.core.Tracer)
    if depth == 0:
        return False
    if isinstance(value, dict):
        items: Any = reversed(value.values())
    elif isinstance(value, list | tuple | deque):
        items = reversed(value)
    elif isinstance(value, set):
        items = iter(value)
    else:
        return False
    # A bounded look: a large global dataset list must not make tracing slow.
    return any(_holds_tracer(v, depth - 1) for v in itertools.islice(items, 64))


def collected_tracers(fn: Callable[..., Any]) -> list[str]:
    """The lists, dicts and sets reachable from ``fn`` that hold traced placeholders.

    Example:
        >>> collected_tracers(lambda: None)
        []
    """
    return [
        what
        for what, value in _reachable(fn)
        if isinstance(value, list | dict | set | deque) and _holds_tracer(value)
    ]


MSG_COLLECTED = (
    "spx.compile: after tracing the step {name!r}, {what} holds traced placeholders, not "
    "values. A compiled step runs its Python code once, while it is traced: `{short}.append("
    "loss)` inside the step stores one placeholder then, and nothing on later calls (print "
    "shows a tracer too). Return the value from the step and collect it after each call:\n"
    "    loss = step(model, opt, x, y)\n"
    "    losses.append(float(loss))"
)


# -- recompiles --------------------------------------------------------------------------------
class SignatureLog:
    """The argument signatures a compiled function has been traced for.

    Args:
        fn: the step function (its parameter names label the arguments).
        limit: warn once when more than this many distinct signatures were traced.

    Example:
        >>> log = SignatureLog(lambda x: x, limit=1)
        >>> log.record({"x": "float32[2]"})
        >>> log.count
        1
    """

    def __init__(self, fn: Callable[..., Any], limit: int = RECOMPILE_LIMIT) -> None:
        self.fn = fn
        self.limit = limit
        self.seen: set[tuple] = set()
        self.last: dict[str, str] | None = None
        self.warned = False

    @property
    def count(self) -> int:
        return len(self.seen)

    def record(self, signature: dict[str, str]) -> str | None:
        """Add ``{argument: "float32[32,10]"}``; returns the warning text when it is due."""
        key = tuple(sorted(signature.items()))
        previous, self.last = self.last, signature
        if key in self.seen:
            return None
        self.seen.add(key)
        if self.warned or len(self.seen) <= self.limit:
            return None
        self.warned = True
        name = getattr(self.fn, "__qualname__", None) or getattr(self.fn, "__name__", "step")
        return (
            f"spx.compile: {name!r} has been traced and compiled for {len(self.seen)} different "
            f"argument signatures (more than {self.limit}, torch's recompile limit); each new "
            f"shape, dtype or Python value costs a fresh XLA compilation. The last one changed "
            f"{_difference(previous or {}, signature)}. Give the step a few fixed shapes: pad "
            "or bucket the inputs, or DataLoader(drop_last=True) so the last batch is not "
            "smaller; pass a number that changes every call (a step counter, a learning rate) "
            "as a tensor, spx.tensor(k), not as a Python int or float."
        )


def _difference(old: dict[str, str], new: dict[str, str]) -> str:
    changed = []
    for name, now in new.items():
        before = old.get(name)
        if before is None:
            changed.append(f"{name}: new, {now}")
        elif before != now:
            changed.append(f"{name}: {before} -> {now}")
    changed += [f"{name}: gone" for name in old if name not in new]
    return "; ".join(changed) if changed else "nothing visible in the arguments"


def describe_array(x: Any) -> str:
    """``float32[32,10]`` (jax's short form of an abstract array)."""
    return f"{x.dtype}[{','.join(map(str, x.shape))}]"


def signature(
    names: list[str], dyn: list[Any], state: list[Any], statics: dict[str, Any] | None = None
) -> dict[str, str]:
    """What a trace is specialized to: each array argument's dtype and shape, each Python
    value compiled into the program (an ``int`` step counter is one), plus the state.

    Args:
        names: a name for each array argument (:func:`argument_names`).
        dyn: the traced array arguments, in the same order.
        state: the traced state (parameters, grads, buffers, optimizer state).
        statics: the static (Python) arguments by name.
    """
    out = {name: describe_array(x) for name, x in zip(names, dyn, strict=True)}
    for name, value in (statics or {}).items():
        out[name] = f"the Python value {value!r:.40}"
    leaves = jax.tree_util.tree_leaves(state)
    layout = hash(tuple((x.shape, str(x.dtype)) for x in leaves)) & 0xFFFF
    out["the modules' and optimizers' state"] = f"{len(leaves)} arrays (layout {layout:04x})"
    return out


def argument_names(fn: Callable[..., Any], args: tuple, kwargs: dict) -> list[str]:
    """A readable name for each array leaf of a call's arguments, in flattening order.

    ``x`` for an array argument, ``batch['input']`` inside a dict argument, ``args[3]`` when the
    signature is not known.
    """
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    from spx._compile.binding import is_stateful

    paths, _ = jax.tree_util.tree_flatten_with_path((args, kwargs), is_leaf=is_stateful)
    names = []
    for path, _leaf in paths:
        head, rest = path[0], path[1:]
        if head.idx == 0 and rest:  # positional
            index = rest[0].idx
            base = params[index] if index < len(params) else f"args[{index}]"
            rest = rest[1:]
        elif rest:
            base, rest = str(rest[0].key), rest[1:]
        else:
            base = "arguments"
        names.append(base + jax.tree_util.keystr(tuple(rest)))
    return names
