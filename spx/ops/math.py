"""torch's pointwise functions (``spx.exp``, ``spx.add``, ``spx.clamp``, ``spx.softmax``, ...).

Each is the Tensor method of the same name applied to ``input`` (see :mod:`spx.ops._args` for
what an argument may be), so a function and its method can never disagree. Binary functions
take a Python number on either side as torch's "wrapped number": it does not change the
tensor's dtype.

Example:
    >>> import spx
    >>> spx.clamp(spx.tensor([-2.0, 0.5, 3.0]), min=-1, max=1).tolist()
    [-1.0, 0.5, 1.0]
"""

from __future__ import annotations

from typing import Any

from spx._tensor import numpy_names
from spx._tensor.dispatch import apply
from spx._tensor.methods import math as _m
from spx._tensor.tensor import Tensor
from spx.ops._args import first_operand, operand, tensor_arg

_UNARY_NAMES = (
    "abs", "absolute", "neg", "negative", "positive", "exp", "exp2", "expm1", "log", "log2",
    "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "arcsin", "acos", "arccos",
    "atan", "arctan", "sinh", "cosh", "tanh", "asinh", "arcsinh", "acosh", "arccosh", "atanh",
    "arctanh", "sigmoid", "relu", "floor", "ceil", "trunc", "fix", "frac", "sign", "sgn",
    "reciprocal", "square", "erf", "erfc", "erfinv", "lgamma", "digamma", "sinc", "deg2rad",
    "rad2deg", "logical_not", "bitwise_not", "signbit", "conj", "angle", "i0",
)  # fmt: skip

_BINARY_NAMES = (
    "mul", "multiply", "true_divide", "floor_divide", "remainder", "fmod", "pow",
    "float_power", "atan2", "arctan2", "fmax", "fmin", "logical_and", "logical_or",
    "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
    "bitwise_right_shift", "hypot", "copysign", "xlogy", "logaddexp", "logaddexp2",
    "heaviside", "gcd", "lcm", "ldexp", "igamma", "igammac", "nextafter",
)  # fmt: skip

__all__ = [
    *_UNARY_NAMES, *_BINARY_NAMES,
    "add", "addcdiv", "addcmul", "clamp", "clamp_max", "clamp_min", "clip", "diff", "div", "divide",
    "lerp", "log_softmax", "logit", "mvlgamma", "nan_to_num", "polygamma", "round", "rsub",
    "softmax", "sub", "subtract",
]  # fmt: skip


