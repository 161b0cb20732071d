"""Modules as JAX pytrees: what is a leaf, what is static structure.

A Module's children are its parameters (each itself a pytree node around its data), buffers and
submodules, in registration order; everything else — names, plain attributes, ``training`` — is
aux data that compares by value, so ``jax.jit(f)(model)`` reuses its cache for structurally
equal models and never keys on object identity.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from spx._tensor.graph import STATE as _ENGINE
from spx.nn import _hooks

_TABLES = ("_parameters", "_buffers", "_modules")
# TRACED_COPY marks a module unflattened from traced leaves (jax.jit(f)(model) hands ``f`` such
# a copy); PENDING holds the buffers a foreign transform assigned on it (see spx._transforms).
TRACED_COPY = "_spx_traced_copy"
PENDING = "_spx_pending_buffers"
_RESERVED = (
    "_parameters",
    "_buffers",
    "_modules",
    "_non_persistent_buffers",
    "training",
    TRACED_COPY,
    PENDING,
)


class _Static:
    """Plain attributes of a Module as pytree aux data: equal when the values are equal."""

    __slots__ = ("items",)

    def __init__(self, items: tuple[tuple[str, Any], ...]) -> None:
        self.items = items

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Static) or len(self.items) != len(other.items):
            return False
        for (ka, va), (kb, vb) in zip(self.items, other.items, strict=True):
            if ka != kb or not _same_value(va, vb):
                return False
        return True

    def __hash__(self) -> int:
        return hash(tuple((k, type(v).__name__) for k, v in self.items))


def _same_value(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, jax.Array | np.ndarray) or hasattr(a, "_ref"):
        return False  # arrays and tensors held as plain attributes compare by identity only
    try:
        return bool(a == b)
    except Exception:
        return False


def aux_data(m: Any) -> tuple:
    d = m.__dict__
    static = tuple(
        # Hook tables are snapshots: they change in place, and a jitted function traced with
        # the old hooks must not match the module once hooks are added or removed.
        (k, tuple(v.items()) if k in _hooks.TABLES else v)
        for k, v in d.items()
        if k not in _RESERVED and k != "_non_persistent_buffers"
    )
    return (
        tuple(d["_parameters"]),
        tuple(d["_buffers"]),
        tuple(d["_modules"]),
        tuple(sorted(d["_non_persistent_buffers"])),
        d["training"],
        _Static(static),
    )


def _delivered(d: dict) -> None:
    # A traced copy flattened after a foreign transform updated its buffers is being handed
    # on (returned from the jitted function, the functional style): the update is not lost.
    pending = d.get(PENDING)
    if pending is not None:
        pending.delivered = True


def _own(d: dict) -> None:
    # The module's tensors go to JAX as the model's leaves (see Tensor's pytree flatten).
    owned = _ENGINE.owned
    for table in ("_parameters", "_buffers"):
        owned.update(id(t) for t in d[table].values() if t is not None)


def flatten(m: Any) -> tuple[list[Any], tuple]:
    d = m.__dict__
    _delivered(d)
    _own(d)
    children = [*d["_parameters"].values(), *d["_buffers"].values(), *d["_modules"].values()]
    return children, aux_data(m)


def flatten_with_keys(m: Any) -> tuple[list[tuple[Any, Any]], tuple]:
    d = m.__dict__
    _delivered(d)
    _own(d)
    keyed = [
        (jax.tree_util.GetAttrKey(n), v)
        for table in ("_parameters", "_buffers", "_modules")
        for n, v in d[table].items()
    ]
    return keyed, aux_data(m)


def unflatten(cls: type, aux: tuple, children: Any) -> Any:
    """Rebuild a module of class ``cls`` without running its ``__init__``."""
    pnames, bnames, mnames, nonpersistent, training, static = aux
    obj = object.__new__(cls)
    d = obj.__dict__
    d.update(static.items)
    if _hooks.TABLES[0] in d:
        for name in _hooks.TABLES:
            d[name] = _hooks.HookTable(d[name])
    d["training"] = training
    it = iter(children)
    d["_parameters"] = {n: next(it) for n in pnames}
    d["_buffers"] = {n: next(it) for n in bnames}
    d["_modules"] = {n: next(it) for n in mnames}
    d["_non_persistent_buffers"] = set(nonpersistent)
    if _traced(d):
        d[TRACED_COPY] = True
    return obj


def _traced(d: dict) -> bool:
    for p in d["_parameters"].values():
        if isinstance(getattr(p, "_data", None), jax.core.Tracer):
            return True
    return any(isinstance(b, jax.core.Tracer) for b in d["_buffers"].values())


def register(cls: type) -> None:
    """Register ``cls`` (a Module subclass) as a pytree node."""
    jax.tree_util.register_pytree_with_keys(
        cls,
        flatten_with_keys,
        lambda aux, children: unflatten(cls, aux, children),
        flatten_func=flatten,
    )
