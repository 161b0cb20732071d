"""``nn.Buffer``: a tensor that a Module registers as a buffer when assigned to an attribute.

torch 2.4's alternative to ``register_buffer``::

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.mask = nn.Buffer(spx.ones(4, 4).tril(), persistent=False)

As in torch, ``Buffer(data)`` is the tensor ``data.detach()`` (keeping ``requires_grad``) marked
as a buffer, with its ``persistent`` flag; ``isinstance(t, nn.Buffer)`` tests that mark.
"""

from __future__ import annotations

from typing import Any

from spx._tensor.tensor import Tensor


class _BufferMeta(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False) is True


class Buffer(metaclass=_BufferMeta):
    """A tensor a Module registers as a buffer on assignment (mirrors ``torch.nn.Buffer``).

    Args:
        data: the value (a Tensor, ``jax.Array``, ``numpy.ndarray``); None: an empty tensor.
        persistent: whether the buffer is part of the module's ``state_dict``.

    Example:
        >>> import spx
        >>> m = spx.nn.Module()
        >>> m.steps = spx.nn.Buffer(spx.zeros(()), persistent=False)
        >>> list(m.buffers()) == [m.steps], list(m.state_dict())
        (True, [])
    """

    def __new__(cls, data: Any = None, *, persistent: bool = True) -> Any:  # type: ignore[misc]
        from spx.ops.creation import as_tensor

        if data is None:
            data = as_tensor([])
        elif not isinstance(data, Tensor):
            data = as_tensor(data)
        t = data.detach()
        if data.requires_grad:
            t.requires_grad_(True)
        t.persistent = bool(persistent)
        t._is_buffer = True
        return t
