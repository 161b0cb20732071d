"""The elementary functions of ``torch.special``: the logistic pair (``expit``, ``logit``),
``exp2``/``expm1``/``log1p``, ``sinc``, ``round``, ``xlogy``/``xlog1py``, ``entr`` and the
softmax family (``softmax``, ``log_softmax``, ``logsumexp``).

The softmax family, ``round`` and ``exp2``/``expm1``/``log1p`` are spx's top-level functions
under torch's ``special`` names. ``logit``, ``sinc``, ``xlogy`` and ``xlog1py`` carry torch's
derivatives at the edges, where JAX's autodiff differs: ``logit``'s is NaN outside ``[0, 1]``
and 0 outside ``[eps, 1 - eps]``; ``sinc``'s is 0 where ``pi * x^2`` underflows;
``xlogy(0, y)``'s in ``x`` is 0 for every ``y``.

Example:
    >>> import spx
    >>> spx.special.xlogy(spx.tensor([0.0, 2.0]), spx.tensor([0.0, 1.0])).tolist()
    [0.0, 0.0]
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
from jax.custom_derivatives import SymbolicZero

from spx._tensor import numpy_names
from spx._tensor.tensor import Tensor
from spx.ops import math as _math
from spx.ops import reduction as _reduction
from spx.ops._args import tensor_arg
from spx.special._common import as_float, binary, floating, floating_pair, half_back, unary

__all__ = [
    "entr", "exp2", "expit", "expm1", "log1p", "log_softmax", "logit", "logsumexp", "round",
    "sinc", "softmax", "xlog1py", "xlogy",
]  # fmt: skip


def _logit_value(x: Any, eps: float | None) -> Any:
    if eps is not None:
        # torch's clamp, x < lo ? lo : (x > hi ? hi : x): for eps > 1/2 (lo > hi) it gives lo
        # below lo and hi elsewhere, where jnp.clip gives hi everywhere.
        x = jnp.where(x < eps, eps, jnp.where(x > 1 - eps, 1 - eps, x)).astype(x.dtype)
    return jnp.log(x / (1 - x))


def _logit_jvp(eps: float | None, primals: tuple, tangents: tuple) -> tuple:
    # torch's: 1 / (x (1 - x)) (+-inf at 0 and 1), NaN outside [0, 1] without eps, 0 outside
    # [eps, 1 - eps] with it. At NaN with eps, torch's CPU kernel gives NaN or 0 depending on
    # where the element falls in its SIMD loop (its CUDA kernel: NaN); spx gives NaN.
    (x,), (t,) = primals, tangents
    slope = 1 / (x * (1 - x))
    if eps is None:
        slope = jnp.where((x < 0) | (x > 1), jnp.nan, slope)
    else:
        slope = jnp.where((x < eps) | (x > 1 - eps), 0, slope)
    return _logit_diff(x, eps), slope.astype(x.dtype) * t


_logit_diff = jax.custom_jvp(_logit_value, nondiff_argnums=(1,))
_logit_diff.defjvp(_logit_jvp)


def _logit(x: Any, eps: float | None) -> Any:
    # A negative eps is torch's "no eps" (its default is -1): no clamp, NaN slope outside [0, 1].
    eps = None if eps is None or eps < 0 else eps
    return half_back(_logit_diff(as_float(x), eps), x)


@jax.custom_jvp
def _sinc_value(x: Any) -> Any:
    return jnp.sinc(x)


@_sinc_value.defjvp
def _sinc_jvp(primals: tuple, tangents: tuple) -> tuple:
    # torch's (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 where the denominator is 0.
    (x,), (t,) = primals, tangents
    px = jnp.pi * x
    denominator = x * px
    safe = jnp.where(denominator == 0, 1, denominator)
    slope = jnp.where(denominator == 0, 0, (px * jnp.cos(px) - jnp.sin(px)) / safe)
    return _sinc_value(x), slope.astype(x.dtype) * t


def _x_log_jvp(value: Any, log: Any, shift: int, primals: tuple, tangents: tuple) -> tuple:
    # torch's d/dx is log(y + shift), masked to 0 where x == 0 and y + shift <= 0 (JAX's is
    # log(y + shift) everywhere: -inf or NaN at x = 0). Where x == 0 and y + shift > 0 it is
    # log(y + shift) as elsewhere (log 2 at (0, 2), inf at (0, inf)); NaN where y is.
    (x, y), (tx, ty) = primals, tangents
    out = value(x, y)
    tangent = jnp.zeros_like(out)
    if not isinstance(tx, SymbolicZero):
        masked = (x == 0) & (y <= -shift)
        tangent = tangent + jnp.where(masked, 0, log(y)).astype(out.dtype) * tx
    if not isinstance(ty, SymbolicZero):
        tangent = tangent + x / (y + shift) * ty
    return out, tangent


@jax.custom_jvp
def _xlogy_value(x: Any, y: Any) -> Any:
    return jsp.xlogy(x, y)


@jax.custom_jvp
def _xlog1py_value(x: Any, y: Any) -> Any:
    return jsp.xlog1py(x, y)


_xlogy_value.defjvp(
    lambda primals, tangents: _x_log_jvp(_xlogy_value, jnp.log, 0, primals, tangents),
    symbolic_zeros=True,
)
_xlog1py_value.defjvp(
    lambda primals, tangents: _x_log_jvp(_xlog1py_value, jnp.log1p, 1, primals, tangents),
    symbolic_zeros=True,
)


_xlogy = floating_pair(_xlogy_value)
_xlog1py = floating_pair(_xlog1py_value)


_expit = floating(jax.nn.sigmoid)
_exp2 = floating(jnp.exp2)
_expm1 = floating(jnp.expm1)
_log1p = floating(jnp.log1p)
_sinc = floating(_sinc_value)
_entr = floating(jsp.entr)


def expit(input: Any) -> Tensor:
    """The logistic sigmoid ``1 / (1 + exp(-x))``.

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.expit``.
    """
    return unary(_expit, (), input, "expit")


def logit(input: Any, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` if ``eps`` is given.

    Args:
        input: ``(*)`` tensor of probabilities.
        eps: the clamp; ``None`` leaves ``p`` as it is (NaN outside ``[0, 1]``).

    Mirrors ``torch.special.logit``.
    """
    return unary(_logit, (None if eps is None else float(eps),), input, "logit")


