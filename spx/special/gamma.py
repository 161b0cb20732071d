"""The gamma function family of ``torch.special``: ``gammaln``, ``digamma`` (``psi``),
``polygamma``, ``multigammaln``, ``gammainc``, ``gammaincc`` and the Hurwitz ``zeta``.

Values follow torch at the poles (``digamma(0) = -inf``, ``polygamma(2, 0) = -inf``,
``gammainc(inf, x) = 0``), where JAX's functions give NaN. ``polygamma(1, x)`` is computed by
torch's series (reflection below 1/2, six recurrence steps, an asymptotic tail), so it agrees
with torch near the poles too; ``polygamma(n >= 2, x)`` at negative non-integer ``x`` comes
from the reflection formula (XLA's Hurwitz zeta is wrong at negative ``q``). Derivatives are
torch's: ``polygamma(n + 1, x)`` for ``polygamma(n, x)``, ``-x * zeta(x + 1, q)`` for ``zeta``
in ``q``; ``zeta`` in ``x`` and ``gammainc``/``gammaincc`` in ``input`` have none in torch, and
``backward()`` raises there.

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

from spx._tensor.tensor import Tensor
from spx._validate import as_int
from spx.special._common import (
    as_float,
    binary,
    float_pair,
    floating,
    floating_pair,
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
    x, q = jnp.broadcast_arrays(x, q)
    # XLA's zeta is wrong below q ~ -1 (zeta(3, -9.5) gave -7e13; torch 0.005) and right in
    # (-1, 0), so q < -1 is shifted into (-1, 0) first: zeta(x, q) = sum_{k < n} (q + k)^-x +
    # zeta(x, q + n), n = ceil(-q) - 1, the sum Cephes (torch) starts with too. A non-integer x
    # gives NaN there, as torch's. (Like torch's, the loop is as long as -q: q = -inf is not
    # shifted.)
    # (A non-positive integer q is inf below, with no sum: it would run as long as -q, which
    # a float32 count cannot even reach past 2**24.)
    shift = (q < -1) & jnp.isfinite(q) & (q != jnp.floor(q))
    n = jnp.where(shift, jnp.ceil(-q) - 1, 0).astype(q.dtype)

    def add_term(state: tuple) -> tuple:
        k, acc = state
        return k + 1, acc + jnp.where(k < n, jnp.power(q + k, -x), 0)

    zero = jnp.zeros((), q.dtype)
    _, head = jax.lax.while_loop(
        lambda state: state[0] < jnp.max(n, initial=zero), add_term, (zero, jnp.zeros_like(q))
    )
    out = _zeta_tail(x, q + n) + head
    out = jnp.where((q <= 0) & (q == jnp.floor(q)), jnp.inf, out)
    out = jnp.where(x < 1, jnp.nan, out)
    return jnp.where(x == 1, jnp.inf, out).astype(x.dtype)


def _zeta_tail(x: Any, q: Any) -> Any:
    """JAX's Hurwitz zeta, and for a large ``x``, where it gives NaN (``x = 1e4``, ``inf``),
    the first terms of the sum ``sum_k (q + k)^-x`` (Cephes's, torch's answer there: each
    term is at most ``((q + 1) / q)^-x`` times the one before, or underflows)."""
    out = jsp.zeta(x, q)
    direct = sum(jnp.power(q + k, -x) for k in range(8))
    return jnp.where(jnp.isnan(out) & (x > 64) & ~jnp.isnan(q), direct, out)


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


def _cot_derivative(n: int) -> list[float]:
    """Coefficients (constant first) of the polynomial ``P`` with ``cot^(n)(t) = P(cot t)``:
    ``P_0(c) = c``, ``P_(k+1)(c) = -(1 + c^2) P_k'(c)``."""
    p = [0.0, 1.0]
    for _ in range(n):
        slope = [i * a for i, a in enumerate(p)][1:]
        p = [0.0] * (len(slope) + 2)
        for i, a in enumerate(slope):
            p[i] -= a
            p[i + 2] -= a
    return p


def _polygamma_series(x: Any, n: int) -> Any:
    sign = 1.0 if n % 2 else -1.0
    return sign * math.exp(math.lgamma(n + 1.0)) * _hurwitz(jnp.asarray(n + 1, x.dtype), x)


