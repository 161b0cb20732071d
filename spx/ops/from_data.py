"""Tensors from existing data: ``spx.asarray`` (torch's array-API constructor) and
``spx.frombuffer`` (a tensor from the bytes of a Python buffer).

A JAX array cannot share memory with host data or a Python buffer, so where torch would alias
(``torch.asarray(numpy_array)``, ``torch.frombuffer``) spx copies: later writes to the source
are not seen by the tensor. An spx Tensor passed to ``asarray`` is returned as the same
object when no conversion is asked, as in torch.

Example:
    >>> import spx
    >>> spx.asarray([1, 2.5]).dtype == spx.float32
    True
    >>> spx.frombuffer(bytearray(b"\\x01\\x00\\x02\\x00"), dtype=spx.int16).tolist()
    [1, 2]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spx._tensor.methods._dtypes import canonical
from spx._tensor.tensor import Tensor
from spx.ops.creation import as_tensor, tensor

__all__ = ["asarray", "frombuffer"]


def asarray(
    obj: Any,
    *,
    dtype: Any = None,
    device: Any = None,
    copy: bool | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """``obj`` as a tensor: a Tensor itself when no conversion is needed, else a new one.

    Args:
        obj: a Tensor, a numpy or jax array, a Python number or a (nested) sequence.
        dtype: the result's dtype (default: ``obj``'s, or torch's inference for Python data).
        device: the result's device.
        copy: ``True`` always copies; ``False`` refuses to convert a Tensor's dtype or device
            (torch's "can't alias" error); ``None`` copies only when needed. Host data is
            always copied (see the module docstring).
        requires_grad: record operations on the result; on a Tensor returned as itself this
            sets its ``requires_grad``, as torch's does.

    Returns:
        a Tensor. Mirrors ``torch.asarray``.
    """
    if isinstance(obj, Tensor):
        converts = (dtype is not None and canonical(dtype) != np.dtype(obj.dtype)) or (
            device is not None and obj.device != device
        )
        if copy is False and converts:
            raise ValueError(
                f"can't alias tensor with dtype {obj.dtype} into dtype {dtype} (device "
                f"{device}) without a copy; pass copy=None or copy=True"
            )
        if copy:
            out = tensor(obj, dtype=dtype, device=device)
        elif converts:
            out = as_tensor(obj, dtype=dtype, device=device)
        else:
            out = obj
        if requires_grad and not out.requires_grad:
            out.requires_grad_(True)
        return out
    return tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)


def frombuffer(
    buffer: Any,
    *,
    dtype: Any,
    count: int = -1,
    offset: int = 0,
    requires_grad: bool = False,
) -> Tensor:
    """A 1-D tensor of the bytes of ``buffer`` read as ``dtype``.

    Args:
        buffer: an object exposing the buffer protocol (``bytes``, ``bytearray``,
            ``memoryview``, ``array.array``, ...).
        dtype: the element type (required, as in torch).
        count: how many elements to read; -1 reads to the end.
        offset: bytes to skip first.
        requires_grad: record operations on the result.

    Returns:
        ``(count,)``. Mirrors ``torch.frombuffer`` (copied, see the module docstring).
    """
    np_dtype = np.dtype(dtype)
    try:
        data = np.frombuffer(buffer, dtype=np_dtype, count=count, offset=offset)
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"spx.frombuffer: can't read {count if count >= 0 else 'all'} element(s) of "
            f"{np_dtype} at byte offset {offset} from a {type(buffer).__name__}: {e}"
        ) from None
    return tensor(data.copy(), dtype=dtype, requires_grad=requires_grad)
