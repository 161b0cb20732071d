"""Padding layers: ``ZeroPad``, ``ConstantPad``, ``ReflectionPad``, ``ReplicationPad`` and
``CircularPad`` in 1-D, 2-D and 3-D (mirroring ``torch.nn``'s).

Each is a thin module over :func:`spx.nn.functional.pad`. As in torch the padding is kept as a
``2 * nd``-tuple ordered from the **last** dim (``(left, right, top, bottom, front, back)``) and
an int pads every side by that much. The tuple's length is checked at construction (torch only
finds a wrong length at the first call). Negative entries crop, as in ``F.pad``.

See https://pytorch.org/docs/stable/nn.html#padding-layers
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spx import _validate
from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn.module import Module

_Padding = int | Sequence[int]


def _padding(cls: str, padding: Any, nd: int) -> tuple[int, ...]:
    """torch's ``_ntuple(2 * nd)(padding)``, with the length checked here."""
    n = 2 * nd
    sequence = isinstance(padding, Sequence) and not isinstance(padding, str)
    if sequence and len(padding) != n:
        raise ValueError(
            f"{cls}: padding must be an int or a sequence of {n} ints "
            f"(last dim first: {_ORDER[nd]}), got {padding!r}"
        )
    return _validate.as_int_tuple(padding, n, "padding", cls)


_ORDER = {
    1: "(left, right)",
    2: "(left, right, top, bottom)",
    3: "(left, right, top, bottom, front, back)",
}


class _PadNd(Module):
    """A padding layer: ``F.pad(input, self.padding, mode)``."""

    _nd = 0
    _mode = "constant"

    def __init__(self, padding: _Padding) -> None:
        super().__init__()
        self.padding = _padding(type(self).__name__, padding, self._nd)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: _Padding, value: float) -> None:
        super().__init__(padding)
        _validate.as_float(value, "value", type(self).__name__)
        self.value = value  # kept as given, so the repr matches torch's

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with a constant (mirrors ``torch.nn.ConstantPad1d``).

    Args:
        padding: int (both sides) or ``(left, right)``; negative crops.
        value: the fill value.

    Shapes:
        ``(C, W)`` or ``(N, C, W)`` -> ``W_out = W + left + right`` (any leading dims work).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.ConstantPad1d((1, 2), 3.5)(jnp.ones((1, 2, 4))).shape
        spx.Size([1, 2, 7])
    """

    _nd = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims with a constant (mirrors ``torch.nn.ConstantPad2d``).

    Args:
        padding: int or ``(left, right, top, bottom)``; negative crops.
        value: the fill value.

    Shapes:
        ``(C, H, W)`` or ``(N, C, H, W)`` -> ``H + top + bottom``, ``W + left + right``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.ConstantPad2d(1, -1.0)(jnp.ones((1, 2, 3, 3))).shape
        spx.Size([1, 2, 5, 5])
    """

    _nd = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims with a constant (mirrors ``torch.nn.ConstantPad3d``).

    Args:
        padding: int or ``(left, right, top, bottom, front, back)``; negative crops.
        value: the fill value.

    Shapes:
        ``(C, D, H, W)`` or ``(N, C, D, H, W)``; each padded dim grows by its two entries.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.ConstantPad3d((1, 1, 0, 0, 2, 0), 0.5)(jnp.ones((1, 1, 2, 2, 2))).shape
        spx.Size([1, 1, 4, 2, 4])
    """

    _nd = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding: _Padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pad the last dim with zeros (mirrors ``torch.nn.ZeroPad1d``).

    Args:
        padding: int (both sides) or ``(left, right)``; negative crops.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.ZeroPad1d(2)(jnp.ones((1, 4))).shape
        spx.Size([1, 8])
    """

    _nd = 1


class ZeroPad2d(_ZeroPadNd):
    """Pad the last two dims with zeros (mirrors ``torch.nn.ZeroPad2d``).

    Args:
        padding: int or ``(left, right, top, bottom)``; negative crops.

    Shapes:
        ``(C, H, W)`` or ``(N, C, H, W)`` -> ``H + top + bottom``, ``W + left + right``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.ZeroPad2d((1, 1, 2, 0))(jnp.ones((1, 1, 3, 3))).shape
        spx.Size([1, 1, 5, 5])
    """

    _nd = 2