def _unary(name: str) -> Any:
    method = getattr(Tensor, name)

    def fn(input: Any) -> Tensor:
        return method(tensor_arg(input, name))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` of ``input`` (mirrors ``torch.{name}``)."
    return fn


def _binary(name: str) -> Any:
    method = getattr(Tensor, name)

    def fn(input: Any, other: Any) -> Tensor:
        return method(first_operand(input, other, name), operand(other, name))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"Elementwise ``{name}`` of ``input`` and ``other`` (broadcast; mirrors ``torch.{name}``)."
    )
    return fn


for _name in _UNARY_NAMES:
    globals()[_name] = _unary(_name)
for _name in _BINARY_NAMES:
    globals()[_name] = _binary(_name)


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input + alpha * other`` (mirrors ``torch.add``).

    Example:
        >>> import spx
        >>> spx.add(spx.ones(2), spx.ones(2), alpha=3).tolist()
        [4.0, 4.0]
    """
    return first_operand(input, other, "add").add(operand(other, "add"), alpha=alpha)


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input - alpha * other`` (mirrors ``torch.sub``)."""
    return first_operand(input, other, "sub").sub(operand(other, "sub"), alpha=alpha)


subtract = sub


def rsub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``other - alpha * input`` (mirrors ``torch.rsub``)."""
    return apply(_m._sub_scaled, (), (operand(other, "rsub"), tensor_arg(input, "rsub"), alpha))


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """``input / other``; ``rounding_mode`` ``"trunc"`` or ``"floor"`` rounds the quotient.

    Example:
        >>> import spx
        >>> spx.div(spx.tensor([-7, 7]), 2, rounding_mode="trunc").tolist()
        [-3, 3]
    """
    x = first_operand(input, other, "div")
    return x.div(operand(other, "div"), rounding_mode=rounding_mode)


divide = div


def round(input: Any, *, decimals: int = 0) -> Tensor:
    """Round half to even, to ``decimals`` decimal places (mirrors ``torch.round``)."""
    return tensor_arg(input, "round").round(decimals=decimals)


def logit(input: Any, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` if ``eps`` is given."""
    return tensor_arg(input, "logit").logit(eps)


def clamp(input: Any, min: Any = None, max: Any = None) -> Tensor:
    """Limit ``input`` to ``[min, max]`` (numbers or tensors; mirrors ``torch.clamp``).

    Example:
        >>> import spx
        >>> spx.clamp(spx.tensor([-2.0, 3.0]), min=0.0).tolist()
        [0.0, 3.0]
    """
    return tensor_arg(input, "clamp").clamp(min, max)


clip = clamp


def clamp_min(input: Any, min: Any) -> Tensor:
    """``input`` with values below ``min`` raised to ``min`` (mirrors ``torch.clamp_min``)."""
    return tensor_arg(input, "clamp_min").clamp_min(min)


def clamp_max(input: Any, max: Any) -> Tensor:
    """``input`` with values above ``max`` lowered to ``max`` (mirrors ``torch.clamp_max``)."""
    return tensor_arg(input, "clamp_max").clamp_max(max)


def nan_to_num(
    input: Any, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
) -> Tensor:
    """NaN -> ``nan``, +-inf -> ``posinf``/``neginf`` (default: the dtype's extremes)."""
    return tensor_arg(input, "nan_to_num").nan_to_num(nan, posinf, neginf)


def lerp(input: Any, end: Any, weight: Any) -> Tensor:
    """``input + weight * (end - input)`` (mirrors ``torch.lerp``)."""
    return tensor_arg(input, "lerp").lerp(operand(end, "lerp", "end"), operand(weight, "lerp"))


def addcmul(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 * tensor2`` (mirrors ``torch.addcmul``)."""
    t1, t2 = operand(tensor1, "addcmul", "tensor1"), operand(tensor2, "addcmul", "tensor2")
    return tensor_arg(input, "addcmul").addcmul(t1, t2, value=value)


def addcdiv(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (mirrors ``torch.addcdiv``)."""
    t1, t2 = operand(tensor1, "addcdiv", "tensor1"), operand(tensor2, "addcdiv", "tensor2")
    return tensor_arg(input, "addcdiv").addcdiv(t1, t2, value=value)


def softmax(input: Any, dim: int, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim`` (mirrors ``torch.softmax``).

    Example:
        >>> import spx
        >>> spx.softmax(spx.zeros(2, 2), dim=-1).tolist()
        [[0.5, 0.5], [0.5, 0.5]]
    """
    return tensor_arg(input, "softmax").softmax(dim, dtype)


def log_softmax(input: Any, dim: int, dtype: Any = None) -> Tensor:
    """``log(softmax(x))`` along ``dim``, computed stably (mirrors ``torch.log_softmax``)."""
    return tensor_arg(input, "log_softmax").log_softmax(dim, dtype)


def diff(input: Any, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None):
    """``n``-th forward difference along ``dim`` (mirrors ``torch.diff``).

    Example:
        >>> import spx
        >>> spx.diff(spx.tensor([1, 4, 9])).tolist()
        [3, 5]
    """
    x = tensor_arg(input, "diff")
    pre = None if prepend is None else tensor_arg(prepend, "diff", "prepend")
    app = None if append is None else tensor_arg(append, "diff", "append")
    return x.diff(n, dim, pre, app)


def polygamma(n: int, input: Any) -> Tensor:
    """The ``n``-th derivative of the digamma function (mirrors ``torch.polygamma``)."""
    return tensor_arg(input, "polygamma").polygamma(n)


def mvlgamma(input: Any, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension ``p`` (mirrors ``torch.mvlgamma``)."""
    return tensor_arg(input, "mvlgamma").mvlgamma(p)


# numpy's axis=/keepdims= as torch accepts them (torch.sum(x, axis=0)).
numpy_names.accept(globals(), __all__)
