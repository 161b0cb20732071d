"""Transposed convolutions: ``ConvTranspose1d/2d/3d`` and ``LazyConvTranspose1d/2d/3d``.

A transposed convolution is the gradient of a convolution with respect to its input, so it
upsamples: each output size is ``(in - 1) * stride - 2 * padding + dilation * (kernel - 1) +
output_padding + 1``. The weight is ``(in_channels, out_channels // groups, *kernel_size)``, torch's
transposed layout, so a torch ``state_dict`` loads unchanged. Construction, init, validation and
the lazy ``in_channels`` are :class:`~spx.nn.modules.conv._ConvNd`'s; this file adds the
``output_padding`` argument and ``forward(input, output_size)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn.modules.conv import _ConvNd, _tuple

_Size = int | tuple[int, ...]


class _ConvTransposeNd(_ConvNd):
    """``_ConvNd`` with torch's transposed weight layout, ``output_padding`` and ``output_size``."""

    _transposed = True

    def __init__(
        self,
        in_channels: int | None,
        out_channels: int,
        kernel_size: _Size,
        stride: _Size = 1,
        padding: _Size = 0,
        output_padding: _Size = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: _Size = 1,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        cls = type(self).__name__
        if padding_mode != "zeros":
            raise ValueError(
                f'Only "zeros" padding mode is supported for {cls}, got {padding_mode!r}; pad '
                "the output explicitly with F.pad if you need another mode"
            )
        if isinstance(padding, str):
            # torch takes no 'same'/'valid' here: the output size depends on stride instead.
            raise ValueError(
                f"{cls}: padding must be an int or a tuple of {self._nd} ints, got {padding!r}"
            )
        # Checked against stride/dilation at the call, as torch does: forward(output_size=...)
        # replaces it, so a layer built with a large output_padding can still be used that way.
        output_padding = _tuple(output_padding, self._nd, cls, "output_padding", 0)
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode, device, dtype,
        )  # fmt: skip
        self.output_padding = output_padding

    def _weight_shape(self, in_channels: int) -> tuple[int, ...]:
        return (in_channels, self.out_channels // self.groups, *self.kernel_size)

    def _output_padding(self, input: Tensor, output_size: Sequence[int] | None) -> tuple[int, ...]:
        """``output_padding``, or the one that makes the output ``output_size`` (torch's rule)."""
        if output_size is None:
            return self.output_padding
        nd, cls = self._nd, type(self).__name__
        non_spatial = 2 if input.ndim == nd + 2 else 1
        sizes = [int(s) for s in output_size]
        if len(sizes) == non_spatial + nd:  # torch also takes the full output shape
            sizes = sizes[non_spatial:]
        if len(sizes) != nd:
            raise ValueError(
                f"ConvTranspose{nd}D: for {input.ndim}D input, output_size must have {nd} or "
                f"{non_spatial + nd} elements (got {len(sizes)})"
            )
        spatial = tuple(input.shape[non_spatial:])
        min_sizes = [
            (n - 1) * s - 2 * p + d * (k - 1) + 1
            for n, s, p, d, k in zip(
                spatial, self.stride, self.padding, self.dilation, self.kernel_size, strict=True
            )
        ]
        max_sizes = [m + s - 1 for m, s in zip(min_sizes, self.stride, strict=True)]
        for size, lo, hi in zip(sizes, min_sizes, max_sizes, strict=True):
            if not lo <= size <= hi:
                raise ValueError(
                    f"{cls}: requested an output size of {list(output_size)}, but valid sizes "
                    f"range from {min_sizes} to {max_sizes} (for an input of {list(spatial)}); "
                    "change output_size or the stride/padding"
                )
        return tuple(size - lo for size, lo in zip(sizes, min_sizes, strict=True))

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        self._check_input(input)
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self._nd - 1]
        output_padding = self._output_padding(input, output_size)
        return conv(
            input, self.weight, self.bias, self.stride, self.padding, output_padding,
            self.groups, self.dilation,
        )  # fmt: skip


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over ``(N, C, L)`` input (mirrors ``torch.nn.ConvTranspose1d``).

    ``weight`` is ``(in_channels, out_channels // groups, kernel_size)`` and ``bias``
    ``(out_channels,)``, initialized as torch does: ``kaiming_uniform_(a=sqrt(5))`` and
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` where, for this layout, ``fan_in = out_channels //
    groups * kernel_size``. ``in_channels=None`` defers creation to the first call.

    Args:
        in_channels: input channels, or None to infer them from the first input.
        out_channels: output channels.
        kernel_size: int or 1-tuple.
        stride: int or 1-tuple.
        padding: int or 1-tuple: ``dilation * (kernel_size - 1) - padding`` zeros pad each side
            of the (stride-dilated) input.
        output_padding: int or 1-tuple added to one side of the output; smaller than stride or
            dilation. ``forward(x, output_size=...)`` picks it from a wanted size instead.
        groups: blocked connections; both channel counts must be divisible by it.
        bias: whether to learn an additive bias.
        dilation: int or 1-tuple.
        padding_mode: only ``'zeros'``, as in torch.
        device: optional device spec for the parameters.
        dtype: parameter dtype (default float32).

    Shapes:
        input ``(N, C_in, L_in)`` or ``(C_in, L_in)`` -> ``(N, C_out, L_out)`` with ``L_out =
        (L_in - 1) * stride - 2 * padding + dilation * (kernel_size - 1) + output_padding + 1``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> up = nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1)
        >>> up(jnp.ones((1, 4, 5))).shape, up(jnp.ones((1, 4, 5)), output_size=[10]).shape
        (spx.Size([1, 2, 9]), spx.Size([1, 2, 10]))
    """

    _nd = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over ``(N, C, H, W)`` (mirrors ``torch.nn.ConvTranspose2d``).

    ``weight`` is ``(in_channels, out_channels // groups, kH, kW)``; init and arguments as
    :class:`ConvTranspose1d`, with ints or pairs for the sizes.

    Shapes:
        input ``(N, C_in, H, W)`` or ``(C_in, H, W)`` -> ``(N, C_out, H_out, W_out)`` with
        ``H_out = (H - 1) * sH - 2 * pH + dH * (kH - 1) + opH + 1`` (likewise ``W_out``).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> up = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1)
        >>> up(jnp.ones((1, 4, 5, 5))).shape
        spx.Size([1, 2, 10, 10])
    """

    _nd = 2


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution over ``(N, C, D, H, W)`` (mirrors ``torch.nn.ConvTranspose3d``).

    ``weight`` is ``(in_channels, out_channels // groups, kD, kH, kW)``; init and arguments as
    :class:`ConvTranspose1d`, with ints or 3-tuples for the sizes.

    Shapes:
        input ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)`` -> ``(N, C_out, D_out, H_out,
        W_out)``, each size as in :class:`ConvTranspose1d`.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.ConvTranspose3d(2, 3, 2, stride=2)(jnp.ones((1, 2, 3, 3, 3))).shape
        spx.Size([1, 3, 6, 6, 6])
    """

    _nd = 3


class _LazyConvTransposeNd:
    """The shared constructor of the lazy forms: ``in_channels`` comes from the first input."""

    def __init__(
        self,
        out_channels: int,
        kernel_size: _Size,
        stride: _Size = 1,
        padding: _Size = 0,
        output_padding: _Size = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: _Size = 1,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(  # type: ignore[call-arg]
            None, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
            dilation, padding_mode, device, dtype,
        )  # fmt: skip


class LazyConvTranspose1d(_LazyConvTransposeNd, ConvTranspose1d):
    """A :class:`ConvTranspose1d` whose ``in_channels`` is inferred on the first call.

    Mirrors ``torch.nn.LazyConvTranspose1d`` (the arguments of :class:`ConvTranspose1d` minus
    ``in_channels``).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> layer = nn.LazyConvTranspose1d(8, 3)
        >>> layer(jnp.ones((2, 4, 10))).shape, layer.weight.shape
        (spx.Size([2, 8, 12]), spx.Size([4, 8, 3]))
    """

    cls_to_become = ConvTranspose1d  # what it becomes once materialized (.lazy)


class LazyConvTranspose2d(_LazyConvTransposeNd, ConvTranspose2d):
    """A :class:`ConvTranspose2d` whose ``in_channels`` is inferred on the first call.

    Mirrors ``torch.nn.LazyConvTranspose2d``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> layer = nn.LazyConvTranspose2d(6, 2, stride=2)
        >>> layer(jnp.ones((2, 3, 4, 4))).shape, layer.weight.shape
        (spx.Size([2, 6, 8, 8]), spx.Size([3, 6, 2, 2]))
    """

    cls_to_become = ConvTranspose2d  # what it becomes once materialized (.lazy)


class LazyConvTranspose3d(_LazyConvTransposeNd, ConvTranspose3d):
    """A :class:`ConvTranspose3d` whose ``in_channels`` is inferred on the first call.

    Mirrors ``torch.nn.LazyConvTranspose3d``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.LazyConvTranspose3d(2, 2)(jnp.ones((1, 3, 2, 2, 2))).shape
        spx.Size([1, 2, 3, 3, 3])
    """

    cls_to_become = ConvTranspose3d  # what it becomes once materialized (.lazy)
