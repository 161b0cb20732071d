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
defined in it) names, and ``self`` of a bound method. State reached only through another
object's attribute (``trainer.model`` with ``trainer`` a plain object) is not found: pass it
as an argument.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

from spx.compile.binding import is_stateful

_EMPTY = object()


class Captured:
    """The stateful objects ``fn`` names, re-read cheaply on every call.

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(2, 1)
        >>> Captured(lambda x: model(x)).scan() == (model,)
        True
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        func = inspect.unwrap(fn)
        self._self = getattr(func, "__self__", _EMPTY)
        func = getattr(func, "__func__", func)
        code = getattr(func, "__code__", None)
        cells = getattr(func, "__closure__", None) or ()
        self._cells: tuple[Any, ...] = tuple(cells)
        self._globals: dict[str, Any] = getattr(func, "__globals__", {})
        self._names: tuple[str, ...] = tuple(code_names(code)) if code is not None else ()
        # What the last full scan found: (kind, where) per object, kind 0 a cell, 1 a global.
        self._slots: tuple[tuple[int, Any], ...] = ()
        self.objects: tuple[Any, ...] = ()

    def scan(self) -> tuple[Any, ...]:
        """Read every name ``fn`` uses; keep (and return) the stateful objects among them."""
        slots: list[tuple[int, Any]] = []
        objects: list[Any] = []
        if self._self is not _EMPTY and is_stateful(self._self):
            slots.append((2, None))
            objects.append(self._self)
        for cell in self._cells:
            value = _cell_value(cell)
            if value is not _EMPTY and is_stateful(value):
                slots.append((0, cell))
                objects.append(value)
        for name in self._names:
            value = self._globals.get(name, _EMPTY)
            if value is not _EMPTY and is_stateful(value):
                slots.append((1, name))
                objects.append(value)
        self._slots, self.objects = tuple(slots), tuple(objects)
        return self.objects

    def same(self) -> bool:
        """Whether the names the last scan found still hold the same objects (a fast check,
        on every call: a rebound global, ``model = Net()``, fails it and a new scan follows)."""
        for (kind, where), obj in zip(self._slots, self.objects, strict=True):
            if kind == 0:
                value = _cell_value(where)
            elif kind == 1:
                value = self._globals.get(where, _EMPTY)
            else:
                continue  # a bound method's self cannot change
            if value is not obj or not is_stateful(value):  # (a tensor stopped requiring grad)
                return False
        return True


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
