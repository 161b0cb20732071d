"""``PixelShuffle`` and ``PixelUnshuffle``: trade channels for resolution (torch.nn's).

``PixelShuffle(r)`` turns ``(*, C r^2, H, W)`` into ``(*, C, H r, W r)`` in torch's channel
order (the sub-pixel convolution upsampler); ``PixelUnshuffle(r)`` is its inverse. Both are a
reshape and a transpose, with no parameters.
"""

from __future__ import annotations

from spx import _validate
from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn.module import Module


class PixelShuffle(Module):
    """``(*, C r^2, H, W) -> (*, C, H r, W r)`` (mirrors ``torch.nn.PixelShuffle``).

    Args:
        upscale_factor: ``r``, a positive int.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.PixelShuffle(3)(jnp.ones((1, 9, 4, 4))).shape
        spx.Size([1, 1, 12, 12])
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = _validate.as_int(
            upscale_factor, "upscale_factor", "PixelShuffle", minimum=1
        )

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``(*, C, H r, W r) -> (*, C r^2, H, W)`` (mirrors ``torch.nn.PixelUnshuffle``).

    Args:
        downscale_factor: ``r``, a positive int dividing both ``H`` and ``W``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.PixelUnshuffle(3)(jnp.ones((1, 1, 12, 12))).shape
        spx.Size([1, 9, 4, 4])
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = _validate.as_int(
            downscale_factor, "downscale_factor", "PixelUnshuffle", minimum=1
        )

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
