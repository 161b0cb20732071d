"""Pooling layers in 1-D, 2-D and 3-D: max, average, adaptive average/max and power-average.

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


_COUNT = {1: "a 1-tuple", 2: "a pair", 3: "a triple"}


def _check_size(
    cls: str, name: str, value: Any, minimum: int, allow_none: bool = False, nd: int = 2
) -> Any:
    """``value`` (an int >= minimum or a 1- or nd-sequence of them) with plain Python ints.

    The form is kept (an int stays an int, a tuple a tuple) so the repr matches torch's.
    """
    sequence = isinstance(value, Sequence) and not isinstance(value, str)
    items = value if sequence else (value,)
    extra = " (or None to keep that input size)" if allow_none else ""
    if len(items) not in (1, nd):
        raise ValueError(
            f"{cls}: {name} must be an int >= {minimum}{extra} or {_COUNT[nd]} of them, "
            f"got {value!r}"
        )
    hint = f"pass an int >= {minimum}{extra} or {_COUNT[nd]} of them"
    checked = [
        None
        if v is None and allow_none
        else _validate.as_int(v, name, cls, minimum=minimum, hint=hint)
        for v in items
    ]
    return type(value)(checked) if sequence else checked[0]


def _tuple(value: _Size, nd: int) -> tuple[int, ...]:
    return (value,) * nd if isinstance(value, int) else tuple(value) * (nd // len(value))


def _check_padding(
    cls: str, kernel_size: _Size, padding: _Size, dilation: _Size = 1, nd: int = 2
) -> None:
    # torch only finds this at the first call; failing at construction names the layer.
    for k, p, d in zip(
        _tuple(kernel_size, nd), _tuple(padding, nd), _tuple(dilation, nd), strict=True
    ):
        if p > (d * (k - 1) + 1) // 2:
            raise ValueError(
                f"{cls}: padding={padding!r} must be at most half of the effective kernel size "
                f"(kernel_size={kernel_size!r}, dilation={dilation!r}); lower the padding"
            )


def _check_bool(cls: str, name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{cls}: {name} must be True or False, got {value!r}")


class _MaxPoolNd(Module):
    """Max pooling over the last ``_nd`` dims; subclasses set ``_nd`` and ``_fn``."""

    _nd = 2
    _fn: Any = None

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
        cls, nd = type(self).__name__, self._nd
        kernel_size = _check_size(cls, "kernel_size", kernel_size, 1, nd=nd)
        if stride is not None:
            stride = _check_size(cls, "stride", stride, 1, nd=nd)
        padding = _check_size(cls, "padding", padding, 0, nd=nd)
        dilation = _check_size(cls, "dilation", dilation, 1, nd=nd)
        _check_padding(cls, kernel_size, padding, dilation, nd=nd)
        _check_bool(cls, "ceil_mode", ceil_mode)
        _check_bool(cls, "return_indices", return_indices)
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return type(self)._fn(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling over ``(N, C, L)`` input (mirrors ``torch.nn.MaxPool1d``).

    Args:
        kernel_size: window size, int or 1-tuple.
        stride: window stride; None (the default) means ``kernel_size``.
        padding: implicit ``-inf`` padding on both sides, at most half the kernel.
        dilation: spacing between window elements.
        return_indices: also return each maximum's position (for :class:`MaxUnpool1d`).
        ceil_mode: round the output size up instead of down.

    Shapes:
        input ``(N, C, L)`` or ``(C, L)`` -> ``(N, C, L_out)`` with
        ``L_out = floor((L + 2 * p - d * (k - 1) - 1) / s + 1)`` (``ceil`` with ceil_mode).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.MaxPool1d(3, stride=2)(jnp.ones((1, 4, 9))).shape
        spx.Size([1, 4, 4])
    """

    _nd = 1
    _fn = F.max_pool1d


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling over ``(N, C, H, W)`` input (mirrors ``torch.nn.MaxPool2d``).

    Args:
        kernel_size: window size, int or ``(kH, kW)``.
        stride: window stride; None (the default) means ``kernel_size``.
        padding: implicit ``-inf`` padding on both sides, at most half the kernel.
        dilation: spacing between window elements.
        return_indices: also return each maximum's flat position ``h * W + w`` in its
            ``(n, c)`` plane (int32), for :class:`MaxUnpool2d`.
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

    _nd = 2
    _fn = F.max_pool2d


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling over ``(N, C, D, H, W)`` input (mirrors ``torch.nn.MaxPool3d``).

    Args: as :class:`MaxPool2d`, with ints or triples ``(kD, kH, kW)``.

    Shapes:
        input ``(N, C, D, H, W)`` or ``(C, D, H, W)`` -> ``(N, C, D_out, H_out, W_out)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.MaxPool3d(2)(jnp.ones((1, 2, 4, 4, 4))).shape
        spx.Size([1, 2, 2, 2, 2])
    """

    _nd = 3
    _fn = F.max_pool3d


class _AvgPoolNd(Module):
    """Average pooling over the last ``_nd`` dims; subclasses set ``_nd`` and ``_fn``."""

    _nd = 2
    _fn: Any = None

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
        cls, nd = type(self).__name__, self._nd
        kernel_size = _check_size(cls, "kernel_size", kernel_size, 1, nd=nd)
        if stride is not None:
            stride = _check_size(cls, "stride", stride, 1, nd=nd)
        padding = _check_size(cls, "padding", padding, 0, nd=nd)
        _check_padding(cls, kernel_size, padding, nd=nd)
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
        return type(self)._fn(
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


class AvgPool1d(_AvgPoolNd):
    """1-D average pooling over ``(N, C, L)`` input (mirrors ``torch.nn.AvgPool1d``).

    As in torch, the sizes are stored as 1-tuples and there is no ``divisor_override``.

    Args:
        kernel_size: window size, int or 1-tuple.
        stride: window stride; None (the default) means ``kernel_size``.
        padding: implicit zero padding on both sides, at most half the kernel.
        ceil_mode: round the output size up instead of down.
        count_include_pad: whether the zero padding counts in each window's divisor.

    Shapes:
        input ``(N, C, L)`` or ``(C, L)`` -> ``(N, C, L_out)``,
        ``L_out = floor((L + 2 * p - k) / s + 1)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.AvgPool1d(2)(jnp.arange(6.0).reshape(1, 1, 6))  # [[[0.5, 2.5, 4.5]]]
    """

    _nd = 1

    def __init__(
        self,
        kernel_size: _Size,
        stride: _Size | None = None,
        padding: _Size = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        # torch's AvgPool1d keeps _single(...) of each size (its repr shows 1-tuples).
        self.kernel_size = _tuple(self.kernel_size, 1)
        self.stride = _tuple(self.stride, 1)
        self.padding = _tuple(self.padding, 1)

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad,
        )  # fmt: skip


class AvgPool2d(_AvgPoolNd):
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

    _nd = 2
    _fn = F.avg_pool2d


class AvgPool3d(_AvgPoolNd):
    """3-D average pooling over ``(N, C, D, H, W)`` input (mirrors ``torch.nn.AvgPool3d``).

    Args: as :class:`AvgPool2d`, with ints or triples ``(kD, kH, kW)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.AvgPool3d(2)(jnp.ones((1, 2, 4, 4, 4))).shape
        spx.Size([1, 2, 2, 2, 2])
    """

    _nd = 3
    _fn = F.avg_pool3d


class _AdaptivePoolNd(Module):
    """Pool to a fixed output size; subclasses set ``_nd`` and ``_fn``."""

    _nd = 2
    _fn: Any = None

    def __init__(self, output_size: int | tuple[int | None, ...] | None) -> None:
        super().__init__()
        self.output_size = _check_size(
            type(self).__name__, "output_size", output_size, 1, allow_none=True, nd=self._nd
        )

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    def __init__(
        self, output_size: int | tuple[int | None, ...] | None, return_indices: bool = False
    ) -> None:
        super().__init__(output_size)
        _check_bool(type(self).__name__, "return_indices", return_indices)
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return type(self)._fn(input, self.output_size, self.return_indices)


class AdaptiveAvgPool1d(_AdaptivePoolNd):
    """Average-pool to a fixed length (mirrors ``torch.nn.AdaptiveAvgPool1d``).

    Output cell ``i`` averages inputs ``floor(i * L / L_out)`` to ``ceil((i + 1) * L / L_out)``.

    Args:
        output_size: ``L_out``.

    Shapes:
        input ``(N, C, L)`` or ``(C, L)`` -> ``(N, C, L_out)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.AdaptiveAvgPool1d(4)(jnp.ones((2, 3, 10))).shape
        spx.Size([2, 3, 4])
    """

    _nd = 1
    _fn = F.adaptive_avg_pool1d


class AdaptiveAvgPool2d(_AdaptivePoolNd):
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

    _nd = 2
    _fn = F.adaptive_avg_pool2d


class AdaptiveAvgPool3d(_AdaptivePoolNd):
    """Average-pool to a fixed ``(D_out, H_out, W_out)`` (mirrors ``nn.AdaptiveAvgPool3d``).

    Args:
        output_size: an int for a cube, or a triple; a None entry keeps that input size.

    Shapes:
        input ``(N, C, D, H, W)`` or ``(C, D, H, W)`` -> ``(N, C, D_out, H_out, W_out)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.AdaptiveAvgPool3d(1)(jnp.ones((2, 3, 4, 5, 6))).shape
        spx.Size([2, 3, 1, 1, 1])
    """

    _nd = 3
    _fn = F.adaptive_avg_pool3d


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max-pool to a fixed length (mirrors ``torch.nn.AdaptiveMaxPool1d``).

    Args:
        output_size: ``L_out``.
        return_indices: also return each maximum's flat position in its plane (int32).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.AdaptiveMaxPool1d(4)(jnp.ones((2, 3, 10))).shape
        spx.Size([2, 3, 4])
    """

    _nd = 1
    _fn = F.adaptive_max_pool1d


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max-pool to a fixed ``(H_out, W_out)`` (mirrors ``torch.nn.AdaptiveMaxPool2d``).

    Args:
        output_size: int or ``(H_out, W_out)``; a None entry keeps that input size.
        return_indices: also return each maximum's flat position in its plane (int32).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.AdaptiveMaxPool2d((2, 4))(jnp.ones((2, 3, 7, 9))).shape
        spx.Size([2, 3, 2, 4])
    """

    _nd = 2
    _fn = F.adaptive_max_pool2d


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max-pool to a fixed ``(D_out, H_out, W_out)`` (mirrors ``torch.nn.AdaptiveMaxPool3d``).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.AdaptiveMaxPool3d(2)(jnp.ones((1, 2, 4, 5, 6))).shape
        spx.Size([1, 2, 2, 2, 2])
    """

    _nd = 3
    _fn = F.adaptive_max_pool3d


