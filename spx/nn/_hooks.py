"""Module forward hooks: ``register_forward_pre_hook`` / ``register_forward_hook`` (torch's).

A module's hook tables live in its ``__dict__`` under torch's names (``_forward_hooks``,
``_forward_pre_hooks`` and the per-hook flag tables), created on the first registration, so a
module without hooks pays one dict lookup per call. Calls run exactly as torch's
``Module._call_impl``: pre-hooks may replace the positional arguments (or, ``with_kwargs``,
arguments and keyword arguments), forward hooks may replace the output, and hooks registered
with ``always_call=True`` still run when ``forward`` (or an earlier hook) raises.

Under ``spx.compile`` hooks run while the step is traced, as torch.compile traces them into its
graph: a hook's arrays are part of the compiled program, its Python side effects happen at
tracing time. Registering or removing a hook makes the next compiled call retrace.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from spx.nn import _structure
from spx.utils.hooks import RemovableHandle

# Every table, in the order aux data snapshots them (see spx.nn._pytree).
TABLES = (
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_backward_hooks",
    "_backward_pre_hooks",
)


class HookTable(OrderedDict):
    """A hook table: an OrderedDict whose every change counts as a structural change, so that
    ``spx.compile`` re-validates what it traced (``m._forward_hooks.clear()`` included)."""

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        _structure.bump()

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        _structure.bump()

    def clear(self) -> None:
        super().clear()
        _structure.bump()

    def pop(self, *args: Any) -> Any:
        out = super().pop(*args)
        _structure.bump()
        return out

    def popitem(self, last: bool = True) -> tuple:
        out = super().popitem(last)
        _structure.bump()
        return out

    def move_to_end(self, key: Any, last: bool = True) -> None:
        super().move_to_end(key, last)
        _structure.bump()


def tables(module: Any) -> dict:
    """``module.__dict__``, with the hook tables created if they were not yet."""
    d = module.__dict__
    if TABLES[0] not in d:
        for name in TABLES:
            d[name] = HookTable()
        _structure.bump()
    return d


def snapshot(modules: Any) -> list[tuple[HookTable, list]]:
    """The hook tables of ``modules`` as they are now, for :func:`restore`."""
    return [
        (m.__dict__[name], list(m.__dict__[name].items()))
        for m in modules
        if TABLES[0] in m.__dict__
        for name in TABLES
    ]


def restore(saved: list[tuple[HookTable, list]]) -> None:
    """Put back what hooks changed in the tables (``spx.compile``'s probe trace runs the hooks
    once more than the step: a hook that removes itself must still run in the real trace)."""
    for table, items in saved:
        if list(table.items()) != items:
            OrderedDict.clear(table)
            OrderedDict.update(table, items)
            _structure.bump()


def _check_callable(hook: Any, what: str) -> None:
    if not callable(hook):
        raise TypeError(
            f"{what}: hook must be callable, got {type(hook).__name__} ({hook!r:.60}); pass a "
            "function such as `def hook(module, args, output): ...`"
        )


def register(
    module: Any,
    hook: Callable[..., Any],
    *,
    pre: bool,
    prepend: bool,
    with_kwargs: bool,
    always_call: bool = False,
) -> RemovableHandle:
    """Add ``hook`` to ``module``'s forward (``pre``) or forward-pre hooks; see the methods."""
    _check_callable(hook, "register_forward_pre_hook" if pre else "register_forward_hook")
    d = tables(module)
    hooks = d["_forward_pre_hooks" if pre else "_forward_hooks"]
    flags = [d["_forward_pre_hooks_with_kwargs" if pre else "_forward_hooks_with_kwargs"]]
    if not pre:
        flags.append(d["_forward_hooks_always_called"])
    handle = RemovableHandle(hooks, extra_dict=flags)
    hooks[handle.id] = hook
    if with_kwargs:
        flags[0][handle.id] = True
    if always_call:
        flags[1][handle.id] = True
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def register_backward(
    module: Any, hook: Callable[..., Any], *, pre: bool, prepend: bool
) -> RemovableHandle:
    """Add ``hook`` to ``module``'s full backward (pre-)hooks; see the methods."""
    what = "register_full_backward_pre_hook" if pre else "register_full_backward_hook"
    _check_callable(hook, what)
    hooks = tables(module)["_backward_pre_hooks" if pre else "_backward_hooks"]
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def call(module: Any, forward: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """``forward(*args, **kwargs)`` with ``module``'s hooks around it (torch's order)."""
    d = module.__dict__
    result = None
    ran_always: set[int] = set()
    try:
        pre_kwargs = d["_forward_pre_hooks_with_kwargs"]
        for hook_id, hook in list(d["_forward_pre_hooks"].items()):
            if hook_id in pre_kwargs:
                new = hook(module, args, kwargs)
                if new is not None:
                    if not (isinstance(new, tuple) and len(new) == 2):
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of (new_args, "
                            f"new_kwargs), but got {new}."
                        )
                    args, kwargs = new
            else:
                new = hook(module, args)
                if new is not None:
                    args = new if isinstance(new, tuple) else (new,)
        backward = None
        if d["_backward_hooks"] or d["_backward_pre_hooks"]:
            from spx.nn._backward_hooks import BackwardHook

            backward = BackwardHook(
                module, list(d["_backward_hooks"].values()), list(d["_backward_pre_hooks"].values())
            )
            args = backward.setup_input(args)
        result = forward(*args, **kwargs)
        post_kwargs, always = d["_forward_hooks_with_kwargs"], d["_forward_hooks_always_called"]
        for hook_id, hook in list(d["_forward_hooks"].items()):
            if hook_id in always:
                ran_always.add(hook_id)
            if hook_id in post_kwargs:
                new = hook(module, args, kwargs, result)
            else:
                new = hook(module, args, result)
            if new is not None:
                result = new
        if backward is not None:
            result = backward.setup_output(result)
        return result
    except Exception:
        # torch runs the always_call hooks that did not run yet, then re-raises; an error
        # inside one of them is reported as a warning so the original error is the one seen.
        for hook_id, hook in list(d["_forward_hooks"].items()):
            if hook_id in d["_forward_hooks_always_called"] and hook_id not in ran_always:
                try:
                    if hook_id in d["_forward_hooks_with_kwargs"]:
                        new = hook(module, args, kwargs, result)
                    else:
                        new = hook(module, args, result)
                    if new is not None:
                        result = new
                except Exception as e:
                    warnings.warn(
                        "module forward hook with ``always_call=True`` raised an exception "
                        f"that was silenced as another error was raised in forward: {e}",
                        stacklevel=3,
                    )
        raise
