"""Convolution layers: ``Conv1d``, ``Conv2d``, ``Conv3d`` and their lazy forms; the shared
``_ConvNd`` base that the transposed convolutions (:mod:`.conv_transpose`) build on.

Weights are ``(out_channels, in_channels // groups, *kernel_size)`` (``(in_channels,
out_channels // groups, *kernel_size)`` for transposed convs) and inputs channels-first,
exactly as in torch, so a torch ``state_dict`` loads with no transpose. Non-zero padding modes
(``reflect``, ``replicate``, ``circular``) pad explicitly with ``F.pad`` and then convolve with no
padding, the same two steps torch takes, so the numbers match at the borders.
"""

from __future__ import annotations

import math
from typing import Any

from spx import _validate
from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn import init
from spx.nn.module import Module
from spx.nn.modules.lazy import become_materialized
from spx.nn.modules.linear import _empty
from spx.nn.parameter import Parameter, UninitializedParameter

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(value: Any, n: int, cls: str, name: str, minimum: int) -> tuple[int, ...]:
    """torch's ``_single``/``_pair`` with validation: an int or an ``n``-sequence of ints."""
    return _validate.as_int_tuple(value, n, name, cls, minimum=minimum)


class _ConvNd(Module):
    """Shared constructor, init, validation and repr of the convolutions and transposed ones."""

    _nd = 0
    _transposed = False

    def __init__(
        self,
        in_channels: int | None,
        out_channels: int,
        kernel_size: int | tuple[int, ...],
        stride: int | tuple[int, ...] = 1,
        padding: str | int | tuple[int, ...] = 0,
        dilation: int | tuple[int, ...] = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        cls, nd = type(self).__name__, self._nd
        in_channels = _validate.as_optional_int(
            in_channels, "in_channels", cls, minimum=1,
            hint="use None or a Lazy conv to infer it",
        )  # fmt: skip
        out_channels = _validate.as_int(out_channels, "out_channels", cls, minimum=1)
        groups = _validate.as_int(groups, "groups", cls, minimum=1)
        if in_channels is not None and in_channels % groups:
            raise ValueError(
                f"{cls}: in_channels ({in_channels}) must be divisible by groups ({groups}); "
                "change one of them"
            )
        if out_channels % groups:
            raise ValueError(
                f"{cls}: out_channels ({out_channels}) must be divisible by groups ({groups}); "
                "change one of them"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(kernel_size, nd, cls, "kernel_size", 1)
        self.stride = _tuple(stride, nd, cls, "stride", 1)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(
                    f"{cls}: invalid padding string {padding!r}, expected 'same' or 'valid' "
                    "(or an int / tuple of ints)"
                )
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(
                    f"{cls}: padding='same' is not supported for strided convolutions "
                    f"(stride={self.stride}); use stride=1 or explicit padding"
                )
            self.padding: str | tuple[int, ...] = padding
        else:
            self.padding = _tuple(padding, nd, cls, "padding", 0)
        self.dilation = _tuple(dilation, nd, cls, "dilation", 1)
        self.transposed = self._transposed
        self.output_padding = (0,) * nd  # a transposed conv sets its own after this
        self.groups = groups
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"{cls}: padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}"
            )
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = self._pad_widths()
        self._device = device
        self._dtype = dtype
        if in_channels is None:
            self.weight = UninitializedParameter()
            if bias:
                self.bias = UninitializedParameter()
            else:
                self.register_parameter("bias", None)
        else:
            self.weight = Parameter(_empty(self._weight_shape(in_channels), dtype, device))
            if bias:
                self.bias = Parameter(_empty((out_channels,), dtype, device))
            else:
                self.register_parameter("bias", None)
            self.reset_parameters()

    def _pad_widths(self) -> tuple[int, ...]:
        # F.pad takes (left, right) pairs starting from the *last* dim, as torch stores them.
        if self.padding == "valid":
            return (0, 0) * self._nd
        out: list[int] = []
        for i in reversed(range(self._nd)):
            if self.padding == "same":
                total = self.dilation[i] * (self.kernel_size[i] - 1)
                out += [total // 2, total - total // 2]  # torch puts the odd element last
            else:
                out += [self.padding[i], self.padding[i]]
        return tuple(out)

    def _weight_shape(self, in_channels: int) -> tuple[int, ...]:
        return (self.out_channels, in_channels // self.groups, *self.kernel_size)

    def _in_channels_of(self, weight: Tensor) -> int:
        # The inverse of _weight_shape (a transposed conv's weight leads with in_channels).
        return weight.shape[0] if self._transposed else weight.shape[1] * self.groups

    def reset_parameters(self) -> None:
        """torch's default init: kaiming_uniform_(a=sqrt(5)) weight, U(±1/sqrt(fan_in)) bias."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def _materialize(self, in_channels: int) -> None:
        cls = type(self).__name__
        if in_channels % self.groups:
            raise ValueError(
                f"{cls}: the input has {in_channels} channels, which is not divisible by "
                f"groups={self.groups}"
            )
        self.in_channels = in_channels
        self.weight.materialize(_empty(self._weight_shape(in_channels), self._dtype, self._device))
        if self.bias is not None:
            self.bias.materialize(_empty((self.out_channels,), self._dtype, self._device))
        self.reset_parameters()
        become_materialized(self)

    def _check_input(self, input: Tensor) -> None:
        cls, nd = type(self).__name__, self._nd
        if input.ndim not in (nd + 1, nd + 2):
            spatial = ", ".join(["D", "H", "W"][-nd:] if nd > 1 else ["L"])
            raise RuntimeError(
                f"{cls}: expected a {nd + 2}-D input (N, C, {spatial}) or an unbatched "
                f"{nd + 1}-D input (C, {spatial}), got shape {tuple(input.shape)}"
            )
        channels = input.shape[-nd - 1]
        # Only a weight that is a parameter here can be lazy. A computed one (spectral norm,
        # parametrizations) is not read here: forward reads it once, as torch's does (a second
        # read would run spectral norm's power iteration twice).
        lazy = "weight" in self._parameters and getattr(
            self._required_parameter("weight"), "is_uninitialized", False
        )
        if lazy:
            self._materialize(channels)
        elif self.in_channels is None:
            # A lazy layer whose weight came from load_state_dict rather than a first call.
            self.in_channels = self._in_channels_of(self._required_parameter("weight"))
            become_materialized(self)
        if channels != self.in_channels:
            raise RuntimeError(
                f"{cls}: input has {channels} channels (dim {input.ndim - nd - 1} of shape "
                f"{tuple(input.shape)}), but this layer expects in_channels={self.in_channels}. "
                f"Fix the input or build {cls}({channels}, {self.out_channels}, ...)."
            )

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        conv = (F.conv1d, F.conv2d, F.conv3d)[self._nd - 1]
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input(input)
        return self._conv_forward(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        nd = self._nd
        in_channels = 0 if self.in_channels is None else self.in_channels  # torch's lazy: 0
        s = f"{in_channels}, {self.out_channels}, kernel_size={self.kernel_size}"
        s += f", stride={self.stride}"
        if self.padding != (0,) * nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over ``(N, C, L)`` input (mirrors ``torch.nn.Conv1d``).

    ``weight`` is ``(out_channels, in_channels // groups, kernel_size)`` and ``bias``
    ``(out_channels,)``, initialized as torch does: ``kaiming_uniform_(a=sqrt(5))`` and
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with ``fan_in = in_channels // groups * kernel_size``.
    ``in_channels=None`` defers creation to the first call (see :class:`LazyConv1d`).

    Args:
        in_channels: input channels, or None to infer them from the first input.
        out_channels: output channels.
        kernel_size: int or 1-tuple.
        stride: int or 1-tuple.
        padding: int, 1-tuple, ``'valid'`` or ``'same'`` (stride 1 only).
        dilation: int or 1-tuple.
        groups: blocked connections from input to output channels; both channel counts must
            be divisible by it.
        bias: whether to learn an additive bias.
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
        device: optional device spec for the parameters.
        dtype: parameter dtype (default float32).

    Shapes:
        input ``(N, C_in, L_in)`` or ``(C_in, L_in)`` -> ``(N, C_out, L_out)`` with
        ``L_out = (L_in + 2 * padding - dilation * (kernel_size - 1) - 1) // stride + 1``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Conv1d(4, 8, 3, padding=1)(jnp.ones((2, 4, 10))).shape
        spx.Size([2, 8, 10])
    """

    _nd = 1


class Conv2d(_ConvNd):
    """2-D convolution over ``(N, C, H, W)`` input (mirrors ``torch.nn.Conv2d``).

    ``weight`` is ``(out_channels, in_channels // groups, kH, kW)`` and ``bias``
    ``(out_channels,)``, initialized as torch does: ``kaiming_uniform_(a=sqrt(5))`` and
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with ``fan_in = in_channels // groups * kH * kW``.
    ``in_channels=None`` defers creation to the first call (see :class:`LazyConv2d`).

    Args:
        in_channels: input channels, or None to infer them from the first input.
        out_channels: output channels.
        kernel_size: int or ``(kH, kW)``.
        stride: int or ``(sH, sW)``.
        padding: int, ``(pH, pW)``, ``'valid'`` or ``'same'`` (stride 1 only).
        dilation: int or ``(dH, dW)``.
        groups: blocked connections (``groups == in_channels`` is a depthwise conv).
        bias: whether to learn an additive bias.
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
        device: optional device spec for the parameters.
        dtype: parameter dtype (default float32).

    Shapes:
        input ``(N, C_in, H, W)`` or ``(C_in, H, W)`` -> ``(N, C_out, H_out, W_out)`` with
        ``H_out = (H + 2 * pH - dH * (kH - 1) - 1) // sH + 1`` (likewise ``W_out``).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Conv2d(3, 6, 3, stride=2, padding=1)(jnp.ones((2, 3, 8, 8))).shape
        spx.Size([2, 6, 4, 4])
    """

    _nd = 2


class Conv3d(_ConvNd):
    """3-D convolution over ``(N, C, D, H, W)`` input (mirrors ``torch.nn.Conv3d``).

    ``weight`` is ``(out_channels, in_channels // groups, kD, kH, kW)`` and ``bias``
    ``(out_channels,)``, initialized as torch does: ``kaiming_uniform_(a=sqrt(5))`` and
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with ``fan_in = in_channels // groups * kD * kH * kW``.
    ``in_channels=None`` defers creation to the first call (see :class:`LazyConv3d`).

    Args:
        in_channels: input channels, or None to infer them from the first input.
        out_channels: output channels.
        kernel_size: int or ``(kD, kH, kW)``.
        stride: int or ``(sD, sH, sW)``.
        padding: int, ``(pD, pH, pW)``, ``'valid'`` or ``'same'`` (stride 1 only).
        dilation: int or ``(dD, dH, dW)``.
        groups: blocked connections from input to output channels; both channel counts must
            be divisible by it.
        bias: whether to learn an additive bias.
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
        device: optional device spec for the parameters.
        dtype: parameter dtype (default float32).

    Shapes:
        input ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)`` -> ``(N, C_out, D_out, H_out, W_out)``
        with ``D_out = (D + 2 * pD - dD * (kD - 1) - 1) // sD + 1`` (likewise ``H_out``,
        ``W_out``).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Conv3d(2, 4, 3, stride=2, padding=1)(jnp.ones((1, 2, 6, 8, 8))).shape
        spx.Size([1, 4, 3, 4, 4])
    """

    _nd = 3


class LazyConv1d(Conv1d):
    """A :class:`Conv1d` whose ``in_channels`` is inferred on the first call.

    Mirrors ``torch.nn.LazyConv1d`` (same arguments as :class:`Conv1d` minus ``in_channels``).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx.nn.modules.conv import LazyConv1d
        >>> layer = LazyConv1d(8, 3)
        >>> layer(jnp.ones((2, 4, 10))).shape, layer.weight.shape
        (spx.Size([2, 8, 8]), spx.Size([8, 4, 3]))
    """

    cls_to_become = Conv1d  # what it becomes once materialized (.lazy)

    def __init__(
        self,
        out_channels: int,
        kernel_size: int | tuple[int, ...],
        stride: int | tuple[int, ...] = 1,
        padding: str | int | tuple[int, ...] = 0,
        dilation: int | tuple[int, ...] = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            None,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )


class LazyConv2d(Conv2d):
    """A :class:`Conv2d` whose ``in_channels`` is inferred on the first call.

    Mirrors ``torch.nn.LazyConv2d`` (same arguments as :class:`Conv2d` minus ``in_channels``).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx.nn.modules.conv import LazyConv2d
        >>> layer = LazyConv2d(6, 3)
        >>> layer(jnp.ones((2, 3, 8, 8))).shape, layer.weight.shape
        (spx.Size([2, 6, 6, 6]), spx.Size([6, 3, 3, 3]))
    """

    cls_to_become = Conv2d  # what it becomes once materialized (.lazy)

    def __init__(
        self,
        out_channels: int,
        kernel_size: int | tuple[int, ...],
        stride: int | tuple[int, ...] = 1,
        padding: str | int | tuple[int, ...] = 0,
        dilation: int | tuple[int, ...] = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            None,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )


class LazyConv3d(Conv3d):
    """A :class:`Conv3d` whose ``in_channels`` is inferred on the first call.

    Mirrors ``torch.nn.LazyConv3d`` (same arguments as :class:`Conv3d` minus ``in_channels``).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> layer = nn.LazyConv3d(4, 3)
        >>> layer(jnp.ones((1, 2, 5, 5, 5))).shape, layer.weight.shape
        (spx.Size([1, 4, 3, 3, 3]), spx.Size([4, 2, 3, 3, 3]))
    """

    cls_to_become = Conv3d  # what it becomes once materialized (.lazy)

    def __init__(
        self,
        out_channels: int,
        kernel_size: int | tuple[int, ...],
        stride: int | tuple[int, ...] = 1,
        padding: str | int | tuple[int, ...] = 0,
        dilation: int | tuple[int, ...] = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            None,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )
