"""numpy's argument names as aliases of torch's: ``x.sum(axis=0, keepdims=True)``.

torch's argument parser accepts ``axis`` for ``dim`` and ``keepdims`` for ``keepdim`` in every
tensor method and ``torch.*`` function that takes them (``torch.sum(x, axis=1)``,
``x.max(axis=0)``, ``torch.cat(xs, axis=0)``), and scripts written with numpy habits use them.
:func:`accept` gives spx's methods and functions the same aliases: a wrapper renames the keyword
before the call (one dict lookup when keywords are given, nothing otherwise). Passing both
names is an error, as in torch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

# numpy's name -> torch's name (torch/csrc/utils/python_arg_parser.cpp, numpy_compatibility).
ALIASES = {"axis": "dim", "keepdims": "keepdim"}
# Methods model code calls in every forward with a plain index (``x.size(-1)``), where the
# wrapper's extra frame would cost ~40% of the call and nobody writes ``size(axis=...)``.
_HOT = frozenset({"size"})


def _parameters(fn: Callable[..., Any]) -> tuple[str, ...]:
    code = getattr(fn, "__code__", None)
    if code is None:
        return ()
    return code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]


def with_aliases(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` accepting numpy's names for its torch-named parameters (``fn`` if it has none).

    Example:
        >>> def total(x, dim=None, keepdim=False):
        ...     return (dim, keepdim)
        >>> with_aliases(total)(1, axis=0, keepdims=True)
        (0, True)
    """
    params = _parameters(fn)
    renames = tuple((a, t) for a, t in ALIASES.items() if t in params and a not in params)
    if not renames:
        return fn

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            for alias, name in renames:
                if alias in kwargs:
                    if name in kwargs:
                        raise TypeError(
                            f"{fn.__name__}() got both {name}= and its numpy alias {alias}=; "
                            f"pass one of them"
                        )
                    kwargs[name] = kwargs.pop(alias)
        return fn(*args, **kwargs)

    wrapper.__numpy_aliases__ = renames  # type: ignore[attr-defined]
    return wrapper


def accept(namespace: dict[str, Any], names: Iterable[str]) -> None:
    """Wrap the functions ``names`` of a module's ``namespace`` (its ``globals()``) in place."""
    for name in names:
        fn = namespace.get(name)
        if callable(fn) and not isinstance(fn, type):
            namespace[name] = with_aliases(fn)


def accept_methods(cls: type) -> None:
    """Give ``cls`` aliased versions of the methods it and its bases (the mixins) define."""
    for base in cls.__mro__[:-1]:
        for name, fn in vars(base).items():
            if name in _HOT or name.startswith("__") or not callable(fn) or isinstance(fn, type):
                continue
            if getattr(cls, name) is not fn:
                continue  # overridden further down the MRO
            wrapped = with_aliases(fn)
            if wrapped is not fn:
                # Named where it now lives, so pickle finds this very object (spx.Tensor.sum).
                wrapped.__qualname__ = f"{cls.__qualname__}.{name}"
                wrapped.__module__ = cls.__module__
                setattr(cls, name, wrapped)