def _polygamma_reflected(x: Any, n: int) -> Any:
    """``polygamma(n, x)`` for negative non-integer ``x`` by the reflection formula
    ``psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) cot^(n)(pi x)``. XLA's Hurwitz zeta is
    wrong at negative ``q`` (``zeta(3, -9.5)`` comes out -7e13; torch: 0.005); torch sums
    Cephes's series there, which this agrees with to rounding."""
    r = x - jnp.round(x)  # exact, in [-1/2, 1/2]; cot has period pi
    # cos(pi r) as sin(pi (1/2 - |r|)): exactly 0 at the half-integers (cos(pi / 2) is not).
    cot = jnp.sin(jnp.pi * (0.5 - jnp.abs(r))) / jnp.sin(jnp.pi * r)
    poly = jnp.zeros_like(x)
    for a in reversed(_cot_derivative(n)):
        poly = poly * cot + a
    sign = -1.0 if n % 2 else 1.0
    safe = jnp.where(x < 0, 1 - x, 1)
    return sign * _polygamma_series(safe, n) - math.pi ** (n + 1) * poly


def _polygamma_value(x: Any, n: int) -> Any:
    if n == 0:
        return _digamma_value(x)
    if n == 1:
        return _trigamma(x)
    reflect = (x < 0) & (x != jnp.floor(x)) & jnp.isfinite(x)
    safe = jnp.where(reflect, x, -0.5)
    out = jnp.where(reflect, _polygamma_reflected(safe, n), _polygamma_series(x, n))
    return out.astype(x.dtype)


@jax.custom_jvp
def _digamma_value(x: Any) -> Any:
    # torch: the one-sided limits at the pole 0, -inf at +0 and +inf at -0 (JAX gives NaN).
    return jnp.where(x == 0, -jnp.copysign(jnp.inf, x).astype(x.dtype), jsp.digamma(x))


@_digamma_value.defjvp
def _digamma_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    return _digamma_value(x), _trigamma(x) * t


@jax.custom_jvp
def _lgamma_value(x: Any) -> Any:
    return jsp.gammaln(x)


@_lgamma_value.defjvp
def _lgamma_jvp(primals: tuple, tangents: tuple) -> tuple:
    # d lgamma = digamma, with torch's values at the pole 0 (-inf at +0; JAX gives NaN).
    (x,), (t,) = primals, tangents
    return _lgamma_value(x), _digamma_value(x) * t


