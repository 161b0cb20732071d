"""Modified Bessel functions of ``torch.special``: ``i0``, ``i0e``, ``i1``, ``i1e`` (the
differentiable set) and ``modified_bessel_i0``/``i1``/``k0``/``k1``,
``scaled_modified_bessel_k0``/``k1`` (torch's newer, non-differentiable set).

``I0``/``I1`` and their scaled forms ``e^-|x| I(x)`` come from ``jax.scipy.special`` (the same
Cephes Chebyshev series torch evaluates). Their derivatives are torch's formulas: ``I0' =
I1``, and ``I1' = I0 - I1 / x`` with the limit 1/2 where ``|x| <= eps`` (JAX's autodiff of
``i0`` gives 1 at 0, and NaN where ``I0`` overflows). ``K0``/``K1`` are the Cephes series
torch uses: inf at 0, NaN below 0. The ``modified_bessel_*`` results do not require grad, as
torch's have no ``grad_fn``.

Example:
    >>> import spx
    >>> [f"{v:.4f}" for v in spx.special.i0(spx.tensor([0.0, 1.0])).tolist()]
    ['1.0000', '1.2661']
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp

from spx._tensor.tensor import Tensor
from spx.special._common import constant, floating, unary
from spx.special._series import chbevl

__all__ = [
    "i0", "i0e", "i1", "i1e", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
    "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
]  # fmt: skip

# Cephes k0.c / k1.c: Chebyshev series in x^2 - 2 on (0, 2] and in 8/x - 2 above.
_K0_A = (
    1.37446543561352307156e-16,
    4.25981614279661018399e-14,
    1.03496952576338420167e-11,
    1.90451637722020886025e-09,
    2.53479107902614945675e-07,
    2.28621210311945178607e-05,
    1.26461541144692592338e-03,
    3.59799365153615016266e-02,
    3.44289899924628486886e-01,
    -5.35327393233902768720e-01,
)
_K0_B = (
    5.30043377268626276149e-18,
    -1.64758043015242134646e-17,
    5.21039150503902756861e-17,
    -1.67823109680541210385e-16,
    5.51205597852431940784e-16,
    -1.84859337734377901440e-15,
    6.34007647740507060557e-15,
    -2.22751332699166985548e-14,
    8.03289077536357521100e-14,
    -2.98009692317273043925e-13,
    1.14034058820847496303e-12,
    -4.51459788337394416547e-12,
    1.85594911495471785253e-11,
    -7.95748924447710747776e-11,
    3.57739728140030116597e-10,
    -1.69753450938905987466e-09,
    8.57403401741422608519e-09,
    -4.66048989768794782956e-08,
    2.76681363944501510342e-07,
    -1.83175552271911948767e-06,
    1.39498137188764993662e-05,
    -1.28495495816278026384e-04,
    1.56988388573005337491e-03,
    -3.14481013119645005427e-02,
    2.44030308206595545468e00,
)
_K1_A = (
    -7.02386347938628759343e-18,
    -2.42744985051936593393e-15,
    -6.66690169419932900609e-13,
    -1.41148839263352776110e-10,
    -2.21338763073472585583e-08,
    -2.43340614156596823496e-06,
    -1.73028895751305206302e-04,
    -6.97572385963986435018e-03,
    -1.22611180822657148235e-01,
    -3.53155960776544875667e-01,
    1.52530022733894777053e00,
)
_K1_B = (
    -5.75674448366501715755e-18,
    1.79405087314755922667e-17,
    -5.68946255844285935196e-17,
    1.83809354436663880070e-16,
    -6.05704724837331885336e-16,
    2.03870316562433424052e-15,
    -7.01983709041831346144e-15,
    2.47715442448130437068e-14,
    -8.97670518232499435011e-14,
    3.34841966607842919884e-13,
    -1.28917396095102890680e-12,
    5.13963967348173025100e-12,
    -2.12996783842756842877e-11,
    9.21831518760500529508e-11,
    -4.19035475934189648750e-10,
    2.01504975519703286596e-09,
    -1.03457624656780970260e-08,
    5.74108412545004946722e-08,
    -3.50196060308781257119e-07,
    2.40648494783721712015e-06,
    -1.93619797416608296024e-05,
    1.95215518471351631108e-04,
    -2.85781685962277938680e-03,
    1.03923736576817238437e-01,
    2.72062619048444266945e00,
)


# -- I0, I1 and their scaled forms, with torch's derivatives -----------------------------------
@jax.custom_jvp
def _i0_value(x: Any) -> Any:
    return jsp.i0(x)


@_i0_value.defjvp
def _i0_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    return _i0_value(x), jsp.i1(x) * t


@jax.custom_jvp
def _i0e_value(x: Any) -> Any:
    return jsp.i0e(x)


@_i0e_value.defjvp
def _i0e_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    out = _i0e_value(x)
    return out, (jsp.i1e(x) - jnp.sign(x) * out) * t


def _divided_by_x_slope(x: Any, out: Any, lead: Any, shift: Any) -> Any:
    """torch's ``lead(x) - out * shift(x)`` with the limit 1/2 where ``|x| <= eps`` (and at
    NaN, as torch's ``|x| > eps`` test is false there)."""
    eps = jnp.finfo(x.dtype).eps
    regular = jnp.abs(x) > eps
    safe = jnp.where(regular, x, eps)
    return jnp.where(regular, lead(safe) - out * shift(safe), 0.5).astype(x.dtype)


