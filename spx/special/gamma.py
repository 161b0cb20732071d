"""The gamma function family of ``torch.special``: ``gammaln``, ``digamma`` (``psi``),
``polygamma``, ``multigammaln``, ``gammainc``, ``gammaincc`` and the Hurwitz ``zeta``.

Values follow torch at the poles (``digamma(0) = -inf``, ``polygamma(2, 0) = -inf``,
``gammainc(inf, x) = 0``), where JAX's functions give NaN. ``polygamma(1, x)`` is computed by
torch's series (reflection below 1/2, six recurrence steps, an asymptotic tail), so it agrees
with torch near the poles too. Derivatives are torch's: ``polygamma(n + 1, x)`` for
``polygamma(n, x)``, ``-x * zeta(x + 1, q)`` for ``zeta`` in ``q``; ``zeta`` in ``x`` and
``gammainc``/``gammaincc`` in ``input`` have none in torch, and ``backward()`` raises there.

Example:
    >>> import spx
    >>> round(spx.special.zeta(spx.tensor([2.0]), 1.0).item(), 4)  # pi^2 / 6
    1.6449
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp

from spx._tensor.methods.math import _digamma_float, _lgamma_float
from spx._tensor.tensor import Tensor
from spx._validate import as_int
from spx.special._common import (
    as_float,
    binary,
    float_pair,
    floating,
    half_back,
    no_derivative,
    unary,
)

__all__ = [
    "digamma", "gammainc", "gammaincc", "gammaln", "multigammaln", "polygamma", "psi", "zeta",
]  # fmt: skip


def _hurwitz(x: Any, q: Any) -> Any:
    """JAX's Hurwitz zeta with torch's (Cephes's) edge values: inf at ``x = 1`` and at
    non-positive integer ``q`` (JAX gives NaN there for some ``x``), NaN for ``x < 1``."""
    out = jsp.zeta(x, q)
    out = jnp.where((q <= 0) & (q == jnp.floor(q)), jnp.inf, out)
    out = jnp.where(x < 1, jnp.nan, out)
    return jnp.where(x == 1, jnp.inf, out).astype(x.dtype)


def _trigamma(x: Any) -> Any:
    """torch's ``polygamma(1, x)``: reflection below 1/2, then six recurrence steps and the
    asymptotic series (finite, huge values at the negative integers, as torch's)."""
    reflect = x < 0.5
    s = jnp.sin(jnp.pi * x)
    result = jnp.where(reflect, -(jnp.pi * jnp.pi) / (s * s), 0).astype(x.dtype)
    y = jnp.where(reflect, 1 - x, x)
    for _ in range(6):
        result = result + 1 / (y * y)
        y = y + 1
    ixx = 1 / (y * y)
    tail = (1 + 1 / (2 * y) + ixx * (1 / 6 - ixx * (1 / 30 - ixx * (1 / 42)))) / y
    return jnp.where(reflect, -(result + tail), result + tail)


def _polygamma_value(x: Any, n: int) -> Any:
    if n == 0:
        return _digamma_float(x)
    if n == 1:
        return _trigamma(x)
    sign = 1.0 if n % 2 else -1.0
    return sign * math.exp(math.lgamma(n + 1.0)) * _hurwitz(jnp.asarray(n + 1, x.dtype), x)


@jax.custom_jvp
def _digamma_value(x: Any) -> Any:
    return _digamma_float(x)


@_digamma_value.defjvp
def _digamma_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    return _digamma_value(x), _trigamma(x) * t


def _polygamma_diff_jvp(n: int, primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    return _polygamma_diff(x, n), _polygamma_diff(x, n + 1) * t


_polygamma_diff = jax.custom_jvp(_polygamma_value, nondiff_argnums=(1,))
_polygamma_diff.defjvp(_polygamma_diff_jvp)


def _polygamma(x: Any, n: int) -> Any:
    return half_back(_polygamma_diff(as_float(x), n), x)


def _multigammaln(x: Any, p: int) -> Any:
    v = as_float(x)
    terms = [_lgamma_float(v - j / 2) for j in range(p)]
    return half_back(sum(terms[1:], terms[0]) + p * (p - 1) / 4 * math.log(math.pi), x)


@jax.custom_jvp
def _zeta_value(x: Any, q: Any) -> Any:
    return _hurwitz(x, q)


def _zeta_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x, q), (tx, tq) = primals, tangents
    no_derivative(tx, "zeta", "input", "spx.special.zeta(x.detach(), q)")
    out = _zeta_value(x, q)
    return out, -x * _zeta_value(x + 1, q) * tq


_zeta_value.defjvp(_zeta_jvp, symbolic_zeros=True)


def _zeta(x: Any, q: Any) -> Any:
    return _zeta_value(*float_pair(x, q))


def _igamma_value(a: Any, x: Any, upper: bool) -> Any:
    """JAX's regularized incomplete gamma with torch's rules at the edges, applied in torch's
    order (the first that holds wins): NaN for negative arguments; at ``a = 0``, ``P = 1``
    for ``x > 0`` (else NaN); at ``x = 0``, ``P = 0``; at ``a = inf``, ``P = 0`` (NaN if ``x``
    is infinite too); at ``x = inf``, ``P = 1``. ``Q = 1 - P`` at each."""
    out = jsp.gammaincc(a, x) if upper else jsp.gammainc(a, x)
    one, zero = (0.0, 1.0) if upper else (1.0, 0.0)
    out = jnp.where(jnp.isinf(x), one, out)
    out = jnp.where(jnp.isinf(a), jnp.where(jnp.isinf(x), jnp.nan, zero), out)
    out = jnp.where(x == 0, zero, out)
    out = jnp.where(a == 0, jnp.where(x > 0, one, jnp.nan), out)
    return jnp.where((x < 0) | (a < 0), jnp.nan, out).astype(out.dtype)


def _igamma_jvp(upper: bool, primals: tuple, tangents: tuple) -> tuple:
    (a, x), (ta, tx) = primals, tangents
    fn = "gammaincc" if upper else "gammainc"
    no_derivative(ta, fn, "input", f"spx.special.{fn}(a.detach(), x)")
    out = _igamma_diff(a, x, upper)
    slope = jnp.exp((a - 1) * jnp.log(x) - x - jsp.gammaln(a))
    return out, (-slope if upper else slope) * tx


_igamma_diff = jax.custom_jvp(_igamma_value, nondiff_argnums=(2,))
_igamma_diff.defjvp(_igamma_jvp, symbolic_zeros=True)


def _gammainc(a: Any, x: Any) -> Any:
    return _igamma_diff(*float_pair(a, x), False)


def _gammaincc(a: Any, x: Any) -> Any:
    return _igamma_diff(*float_pair(a, x), True)


_gammaln = floating(_lgamma_float)
_digamma = floating(_digamma_value)


def gammaln(input: Any) -> Tensor:
    """``log|Gamma(x)|``, elementwise (inf at the poles 0, -1, -2, ...).

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.gammaln``.
    """
    return unary(_gammaln, (), input, "gammaln")


def digamma(input: Any) -> Tensor:
    """``d/dx log Gamma(x)``: -inf at +0, +inf at -0, NaN at the negative integers.

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.digamma``.
    """
    return unary(_digamma, (), input, "digamma")


psi = digamma


def polygamma(n: int, input: Any) -> Tensor:
    """The ``n``-th derivative of :func:`digamma` (note the argument order: ``n`` first).

    Args:
        n: the order, ``n >= 0``.
        input: ``(*)`` tensor. Mirrors ``torch.special.polygamma``.
    """
    n = as_int(n, "n", "special.polygamma")
    if n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n (got n={n})")
    return unary(_polygamma, (n,), input, "polygamma")


def multigammaln(input: Any, p: int) -> Tensor:
    """The multivariate log-gamma function ``sum_j lgamma(x - j/2) + p(p-1)/4 log(pi)`` over
    ``j < p``.

    Args:
        input: ``(*)`` tensor.
        p: the dimension, ``p >= 1``. Mirrors ``torch.special.multigammaln``.
    """
    p = as_int(p, "p", "special.multigammaln")
    if p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1 (got p={p})")
    return unary(_multigammaln, (p,), input, "multigammaln")


def gammainc(input: Any, other: Any) -> Tensor:
    """The regularized lower incomplete gamma function ``P(a, x)`` (``a = input``).

    Args:
        input: ``(*)`` tensor (or number) ``a >= 0``.
        other: ``(*)`` tensor (or number) ``x >= 0``, broadcast with ``input``.

    Differentiable in ``other`` only (as torch). Mirrors ``torch.special.gammainc``.
    """
    return binary(_gammainc, input, other, "gammainc")


def gammaincc(input: Any, other: Any) -> Tensor:
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``.

    Args:
        input: ``(*)`` tensor (or number) ``a >= 0``.
        other: ``(*)`` tensor (or number) ``x >= 0``, broadcast with ``input``.

    Differentiable in ``other`` only (as torch). Mirrors ``torch.special.gammaincc``.
    """
    return binary(_gammaincc, input, other, "gammaincc")


def zeta(input: Any, other: Any) -> Tensor:
    """The Hurwitz zeta function ``sum_k (k + q)^-x`` (``x = input``, ``q = other``).

    Args:
        input: ``(*)`` tensor (or number), the exponent ``x``.
        other: ``(*)`` tensor (or number), the shift ``q``, broadcast with ``input``.

    Differentiable in ``other`` only (as torch). Mirrors ``torch.special.zeta``.
    """
    return binary(_zeta, input, other, "zeta")
