"""Normalization layers without running state: ``LayerNorm``, ``RMSNorm``, ``GroupNorm``.

Parameter names, shapes and default inits are torch's (``weight`` ones, ``bias`` zeros, shaped
like ``normalized_shape`` or ``(num_channels,)``), so torch checkpoints load unchanged. The math
lives in ``spx.nn.functional`` (statistics in at least float32). Input shapes that do not fit the
layer raise ValueError naming both shapes (torch raises RuntimeError from inside its kernels).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from spx import _validate
from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn import init
from spx.nn.module import Module
from spx.nn.parameter import Parameter
from spx.ops.types import get_default_dtype

Array = jax.Array


def _new(shape: tuple[int, ...], dtype: Any, device: Any) -> Parameter:
    """A Parameter of ``shape`` (values set by the caller's ``reset_parameters``)."""
    x = jnp.empty(shape, dtype=dtype or get_default_dtype())
    if device is not None:
        from spx._device import device as resolve_device

        x = jax.device_put(x, resolve_device(device))
    return Parameter(x)


def _shape_arg(owner: str, normalized_shape: Any) -> tuple[int, ...]:
    if _validate.is_int(normalized_shape):
        normalized_shape = (normalized_shape,)
    if not isinstance(normalized_shape, Sequence) or not all(
        _validate.is_int(s) and s > 0 for s in normalized_shape
    ):
        raise TypeError(
            f"{owner}: normalized_shape must be a positive int or a sequence of positive ints "
            f"(the trailing input dims to normalize over), got {normalized_shape!r}"
        )
    if len(normalized_shape) == 0:
        raise ValueError(f"{owner}: normalized_shape must not be empty")
    return tuple(int(s) for s in normalized_shape)


def _check_trailing(owner: str, x: Array, shape: tuple[int, ...]) -> None:
    k = len(shape)
    if x.ndim < k or tuple(x.shape[x.ndim - k :]) != shape:
        raise ValueError(
            f"{owner}: expected input with shape (*, {', '.join(map(str, shape))}) "
            f"(normalized_shape={shape}), but got input of shape {tuple(x.shape)}. Build the "
            f"layer with the input's trailing dims, e.g. {owner}({x.shape[-1] if x.ndim else 1})."
        )


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` dims (mirrors ``torch.nn.LayerNorm``).

    ``y = (x - mean) / sqrt(var + eps) * weight + bias`` with the biased variance.

    Args:
        normalized_shape: int or sequence of ints, the trailing input dims.
        eps: added to the variance.
        elementwise_affine: learn ``weight`` (ones) and ``bias`` (zeros) of that shape.
        bias: learn ``bias`` too (only with ``elementwise_affine``).
        device: optional device spec for the parameters.
        dtype: parameter dtype (default float32).

    Shapes:
        input ``(*, *normalized_shape)`` -> output of the same shape.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.LayerNorm(8)(jnp.ones((4, 8))).shape
        spx.Size([4, 8])
    """

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _shape_arg("LayerNorm", normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = _new(self.normalized_shape, dtype, device)
            if bias:
                self.bias = _new(self.normalized_shape, dtype, device)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        _check_trailing("LayerNorm", input, self.normalized_shape)
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class RMSNorm(Module):
    """Root-mean-square normalization over trailing dims (mirrors ``torch.nn.RMSNorm``).

    ``y = x / sqrt(mean(x^2) + eps) * weight``.

    Args:
        normalized_shape: int or sequence of ints, the trailing input dims.
        eps: added to the mean square; ``None`` uses the input dtype's machine epsilon, as
            torch does.
        elementwise_affine: learn ``weight`` (ones) of that shape.
        device: optional device spec for the weight.
        dtype: weight dtype (default float32).

    Shapes:
        input ``(*, *normalized_shape)`` -> output of the same shape.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.RMSNorm(8)(jnp.ones((4, 8))).shape
        spx.Size([4, 8])
    """

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float | None = None,
        elementwise_affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _shape_arg("RMSNorm", normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = _new(self.normalized_shape, dtype, device)
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        _check_trailing("RMSNorm", input, self.normalized_shape)
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class GroupNorm(Module):
    """Normalize each sample over groups of channels (mirrors ``torch.nn.GroupNorm``).

    Args:
        num_groups: number of groups; must divide ``num_channels``.
        num_channels: channels expected at input dim 1.
        eps: added to the variance.
        affine: learn per-channel ``weight`` (ones) and ``bias`` (zeros).
        device: optional device spec for the parameters.
        dtype: parameter dtype (default float32).
        bias: learn ``bias`` too (only with ``affine``; keyword-only, as in torch).

    Shapes:
        input ``(N, C, *)`` -> output of the same shape.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.GroupNorm(2, 6)(jnp.ones((3, 6, 4))).shape
        spx.Size([3, 6, 4])
    """

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        num_groups = _validate.as_int(num_groups, "num_groups", "GroupNorm", minimum=1)
        num_channels = _validate.as_int(num_channels, "num_channels", "GroupNorm", minimum=1)
        if num_channels % num_groups != 0:
            raise ValueError(
                f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
            )
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = _new((num_channels,), dtype, device)
            if bias:
                self.bias = _new((num_channels,), dtype, device)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim < 2 or input.shape[1] != self.num_channels:
            raise ValueError(
                f"GroupNorm: expected input of shape (N, {self.num_channels}, *) "
                f"(num_channels={self.num_channels}), got {tuple(input.shape)}"
            )
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class LocalResponseNorm(Module):
    """Local response normalization across channels (mirrors ``torch.nn.LocalResponseNorm``).

    ``y = x / (k + alpha / size * sum_window(x^2)) ** beta`` over ``size`` neighbouring channels.

    Args:
        size: number of neighbouring channels to normalize over.
        alpha: multiplicative factor.
        beta: exponent.
        k: additive factor.

    Shapes:
        input ``(N, C, *)`` (at least 3-D) -> same shape.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.LocalResponseNorm(2)(jnp.ones((1, 4, 5, 5))).shape
        spx.Size([1, 4, 5, 5])
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = _validate.as_int(size, "size", "LocalResponseNorm", minimum=1)
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
