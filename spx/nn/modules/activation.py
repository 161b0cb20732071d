"""Activation modules: thin Modules over ``spx.nn.functional``, mirroring ``torch.nn``'s.

Each keeps torch's constructor arguments as attributes and prints torch's ``extra_repr``.
Elementwise ones take any shape and return the same shape. ``inplace=True`` writes the result
into the input Tensor, as torch does (a jax array input, immutable, gets a new array).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from spx import _validate
from spx.nn import functional as F
from spx.nn.init import constant_
from spx.nn.module import Module
from spx.nn.parameter import Parameter
from spx.ops.types import get_default_dtype

Array = jax.Array


def _inplace_repr(inplace: bool, lead: str = "") -> str:
    return lead + "inplace=True" if inplace else ""


class _Plain(Module):
    """An activation without arguments besides torch's ``inplace`` (for those that have it)."""

    _fn: Any = None
    _has_inplace = False

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        if self._has_inplace:
            self.inplace = inplace

    def forward(self, input: Array) -> Array:
        if self._has_inplace and self.inplace:
            return type(self)._fn(input, inplace=True)
        return type(self)._fn(input)

    def extra_repr(self) -> str:
        return _inplace_repr(getattr(self, "inplace", False))


class ReLU(_Plain):
    """``max(0, x)`` (mirrors ``torch.nn.ReLU``).

    Args:
        inplace: write the result into the input Tensor and return it, as torch does.

    Shapes:
        input ``(*)`` -> output ``(*)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.ReLU()(jnp.array([-1.0, 2.0]))  # [0., 2.]
    """

    _fn = staticmethod(F.relu)
    _has_inplace = True


