"""``Variable``: torch's deprecated pre-0.4 wrapper, still in old scripts.

Since torch 0.4 every tensor is a Variable: ``isinstance(t, Variable)`` is True for any
tensor, and ``Variable(t, requires_grad=...)`` returns a new leaf sharing ``t``'s storage
(writes through one are seen by the other), without ``t``'s history.

Example:
    >>> import spx
    >>> from spx.autograd import Variable
    >>> x = spx.ones(2)
    >>> v = Variable(x, requires_grad=True)
    >>> v.requires_grad, v.is_leaf, isinstance(x, Variable)
    (True, True, True)
"""

from __future__ import annotations

from typing import Any

from spx._tensor.tensor import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False)``: ``data.detach()`` with ``requires_grad`` set
    (mirrors ``torch.autograd.Variable``)."""

    def __new__(cls, data: Any, requires_grad: bool = False, volatile: bool = False) -> Tensor:
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Variable data has to be a tensor, but got {type(data).__name__} (make one "
                "with spx.tensor(data))"
            )
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out
