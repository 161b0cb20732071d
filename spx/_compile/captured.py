"""State a compiled step reaches by name instead of through its arguments.

A torch script compiles its step as a closure over the model and the optimizer::

    model = Net()
    opt = spx.optim.SGD(model.parameters(), lr=0.1)

    @spx.compile
    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

``model`` and ``opt`` are globals (or closure variables) there, not arguments. Their state
must be bound to the trace like an argument's, or the program would read the parameters as
constants and the optimizer would write tracers into them. :class:`Captured` finds the
Modules, Optimizers, Parameters and leaf tensors that require grad which the function names
directly: its closure cells, the globals its code (and the code of functions and lambdas
defined in it) names, ``self`` of a bound method, a ``functools.partial``'s arguments, the
attributes and dict entries the code names on the plain objects among those (``self.model``,
``trainer.opt``, ``Config.model``, ``nets["actor"]``), and the same in the plain functions of
the user's own that it calls. State reached any other way (an entry of a list,
``getattr(obj, name)``) is not found: :mod:`spx._compile.unbound` then raises with the fix
instead of letting the program keep it as a constant.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import Any

from spx._compile.binding import is_stateful

_EMPTY = object()


class Captured:
    """The stateful objects ``fn`` names, re-read cheaply on every call.

    Besides Modules, Optimizers, Parameters and trainable leaf tensors it keeps the LR
    schedulers ``fn`` names: a compiled step runs their ``step()`` after each call
    (:func:`spx._transforms.defer`), so a rebound ``sched`` must make a new plan too.

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(2, 1)
        >>> Captured(lambda x: model(x)).scan() == (model,)
        True
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        self._fn = fn
        # What the last full scan found: per object (kind, where, key); kind 0 a closure cell,
        # 1 the entry ``key`` of a dict ``where`` (globals, an object's or a class's
        # ``__dict__``, a dict the step indexes), 2 fixed (a bound self, a partial's argument).
        self._slots: tuple[tuple[int, Any, Any], ...] = ()
        self.objects: tuple[Any, ...] = ()
        # The plain objects the scan looked inside (``trainer`` of ``trainer.model``), with the
        # slot each was read from: replacing one (``t.state = fold2``) must make a new scan,
        # though the old one still holds its old model.
        self._guards: tuple[tuple[tuple[int, Any, Any], Any], ...] = ()

    def scan(self) -> tuple[Any, ...]:
        """Read every name ``fn`` uses, following the plain functions it calls (helpers of the
        user's own: ``def target_value(x): return target(x)``) and the attributes and dict
        entries it names on plain objects (``self.model``, ``trainer.opt``, ``nets["actor"]``,
        through methods and properties of those objects too); keep (and return) the stateful
        objects and LR schedulers among them."""
        slots: list[tuple[int, Any, Any]] = []
        objects: list[Any] = []
        guards: list[tuple[tuple[int, Any, Any], Any]] = []
        seen: set[tuple[int, int]] = set()
        opened: set[tuple[int, frozenset]] = set()

        def keep(
            value: Any, slot: tuple[int, Any, Any], depth: int, names: frozenset, owner: Any = None
        ) -> None:
            if _captures(value):
                if all(value is not o for o in objects):
                    slots.append(slot)
                    objects.append(value)
            elif depth < _MAX_DEPTH:
                if _user_function(value):
                    walk(value, depth + 1, owner)
                elif isinstance(value, property):
                    if value.fget is not None and owner is not None:
                        walk(value.fget, depth + 1, owner)
                elif (id(value), names) not in opened:
                    opened.add((id(value), names))
                    dicts = _fields(value)
                    if dicts and slot[0] != 2:
                        guards.append((slot, value))
                    # An attribute (or key) the code names, found in the object's own dict or
                    # else its classes': the slot re-reads that dict, so a rebound
                    # ``self.model`` is followed as a rebound global is. A method or property
                    # found in a class is followed with this object as its ``self``.
                    is_object = not isinstance(value, dict | type)
                    for name in sorted(names):  # (a stable order: one plan per process run)
                        for k, fields in enumerate(dicts):
                            if name in fields:
                                method_of = value if is_object and k > 0 else None
                                keep(fields[name], (1, fields, name), depth + 1, names, method_of)
                                break

        def walk(fn: Any, depth: int, owner: Any = None) -> None:
            fn = inspect.unwrap(fn)
            if isinstance(fn, functools.partial):
                names = _names(fn.func)
                for value in (*fn.args, *fn.keywords.values()):
                    keep(value, (2, None, None), depth, names)
                walk(fn.func, depth)
                return
            bound = getattr(fn, "__self__", _EMPTY)
            if owner is not None:
                bound = owner
            fn = getattr(fn, "__func__", fn)
            code = getattr(fn, "__code__", None)
            if code is None or (id(code), id(bound)) in seen:
                return
            seen.add((id(code), id(bound)))
            names = _names(fn)
            if bound is not _EMPTY and not isinstance(bound, types.ModuleType):
                keep(bound, (2, None, None), depth, names)
            for cell in getattr(fn, "__closure__", None) or ():
                value = _cell_value(cell)
                if value is not _EMPTY:
                    keep(value, (0, cell, None), depth, names)
            found = getattr(fn, "__globals__", {})
            for name in code_names(code):
                value = found.get(name, _EMPTY)
                if value is not _EMPTY:
                    keep(value, (1, found, name), depth, names)

        walk(self._fn, 0)
        self._slots, self.objects, self._guards = tuple(slots), tuple(objects), tuple(guards)
        return self.objects

    def same(self) -> bool:
        """Whether the names the last scan found still hold the same objects (a fast check,
        on every call: a rebound global, ``model = Net()``, or a replaced object the step reads
        a model through, ``trainer.state = fold2``, fails it and a new scan follows)."""
        for (kind, where, key), obj in zip(self._slots, self.objects, strict=True):
            if kind == 0:
                value = _cell_value(where)
            elif kind == 1:
                value = where.get(key, _EMPTY)
            else:
                continue  # a bound self or a partial's argument cannot change
            if value is not obj or not _captures(value):  # (a tensor stopped requiring grad)
                return False
        for (kind, where, key), obj in self._guards:
            value = _cell_value(where) if kind == 0 else where.get(key, _EMPTY)
            if value is not obj:
                return False
        return True


