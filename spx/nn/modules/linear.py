"""Linear layers: ``Linear`` (with deferred init), ``LazyLinear``, ``Identity``, ``Bilinear``."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from spx import _validate
from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn import init
from spx.nn.module import Module
from spx.nn.modules.lazy import become_materialized
from spx.nn.parameter import Parameter, UninitializedParameter
from spx.ops.types import get_default_dtype


def _empty(shape: tuple[int, ...], dtype: Any, device: Any) -> jax.Array:
    x = jnp.zeros(shape, dtype=dtype or get_default_dtype())
    if device is not None:
        from spx._device import device as resolve_device

        x = jax.device_put(x, resolve_device(device))
    return x


class Identity(Module):
    """Returns its input unchanged; ignores constructor arguments (mirrors ``nn.Identity``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        return input


class Linear(Module):
    """``y = x @ W.T + b`` (mirrors ``torch.nn.Linear``).

    ``weight`` is ``(out_features, in_features)`` and ``bias`` ``(out_features,)``, exactly as in
    torch, initialized with ``kaiming_uniform_(a=sqrt(5))`` and ``U(-1/sqrt(in), 1/sqrt(in))``.
    ``in_features=None`` defers creation to the first call, which fixes it from the input's last
    dimension and materializes the *same* Parameter objects (an optimizer built earlier keeps
    working).

    Args:
        in_features: size of each input sample, or None to infer it.
        out_features: size of each output sample.
        bias: whether to learn an additive bias.
        device: optional device spec for the parameters (``"cpu"``, ``"cuda:0"``, a jax.Device).
        dtype: parameter dtype (default float32).

    Shapes:
        input ``(*, in_features)`` -> output ``(*, out_features)``.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> nn.Linear(4, 3)(spx.ones(2, 4)).shape
        spx.Size([2, 3])
    """

    def __init__(
        self,
        in_features: int | None,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        in_features = _validate.as_optional_int(
            in_features, "in_features", "Linear", minimum=0,
            hint="use None or nn.LazyLinear to infer it",
        )  # fmt: skip
        out_features = _validate.as_int(out_features, "out_features", "Linear", minimum=0)
        self.in_features = in_features
        self.out_features = out_features
        self._device = device
        self._dtype = dtype
        if in_features is None:
            self.weight = UninitializedParameter()
            if bias:
                self.bias = UninitializedParameter()
            else:
                self.register_parameter("bias", None)
        else:
            self.weight = Parameter(_empty((out_features, in_features), dtype, device))
            if bias:
                self.bias = Parameter(_empty((out_features,), dtype, device))
            else:
                self.register_parameter("bias", None)
            self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch's default init: kaiming_uniform_(a=sqrt(5)) weight, U(±1/sqrt(fan_in)) bias."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def _materialize(self, in_features: int) -> None:
        self.in_features = in_features
        self.weight.materialize(_empty((self.out_features, in_features), self._dtype, self._device))
        if self.bias is not None:
            self.bias.materialize(_empty((self.out_features,), self._dtype, self._device))
        self.reset_parameters()
        become_materialized(self)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim == 0:
            raise RuntimeError("Linear: input must have at least 1 dimension, got a scalar")
        weight = self._required_parameter("weight")
        if getattr(weight, "is_uninitialized", False):
            self._materialize(input.shape[-1])
        elif self.in_features is None:
            # Materialized by load_state_dict rather than by a first call.
            self.in_features = weight.shape[1]
            become_materialized(self)
        if input.shape[-1] != self.in_features:
            # RuntimeError, as torch's matmul raises ("mat1 and mat2 shapes cannot be ...").
            raise RuntimeError(
                f"Linear: input has {input.shape[-1]} features in its last dimension "
                f"(shape {tuple(input.shape)}), but this layer expects in_features="
                f"{self.in_features}. Reshape the input or build Linear({input.shape[-1]}, "
                f"{self.out_features})."
            )
        return F.linear(input, weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class LazyLinear(Linear):
    """A :class:`Linear` whose ``in_features`` is inferred on the first call.

    Mirrors ``torch.nn.LazyLinear``; reading the weight before that call raises a clear error.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> layer = nn.LazyLinear(3)
        >>> layer(spx.ones(2, 5)).shape, layer.weight.shape
        (spx.Size([2, 3]), spx.Size([3, 5]))
    """

    cls_to_become = Linear  # what it becomes once materialized (.lazy)

    def __init__(
        self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__(None, out_features, bias=bias, device=device, dtype=dtype)


class Bilinear(Module):
    """``y = x1^T A x2 + b`` (mirrors ``torch.nn.Bilinear``); weight ``(out, in1, in2)``.

    Shapes:
        input1 ``(*, in1_features)``, input2 ``(*, in2_features)`` -> ``(*, out_features)``.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> nn.Bilinear(2, 3, 4)(spx.ones(5, 2), spx.ones(5, 3)).shape
        spx.Size([5, 4])
    """

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.in1_features = _validate.as_int(in1_features, "in1_features", "Bilinear", minimum=0)
        self.in2_features = _validate.as_int(in2_features, "in2_features", "Bilinear", minimum=0)
        self.out_features = _validate.as_int(out_features, "out_features", "Bilinear", minimum=0)
        in1_features, in2_features = self.in1_features, self.in2_features
        out_features = self.out_features
        self.weight = Parameter(_empty((out_features, in1_features, in2_features), dtype, device))
        if bias:
            self.bias = Parameter(_empty((out_features,), dtype, device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self._required_parameter("weight"), self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )
