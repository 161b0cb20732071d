"""``Unfold`` and ``Fold``: sliding blocks to columns (im2col) and back (torch.nn's).

``Unfold`` turns ``(N, C, H, W)`` into ``(N, C * kh * kw, L)``, one column per block
position; ``Fold`` sums such columns back into an image, adding where blocks overlap. Neither
has parameters; both are thin wrappers of :func:`spx.nn.functional.unfold` / ``fold``.
"""

from __future__ import annotations

from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn.module import Module

_IntOrPair = int | tuple[int, int]


class Unfold(Module):
    """Extract sliding local blocks as columns (mirrors ``torch.nn.Unfold``).

    Args:
        kernel_size: the block size, an int or ``(kh, kw)``.
        dilation: spacing between a block's elements.
        padding: implicit zero padding on both sides of H and W.
        stride: step between blocks.

    Shapes:
        ``(N, C, H, W)`` -> ``(N, C * kh * kw, L)``; unbatched ``(C, H, W)`` ->
        ``(C * kh * kw, L)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Unfold(kernel_size=(2, 3))(jnp.ones((2, 5, 3, 4))).shape
        spx.Size([2, 30, 4])
    """

    def __init__(
        self,
        kernel_size: _IntOrPair,
        dilation: _IntOrPair = 1,
        padding: _IntOrPair = 0,
        stride: _IntOrPair = 1,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class Fold(Module):
    """Sum sliding local blocks into an image (mirrors ``torch.nn.Fold``).

    Args:
        output_size: the image's spatial size ``(H, W)`` (or an int).
        kernel_size, dilation, padding, stride: as in :class:`Unfold`.

    Shapes:
        ``(N, C * kh * kw, L)`` -> ``(N, C, H, W)``; unbatched ``(C * kh * kw, L)`` ->
        ``(C, H, W)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Fold(output_size=(4, 5), kernel_size=(2, 2))(jnp.ones((1, 12, 12))).shape
        spx.Size([1, 3, 4, 5])
    """

    def __init__(
        self,
        output_size: _IntOrPair,
        kernel_size: _IntOrPair,
        dilation: _IntOrPair = 1,
        padding: _IntOrPair = 0,
        stride: _IntOrPair = 1,
    ) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(
            input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self) -> str:
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
            f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
        )
