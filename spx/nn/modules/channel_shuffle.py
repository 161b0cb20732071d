"""``ChannelShuffle`` and ``Softmax2d`` (torch.nn's): channel-wise shape and softmax layers.

``ChannelShuffle(g)`` interleaves ``g`` groups of channels (ShuffleNet); ``Softmax2d`` is a
softmax over the channels at every spatial position. Neither has parameters.
"""

from __future__ import annotations

from spx import _validate
from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn.module import Module


class ChannelShuffle(Module):
    """Interleave ``groups`` groups of channels (mirrors ``torch.nn.ChannelShuffle``).

    Args:
        groups: the number of groups; must divide ``C``.

    Shapes:
        ``(N, C, *)`` -> ``(N, C, *)``.

    Example:
        >>> from spx import nn
        >>> nn.ChannelShuffle(2)(spx.arange(4.0).reshape(1, 4, 1)).flatten()  # 0, 2, 1, 3
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = _validate.as_int(groups, "groups", "ChannelShuffle")

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class Softmax2d(Module):
    """Softmax over the channels at each position (mirrors ``torch.nn.Softmax2d``).

    Shapes:
        ``(N, C, H, W)`` or ``(C, H, W)``, unchanged.

    Example:
        >>> from spx import nn
        >>> nn.Softmax2d()(spx.zeros(1, 4, 2, 2))  # all 0.25
    """

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3)
