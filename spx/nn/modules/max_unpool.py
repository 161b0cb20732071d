"""Max unpooling: ``MaxUnpool1d``, ``MaxUnpool2d``, ``MaxUnpool3d`` (mirroring ``torch.nn``).

The partial inverse of a max pool built with ``return_indices=True``: every pooled value goes
back to the position its index names, the rest of the output is zero. As torch, the modules
store their arguments as tuples (``MaxUnpool2d(2)`` has ``kernel_size=(2, 2)``) and have no
parameters or buffers; the arguments are validated at construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spx import _validate
from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn.module import Module

_Size = int | tuple[int, ...]


class _MaxUnpoolNd(Module):
    """Shared constructor, forward and repr; subclasses set ``_nd`` and ``_fn``."""

    _nd = 2
    _fn: Any = None

    def __init__(self, kernel_size: _Size, stride: _Size | None = None, padding: _Size = 0) -> None:
        super().__init__()
        cls, nd = type(self).__name__, self._nd
        self.kernel_size = _validate.as_int_tuple(kernel_size, nd, "kernel_size", cls, minimum=1)
        self.stride = (
            self.kernel_size
            if stride is None
            else _validate.as_int_tuple(stride, nd, "stride", cls, minimum=1)
        )
        self.padding = _validate.as_int_tuple(padding, nd, "padding", cls, minimum=0)

    def forward(
        self, input: Tensor, indices: Tensor, output_size: Sequence[int] | None = None
    ) -> Tensor:
        return type(self)._fn(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Partial inverse of :class:`~spx.nn.MaxPool1d` (mirrors ``torch.nn.MaxUnpool1d``).

    Args:
        kernel_size: the pool's window, int or 1-tuple.
        stride: the pool's stride; None (the default) means ``kernel_size``.
        padding: the pool's padding.

    Shapes:
        input and indices ``(N, C, L_in)`` or ``(C, L_in)`` -> ``(N, C, L_out)`` with
        ``L_out = (L_in - 1) * stride - 2 * padding + kernel_size``, or ``output_size`` given
        to ``forward`` (the pool's input length, when the stride did not divide it).

    Example:
        >>> import spx
        >>> from spx import nn
        >>> out, idx = nn.MaxPool1d(2, return_indices=True)(spx.tensor([[[1.0, 3.0, 2.0, 0.0]]]))
        >>> nn.MaxUnpool1d(2)(out, idx)  # [[[0., 3., 2., 0.]]]
    """

    _nd = 1
    _fn = F.max_unpool1d


class MaxUnpool2d(_MaxUnpoolNd):
    """Partial inverse of :class:`~spx.nn.MaxPool2d` (mirrors ``torch.nn.MaxUnpool2d``).

    Args:
        kernel_size: the pool's window, int or ``(kH, kW)``.
        stride: the pool's stride; None (the default) means ``kernel_size``.
        padding: the pool's padding.

    Shapes:
        input and indices ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)`` ->
        ``(N, C, H_out, W_out)`` with ``H_out = (H_in - 1) * sH - 2 * pH + kH`` (likewise
        ``W_out``), or ``output_size`` given to ``forward``.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
        >>> unpool(*pool(spx.randn(1, 3, 5, 5)), output_size=(5, 5)).shape
        spx.Size([1, 3, 5, 5])
    """

    _nd = 2
    _fn = F.max_unpool2d


class MaxUnpool3d(_MaxUnpoolNd):
    """Partial inverse of :class:`~spx.nn.MaxPool3d` (mirrors ``torch.nn.MaxUnpool3d``).

    Args:
        kernel_size: the pool's window, int or ``(kD, kH, kW)``.
        stride: the pool's stride; None (the default) means ``kernel_size``.
        padding: the pool's padding.

    Shapes:
        input and indices ``(N, C, D_in, H_in, W_in)`` or unbatched ->
        ``(N, C, D_out, H_out, W_out)``, each ``(in - 1) * stride - 2 * padding + kernel``.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> out, idx = nn.MaxPool3d(2, return_indices=True)(spx.randn(1, 2, 4, 4, 4))
        >>> nn.MaxUnpool3d(2)(out, idx).shape
        spx.Size([1, 2, 4, 4, 4])
    """

    _nd = 3
    _fn = F.max_unpool3d
