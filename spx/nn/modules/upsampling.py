"""``Upsample``, ``UpsamplingNearest2d`` and ``UpsamplingBilinear2d`` (torch.nn's).

Thin modules over :func:`spx.nn.functional.interpolate` with no parameters or buffers. Like
torch they keep ``size`` as given and store ``scale_factor`` as a float (or a tuple of floats),
so ``repr`` matches torch's. The mode is checked at construction; the rest of the arguments
depend on the input's rank and are checked at the call, where torch checks them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn.functional.upsampling import MODES
from spx.nn.module import Module


class Upsample(Module):
    """Resize ``(N, C, *spatial)`` input (mirrors ``torch.nn.Upsample``).

    Args:
        size: output spatial size: an int or one int per spatial dim.
        scale_factor: multiplier per spatial dim (float or tuple); exactly one of ``size``
            and ``scale_factor``.
        mode: ``'nearest'`` (default), ``'nearest-exact'``, ``'linear'`` (3-D input),
            ``'bilinear'``/``'bicubic'`` (4-D), ``'trilinear'`` (5-D) or ``'area'``.
        align_corners: linear and cubic modes only (None means False).
        recompute_scale_factor: True interpolates as if the size ``floor(in * scale_factor)``
            had been given.

    Shapes:
        ``(N, C, *in_spatial)`` -> ``(N, C, *out_spatial)`` with ``out = size`` or
        ``floor(in * scale_factor)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> x = jnp.arange(1.0, 5.0).reshape(1, 1, 2, 2)
        >>> nn.Upsample(scale_factor=2, mode="nearest")(x)[0, 0, 0].tolist()
        [1.0, 1.0, 2.0, 2.0]
    """

    def __init__(
        self,
        size: int | Sequence[int] | None = None,
        scale_factor: float | Sequence[float] | None = None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        cls = type(self).__name__
        if mode not in MODES:
            raise ValueError(f"{cls}: mode must be one of {MODES}, got {mode!r}")
        if align_corners is not None and mode in ("nearest", "nearest-exact", "area"):
            raise ValueError(
                f"{cls}: align_corners can only be set with the interpolating modes "
                f"(linear | bilinear | bicubic | trilinear), not mode={mode!r}; leave it None"
            )
        self.name = cls
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor: Any = tuple(float(factor) for factor in scale_factor)
        else:
            # torch's `float(...) if scale_factor else None`: 0 means "not given" there too.
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(
            input, self.size, self.scale_factor, self.mode, self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )  # fmt: skip

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample(size, scale_factor, mode='nearest')`` (mirrors ``torch.nn.UpsamplingNearest2d``).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.UpsamplingNearest2d(scale_factor=2)(jnp.ones((1, 3, 4, 5))).shape
        spx.Size([1, 3, 8, 10])
    """

    def __init__(
        self,
        size: int | Sequence[int] | None = None,
        scale_factor: float | Sequence[float] | None = None,
    ) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(..., mode='bilinear', align_corners=True)`` (``torch.nn.UpsamplingBilinear2d``).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> x = jnp.arange(1.0, 5.0).reshape(1, 1, 2, 2)
        >>> [round(v, 4) for v in nn.UpsamplingBilinear2d(size=(2, 3))(x)[0, 0, 0].tolist()]
        [1.0, 1.5, 2.0]
    """

    def __init__(
        self,
        size: int | Sequence[int] | None = None,
        scale_factor: float | Sequence[float] | None = None,
    ) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