class _LPPoolNd(Module):
    """Power-average pooling; subclasses set ``_nd`` and ``_fn``."""

    _nd = 2
    _fn: Any = None

    def __init__(
        self,
        norm_type: float,
        kernel_size: _Size,
        stride: _Size | None = None,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        cls, nd = type(self).__name__, self._nd
        _validate.as_float(norm_type, "norm_type", cls)
        if norm_type == 0:
            raise ValueError(f"{cls}: norm_type must be non-zero (the output is a 1/p power)")
        kernel_size = _check_size(cls, "kernel_size", kernel_size, 1, nd=nd)
        if stride is not None:
            stride = _check_size(cls, "stride", stride, 1, nd=nd)
        _check_bool(cls, "ceil_mode", ceil_mode)
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride  # torch keeps None here
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    """Power-average pooling ``(sum x^p)^(1/p)`` over windows (mirrors ``torch.nn.LPPool1d``).

    Computed as torch does: ``(sign(a) * relu(|a|) * k) ** (1/p)`` with ``a`` the average pool
    of ``x ** p`` (no padding), so ``p=1`` is sum pooling and ``p=inf`` max pooling.

    Args:
        norm_type: the power ``p``.
        kernel_size: window size, int or 1-tuple.
        stride: window stride; None means ``kernel_size``.
        ceil_mode: round the output size up instead of down.

    Shapes:
        input ``(N, C, L)`` or ``(C, L)`` -> ``(N, C, L_out)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.LPPool1d(2, 3, stride=2)(jnp.ones((1, 4, 9))).shape
        spx.Size([1, 4, 4])
    """

    _nd = 1
    _fn = F.lp_pool1d


class LPPool2d(_LPPoolNd):
    """Power-average pooling over 2-D windows (mirrors ``torch.nn.LPPool2d``).

    Args:
        norm_type: the power ``p``.
        kernel_size: window size, int or ``(kH, kW)``.
        stride: window stride; None means ``kernel_size``.
        ceil_mode: round the output size up instead of down.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.LPPool2d(2, 2)(jnp.ones((1, 3, 8, 8))).shape
        spx.Size([1, 3, 4, 4])
    """

    _nd = 2
    _fn = F.lp_pool2d


class LPPool3d(_LPPoolNd):
    """Power-average pooling over 3-D windows (mirrors ``torch.nn.LPPool3d``).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.LPPool3d(2, 2)(jnp.ones((1, 3, 4, 4, 4))).shape
        spx.Size([1, 3, 2, 2, 2])
    """

    _nd = 3
    _fn = F.lp_pool3d
