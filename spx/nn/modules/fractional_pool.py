"""Fractional max pooling: ``FractionalMaxPool2d``, ``FractionalMaxPool3d`` (mirroring torch).

Modules over :func:`spx.nn.functional.fractional_max_pool2d` / ``3d``. As torch, they store
``kernel_size``, ``output_size`` and ``output_ratio`` as tuples, validate them at construction,
and keep ``_random_samples`` as a buffer: None (the default) draws fresh samples from
``spx.manual_seed``'s generator on every call, a Tensor fixes the pooling regions and is saved
in ``state_dict`` under torch's key ``_random_samples``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spx import _validate
from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn.module import Module

_Size = int | tuple[int, ...]
_Ratio = float | tuple[float, ...]


def _ntuple(value: Any, nd: int) -> tuple[Any, ...]:
    """torch's ``_pair``/``_triple``: a sequence as a tuple, anything else repeated."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return tuple(value)
    return (value,) * nd


class _FractionalMaxPoolNd(Module):
    """Shared constructor and forward; subclasses set ``_nd`` and ``_fn``."""

    _nd = 2
    _fn: Any = None

    def __init__(
        self,
        kernel_size: _Size,
        output_size: _Size | None = None,
        output_ratio: _Ratio | None = None,
        return_indices: bool = False,
        _random_samples: Any = None,
    ) -> None:
        super().__init__()
        cls, nd = type(self).__name__, self._nd
        self.kernel_size = _validate.as_int_tuple(kernel_size, nd, "kernel_size", cls, minimum=1)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = None if output_size is None else _ntuple(output_size, nd)
        self.output_ratio = None if output_ratio is None else _ntuple(output_ratio, nd)
        if output_size is None and output_ratio is None:
            raise ValueError(
                f"{cls} requires specifying either an output size, or a pooling ratio; pass "
                f"output_size=... or e.g. output_ratio={(0.5,) * nd}"
            )
        if output_size is not None and output_ratio is not None:
            raise ValueError(
                f"{cls}: only one of output_size and output_ratio may be specified, got "
                f"output_size={output_size!r} and output_ratio={output_ratio!r}"
            )
        if self.output_ratio is not None:
            if len(self.output_ratio) != nd:
                raise ValueError(
                    f"{cls}: output_ratio must be a number or {nd} numbers, got {output_ratio!r}"
                )
            ratios = [_validate.as_float(r, "output_ratio", cls) for r in self.output_ratio]
            if not all(0 < r < 1 for r in ratios):
                raise ValueError(
                    f"output_ratio must be between 0 and 1 (got {output_ratio}); "
                    f"{cls} shrinks its input, e.g. output_ratio=0.5 halves each size"
                )

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return type(self)._fn(
            input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
            _random_samples=self._random_samples,
        )  # fmt: skip


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-D fractional max pooling (mirrors ``torch.nn.FractionalMaxPool2d``).

    Max over ``kernel_size`` windows placed with a pseudo-random step so that the input maps
    onto any smaller output size (Graham, https://arxiv.org/abs/1412.6071). Give exactly one
    of ``output_size`` and ``output_ratio``.

    Args:
        kernel_size: int or ``(kH, kW)``, positive.
        output_size: int or ``(H_out, W_out)``; needs ``H_out + kH - 1 <= H_in`` (likewise W).
        output_ratio: a number or a pair in ``(0, 1)``: ``H_out = int(H_in * ratio)``.
        return_indices: also return each maximum's flat position in its plane (int32), for
            :class:`~spx.nn.MaxUnpool2d`.
        _random_samples: fixed ``(N, C, 2)`` samples in ``[0, 1)`` (a buffer); None draws
            fresh ones each call from ``spx.manual_seed``'s generator.

    Shapes:
        input ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)`` -> ``(N, C, H_out, W_out)`` or
        ``(C, H_out, W_out)``.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> pool = nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5))
        >>> pool(spx.randn(20, 16, 50, 32)).shape
        spx.Size([20, 16, 25, 16])
    """

    _nd = 2
    _fn = F.fractional_max_pool2d


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-D fractional max pooling (mirrors ``torch.nn.FractionalMaxPool3d``).

    Args:
        kernel_size: int or ``(kT, kH, kW)``, positive.
        output_size: int or ``(T_out, H_out, W_out)``; as torch, each window must fit
            strictly: ``T_out + kT - 1 < T_in`` (likewise H and W).
        output_ratio: a number or a triple in ``(0, 1)``.
        return_indices: also return each maximum's flat position in its plane (int32), for
            :class:`~spx.nn.MaxUnpool3d`.
        _random_samples: fixed ``(N, C, 3)`` samples in ``[0, 1)`` (a buffer); None draws
            fresh ones each call.

    Shapes:
        input ``(N, C, T_in, H_in, W_in)`` or ``(C, T_in, H_in, W_in)`` ->
        ``(N, C, T_out, H_out, W_out)`` or ``(C, T_out, H_out, W_out)``.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> pool = nn.FractionalMaxPool3d(3, output_size=(13, 12, 11))
        >>> pool(spx.randn(2, 4, 20, 16, 16)).shape
        spx.Size([2, 4, 13, 12, 11])
    """

    _nd = 3
    _fn = F.fractional_max_pool3d
