"""Questions about a tensor answered from its metadata, as Python bools: ``spx.is_same_size``
and ``spx.is_signed`` (torch's functional forms of the Tensor methods).

Example:
    >>> import spx
    >>> spx.is_same_size(spx.ones(2, 3), spx.zeros(2, 3)), spx.is_signed(spx.tensor([1]))
    (True, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spx.ops._args import tensor_arg

__all__ = ["is_same_size", "is_signed"]


def is_same_size(input: Any, other: Any) -> bool:
    """Whether ``input`` and ``other`` have the same shape. Mirrors ``torch.is_same_size``.

    Args:
        input: a tensor.
        other: a tensor.
    """
    return tensor_arg(input, "is_same_size").is_same_size(tensor_arg(other, "is_same_size"))


def is_signed(input: Any) -> bool:
    """Whether ``input``'s dtype is signed (signed ints, floats, complex; not bool or uint8).

    Args:
        input: a tensor. Mirrors ``torch.is_signed``.
    """
    kind = np.dtype(tensor_arg(input, "is_signed").dtype).kind
    return kind in "ifc" or np.dtype(tensor_arg(input, "is_signed").dtype).name == "bfloat16"
