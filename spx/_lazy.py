"""A lean ``import spx`` for the launcher: package names loaded on first use (PEP 562).

``import spx`` imports everything (jax, the Tensor, nn, optim, ...: ~1.1 s on a 2-core box).
``spx-run`` never computes, yet importing its module ``spx.distributed.run`` ran the package
``__init__`` files first and paid that second on every launch and restart. So in the launcher's
own process (:func:`launcher_process`: the ``spx-run`` script or ``python -m
spx.distributed.run``), ``spx`` and ``spx.distributed`` keep their names in a ``_namespace``
module and load it on the first lookup of a name that is neither set nor a submodule
(``spx.zeros``); the names are then copied into the package. Every other process imports them
at once, as before: the canonical import order of ``_namespace`` is what keeps spx's modules
free of import cycles (``import spx.ops`` first, without it, would meet one).

A launcher that runs ranks in its own process (``--threads``) loads the namespaces in that
order first (:func:`load_all`). No submodule may share a name with a different object of a
namespace: ``spx.compile`` is a function, so its code lives in ``spx._compile``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from typing import Any

_RUN_MODULE = "spx.distributed.run"
_LAZY: dict[str, Callable[[], Any]] = {}  # package -> loads and publishes its namespace


def launcher_process(argv: list[str] | None = None, script: str | None = None) -> bool:
    """True when this interpreter runs ``spx-run`` (the script, or ``-m spx.distributed.run``).

    Args:
        argv: the interpreter's command line (default ``sys.orig_argv``).
        script: the script being run (default ``sys.argv[0]``).

    Example:
        >>> launcher_process(["python", "-u", "-m", "spx.distributed.run", "train.py"], "-m")
        True
        >>> launcher_process(["python", "train.py", "-m", "spx.distributed.run"], "train.py")
        False
    """
    argv = list(getattr(sys, "orig_argv", []) if argv is None else argv)
    script = (sys.argv[0] if sys.argv else "") if script is None else script
    options = iter(argv[1:])
    for arg in options:  # the interpreter's own options, up to the script, -c or -m
        if arg == "-m":
            return next(options, None) == _RUN_MODULE
        if arg.startswith("-m"):
            return arg[2:] == _RUN_MODULE
        if arg in ("-W", "-X"):
            next(options, None)
        elif not arg.startswith("-") or arg.startswith("-c"):
            break
    return os.path.basename(script) == "spx-run"


def _public(module: Any) -> list[str]:
    names = getattr(module, "__all__", None)
    return sorted(names if names is not None else (k for k in vars(module) if k[0] != "_"))


def lazy_namespace(package: str, implementation: str) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for ``package``, whose names live in module ``implementation``."""

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

    _LAZY[package] = namespace
    return __getattr__, __dir__


def load_all() -> None:
    """Load every lazy namespace now, in the canonical order (before a launcher runs ranks in
    its own process). A no-op where ``import spx`` was eager."""
    for package in ("spx", "spx.distributed"):
        if package in _LAZY:
            _LAZY[package]()
