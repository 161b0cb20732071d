"""Argument normalization shared by Tensor methods and spx functions (torch's rules)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any


class Size(tuple):
    """A shape (mirrors ``torch.Size``): a tuple of ints that prints as ``spx.Size([2, 3])``.

    Example:
        >>> Size((2, 3))
        spx.Size([2, 3])
        >>> Size((2, 3)).numel()
        6
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"spx.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key: Any) -> Any:
        out = tuple.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out


def dim(d: Any, ndim: int) -> int:
    """A dimension index in ``[0, ndim)`` from one in ``[-ndim, ndim)`` (0-d: -1 and 0 ok)."""
    try:
        d = operator.index(d)
    except TypeError:
        raise TypeError(f"dim must be an int, got {type(d).__name__}: {d!r}") from None
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})"
        )
    return d % n if ndim else 0


def dims(ds: Any, ndim: int) -> tuple[int, ...]:
    """Several dimensions (an int or a sequence), normalized, without duplicates."""
    out = tuple(dim(d, ndim) for d in ds) if isinstance(ds, Sequence) else (dim(ds, ndim),)
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {ds!r} appears multiple times in the list of dims")
    return out


def shape_args(args: tuple, what: str) -> tuple[int, ...]:
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` or ``f(Size)`` -> ``(2, 3)`` (ints checked)."""
    if len(args) == 1 and not isinstance(args[0], int) and isinstance(args[0], Sequence):
        args = tuple(args[0])
    try:
        return tuple(operator.index(a) for a in args)
    except TypeError:
        raise TypeError(
            f"{what}(): sizes must be ints, got {args!r}; e.g. {what}(2, 3) or {what}((2, 3))"
        ) from None


def infer_shape(shape: tuple[int, ...], numel: int, what: str) -> tuple[int, ...]:
    """Resolve one ``-1`` in ``shape`` for ``numel`` elements (torch's view/reshape rule)."""
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"invalid shape dimension {min(shape)}")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if unknown:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape
