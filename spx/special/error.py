"""The error function family and the standard normal distribution of ``torch.special``:
``erf``, ``erfc``, ``erfcx``, ``erfinv``, ``ndtr``, ``ndtri``, ``log_ndtr``.

Values come from ``jax.scipy.special``; derivatives are torch's formulas where JAX's differ
at edge values (``ndtri`` at 0 and 1 has slope inf as in torch, not 0; ``erfcx`` and
``log_ndtr`` use torch's expressions, so the two agree in float32 far in the tails too).
Integer input is computed as float32, as torch promotes it.

Example:
    >>> import spx
    >>> spx.special.ndtr(spx.tensor([0.0])).tolist()
    [0.5]
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp

from spx._tensor.tensor import Tensor
from spx.special._common import floating, unary

__all__ = ["erf", "erfc", "erfcx", "erfinv", "log_ndtr", "ndtr", "ndtri"]

_SQRT_2PI = math.sqrt(2 * math.pi)


@jax.custom_jvp
def _erfcx_value(x: Any) -> Any:
    return jsp.erfcx(x)


@_erfcx_value.defjvp
def _erfcx_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    out = _erfcx_value(x)
    return out, (2 * x * out - 2 / math.sqrt(math.pi)) * t


@jax.custom_jvp
def _ndtri_value(p: Any) -> Any:
    return jsp.ndtri(p)


@_ndtri_value.defjvp
def _ndtri_jvp(primals: tuple, tangents: tuple) -> tuple:
    # 1 / pdf(ndtri(p)): inf at p = 0 and 1, as torch's (JAX's autodiff gives 0 there).
    (p,), (t,) = primals, tangents
    out = _ndtri_value(p)
    return out, _SQRT_2PI * jnp.exp(out * out / 2) * t


@jax.custom_jvp
def _log_ndtr_value(x: Any) -> Any:
    return jsp.log_ndtr(x)


@_log_ndtr_value.defjvp
def _log_ndtr_jvp(primals: tuple, tangents: tuple) -> tuple:
    # pdf(x) / ndtr(x) = exp(-(log_ndtr(x) + x^2 / 2)) / sqrt(2 pi): torch's expression.
    (x,), (t,) = primals, tangents
    out = _log_ndtr_value(x)
    return out, jnp.exp(-(out + x * x / 2)) / _SQRT_2PI * t


_erf = floating(jsp.erf)
_erfc = floating(jsp.erfc)
_erfinv = floating(jsp.erfinv)
_erfcx = floating(_erfcx_value)
_ndtr = floating(jsp.ndtr)
_ndtri = floating(_ndtri_value)
_log_ndtr = floating(_log_ndtr_value)


def erf(input: Any) -> Tensor:
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``, elementwise.

    Args:
        input: ``(*)`` tensor (or number).

    Returns:
        ``(*)``, float (ints as float32). Mirrors ``torch.special.erf``.
    """
    return unary(_erf, (), input, "erf")


def erfc(input: Any) -> Tensor:
    """The complementary error function ``1 - erf(x)``, accurate where ``erf(x)`` is near 1.

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.erfc``.
    """
    return unary(_erfc, (), input, "erfc")


def erfcx(input: Any) -> Tensor:
    """The scaled complementary error function ``exp(x^2) * erfc(x)`` (finite for large ``x``;
    inf for ``x`` below about -26.7).

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.erfcx``.
    """
    return unary(_erfcx, (), input, "erfcx")


def erfinv(input: Any) -> Tensor:
    """The inverse error function on ``[-1, 1]`` (+-inf at +-1, NaN outside).

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.erfinv``.
    """
    return unary(_erfinv, (), input, "erfinv")


def ndtr(input: Any) -> Tensor:
    """The standard normal CDF ``(1 + erf(x / sqrt(2))) / 2``.

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.ndtr``.
    """
    return unary(_ndtr, (), input, "ndtr")


def ndtri(input: Any) -> Tensor:
    """The inverse of :func:`ndtr` (the normal quantile function) on ``[0, 1]``.

    Args:
        input: ``(*)`` tensor of probabilities. Mirrors ``torch.special.ndtri``.
    """
    return unary(_ndtri, (), input, "ndtri")


def log_ndtr(input: Any) -> Tensor:
    """``log(ndtr(x))``, accurate for very negative ``x`` where ``ndtr`` underflows.

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.log_ndtr``.
    """
    return unary(_log_ndtr, (), input, "log_ndtr")
