"""Bessel functions of the first and second kind and the Airy function of ``torch.special``:
``bessel_j0``, ``bessel_j1``, ``bessel_y0``, ``bessel_y1``, ``spherical_bessel_j0``,
``airy_ai``.

Each is the Cephes rational approximation torch uses (one approximation below ``|x| = 5``,
a Hankel-type asymptotic form above), evaluated elementwise in the input's float dtype, so
values agree with torch's to rounding, edge values included (``bessel_y0(0) = -inf``, NaN
for negative ``x``; ``airy_ai(+-inf)`` is NaN as in torch). torch does not differentiate these
functions: their results have no ``grad_fn``, and spx's do not require grad either.

Example:
    >>> import spx
    >>> round(spx.special.bessel_j0(spx.tensor([1.0])).item(), 4)
    0.7652
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from spx._tensor.tensor import Tensor
from spx.special._common import constant, floating
from spx.special._series import polevl

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "spherical_bessel_j0",
]  # fmt: skip

_SQRT_2_OVER_PI = 0.797884560802865355879892119868763737
_TWO_OVER_PI = 0.636619772367581343075535053490057448
_QUARTER_PI = 0.785398163397448309615660845819875721
_THREE_QUARTER_PI = 2.356194490192344928846982537459627163

# Asymptotic forms above |x| = 5, in w = 25 / x^2 (Cephes j0.c / j1.c).
_J0_PP = (
    7.96936729297347051624e-04,
    8.28352392107440799803e-02,
    1.23953371646414299388e00,
    5.44725003058768775090e00,
    8.74716500199817011941e00,
    5.30324038235394892183e00,
    9.99999999999999997821e-01,
)
_J0_PQ = (
    9.24408810558863637013e-04,
    8.56288474354474431428e-02,
    1.25352743901058953537e00,
    5.47097740330417105182e00,
    8.76190883237069594232e00,
    5.30605288235394617618e00,
    1.00000000000000000218e00,
)
_J0_QP = (
    -1.13663838898469149931e-02,
    -1.28252718670509318512e00,
    -1.95539544257735972385e01,
    -9.32060152123768231369e01,
    -1.77681167980488050595e02,
    -1.47077505154951170175e02,
    -5.14105326766599330220e01,
    -6.05014350600728481186e00,
)
_J0_QQ = (
    6.43178256118178023184e01,
    8.56430025976980587198e02,
    3.88240183605401609683e03,
    7.24046774195652478189e03,
    5.93072701187316984827e03,
    2.06209331660327847417e03,
    2.42005740240291393179e02,
)
_J1_PP = (
    7.62125616208173112003e-04,
    7.31397056940917570436e-02,
    1.12719608129684925192e00,
    5.11207951146807644818e00,
    8.42404590141772420927e00,
    5.21451598682361504063e00,
    1.00000000000000000254e00,
)
_J1_PQ = (
    5.71323128072548699714e-04,
    6.88455908754495404082e-02,
    1.10514232634061696926e00,
    5.07386386128601488557e00,
    8.39985554327604159757e00,
    5.20982848682361821619e00,
    9.99999999999999997461e-01,
)
_J1_QP = (
    5.10862594750176621635e-02,
    4.98213872951233449420e00,
    7.58238284132545283818e01,
    3.66779609360150777800e02,
    7.10856304998926107277e02,
    5.97489612400613639965e02,
    2.11688757100572135698e02,
    2.52070205858023719784e01,
)
_J1_QQ = (
    7.42373277035675149943e01,
    1.05644886038262816351e03,
    4.98641058337653607651e03,
    9.56231892404756170795e03,
    7.99704160447350683650e03,
    2.82619278517639096600e03,
    3.36093607810698293419e02,
)

# Rational forms below |x| = 5, in z = x^2.
_J0_RP = (
    -4.79443220978201773821e09,
    1.95617491946556577543e12,
    -2.49248344360967716204e14,
    9.70862251047306323952e15,
)
_J0_RQ = (
    4.99563147152651017219e02,
    1.73785401676374683123e05,
    4.84409658339962045305e07,
    1.11855537045356834862e10,
    2.11277520115489217587e12,
    3.10518229857422583814e14,
    3.18121955943204943306e16,
    1.71086294081043136091e18,
)
_J0_ZEROS_SQUARED = (5.78318596294678452118e00, 3.04712623436620863991e01)
_J1_RP = (
    -8.99971225705559398224e08,
    4.52228297998194034323e11,
    -7.27494245221818276015e13,
    3.68295732863852883286e15,
)
_J1_RQ = (
    6.20836478118054335476e02,
    2.56987256757748830383e05,
    8.35146791431949253037e07,
    2.21511595479792499675e10,
    4.74914122079991414898e12,
    7.84369607876235854894e14,
    8.95222336184627338078e16,
    5.32278620332680085395e18,
)
_J1_ZEROS_SQUARED = (1.46819706421238932572e01, 4.92184563216946036703e01)
_Y0_YP = (
    1.55924367855235737965e04,
    -1.46639295903971606143e07,
    5.43526477051876500413e09,
    -9.82136065717911466409e11,
    8.75906394395366999549e13,
    -3.46628303384729719441e15,
    4.42733268572569800351e16,
    -1.84950800436986690637e16,
)
_Y0_YQ = (
    1.04128353664259848412e03,
    6.26107330137134956842e05,
    2.68919633393814121987e08,
    8.64002487103935000337e10,
    2.02979612750105546709e13,
    3.17157752842975028269e15,
    2.50596256172653059228e17,
)
_Y1_YP = (
    1.26320474790178026440e09,
    -6.47355876379160291031e11,
    1.14509511541823727583e14,
    -8.12770255501325109621e15,
    2.02439475713594898196e17,
    -7.78877196265950026825e17,
)
_Y1_YQ = (
    5.94301592346128195359e02,
    2.35564092943068577943e05,
    7.34811944459721705660e07,
    1.87601316108706159478e10,
    3.88231277496238566008e12,
    6.20557727146953693363e14,
    6.87141087355300489866e16,
    3.97270608116560655612e18,
)

# Airy Ai (Cephes airy.c): asymptotic forms for x >= 2.09 and x < -2.09.
_AI_AN = (
    3.46538101525629032477e-01,
    1.20075952739645805542e01,
    7.62796053615234516538e01,
    1.68089224934630576269e02,
    1.59756391350164413639e02,
    7.05360906840444183113e01,
    1.40264691163389668864e01,
    9.99999999999999995305e-01,
)
_AI_AD = (
    5.67594532638770212846e-01,
    1.47562562584847203173e01,
    8.45138970141474626562e01,
    1.77318088145400459522e02,
    1.64234692871529701831e02,
    7.14778400825575695274e01,
    1.40959135607834029598e01,
    1.00000000000000000470e00,
)
_AI_AFN = (
    -1.31696323418331795333e-01,
    -6.26456544431912369773e-01,
    -6.93158036036933542233e-01,
    -2.79779981545119124951e-01,
    -4.91900132609500318020e-02,
    -4.06265923594885404393e-03,
    -1.59276496239262096340e-04,
    -2.77649108155232920844e-06,
    -1.67787698489114633780e-08,
)
_AI_AFD = (
    1.33560420706553243746e01,
    3.26825032795224613948e01,
    2.67367040941499554804e01,
    9.18707402907259625840e00,
    1.47529146771666414581e00,
    1.15687173795188044134e-01,
    4.40291641615211203805e-03,
    7.54720348287414296618e-05,
    4.51850092970580378464e-07,
)
_AI_AGN = (
    1.97339932091685679179e-02,
    3.91103029615688277255e-01,
    1.06579897599595591108e00,
    9.39169229816650230044e-01,
    3.51465656105547619242e-01,
    6.33888919628925490927e-02,
    5.85804113048388458567e-03,
    2.82851600836737019778e-04,
    6.98793669997260967291e-06,
    8.11789239554389293311e-08,
    3.41551784765923618484e-10,
)
_AI_AGD = (
    9.30892908077441974853e00,
    1.98352928718312140417e01,
    1.55646628932864612953e01,
    5.47686069422975497931e00,
    9.54293611618961883998e-01,
    8.64580826352392193095e-02,
    4.12656523824222607191e-03,
    1.01259085116509135510e-04,
    1.17166733214413521882e-06,
    4.91834570062930015649e-09,
)
_INV_SQRT_PI = 5.64189583547756286948e-01
_AI_SERIES_TERMS = 16  # |x| < 2.09 converges to float64 precision in about 10


def _hankel(x: Any, pp: tuple, pq: tuple, qp: tuple, qq: tuple, phase: float, second: bool):
    """The large-argument form ``sqrt(2/(pi x)) (P cos(x - phase) - Q sin(x - phase))`` (or,
    for the second kind, ``P sin + Q cos``), with ``P``, ``Q`` rational in ``25 / x^2``."""
    w = (5.0 / x) * (5.0 / x)
    p = polevl(w, pp) / polevl(w, pq)
    q = 5.0 / x * (polevl(w, qp) / polevl(w, qq))
    if second:
        wave = p * jnp.sin(x - phase) + q * jnp.cos(x - phase)
    else:
        wave = p * jnp.cos(x - phase) - q * jnp.sin(x - phase)
    return wave * _SQRT_2_OVER_PI / jnp.sqrt(x)


def _j0_core(x: Any) -> Any:
    x = jnp.abs(x)
    z = x * x
    small = (z - _J0_ZEROS_SQUARED[0]) * (z - _J0_ZEROS_SQUARED[1])
    small = small * polevl(z, _J0_RP) / polevl(z, _J0_RQ)
    small = jnp.where(x < 1e-5, 1 - z / 4, small)
    large = _hankel(jnp.maximum(x, 5.0), _J0_PP, _J0_PQ, _J0_QP, _J0_QQ, _QUARTER_PI, False)
    return jnp.where(x <= 5, small, large)


def _j1_core(x: Any) -> Any:
    sign = jnp.where(x < 0, -1.0, 1.0).astype(x.dtype)
    x = jnp.abs(x)
    z = x * x
    small = polevl(z, _J1_RP) / polevl(z, _J1_RQ) * x
    small = small * (z - _J1_ZEROS_SQUARED[0]) * (z - _J1_ZEROS_SQUARED[1])
    large = _hankel(jnp.maximum(x, 5.0), _J1_PP, _J1_PQ, _J1_QP, _J1_QQ, _THREE_QUARTER_PI, False)
    return sign * jnp.where(x <= 5, small, large)


def _y0_core(x: Any) -> Any:
    positive = jnp.where(x > 0, x, 1.0)
    z = positive * positive
    small = polevl(z, _Y0_YP) / polevl(z, _Y0_YQ)
    small = small + _TWO_OVER_PI * jnp.log(positive) * _j0_core(positive)
    small = jnp.where(x == 0, -jnp.inf, jnp.where(x < 0, jnp.nan, small))
    large = _hankel(jnp.maximum(x, 5.0), _J0_PP, _J0_PQ, _J0_QP, _J0_QQ, _QUARTER_PI, True)
    return jnp.where(x <= 5, small, large).astype(x.dtype)


def _y1_core(x: Any) -> Any:
    positive = jnp.where(x > 0, x, 1.0)
    z = positive * positive
    small = positive * (polevl(z, _Y1_YP) / polevl(z, _Y1_YQ))
    small = small + _TWO_OVER_PI * (_j1_core(positive) * jnp.log(positive) - 1 / positive)
    small = jnp.where(x == 0, -jnp.inf, jnp.where(x < 0, jnp.nan, small))
    large = _hankel(jnp.maximum(x, 5.0), _J1_PP, _J1_PQ, _J1_QP, _J1_QQ, _THREE_QUARTER_PI, True)
    return jnp.where(x <= 5, small, large).astype(x.dtype)


def _spherical_j0_core(x: Any) -> Any:
    z = x * x
    series = 1.0 + z * (
        -1.0 / 6.0
        + z
        * (
            1.0 / 120.0
            + z
            * (
                -1.0 / 5040.0
                + z * (1.0 / 362880.0 + z * (-1.0 / 39916800.0 + z * (1.0 / 6227020800.0)))
            )
        )
    )
    out = jnp.where(jnp.abs(x) < 0.5, series, jnp.sin(x) / x)
    return jnp.where(jnp.isinf(x), 0.0, out).astype(x.dtype)


def _airy_ai_core(x: Any) -> Any:
    # x < -2.09: oscillatory asymptotic form.
    neg = jnp.minimum(x, -2.09)
    zeta_neg = -2.0 * neg * jnp.sqrt(-neg) / 3.0
    z = 1.0 / zeta_neg
    zz = z * z
    f = 1.0 + zz * polevl(zz, _AI_AFN) / polevl(zz, _AI_AFD)
    g = z * polevl(zz, _AI_AGN) / polevl(zz, _AI_AGD)
    t = zeta_neg + 0.25 * jnp.pi
    oscillating = _INV_SQRT_PI / jnp.sqrt(jnp.sqrt(-neg)) * (jnp.sin(t) * f - jnp.cos(t) * g)
    # x >= 2.09: exponentially decaying asymptotic form.
    pos = jnp.maximum(x, 2.09)
    zeta_pos = 2.0 * pos * jnp.sqrt(pos) / 3.0
    ratio = polevl(1.0 / zeta_pos, _AI_AN) / polevl(1.0 / zeta_pos, _AI_AD)
    decaying = _INV_SQRT_PI * ratio / (2.0 * jnp.sqrt(jnp.sqrt(pos)) * jnp.exp(zeta_pos))
    # |x| < 2.09: the Maclaurin series Ai = c1 f(x) - c2 g(x), stopped (per element) once a
    # term of f falls below eps relative to f, as torch's loop is.
    mid = jnp.clip(x, -2.09, 2.09)
    cube = mid * mid * mid
    eps = jnp.finfo(x.dtype).eps
    f_sum, g_sum, m, n, k = 1.0 + 0 * mid, mid, 1.0 + 0 * mid, mid, 1.0
    active = jnp.ones(mid.shape, bool)
    for _ in range(_AI_SERIES_TERMS):
        m_next = m * cube / (k + 1) / (k + 2)
        n_next = n * cube / (k + 2) / (k + 3)
        m = jnp.where(active, m_next, m)
        n = jnp.where(active, n_next, n)
        f_sum = jnp.where(active, f_sum + m_next, f_sum)
        g_sum = jnp.where(active, g_sum + n_next, g_sum)
        active = active & (jnp.abs(m / f_sum) > eps)
        k = k + 3
    series = 0.355028053887817239260 * f_sum - 0.258819403792806798405 * g_sum
    out = jnp.where(x < -2.09, oscillating, jnp.where(x >= 2.09, decaying, series))
    out = jnp.where(x > 103.892, 0.0, out)
    return jnp.where(jnp.isinf(x), jnp.nan, out).astype(x.dtype)


_bessel_j0 = floating(_j0_core)
_bessel_j1 = floating(_j1_core)
_bessel_y0 = floating(_y0_core)
_bessel_y1 = floating(_y1_core)
_spherical_bessel_j0 = floating(_spherical_j0_core)
_airy_ai = floating(_airy_ai_core)


def bessel_j0(input: Any) -> Tensor:
    """The Bessel function of the first kind of order 0, ``J0(x)``.

    Args:
        input: ``(*)`` tensor. Not differentiable (as torch). Mirrors
            ``torch.special.bessel_j0``.
    """
    return constant(_bessel_j0, (input,), "bessel_j0")


def bessel_j1(input: Any) -> Tensor:
    """The Bessel function of the first kind of order 1, ``J1(x)`` (odd in ``x``).

    Args:
        input: ``(*)`` tensor. Not differentiable (as torch). Mirrors
            ``torch.special.bessel_j1``.
    """
    return constant(_bessel_j1, (input,), "bessel_j1")


def bessel_y0(input: Any) -> Tensor:
    """The Bessel function of the second kind of order 0, ``Y0(x)``: -inf at 0, NaN below.

    Args:
        input: ``(*)`` tensor. Not differentiable (as torch). Mirrors
            ``torch.special.bessel_y0``.
    """
    return constant(_bessel_y0, (input,), "bessel_y0")


def bessel_y1(input: Any) -> Tensor:
    """The Bessel function of the second kind of order 1, ``Y1(x)``: -inf at 0, NaN below.

    Args:
        input: ``(*)`` tensor. Not differentiable (as torch). Mirrors
            ``torch.special.bessel_y1``.
    """
    return constant(_bessel_y1, (input,), "bessel_y1")


def spherical_bessel_j0(input: Any) -> Tensor:
    """The spherical Bessel function of the first kind of order 0, ``sin(x) / x`` (1 at 0).

    Args:
        input: ``(*)`` tensor. Not differentiable (as torch). Mirrors
            ``torch.special.spherical_bessel_j0``.
    """
    return constant(_spherical_bessel_j0, (input,), "spherical_bessel_j0")


def airy_ai(input: Any) -> Tensor:
    """The Airy function ``Ai(x)``: oscillating for negative ``x``, decaying for positive.

    Args:
        input: ``(*)`` tensor. Not differentiable (as torch). Mirrors
            ``torch.special.airy_ai``.
    """
    return constant(_airy_ai, (input,), "airy_ai")