class ZeroPad3d(_ZeroPadNd):
    """Pad the last three dims with zeros (mirrors ``torch.nn.ZeroPad3d``).

    Args:
        padding: int or ``(left, right, top, bottom, front, back)``; negative crops.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.ZeroPad3d(1)(jnp.ones((1, 1, 2, 2, 2))).shape
        spx.Size([1, 1, 4, 4, 4])
    """

    _nd = 3


class ReflectionPad1d(_PadNd):
    """Mirror the last dim at its edges, without repeating them (``torch.nn.ReflectionPad1d``).

    Args:
        padding: int or ``(left, right)``, each smaller than the input size.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.ReflectionPad1d(2)(jnp.arange(4.0)[None, None])  # [[[2, 1, 0, 1, 2, 3, 2, 1]]]
    """

    _nd = 1
    _mode = "reflect"


class ReflectionPad2d(_PadNd):
    """Mirror the last two dims at their edges (mirrors ``torch.nn.ReflectionPad2d``).

    Args:
        padding: int or ``(left, right, top, bottom)``, each smaller than its dim's size.

    Shapes:
        ``(C, H, W)`` or ``(N, C, H, W)`` -> ``H + top + bottom``, ``W + left + right``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.ReflectionPad2d(1)(jnp.ones((1, 3, 4, 4))).shape
        spx.Size([1, 3, 6, 6])
    """

    _nd = 2
    _mode = "reflect"


class ReflectionPad3d(_PadNd):
    """Mirror the last three dims at their edges (mirrors ``torch.nn.ReflectionPad3d``).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.ReflectionPad3d(1)(jnp.ones((1, 1, 3, 3, 3))).shape
        spx.Size([1, 1, 5, 5, 5])
    """

    _nd = 3
    _mode = "reflect"


class ReplicationPad1d(_PadNd):
    """Repeat the edge values of the last dim (mirrors ``torch.nn.ReplicationPad1d``).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.ReplicationPad1d((1, 2))(jnp.arange(3.0)[None, None])  # [[[0, 0, 1, 2, 2, 2]]]
    """

    _nd = 1
    _mode = "replicate"


class ReplicationPad2d(_PadNd):
    """Repeat the edge values of the last two dims (mirrors ``torch.nn.ReplicationPad2d``).

    Shapes:
        ``(C, H, W)`` or ``(N, C, H, W)`` -> ``H + top + bottom``, ``W + left + right``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.ReplicationPad2d((1, 1, 2, 0))(jnp.ones((1, 3, 4, 4))).shape
        spx.Size([1, 3, 6, 6])
    """

    _nd = 2
    _mode = "replicate"


class ReplicationPad3d(_PadNd):
    """Repeat the edge values of the last three dims (mirrors ``torch.nn.ReplicationPad3d``).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.ReplicationPad3d(1)(jnp.ones((1, 1, 2, 2, 2))).shape
        spx.Size([1, 1, 4, 4, 4])
    """

    _nd = 3
    _mode = "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        # torch checks the rank in the module (ValueError) before F.pad sees it.
        if input.ndim not in (self._nd + 1, self._nd + 2):
            raise ValueError(
                f"{type(self).__name__}: expected {self._nd + 1}D or {self._nd + 2}D input "
                f"(got {input.ndim}D input)"
            )
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    """Wrap the last dim around (mirrors ``torch.nn.CircularPad1d``).

    Args:
        padding: int or ``(left, right)``, each at most the input size.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.CircularPad1d(1)(jnp.arange(3.0)[None, None])  # [[[2, 0, 1, 2, 0]]]
    """

    _nd = 1


class CircularPad2d(_CircularPadNd):
    """Wrap the last two dims around (mirrors ``torch.nn.CircularPad2d``).

    Shapes:
        ``(C, H, W)`` or ``(N, C, H, W)`` -> ``H + top + bottom``, ``W + left + right``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.CircularPad2d(1)(jnp.ones((1, 3, 4, 4))).shape
        spx.Size([1, 3, 6, 6])
    """

    _nd = 2


class CircularPad3d(_CircularPadNd):
    """Wrap the last three dims around (mirrors ``torch.nn.CircularPad3d``).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.CircularPad3d(1)(jnp.ones((1, 1, 2, 2, 2))).shape
        spx.Size([1, 1, 4, 4, 4])
    """

    _nd = 3