def exp2(input: Any) -> Tensor:
    """``2 ** x``. Mirrors ``torch.special.exp2``.

    Args:
        input: ``(*)`` tensor.
    """
    return unary(_exp2, (), input, "exp2")


def expm1(input: Any) -> Tensor:
    """``exp(x) - 1``, accurate for small ``x``. Mirrors ``torch.special.expm1``.

    Args:
        input: ``(*)`` tensor.
    """
    return unary(_expm1, (), input, "expm1")


def log1p(input: Any) -> Tensor:
    """``log(1 + x)``, accurate for small ``x``. Mirrors ``torch.special.log1p``.

    Args:
        input: ``(*)`` tensor.
    """
    return unary(_log1p, (), input, "log1p")


def sinc(input: Any) -> Tensor:
    """The normalized sinc ``sin(pi x) / (pi x)``, 1 at 0. Mirrors ``torch.special.sinc``.

    Args:
        input: ``(*)`` tensor.
    """
    return unary(_sinc, (), input, "sinc")


def entr(input: Any) -> Tensor:
    """The elementwise entropy ``-x log x``: 0 at 0, -inf below 0.

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.entr``.
    """
    return unary(_entr, (), input, "entr")


def xlogy(input: Any, other: Any) -> Tensor:
    """``x * log(y)``, 0 where ``x == 0`` (unless ``y`` is NaN).

    Args:
        input: ``(*)`` tensor or number ``x``.
        other: ``(*)`` tensor or number ``y``, broadcast with ``input``.

    Mirrors ``torch.special.xlogy``.
    """
    return binary(_xlogy, input, other, "xlogy")


def xlog1py(input: Any, other: Any) -> Tensor:
    """``x * log1p(y)``, 0 where ``x == 0`` (unless ``y`` is NaN).

    Args:
        input: ``(*)`` tensor or number ``x``.
        other: ``(*)`` tensor or number ``y``, broadcast with ``input``.

    Mirrors ``torch.special.xlog1py``.
    """
    return binary(_xlog1py, input, other, "xlog1py")


def round(input: Any, *, decimals: int = 0) -> Tensor:
    """Round half to even, to ``decimals`` places. Mirrors ``torch.special.round``.

    Args:
        input: ``(*)`` tensor.
        decimals: decimal places (negative: to the left of the point).
    """
    return _math.round(input, decimals=decimals)


def softmax(input: Any, dim: int, *, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``, computed in ``dtype`` if given.

    Args:
        input: ``(*)`` tensor.
        dim: the dimension that sums to 1.
        dtype: cast ``input`` to this first.

    Mirrors ``torch.special.softmax``.
    """
    return tensor_arg(input, "special.softmax").softmax(dim, dtype)


def log_softmax(input: Any, dim: int, *, dtype: Any = None) -> Tensor:
    """``log(softmax(x))`` along ``dim``, computed stably, in ``dtype`` if given.

    Args:
        input: ``(*)`` tensor.
        dim: the dimension normalized over.
        dtype: cast ``input`` to this first.

    Mirrors ``torch.special.log_softmax``.
    """
    return tensor_arg(input, "special.log_softmax").log_softmax(dim, dtype)


def logsumexp(input: Any, dim: Any, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` over ``dim`` (an int or a tuple), computed stably.

    Args:
        input: ``(*)`` tensor.
        dim: the dimension(s) reduced.
        keepdim: keep reduced dimensions as size 1.

    Mirrors ``torch.special.logsumexp``.
    """
    return _reduction.logsumexp(input, dim, keepdim)


# numpy's axis=/keepdims= as torch accepts them (torch.special.softmax(x, axis=0)).
numpy_names.accept(globals(), __all__)
