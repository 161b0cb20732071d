"""torch's pytrees for ``spx.func``: tuples, lists, dicts and namedtuples; everything else a leaf.

``torch.func`` walks arguments and outputs with ``torch.utils._pytree``, whose conventions differ
from JAX's in ways a user sees: a dict keeps its insertion order (JAX sorts the keys, so
``grad(f)(params)`` would hand back a dict in another order than ``params``), ``None`` is a leaf
(JAX drops it), and a Tensor or Module is a leaf (JAX would open a Module into its parameters).
So the transforms flatten with these rules and hand JAX only flat lists of arrays.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any


class TreeSpec:
    """The structure of a flattened value: a container type, its keys and child specs.

    Attributes:
        kind: ``"leaf"``, ``"tuple"``, ``"list"``, ``"dict"`` or ``"namedtuple"``.
        type: the container's class (to rebuild OrderedDicts and namedtuples as they came).
        keys: the dict's keys in order (or None).
        children: the child specs.
        num_leaves: how many leaves the subtree holds.
    """

    __slots__ = ("children", "keys", "kind", "num_leaves", "type")

    def __init__(
        self, kind: str, type_: type | None, keys: tuple | None, children: tuple[TreeSpec, ...]
    ) -> None:
        self.kind = kind
        self.type = type_
        self.keys = keys
        self.children = children
        self.num_leaves = 1 if kind == "leaf" else sum(c.num_leaves for c in children)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TreeSpec)
            and self.kind == other.kind
            and self.type is other.type
            and self.keys == other.keys
            and self.children == other.children
        )

    def __hash__(self) -> int:
        return hash((self.kind, self.keys, self.children))

    def __repr__(self) -> str:
        if self.kind == "leaf":
            return "*"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind == "dict":
            inner = ", ".join(
                f"{k!r}: {c!r}" for k, c in zip(self.keys, self.children, strict=True)
            )
            return f"{{{inner}}}" if self.type is dict else f"{self.type.__name__}({{{inner}}})"
        if self.kind == "list":
            return f"[{inner}]"
        name = "" if self.type is tuple else self.type.__name__
        return f"{name}({inner}{',' if len(self.children) == 1 and not name else ''})"

    def unflatten(self, leaves: list[Any]) -> Any:
        """Rebuild the structure around ``leaves`` (as many as :attr:`num_leaves`)."""
        it = iter(leaves)
        return self._build(it)

    def _build(self, it: Any) -> Any:
        if self.kind == "leaf":
            return next(it)
        values = [c._build(it) for c in self.children]
        if self.kind == "tuple":
            return tuple(values) if self.type is tuple else self.type(values)
        if self.kind == "namedtuple":
            return self.type(*values)
        if self.kind == "list":
            return values
        items = zip(self.keys, values, strict=True)
        if self.type is defaultdict or issubclass(self.type, defaultdict):
            return self.type(None, items)
        return self.type(items)


LEAF = TreeSpec("leaf", None, None, ())


def _kind(x: Any) -> str:
    if isinstance(x, tuple):
        return "namedtuple" if hasattr(type(x), "_fields") else "tuple"
    if isinstance(x, list):
        return "list"
    if isinstance(x, dict):
        return "dict"
    return "leaf"


def tree_flatten(tree: Any) -> tuple[list[Any], TreeSpec]:
    """The leaves of ``tree`` in torch's order and its structure.

    Example:
        >>> leaves, spec = tree_flatten((None, {"b": 1, "a": 2}))
        >>> leaves, spec.unflatten([3, 4, 5])
        ([None, 1, 2], (3, {'b': 4, 'a': 5}))
    """
    leaves: list[Any] = []
    return leaves, _flatten(tree, leaves)


def _flatten(x: Any, leaves: list[Any]) -> TreeSpec:
    kind = _kind(x)
    if kind == "leaf":
        leaves.append(x)
        return LEAF
    if kind == "dict":
        keys = tuple(x)
        children = tuple(_flatten(x[k], leaves) for k in keys)
        return TreeSpec(kind, type(x), keys, children)
    return TreeSpec(kind, type(x), None, tuple(_flatten(v, leaves) for v in x))


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """``tree`` with ``fn`` applied to every leaf."""
    leaves, spec = tree_flatten(tree)
    return spec.unflatten([fn(x) for x in leaves])


def broadcast_prefix(prefix: Any, spec: TreeSpec) -> list[Any] | None:
    """``prefix`` (a tree whose leaves stand for whole subtrees) spread over ``spec``'s leaves.

    torch's ``_broadcast_to_and_flatten``: ``in_dims=(0, None)`` over ``(x, {"w": w, "b": b})``
    gives ``[0, None, None]``. None where the structures do not match.

    Example:
        >>> _, spec = tree_flatten((1, {"w": 2, "b": 3}))
        >>> broadcast_prefix((0, None), spec)
        [0, None, None]
    """
    out: list[Any] = []
    return out if _broadcast(prefix, spec, out) else None


def _broadcast(prefix: Any, spec: TreeSpec, out: list[Any]) -> bool:
    kind = _kind(prefix)
    if kind == "leaf":
        out.extend([prefix] * spec.num_leaves)
        return True
    if spec.kind == "leaf" or (kind == "dict") != (spec.kind == "dict"):
        return False
    if kind == "dict":
        if set(prefix) != set(spec.keys):
            return False
        return all(
            _broadcast(prefix[k], c, out) for k, c in zip(spec.keys, spec.children, strict=True)
        )
    if len(prefix) != len(spec.children) or (kind == "list") != (spec.kind == "list"):
        return False
    return all(_broadcast(p, c, out) for p, c in zip(prefix, spec.children, strict=True))


__all__ = ["LEAF", "TreeSpec", "broadcast_prefix", "tree_flatten", "tree_map"]