# How many hops the scan follows: a helper function, an attribute, a method or property of the
# object it was found on (step -> self.value() -> self.net -> self._net is four).
_MAX_DEPTH = 6
# Libraries whose functions hold no user state: not followed.
_LIBRARIES = frozenset({"spx", "jax", "jaxlib", "numpy", "optax", "torch", "functools"})


def _captures(value: Any) -> bool:
    return is_stateful(value) or _is_scheduler(value)


def _is_scheduler(value: Any) -> bool:
    # Duck-typed (spx.optim imports spx.compile): an LR scheduler has an optimizer and
    # get_last_lr, as torch's LRScheduler and ReduceLROnPlateau do.
    return hasattr(type(value), "get_last_lr") and hasattr(value, "optimizer")


def _user_function(value: Any) -> bool:
    """A plain function (or partial) of the user's code, worth following for state it names."""
    if isinstance(value, functools.partial):
        return True
    if not isinstance(value, types.FunctionType):
        return False
    module = getattr(value, "__module__", None) or ""
    return module.partition(".")[0] not in _LIBRARIES


def _names(fn: Any) -> frozenset:
    """The names ``fn``'s code could read from an object or a dict: its attribute and global
    names and its string constants (``nets["actor"]``)."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return frozenset()
    names = set(code_names(code))
    stack = [code]
    while stack:
        c = stack.pop()
        for k in c.co_consts:
            if isinstance(k, str):
                names.add(k)
            elif isinstance(k, types.CodeType):
                stack.append(k)
    return frozenset(names)


def _fields(value: Any) -> list[Any]:
    """The dicts a plain object's names are read from: a dict itself; an object of a user's
    class, its ``__dict__`` and its classes' (a library's objects and Modules are not opened)."""
    if type(value) is dict:
        return [value]
    if isinstance(value, type):
        classes = value.__mro__
    else:
        own = getattr(value, "__dict__", None)
        if not isinstance(own, dict):
            return []
        classes = type(value).__mro__
        if _library(classes[0]):
            return []
        return [own, *(vars(c) for c in classes if not _library(c))]
    return [vars(c) for c in classes if not _library(c)]


def _library(cls: type) -> bool:
    module = getattr(cls, "__module__", None) or "builtins"
    return module == "builtins" or module.partition(".")[0] in _LIBRARIES


def _cell_value(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # a closure variable not assigned yet
        return _EMPTY


def code_names(code: types.CodeType) -> list[str]:
    """The global names ``code`` and the functions and lambdas defined in it use, once each."""
    names: dict[str, None] = {}
    stack = [code]
    while stack:
        c = stack.pop()
        names.update(dict.fromkeys(c.co_names))
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return list(names)