class GELU(Module):
    """Gaussian error linear unit (mirrors ``torch.nn.GELU``).

    Args:
        approximate: ``'none'`` (exact, erf-based) or ``'tanh'``.

    Shapes:
        input ``(*)`` -> output ``(*)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.GELU(approximate="tanh")(jnp.ones(3)).shape
        spx.Size([3])
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            # torch only notices at the first forward; failing here points at the real line.
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input: Array) -> Array:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(_Plain):
    """``x * sigmoid(x)`` (mirrors ``torch.nn.SiLU``).

    Args:
        inplace: write the result into the input Tensor and return it, as torch does.

    Shapes:
        input ``(*)`` -> output ``(*)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.SiLU()(jnp.zeros(2))  # [0., 0.]
    """

    _fn = staticmethod(F.silu)
    _has_inplace = True


class Mish(_Plain):
    """``x * tanh(softplus(x))`` (mirrors ``torch.nn.Mish``).

    Args:
        inplace: write the result into the input Tensor and return it, as torch does.

    Shapes:
        input ``(*)`` -> output ``(*)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Mish()(jnp.zeros(2))  # [0., 0.]
    """

    _fn = staticmethod(F.mish)
    _has_inplace = True


class Tanh(_Plain):
    """Hyperbolic tangent (mirrors ``torch.nn.Tanh``).

    Shapes:
        input ``(*)`` -> output ``(*)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Tanh()(jnp.zeros(2))  # [0., 0.]
    """

    _fn = staticmethod(F.tanh)


class Sigmoid(_Plain):
    """``1 / (1 + exp(-x))`` (mirrors ``torch.nn.Sigmoid``).

    Shapes:
        input ``(*)`` -> output ``(*)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Sigmoid()(jnp.zeros(2))  # [0.5, 0.5]
    """

    _fn = staticmethod(F.sigmoid)


class _SoftmaxBase(Module):
    _fn: Any = None

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = _validate.as_optional_int(dim, "dim", type(self).__name__)

    def forward(self, input: Array) -> Array:
        return type(self)._fn(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """Softmax along ``dim`` (mirrors ``torch.nn.Softmax``).

    Args:
        dim: the dimension that sums to 1. ``None`` keeps torch's deprecated implicit choice
            (with its warning); pass it explicitly.

    Shapes:
        input ``(*)`` -> output ``(*)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Softmax(dim=-1)(jnp.zeros((2, 4)))  # all 0.25
    """

    _fn = staticmethod(F.softmax)


class LogSoftmax(_SoftmaxBase):
    """``log(softmax(x))`` along ``dim``, computed stably (mirrors ``torch.nn.LogSoftmax``).

    Args:
        dim: as in :class:`Softmax`.

    Shapes:
        input ``(*)`` -> output ``(*)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.LogSoftmax(dim=1)(jnp.zeros((2, 4)))  # all log(0.25)
    """

    _fn = staticmethod(F.log_softmax)


class Softmin(_SoftmaxBase):
    """``softmax(-x)`` along ``dim`` (mirrors ``torch.nn.Softmin``).

    Args:
        dim: as in :class:`Softmax`.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Softmin(dim=1)(jnp.zeros((2, 4)))  # all 0.25
    """

    _fn = staticmethod(F.softmin)


class LeakyReLU(Module):
    """``x`` if ``x >= 0`` else ``negative_slope * x`` (mirrors ``torch.nn.LeakyReLU``).

    Args:
        negative_slope: slope for negative inputs.
        inplace: write the result into the input Tensor and return it, as torch does.

    Shapes:
        input ``(*)`` -> output ``(*)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.LeakyReLU(0.1)(jnp.array([-1.0, 1.0]))  # [-0.1, 1.]
    """

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Array) -> Array:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + _inplace_repr(self.inplace, ", ")


class RReLU(Module):
    """Randomized leaky ReLU (mirrors ``torch.nn.RReLU``).

    ``x`` if ``x > 0`` else ``a * x``: in training mode ``a`` is drawn per element from
    ``U(lower, upper)`` with a fresh key from ``spx.manual_seed``'s generator each call (as
    :class:`Dropout` draws its mask); in eval mode ``a = (lower + upper) / 2``.

    Args:
        lower: lower bound of the slope distribution.
        upper: upper bound; ``lower > upper`` raises ValueError here (torch only fails at the
            first call).
        inplace: write the result into the input Tensor and return it, as torch does.

    Shapes:
        input ``(*)`` -> output ``(*)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.RReLU(0.1, 0.3).eval()(jnp.array([-1.0, 1.0]))  # [-0.2, 1.]
    """

    def __init__(
        self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False
    ) -> None:
        super().__init__()
        lo = _validate.as_float(lower, "lower", "RReLU")
        hi = _validate.as_float(upper, "upper", "RReLU")
        if lo > hi:
            raise ValueError(
                f"RReLU: lower ({lower}) must be at most upper ({upper}); swap them, e.g. "
                f"nn.RReLU({upper}, {lower})"
            )
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Array) -> Array:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + _inplace_repr(self.inplace, ", ")


class ELU(Module):
    """``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)`` (mirrors ``torch.nn.ELU``).

    Args:
        alpha: scale of the negative branch.
        inplace: write the result into the input Tensor and return it, as torch does.

    Shapes:
        input ``(*)`` -> output ``(*)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.ELU()(jnp.array([0.0, 1.0]))  # [0., 1.]
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Array) -> Array:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + _inplace_repr(self.inplace, ", ")


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold`` (mirrors ``nn.Softplus``).

    Args:
        beta: sharpness.
        threshold: where ``beta * x > threshold`` the output is ``x``.

    Shapes:
        input ``(*)`` -> output ``(*)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Softplus()(jnp.zeros(1))  # [log 2]
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Array) -> Array:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """``clip(x, min_val, max_val)`` (mirrors ``torch.nn.Hardtanh``).

    Args:
        min_val: lower bound.
        max_val: upper bound (must exceed ``min_val``).
        inplace: write the result into the input Tensor and return it, as torch does.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Hardtanh()(jnp.array([-2.0, 2.0]))  # [-1., 1.]
    """

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        if max_val <= min_val:
            raise ValueError(
                f"Hardtanh: max_val ({max_val}) must be greater than min_val ({min_val})"
            )
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input: Array) -> Array:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + _inplace_repr(self.inplace, ", ")