def _polygamma_diff_jvp(n: int, primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    return _polygamma_diff(x, n), _polygamma_diff(x, n + 1) * t


_polygamma_diff = jax.custom_jvp(_polygamma_value, nondiff_argnums=(1,))
_polygamma_diff.defjvp(_polygamma_diff_jvp)


def _polygamma(x: Any, n: int) -> Any:
    return half_back(_polygamma_diff(as_float(x), n), x)


def _multigammaln(x: Any, p: int) -> Any:
    v = as_float(x)
    terms = [_lgamma_value(v - j / 2) for j in range(p)]
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


# Taylor coefficients in eta of Temme's C_0 and C_1 (DLMF 8.12.8; Cephes's d[0], d[1]).
_TEMME = (
    (-3.3333333333333333e-1, 8.3333333333333333e-2, -1.4814814814814815e-2,
     1.1574074074074074e-3, 3.527336860670194e-4, -1.7875514403292181e-4,
     3.9192631785224378e-5, -2.1854485106799922e-6, -1.85406221071516e-6,
     8.296711340953086e-7),
    (-1.8518518518518519e-3, -3.4722222222222222e-3, 2.6455026455026455e-3,
     -9.9022633744855967e-4, 2.0576131687242798e-4, -4.0187757201646091e-7,
     -1.8098550334489978e-5, 7.6491609160811101e-6, -1.6120900894563446e-6,
     4.6471278028074343e-9),
)  # fmt: skip


def _log1pmx(s: Any) -> Any:
    """``log1p(s) - s`` without the cancellation near 0 (its series below ``|s| = 0.1``)."""
    series = jnp.zeros_like(s)
    for k in range(10, 1, -1):
        series = (series + (-1.0) ** (k + 1) / k) * s
    return jnp.where(jnp.abs(s) < 0.1, series * s, jnp.log1p(s) - s)


def _temme(a: Any, x: Any, upper: bool) -> Any:
    """Temme's uniform expansion of the regularized incomplete gamma for a large ``a`` and ``x``
    within 30% of ``a`` (two terms: the third is below 1e-6 from a = 20), as Cephes's
    ``asymptotic_series``: ``Q = erfc(eta sqrt(a / 2)) / 2 + R``,
    ``R = exp(-a eta^2 / 2) / sqrt(2 pi a) (C_0(eta) + C_1(eta) / a)``; ``P = 1 - Q`` the same
    way with the signs turned."""
    s = (x - a) / a
    eta = jnp.sign(s) * jnp.sqrt(jnp.maximum(-2 * _log1pmx(s), 0))
    total = jnp.zeros_like(a)
    for k, coefficients in enumerate(_TEMME):
        c = jnp.zeros_like(eta)
        for coefficient in reversed(coefficients):
            c = c * eta + coefficient
        total = total + c / a**k
    rest = jnp.exp(-0.5 * a * eta * eta) * total / jnp.sqrt(2 * jnp.pi * a)
    root = eta * jnp.sqrt(a / 2)
    return 0.5 * jsp.erfc(root) + rest if upper else 0.5 * jsp.erfc(-root) - rest


def _igamma_value(a: Any, x: Any, upper: bool) -> Any:
    """JAX's regularized incomplete gamma with torch's rules at the edges, applied in torch's
    order (the first that holds wins): NaN for negative arguments; at ``a = 0``, ``P = 1``
    for ``x > 0`` (else NaN); at ``x = 0``, ``P = 0``; at ``a = inf``, ``P = 0`` (NaN if ``x``
    is infinite too); at ``x = inf``, ``P = 1``. ``Q = 1 - P`` at each."""
    # JAX's series and continued fraction go wrong for a large a near x (gammainc(1e7, 1e7)
    # was 3521, torch 0.5; 3e-5 off at a = 50): Cephes (torch) uses Temme's expansion there.
    # Each branch gets safe arguments where the other is used: neither makes a NaN gradient.
    temme = _temme_region(a, x)
    a_j, x_j = jnp.where(temme, 1, a), jnp.where(temme, 1, x)
    out = jsp.gammaincc(a_j, x_j) if upper else jsp.gammainc(a_j, x_j)
    out = jnp.where(temme, _temme(jnp.where(temme, a, 1e3), jnp.where(temme, x, 1e3), upper), out)
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
    return out, (-_slope(a, x) if upper else _slope(a, x)) * tx


def _slope(a: Any, x: Any) -> Any:
    """``d/dx P(a, x) = x^(a-1) e^-x / Gamma(a)``. For a large ``a`` the exponent's terms
    cancel (float32 kept 4 digits at a = 200): there it is ``exp(-a eta^2 / 2) sqrt(a / 2pi)
    / (x Gamma*(a))``, ``Gamma*`` Stirling's series (Temme's variables)."""
    large = _temme_region(a, x)
    a_t, x_t = jnp.where(large, a, 1e3), jnp.where(large, x, 1e3)
    eta2 = -2 * _log1pmx((x_t - a_t) / a_t)
    stirling = 1 + 1 / (12 * a_t) + 1 / (288 * a_t**2) - 139 / (51840 * a_t**3)
    near = jnp.exp(-0.5 * a_t * eta2) * jnp.sqrt(a_t / (2 * jnp.pi)) / (x_t * stirling)
    a_s, x_s = jnp.where(large, 2, a), jnp.where(large, 1, x)
    return jnp.where(large, near, jnp.exp((a_s - 1) * jnp.log(x_s) - x_s - jsp.gammaln(a_s)))


def _temme_region(a: Any, x: Any) -> Any:
    """Where :func:`_temme` replaces JAX's value: ``a`` large (two terms are float32's
    precision from a = 20, float64's from a = 2000), ``x`` within 30% of it."""
    low = 20 if jnp.finfo(jnp.result_type(a)).bits <= 32 else 2000
    return (a > low) & (jnp.abs(x - a) < 0.3 * a)


_igamma_diff = jax.custom_jvp(_igamma_value, nondiff_argnums=(2,))


# torch.igamma / igammac (and Tensor.igamma): the same values, differentiable in ``a`` too
# through JAX's derivative (spx's Gamma distribution's cdf uses it, where torch has none).
_igamma = floating_pair(lambda a, x: _igamma_value(a, x, False))
_igammac = floating_pair(lambda a, x: _igamma_value(a, x, True))
_igamma_diff.defjvp(_igamma_jvp, symbolic_zeros=True)


def _lower_igamma(a: Any, x: Any) -> Any:
    return _igamma_diff(a, x, False)


def _upper_igamma(a: Any, x: Any) -> Any:
    return _igamma_diff(a, x, True)


_gammainc = floating_pair(_lower_igamma)
_gammaincc = floating_pair(_upper_igamma)


_gammaln = floating(_lgamma_value)
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
