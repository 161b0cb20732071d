"""Stage boundaries: ``pipe_split()``, ``SplitPoint`` and the ``split_spec`` annotation.

Both ways of marking a boundary bind one JAX primitive that computes nothing: a
``pipe_split()`` call in user code, and a ``split_spec={"blocks.2": SplitPoint.BEGINNING}``
entry, which wraps that submodule's ``forward`` while ``pipeline()`` traces the model.

``pipeline()`` traces the whole model to one jaxpr and cuts its equation list wherever this
primitive was bound. The primitive has no operands and no results, so it cannot change any
value: under ``jax.jit`` it lowers to nothing (and is dead code anyway), under ``jax.grad`` /
``jax.vmap`` it is passed straight through, and in eager code it is not bound at all. It is
bound whenever a trace is active — not only inside ``pipeline()`` — because ``jax.jit`` caches
traces: a jitted helper first traced outside ``pipeline()`` must still carry its markers when
``pipeline()`` reuses that trace.

The equation's ``origin`` parameter records where the boundary came from (the ``split_spec``
entry or the ``pipe_split()`` call site), so errors can name it.
"""

from __future__ import annotations

import contextlib
import difflib
import sys
from collections.abc import Iterator, Mapping
from enum import Enum
from typing import Any

from jax.extend.core import Jaxpr, Primitive
from jax.interpreters import mlir

from spx._tensor import program
from spx.nn import _structure
from spx.nn.module import Module

try:  # Private, but the only way to tell eager code (nothing to record) from a trace.
    from jax._src.core import EvalTrace as _EvalTrace
    from jax._src.core import trace_ctx as _trace_ctx
except ImportError:  # pragma: no cover - a JAX without them: always bind (a few µs eagerly)
    _EvalTrace = None
    _trace_ctx = None

pipe_split_p = Primitive("pipe_split")
pipe_split_p.multiple_results = True
pipe_split_p.def_impl(lambda **params: [])
pipe_split_p.def_abstract_eval(lambda **params: [])
mlir.register_lowering(pipe_split_p, lambda ctx, **params: [])


def _tracing() -> bool:
    if _trace_ctx is None:
        return True
    return not isinstance(_trace_ctx.trace, _EvalTrace)


def mark_split(origin: str) -> None:
    """Bind the marker with a description of where it comes from (used by ``split_spec``)."""
    if _tracing():
        _bind(origin)


def _bind(origin: str) -> None:
    # Tensor operations are recorded and computed lazily: compute what the forward recorded
    # so far first, so that its equations come before the marker in the trace.
    program.flush()
    pipe_split_p.bind(origin=origin)


def pipe_split() -> None:
    """Mark a pipeline stage boundary inside a module's ``forward``.

    Mirrors ``torch.distributed.pipelining.pipe_split``. Everything the forward computes
    before the call belongs to one stage, everything after it to the next, once the model is
    split with :func:`spx.distributed.pipelining.pipeline`. Anywhere else (eager calls,
    ``jax.jit``, ``jax.grad``, ``spx.compile``) it does nothing and costs nothing.

    Call it at the top level of ``forward`` (or of functions it calls, jitted or not), not
    inside ``jax.lax.cond``/``scan``/``while_loop`` bodies: a stage boundary inside control
    flow has no meaning, and ``pipeline()`` rejects it.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> class Two(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 2)
        ...     def forward(self, x):
        ...         x = self.a(x)
        ...         pipe_split()  # stage 0 ends here
        ...         return self.b(x)
        >>> Two()(spx.ones(3, 4)).shape  # a normal forward outside pipeline()
        spx.Size([3, 2])
    """
    if _tracing():
        frame = sys._getframe(1)
        _bind(
            f"pipe_split() at {frame.f_code.co_filename}:{frame.f_lineno} "
            f"(in {frame.f_code.co_name})"
        )


# -- split_spec --------------------------------------------------------------------------------
class SplitPoint(Enum):
    """Where a ``split_spec`` entry puts a stage boundary (mirrors torch's ``SplitPoint``).

    ``BEGINNING`` splits right before the named submodule is called, ``END`` right after.

    Example:
        >>> split_spec = {"blocks.2": SplitPoint.BEGINNING}
    """

    BEGINNING = 1
    END = 2


_MISSING = object()