class ReLU6(Hardtanh):
    """``min(max(0, x), 6)`` (mirrors ``torch.nn.ReLU6``).

    Args:
        inplace: write the result into the input Tensor and return it, as torch does.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.ReLU6()(jnp.array([-1.0, 7.0]))  # [0., 6.]
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class PReLU(Module):
    """``x`` if ``x >= 0`` else ``weight * x`` with a learned slope (mirrors ``torch.nn.PReLU``).

    Args:
        num_parameters: 1 (one slope shared by all channels) or the channel count (dim 1).
        init: initial slope.
        device: optional device spec for the weight.
        dtype: weight dtype (default float32).

    Shapes:
        input ``(*)`` with ``C = num_parameters`` at dim 1 when ``num_parameters > 1``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.PReLU()(jnp.array([-1.0, 1.0]))  # [-0.25, 1.]
    """

    def __init__(
        self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__()
        num_parameters = _validate.as_int(num_parameters, "num_parameters", "PReLU", minimum=1)
        self.num_parameters = num_parameters
        self.init = init
        weight = jnp.full((num_parameters,), init, dtype=dtype or get_default_dtype())
        if device is not None:
            from spx._device import device as resolve_device

            weight = jax.device_put(weight, resolve_device(device))
        self.weight = Parameter(weight)

    def reset_parameters(self) -> None:
        constant_(self.weight, self.init)

    def forward(self, input: Array) -> Array:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class SELU(_Plain):
    """Scaled ELU with torch's constants (mirrors ``torch.nn.SELU``)."""

    _fn = staticmethod(F.selu)
    _has_inplace = True


class Hardsigmoid(_Plain):
    """``relu6(x + 3) / 6`` (mirrors ``torch.nn.Hardsigmoid``)."""

    _fn = staticmethod(F.hardsigmoid)
    _has_inplace = True


class Hardswish(_Plain):
    """``x * relu6(x + 3) / 6`` (mirrors ``torch.nn.Hardswish``)."""

    _fn = staticmethod(F.hardswish)
    _has_inplace = True


class Softsign(_Plain):
    """``x / (1 + |x|)`` (mirrors ``torch.nn.Softsign``)."""

    _fn = staticmethod(F.softsign)


class LogSigmoid(_Plain):
    """``log(sigmoid(x))`` computed stably (mirrors ``torch.nn.LogSigmoid``)."""

    _fn = staticmethod(F.logsigmoid)


class Tanhshrink(_Plain):
    """``x - tanh(x)`` (mirrors ``torch.nn.Tanhshrink``)."""

    _fn = staticmethod(F.tanhshrink)


class CELU(Module):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` (mirrors ``torch.nn.CELU``).

    Args:
        alpha: scale of the negative branch.
        inplace: write the result into the input Tensor and return it, as torch does.
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Array) -> Array:
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + _inplace_repr(self.inplace, ", ")


class Softshrink(Module):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0 (``nn.Softshrink``).

    Args:
        lambd: the threshold (>= 0).
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        if lambd < 0:
            raise ValueError(f"Softshrink: lambd must be >= 0, got {lambd}")
        self.lambd = lambd

    def forward(self, input: Array) -> Array:
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0 (mirrors ``torch.nn.Hardshrink``).

    Args:
        lambd: the threshold.
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Array) -> Array:
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value`` (mirrors ``torch.nn.Threshold``).

    Args:
        threshold: the cut-off.
        value: the replacement below it.
        inplace: write the result into the input Tensor and return it, as torch does.
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Array) -> Array:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + _inplace_repr(self.inplace, ", ")


class GLU(Module):
    """Gated linear unit: split ``dim`` in halves ``a, b``, return ``a * sigmoid(b)`` (nn.GLU).

    Args:
        dim: the dimension to split (its size must be even).

    Shapes:
        input ``(*, 2N, *)`` -> output ``(*, N, *)``.
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Array) -> Array:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
