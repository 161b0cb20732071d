"""A package namespace filled on first use (PEP 562), so that light submodules import fast.

``import spx`` used to import everything (jax, the Tensor, nn, optim, ...: ~1.1 s on a 2-core
box), and so did every program that only needed a light corner of the package: ``spx-run``
imports ``spx.distributed.run``, whose package ``__init__`` files ran first. The launcher never
computes anything, yet paid the second on every launch and restart.

A package using this keeps its public names in a ``_namespace`` module and loads it on the first
lookup of a name that is neither in its ``__init__`` nor a submodule (``spx.zeros``, ``from spx
import *``). The names are then copied into the package, so later lookups are plain module
attribute reads with no extra cost. A submodule (``import spx.nn``, ``from spx import nn``)
imports alone, as it would in any package; so no submodule may share a name with a different
object of the namespace (``spx.compile`` is a function: its code lives in ``spx._compile``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from typing import Any


def _public(module: Any) -> list[str]:
    return sorted(k for k in vars(module) if not k.startswith("_"))


def lazy_namespace(package: str, implementation: str) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for ``package``, whose names live in module ``implementation``.

    Example:
        >>> import spx
        >>> spx.zeros(2).shape  # the first lookup loads spx._namespace
        spx.Size([2])
    """

    def namespace() -> Any:
        # While `implementation` is itself importing, import_module returns the module as far
        # as it got: a lookup from inside that import sees what an eager __init__ would have set.
        module = importlib.import_module(implementation)
        target = vars(sys.modules[package])
        if getattr(module, "_complete", False) and not target.get("_namespace_published"):
            # The namespace's value wins over a same-named submodule an import set before.
            target.update({name: getattr(module, name) for name in _public(module)})
            target["_namespace_published"] = True
        return module

    def __getattr__(name: str) -> Any:
        if name.startswith("__") and name != "__all__":
            # Dunder probes (copy, pickle, doctest, inspect) must not load the whole package.
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if importlib.util.find_spec(f"{package}.{name}") is not None:
            # `from spx import nn` asks for the attribute first: a submodule imports alone.
            return importlib.import_module(f"{package}.{name}")
        module = namespace()
        if name == "__all__":
            return _public(module)
        own = vars(sys.modules[package])
        if name in own:  # a submodule that loading it imported
            return own[name]
        try:
            return getattr(module, name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(_public(namespace())))

    return __getattr__, __dir__