def _find_submodule(module: Module, path: str) -> Module:
    if not isinstance(path, str):
        raise TypeError(f"split_spec keys must be dotted submodule names, got {path!r}")
    if path == "":
        raise ValueError(
            "split_spec key '' names the whole model; name a submodule instead, e.g. "
            f"{next((n for n, _ in module.named_modules() if n), 'layers.1')!r}"
        )
    try:
        return module.get_submodule(path)
    except AttributeError:
        pass
    names = [n for n, _ in module.named_modules() if n]
    params = {n for n, _ in module.named_parameters(remove_duplicate=False)}
    hint = f" {path!r} is a parameter; split at the module that owns it." if path in params else ""
    close = difflib.get_close_matches(path, names, n=5, cutoff=0.5) or names[:8]
    raise ValueError(
        f"split_spec: {type(module).__name__} has no submodule {path!r}.{hint} Nearby valid "
        f"names: {', '.join(repr(n) for n in close)} (see model.named_modules())"
    )


def _marked(forward: Any, path: str, point: SplitPoint) -> Any:
    origin = f"split_spec {{{path!r}: SplitPoint.{point.name}}}"

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if point is SplitPoint.BEGINNING:
            mark_split(origin)
        out = forward(*args, **kwargs)
        if point is SplitPoint.END:
            mark_split(origin)
        return out

    return wrapped


@contextlib.contextmanager
def split_points(module: Module, split_spec: Mapping[str, SplitPoint] | None) -> Iterator[None]:
    """Wrap the ``split_spec`` submodules' ``forward`` with markers; restore them on exit."""
    if split_spec is None:
        yield
        return
    if not isinstance(split_spec, Mapping):
        raise TypeError(
            f"split_spec must be a dict of submodule name -> SplitPoint, got "
            f"{type(split_spec).__name__}; e.g. {{'layers.2': SplitPoint.BEGINNING}}"
        )
    installed: list[tuple[Module, Any]] = []
    try:
        for path, point in split_spec.items():
            if not isinstance(point, SplitPoint):
                raise TypeError(
                    f"split_spec[{path!r}] = {point!r}: expected SplitPoint.BEGINNING or "
                    "SplitPoint.END"
                )
            sub = _find_submodule(module, path)
            # An instance attribute shadows the class's forward; Module.__call__ looks it up
            # on every call. Written to __dict__ directly so nothing is registered.
            installed.append((sub, sub.__dict__.get("forward", _MISSING)))
            sub.__dict__["forward"] = _marked(sub.forward, path, point)
        yield
    finally:
        for sub, old in reversed(installed):
            if old is _MISSING:
                sub.__dict__.pop("forward", None)
            else:
                sub.__dict__["forward"] = old
        _structure.bump()


# -- finding markers ---------------------------------------------------------------------------
def check_no_nested_markers(eqns: list[Any]) -> None:
    """Raise if a marker hides inside control flow (cond/scan/while/checkpoint/custom_vjp)."""
    for eqn in eqns:
        for sub in _subjaxprs(eqn.params):
            if _has_marker(sub):
                origin = _first_origin(sub)
                raise ValueError(
                    f"{origin} is inside a `{eqn.primitive.name}` (jax.lax.cond/scan/"
                    "while_loop, jax.checkpoint or a custom_vjp/custom_jvp function). A stage "
                    "boundary must be on the top-level path of forward: move the pipe_split() "
                    "call (or the split_spec entry) out of the control-flow body."
                )


def _subjaxprs(params: dict[str, Any]) -> Iterator[Jaxpr]:
    for value in params.values():
        for v in value if isinstance(value, tuple | list) else (value,):
            if isinstance(v, Jaxpr):
                yield v
            elif isinstance(getattr(v, "jaxpr", None), Jaxpr):  # ClosedJaxpr
                yield v.jaxpr


def _has_marker(jaxpr: Jaxpr) -> bool:
    return any(
        e.primitive is pipe_split_p or any(_has_marker(s) for s in _subjaxprs(e.params))
        for e in jaxpr.eqns
    )


def _first_origin(jaxpr: Jaxpr) -> str:
    for e in jaxpr.eqns:
        if e.primitive is pipe_split_p:
            return e.params.get("origin", "pipe_split()")
        for s in _subjaxprs(e.params):
            if _has_marker(s):
                return _first_origin(s)
    return "pipe_split()"