@jax.custom_jvp
def _i1_value(x: Any) -> Any:
    return jsp.i1(x)


@_i1_value.defjvp
def _i1_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    out = _i1_value(x)
    return out, _divided_by_x_slope(x, out, jsp.i0, lambda s: 1 / s) * t


@jax.custom_jvp
def _i1e_value(x: Any) -> Any:
    return jsp.i1e(x)


@_i1e_value.defjvp
def _i1e_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    out = _i1e_value(x)
    return out, _divided_by_x_slope(x, out, jsp.i0e, lambda s: jnp.sign(s) + 1 / s) * t


# -- K0, K1 (Cephes) ---------------------------------------------------------------------------
def _k_core(x: Any, order: int, scaled: bool) -> Any:
    a, b = (_K0_A, _K0_B) if order == 0 else (_K1_A, _K1_B)
    positive = jnp.where(x > 0, x, 1.0)
    small_x = jnp.minimum(positive, 2.0)
    series = chbevl(small_x * small_x - 2.0, a)
    if order == 0:
        small = series - jnp.log(0.5 * small_x) * jsp.i0(small_x)
    else:
        small = jnp.log(0.5 * small_x) * jsp.i1(small_x) + series / small_x
    if scaled:
        small = small * jnp.exp(small_x)
    large_x = jnp.maximum(positive, 2.0)
    large = chbevl(8.0 / large_x - 2.0, b) / jnp.sqrt(large_x)
    if not scaled:
        large = jnp.exp(-large_x) * large
    out = jnp.where(positive <= 2, small, large)
    out = jnp.where(x == 0, jnp.inf, jnp.where(x < 0, jnp.nan, out))
    return jnp.where(jnp.isnan(x), x, out).astype(x.dtype)


def _k0_core(x: Any) -> Any:
    return _k_core(x, 0, False)


def _k1_core(x: Any) -> Any:
    return _k_core(x, 1, False)


def _k0e_core(x: Any) -> Any:
    return _k_core(x, 0, True)


def _k1e_core(x: Any) -> Any:
    return _k_core(x, 1, True)


_i0 = floating(_i0_value)
_i0e = floating(_i0e_value)
_i1 = floating(_i1_value)
_i1e = floating(_i1e_value)
_modified_i0 = floating(jsp.i0)
_modified_i1 = floating(jsp.i1)
_k0 = floating(_k0_core)
_k1 = floating(_k1_core)
_k0e = floating(_k0e_core)
_k1e = floating(_k1e_core)


def i0(input: Any) -> Tensor:
    """The modified Bessel function of the first kind of order 0, ``I0(x)``.

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.i0``.
    """
    return unary(_i0, (), input, "i0")


def i0e(input: Any) -> Tensor:
    """The exponentially scaled ``e^-|x| I0(x)`` (finite where ``I0`` overflows).

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.i0e``.
    """
    return unary(_i0e, (), input, "i0e")


def i1(input: Any) -> Tensor:
    """The modified Bessel function of the first kind of order 1, ``I1(x)``.

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.i1``.
    """
    return unary(_i1, (), input, "i1")


def i1e(input: Any) -> Tensor:
    """The exponentially scaled ``e^-|x| I1(x)``.

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.i1e``.
    """
    return unary(_i1e, (), input, "i1e")


def modified_bessel_i0(input: Any) -> Tensor:
    """``I0(x)``, as :func:`i0` but not differentiable (as torch).

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.modified_bessel_i0``.
    """
    return constant(_modified_i0, (input,), "modified_bessel_i0")


def modified_bessel_i1(input: Any) -> Tensor:
    """``I1(x)``, as :func:`i1` but not differentiable (as torch).

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.modified_bessel_i1``.
    """
    return constant(_modified_i1, (input,), "modified_bessel_i1")


def modified_bessel_k0(input: Any) -> Tensor:
    """The modified Bessel function of the second kind of order 0, ``K0(x)``: inf at 0, NaN
    below. Not differentiable (as torch).

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.modified_bessel_k0``.
    """
    return constant(_k0, (input,), "modified_bessel_k0")


def modified_bessel_k1(input: Any) -> Tensor:
    """The modified Bessel function of the second kind of order 1, ``K1(x)``: inf at 0, NaN
    below. Not differentiable (as torch).

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.modified_bessel_k1``.
    """
    return constant(_k1, (input,), "modified_bessel_k1")


def scaled_modified_bessel_k0(input: Any) -> Tensor:
    """The exponentially scaled ``e^x K0(x)``. Not differentiable (as torch).

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.scaled_modified_bessel_k0``.
    """
    return constant(_k0e, (input,), "scaled_modified_bessel_k0")


def scaled_modified_bessel_k1(input: Any) -> Tensor:
    """The exponentially scaled ``e^x K1(x)``. Not differentiable (as torch).

    Args:
        input: ``(*)`` tensor. Mirrors ``torch.special.scaled_modified_bessel_k1``.
    """
    return constant(_k1e, (input,), "scaled_modified_bessel_k1")
