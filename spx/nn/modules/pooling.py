"""2-D pooling layers: ``MaxPool2d``, ``AvgPool2d``, ``AdaptiveAvgPool2d``.

Thin modules over ``spx.nn.functional``'s pools. Like torch they keep the arguments exactly as
given (an int stays an int, so ``repr`` matches torch's) and have no parameters or buffers; the
arguments are validated here, at construction, instead of at the first call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spx import _validate
from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn.module import Module

_Size = int | tuple[int, ...]


def _check_size(cls: str, name: str, value: Any, minimum: int, allow_none: bool = False) -> Any:
    """``value`` (an int >= minimum or a 1- or 2-sequence of them) with plain Python ints.

    The form is kept (an int stays an int, a tuple a tuple) so the repr matches torch's.
    """
    sequence = isinstance(value, Sequence) and not isinstance(value, str)
    items = value if sequence else (value,)
    extra = " (or None to keep that input size)" if allow_none else ""
    if len(items) not in (1, 2):
        raise ValueError(
            f"{cls}: {name} must be an int >= {minimum}{extra} or a pair of them, got {value!r}"
        )
    hint = f"pass an int >= {minimum}{extra} or a pair of them"
    checked = [
        None
        if v is None and allow_none
        else _validate.as_int(v, name, cls, minimum=minimum, hint=hint)
        for v in items
    ]
    return type(value)(checked) if sequence else checked[0]


def _pairs(value: _Size) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else tuple(value) * (2 // len(value))


def _check_padding(cls: str, kernel_size: _Size, padding: _Size, dilation: _Size = 1) -> None:
    # torch only finds this at the first call; failing at construction names the layer.
    for k, p, d in zip(_pairs(kernel_size), _pairs(padding), _pairs(dilation), strict=True):
        if p > (d * (k - 1) + 1) // 2:
            raise ValueError(
                f"{cls}: padding={padding!r} must be at most half of the effective kernel size "
                f"(kernel_size={kernel_size!r}, dilation={dilation!r}); lower the padding"
            )


def _check_bool(cls: str, name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{cls}: {name} must be True or False, got {value!r}")


class MaxPool2d(Module):
    """2-D max pooling over ``(N, C, H, W)`` input (mirrors ``torch.nn.MaxPool2d``).

    Args:
        kernel_size: window size, int or ``(kH, kW)``.
        stride: window stride; None (the default) means ``kernel_size``.
        padding: implicit ``-inf`` padding on both sides, at most half the kernel.
        dilation: spacing between window elements.
        return_indices: not supported (spx has no ``max_unpool``); True raises
            ``NotImplementedError``.
        ceil_mode: round the output size up instead of down.

    Shapes:
        input ``(N, C, H, W)`` or ``(C, H, W)`` -> ``(N, C, H_out, W_out)`` with
        ``H_out = floor((H + 2 * pH - dH * (kH - 1) - 1) / sH + 1)`` (``ceil`` with ceil_mode).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.MaxPool2d(2)(jnp.ones((1, 3, 8, 8))).shape
        spx.Size([1, 3, 4, 4])
    """

    def __init__(
        self,
        kernel_size: _Size,
        stride: _Size | None = None,
        padding: _Size = 0,
        dilation: _Size = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        cls = type(self).__name__
        kernel_size = _check_size(cls, "kernel_size", kernel_size, 1)
        if stride is not None:
            stride = _check_size(cls, "stride", stride, 1)
        padding = _check_size(cls, "padding", padding, 0)
        dilation = _check_size(cls, "dilation", dilation, 1)
        _check_padding(cls, kernel_size, padding, dilation)
        _check_bool(cls, "ceil_mode", ceil_mode)
        if return_indices:
            raise NotImplementedError(
                f"{cls}: return_indices=True is not supported (spx has no max_unpool to consume "
                "the indices); build it with return_indices=False"
            )
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return F.max_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
        )

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class AvgPool2d(Module):
    """2-D average pooling over ``(N, C, H, W)`` input (mirrors ``torch.nn.AvgPool2d``).

    Args:
        kernel_size: window size, int or ``(kH, kW)``.
        stride: window stride; None (the default) means ``kernel_size``.
        padding: implicit zero padding on both sides, at most half the kernel.
        ceil_mode: round the output size up instead of down.
        count_include_pad: whether the zero padding counts in each window's divisor.
        divisor_override: if given, divide every window sum by this instead.

    Shapes:
        input ``(N, C, H, W)`` or ``(C, H, W)`` -> ``(N, C, H_out, W_out)`` with
        ``H_out = floor((H + 2 * pH - kH) / sH + 1)`` (``ceil`` with ceil_mode).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.AvgPool2d(3, stride=2, padding=1)(jnp.ones((1, 3, 8, 8))).shape
        spx.Size([1, 3, 4, 4])
    """

    def __init__(
        self,
        kernel_size: _Size,
        stride: _Size | None = None,
        padding: _Size = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        cls = type(self).__name__
        kernel_size = _check_size(cls, "kernel_size", kernel_size, 1)
        if stride is not None:
            stride = _check_size(cls, "stride", stride, 1)
        padding = _check_size(cls, "padding", padding, 0)
        _check_padding(cls, kernel_size, padding)
        _check_bool(cls, "ceil_mode", ceil_mode)
        _check_bool(cls, "count_include_pad", count_include_pad)
        divisor_override = _validate.as_optional_int(divisor_override, "divisor_override", cls)
        if divisor_override == 0:
            raise ValueError(f"{cls}: divisor_override must be a non-zero int or None, got 0")
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """Average-pool to a fixed output size (mirrors ``torch.nn.AdaptiveAvgPool2d``).

    Output cell ``i`` averages input rows ``floor(i * H / H_out)`` to ``ceil((i + 1) * H / H_out)``
    (likewise for columns), torch's bins, so windows may overlap when sizes do not divide.

    Args:
        output_size: ``H_out`` for a square output, or ``(H_out, W_out)``; a None entry keeps
            that input size.

    Shapes:
        input ``(N, C, H, W)`` or ``(C, H, W)`` -> ``(N, C, H_out, W_out)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.AdaptiveAvgPool2d((1, 1))(jnp.ones((2, 8, 7, 5))).shape
        spx.Size([2, 8, 1, 1])
    """

    def __init__(self, output_size: int | tuple[int | None, ...] | None) -> None:
        super().__init__()
        self.output_size = _check_size(
            type(self).__name__, "output_size", output_size, 1, allow_none=True
        )

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"
