"""torch's comparison functions (``spx.eq``, ``spx.maximum``, ``spx.allclose``, ``spx.isnan``,
``spx.sort``, ``spx.topk``, ...).

Comparisons return bool tensors; ``allclose`` and ``equal`` return Python bools (they need the
values now). ``sort``/``topk``/``kthvalue`` return ``(values, indices)`` pairs.

Example:
    >>> import spx
    >>> spx.allclose(spx.tensor([1.0, 2.0]), spx.tensor([1.0, 2.0 + 1e-7]))
    True
    >>> spx.topk(spx.tensor([3.0, 1.0, 2.0]), 2).indices.tolist()
    [0, 2]
"""

from __future__ import annotations

from typing import Any

from spx._tensor import numpy_names
from spx._tensor.dispatch import apply
from spx._tensor.methods import math as _m
from spx._tensor.tensor import Tensor
from spx.ops._args import first_operand, operand, tensor_arg

_BINARY_NAMES = (
    "eq", "ne", "not_equal", "lt", "less", "le", "less_equal", "gt", "greater", "ge",
    "greater_equal", "maximum", "minimum",
)  # fmt: skip
_UNARY_NAMES = ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal")

__all__ = [
    *_BINARY_NAMES, *_UNARY_NAMES, "allclose", "argsort", "equal", "isclose", "isin",
    "kthvalue", "msort", "sort", "topk",
]  # fmt: skip


def _unary(name: str) -> Any:
    method = getattr(Tensor, name)

    def fn(input: Any) -> Tensor:
        return method(tensor_arg(input, name))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` of ``input``, a bool tensor (mirrors ``torch.{name}``)."
    return fn


def _binary(name: str) -> Any:
    method = getattr(Tensor, name)

    def fn(input: Any, other: Any) -> Tensor:
        return method(first_operand(input, other, name), operand(other, name))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` of ``input`` and ``other`` (mirrors ``torch.{name}``)."
    return fn


for _name in _UNARY_NAMES:
    globals()[_name] = _unary(_name)
for _name in _BINARY_NAMES:
    globals()[_name] = _binary(_name)


def isclose(input: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan=False):
    """``|input - other| <= atol + rtol * |other|`` elementwise (mirrors ``torch.isclose``)."""
    x = tensor_arg(input, "isclose")
    return x.isclose(operand(other, "isclose"), rtol, atol, equal_nan)


def allclose(input: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan=False):
    """Whether ``isclose`` holds everywhere, as a Python bool (mirrors ``torch.allclose``)."""
    x = tensor_arg(input, "allclose")
    return x.allclose(operand(other, "allclose"), rtol, atol, equal_nan)


def equal(input: Any, other: Any) -> bool:
    """Whether the two have the same shape and values, as a Python bool."""
    return tensor_arg(input, "equal").equal(tensor_arg(other, "equal", "other"))


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False, invert=False):
    """Whether each of ``elements`` is in ``test_elements`` (mirrors ``torch.isin``)."""
    x = tensor_arg(elements, "isin", "elements")
    return apply(_m._isin, (bool(invert),), (x, operand(test_elements, "isin", "test_elements")))


def sort(input: Any, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
    """``(values, indices)`` sorted along ``dim`` (ties keep their order; mirrors torch)."""
    return tensor_arg(input, "sort").sort(dim, descending, stable)


def argsort(input: Any, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The indices that sort ``input`` along ``dim`` (mirrors ``torch.argsort``)."""
    return tensor_arg(input, "argsort").argsort(dim, descending, stable)


def msort(input: Any) -> Tensor:
    """``input`` sorted along dim 0."""
    return tensor_arg(input, "msort").msort()


def topk(input: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices.

    Example:
        >>> import spx
        >>> spx.topk(spx.tensor([[1.0, 5.0, 3.0]]), 2, dim=1).values.tolist()
        [[5.0, 3.0]]
    """
    return tensor_arg(input, "topk").topk(k, dim, largest, sorted)


def kthvalue(input: Any, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """The ``k``-th smallest element along ``dim`` and its index (mirrors torch)."""
    return tensor_arg(input, "kthvalue").kthvalue(k, dim, keepdim)


# numpy's axis=/keepdims= as torch accepts them (torch.sum(x, axis=0)).
numpy_names.accept(globals(), __all__)
