"""Elementwise math, comparisons and operators of :class:`spx.Tensor` (products: :mod:`.linalg`).

Type promotion is JAX's, which agrees with torch's where it matters: a Python number does not
change a tensor's dtype (``x * 2.5`` stays float16 for a float16 ``x``), ints and floats promote
to float32, true division of ints gives float32, comparisons give bool. Integers are 32-bit
unless ``jax_enable_x64`` is on (torch: 64-bit).
"""

from __future__ import annotations

import importlib
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
from jax import lax
from jax.custom_derivatives import SymbolicZero

from spx._tensor import _dims, checks
from spx._tensor.dispatch import apply
from spx._tensor.methods._dtypes import canonical, cast, check_scalar_fits, half_in_float32
from spx._tensor.methods._dtypes import category as _category
from spx._tensor.methods.linalg import LinalgMethods, _checked
from spx._validate import is_int


def _narrowed(zero: Any, full: Any) -> Any:
    """A 0-d operand next to a dimensioned one, cast to the latter's dtype when its category
    (bool < int < float < complex) is not higher: torch's rule (``half_vector *
    torch.tensor(2.0)`` is float16), where JAX would widen the result to float32."""
    zd, fd = jnp.result_type(zero), jnp.result_type(full)
    if zd != fd and _category(zd) <= _category(fd):
        return jnp.asarray(zero).astype(fd)
    return zero


def _broadcastable(a: tuple, b: tuple) -> None:
    """torch's error for shapes that do not broadcast (JAX's would be a TypeError)."""
    n = max(len(a), len(b))
    for i in range(n - 1, -1, -1):
        sa = a[i - n + len(a)] if i - n + len(a) >= 0 else 1
        sb = b[i - n + len(b)] if i - n + len(b) >= 0 else 1
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(
                f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at "
                f"non-singleton dimension {i}"
            )


def _zero_dim(x: Any, y: Any) -> tuple[Any, Any]:
    """``(x, y)`` with torch's 0-d promotion rule applied and their shapes checked (this runs
    while shapes are inferred, once per signature: recording costs nothing more)."""
    if jnp.shape(x) != jnp.shape(y):
        _broadcastable(jnp.shape(x), jnp.shape(y))
    x_zero, y_zero = jnp.ndim(x) == 0, jnp.ndim(y) == 0
    if x_zero == y_zero:
        return x, y
    return (_narrowed(x, y), y) if x_zero else (x, _narrowed(y, x))


def _promoting(fn: Any) -> Any:
    """``fn(x, y)`` with torch's 0-d promotion rule; made once per function at import."""

    def binary(x: Any, y: Any) -> Any:
        x, y = _zero_dim(x, y)
        return fn(x, y)

    binary.__name__ = binary.__qualname__ = getattr(fn, "__name__", "binary")
    return binary


def _integral_dtype(v: Any) -> bool:
    dtype = getattr(v, "dtype", None)
    return dtype is not None and _category(dtype) <= 1


def _floating_tensor(v: Any) -> bool:
    # A floating array, not a Python float (weakly typed once recorded): 2.5 next to an
    # integer tensor must not make the result float64 under x64.
    dtype = getattr(v, "dtype", None)
    return dtype is not None and _category(dtype) >= 2 and not jax.typeof(v).weak_type


def _on_floats(fn: Any) -> Any:
    """``fn(x, y)`` for ops whose result is floating (true division, copysign, float_power),
    with torch's 0-d rule. Integer and bool operands are computed in the default float type
    (float32; float64 with x64), as torch does, unless the other operand is a floating tensor
    (whose dtype the result takes): JAX would first cast a Python int or a 0-d tensor to the
    integer tensor's dtype (``uint8 / -2`` divided by 254)."""

    def binary(x: Any, y: Any) -> Any:
        x = float(x) if type(x) is int else x
        y = float(y) if type(y) is int else y
        wide = jax.dtypes.canonicalize_dtype(jnp.float64)
        if not _floating_tensor(y) and _integral_dtype(x):
            x = x.astype(wide)
        if not _floating_tensor(x) and _integral_dtype(y):
            y = y.astype(wide)
        x, y = _zero_dim(x, y)
        return fn(x, y)

    binary.__name__ = binary.__qualname__ = getattr(fn, "__name__", "binary")
    return binary


_true_divide = _on_floats(jnp.true_divide)
_copysign = _on_floats(jnp.copysign)
_float_power = _on_floats(jnp.float_power)


# Plain functions rather than jnp's ufunc objects: a ufunc's __hash__ costs ~1 µs, paid at
# every recording (the function is part of the shape-cache and program keys).
def _add(x: Any, y: Any) -> Any:
    x, y = _zero_dim(x, y)
    return x + y


def _sub(x: Any, y: Any) -> Any:
    x, y = _zero_dim(x, y)
    return x - y


def _mul(x: Any, y: Any) -> Any:
    x, y = _zero_dim(x, y)
    return x * y


def _neg(x: Any) -> Any:
    return -x


def _maximum(x: Any, y: Any) -> Any:
    return jnp.maximum(*_zero_dim(x, y))


def _minimum(x: Any, y: Any) -> Any:
    return jnp.minimum(*_zero_dim(x, y))


def _bitwise_and(x: Any, y: Any) -> Any:
    return x & y


def _bitwise_or(x: Any, y: Any) -> Any:
    return x | y


def _bitwise_xor(x: Any, y: Any) -> Any:
    return x ^ y


def _logical_and(x: Any, y: Any) -> Any:
    return jnp.logical_and(x, y)


def _logical_or(x: Any, y: Any) -> Any:
    return jnp.logical_or(x, y)


def _logical_xor(x: Any, y: Any) -> Any:
    return jnp.logical_xor(x, y)


def _float(x: Any) -> Any:
    """Integers and bools as float32, as torch computes float functions of them."""
    return x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(jnp.float32)


def _sigmoid(x: Any) -> Any:
    return jax.nn.sigmoid(_float(x))


def _sign(x: Any) -> Any:
    # torch's sign is (0 < x) - (x < 0): NaN gives 0 (jnp.sign gives NaN).
    if x.dtype == jnp.bool_:
        return x
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        return jnp.sign(x)
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


def _add_scaled(x: Any, y: Any, alpha: Any) -> Any:
    x, y = _zero_dim(x, y)
    return x + alpha * y


def _sub_scaled(x: Any, y: Any, alpha: Any) -> Any:
    x, y = _zero_dim(x, y)
    return x - alpha * y


def _rsub(x: Any, y: Any) -> Any:
    return y - x


def _div_trunc(x: Any, y: Any) -> Any:
    out = jnp.trunc(jnp.true_divide(x, y))
    return out.astype(jnp.result_type(x, y)) if not jnp.issubdtype(out.dtype, jnp.inexact) else out


def _div_trunc_int(x: Any, y: Any) -> Any:
    q = jnp.floor_divide(x, y)
    return jnp.where((q < 0) & (q * y != x), q + 1, q)


def _integral(x: Any) -> bool:
    if isinstance(x, bool | int | np.integer | np.bool_):
        return True
    dtype = getattr(x, "dtype", None)
    return dtype is not None and _category(dtype) <= 1  # bool or integer


def _check_divisor(x: Any, y: Any, name: str) -> None:
    """torch's ``RuntimeError: ZeroDivisionError`` for an integer division by zero.

    XLA returns an arbitrary number there (``7 // 0`` is -1 on CPU), a silently wrong result;
    torch raises (on CPU). Only integer results are checked (a float division by zero is inf
    or nan, in torch too). A divisor whose value is known is checked at once, a pending one
    once it is computed (:mod:`spx._tensor.checks`); inside a JAX transformation
    (``spx.compile``) it is not known, and the result is XLA's, as torch's kernel's on CUDA.
    """
    if not (_integral(x) and _integral(y)):
        return
    if hasattr(x, "shape") and not np.prod(x.shape, dtype=np.int64):
        return  # nothing is divided

    def check(divisor: np.ndarray) -> None:
        if np.any(divisor == 0):
            raise RuntimeError(
                f"ZeroDivisionError: integer {name} by zero (the divisor holds 0). Divide floats "
                "for inf/nan (x.float(), as torch), or keep the zeros out of the divisor "
                "(spx.where(y == 0, 1, y))"
            )

    checks.when_known(y, check)


def _frac(x: Any) -> Any:
    return x - jnp.trunc(x)


def _rsqrt(x: Any) -> Any:
    return lax.rsqrt(_float(x))


def _round_decimals(x: Any, decimals: int) -> Any:
    return jnp.round(x, decimals)


# torch's clamp passes the gradient to x on the closed interval [min, max] (a max/min pair
# would halve it at the bounds), and gives max everywhere when min > max.
def _clamp(x: Any, lo: Any, hi: Any) -> Any:
    return _clamp_max(_clamp_min(x, lo), hi)


# A NaN bound gives NaN, as in torch (a comparison with NaN is false: `x < nan` kept x).
def _clamp_min(x: Any, lo: Any) -> Any:
    x, lo = _zero_dim(x, lo)
    return jnp.where((x < lo) | (lo != lo), lo, x)


def _clamp_max(x: Any, hi: Any) -> Any:
    x, hi = _zero_dim(x, hi)
    return jnp.where((x > hi) | (hi != hi), hi, x)


def _nan_to_num(x: Any, nan: float, posinf: float | None, neginf: float | None) -> Any:
    return jnp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _lerp(x: Any, end: Any, weight: Any) -> Any:
    x, end = _zero_dim(x, end)
    x, weight = _zero_dim(x, weight)
    return x + weight * (end - x)


def _addcmul(x: Any, t1: Any, t2: Any, value: Any) -> Any:
    x, t1 = _zero_dim(x, t1)
    x, t2 = _zero_dim(x, t2)
    # torch computes in the dtype of all three: int8 factors of a float input do not wrap.
    common = jnp.result_type(x, t1, t2)
    return x + value * t1.astype(common) * t2.astype(common)


def _addcdiv(x: Any, t1: Any, t2: Any, value: Any) -> Any:
    x, t1 = _zero_dim(x, t1)
    x, t2 = _zero_dim(x, t2)
    common = jnp.result_type(x, t1, t2)
    return x + value * t1.astype(common) / t2.astype(common)


def _bool_mask(what: str, mask: Any) -> None:
    """torch's dtype check of a mask/condition (runs while shapes are inferred: no cost)."""
    if mask.dtype != jnp.bool_:
        raise RuntimeError(
            f"{what} only supports boolean masks, but got mask with dtype {mask.dtype}; compare "
            "first, e.g. mask != 0"
        )


def _where(cond: Any, x: Any, y: Any) -> Any:
    _bool_mask("where", cond)
    return jnp.where(cond, *_zero_dim(x, y))


def _masked_fill(x: Any, mask: Any, value: Any) -> Any:
    _bool_mask("masked_fill_", mask)
    # A number (checked to fit) converts directly; a tensor value casts as torch's CPU does.
    value = jnp.asarray(value, x.dtype) if isinstance(value, int | float) else cast(value, x.dtype)
    return jnp.where(mask, value, x)


def _softmax(x: Any, axis: int, dtype: Any) -> Any:
    if dtype is not None:
        x = x.astype(dtype)
    return _softmax_of(x, axis=axis)


def _log_softmax(x: Any, axis: int, dtype: Any) -> Any:
    if dtype is not None:
        x = x.astype(dtype)
    return _log_softmax_of(x, axis=axis)


# A half input's softmax sums its exps in float32, as torch's does (spx.Tensor.softmax and
# F.softmax share these).
_softmax_of = half_in_float32(jax.nn.softmax)
_log_softmax_of = half_in_float32(jax.nn.log_softmax)


def _pow(x: Any, y: Any) -> Any:
    x, y = _zero_dim(x, y)
    dtype = jnp.result_type(x, y)
    if dtype == jnp.bool_:
        # torch has no Bool pow kernel; only a number exponent is special-cased before it
        # (x ** 1 is a copy, x ** 0 all ones), so a bool tensor ** True stays bool. (A 0-d
        # bool tensor exponent, which torch refuses, arrives here as the same 0-d array.)
        if jnp.ndim(y) == 0:
            return jnp.where(y, jnp.asarray(x), True)
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    if jnp.issubdtype(dtype, jnp.integer):
        return _int_pow(jnp.asarray(x).astype(dtype), jnp.asarray(y))
    if not jnp.issubdtype(dtype, jnp.floating):
        return jnp.power(x, y)
    x, y = jnp.asarray(x), jnp.asarray(y)
    # Integer exponents stay integers (exact repeated multiplication, as before).
    y = y if jnp.issubdtype(y.dtype, jnp.integer) else y.astype(dtype)
    return _real_pow(x.astype(dtype), y)


def _int_pow(x: Any, y: Any) -> Any:
    """Integer powers as torch computes them: wrapping products over every bit of the
    exponent; a negative exponent gives 0, except for bases 1 and -1.

    XLA's integer power reads only the exponent's low 6 bits (3 ** 100 gave 3 ** 36, 2 ** 64
    gave 1) and returns garbage for negative exponents: square and multiply here instead,
    one step per bit of the exponent's type (fused into one loop by XLA).
    """
    y = jnp.asarray(y)
    if y.dtype == jnp.bool_:
        y = y.astype(jnp.int32)
    negative = y < 0  # before any cast: -1 in uint8 would be 255
    e = jnp.where(negative, 0, y)
    shape = jnp.broadcast_shapes(jnp.shape(x), jnp.shape(e))
    base = jnp.broadcast_to(x, shape)
    positive = jnp.ones(shape, x.dtype)
    for _ in range(jnp.iinfo(e.dtype).bits):
        positive = jnp.where((e & 1) == 1, positive * base, positive)
        base = base * base
        e = e >> 1
    odd = (y % 2) != 0
    unit = jnp.where(x == 1, 1, jnp.where(x == -1, jnp.where(odd, -1, 1), 0)).astype(x.dtype)
    return jnp.where(negative, unit, positive)


@jax.custom_jvp
def _real_pow(x: Any, y: Any) -> Any:
    return jnp.power(x, y)


def _real_pow_jvp(primals: tuple, tangents: tuple) -> tuple:
    # torch's pow_backward: no gradient to the base where the exponent is 0 (0 * 0^-1 is NaN
    # in the plain derivative), none to the exponent where the base is 0 and the exponent
    # non-negative (0 * log 0). A term whose tangent is a symbolic zero is left out, as torch
    # computes only the gradients that are needed (log of a negative base is NaN, and NaN * 0
    # would spoil forward mode's x ** 2.0).
    x, y = primals
    dx, dy = tangents
    out = _real_pow(x, y)
    tangent = jnp.zeros(out.shape, out.dtype)
    if not isinstance(dx, SymbolicZero):
        d_base = jnp.where(y == 0, 0, y.astype(x.dtype) * _real_pow(x, y - 1))
        tangent = tangent + d_base * dx
    if not isinstance(dy, SymbolicZero) and jnp.issubdtype(y.dtype, jnp.inexact):
        d_exponent = jnp.where((x == 0) & (y >= 0), 0, out * jnp.log(x))
        tangent = tangent + d_exponent * dy
    return out, tangent.astype(out.dtype)


_real_pow.defjvp(_real_pow_jvp, symbolic_zeros=True)


def _rpow(x: Any, y: Any) -> Any:
    return jnp.power(y, x)


def _heaviside(x: Any, values: Any) -> Any:
    # torch's: values where x == 0, else x > 0 in x's dtype (NaN gives 0; ints stay ints).
    if jnp.result_type(x) != jnp.result_type(values):
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return jnp.where(x == 0, values, (x > 0).astype(x.dtype))


def _ldexp(x: Any, e: Any) -> Any:
    return _float(x) * jnp.exp2(e)


def _isclose(x: Any, y: Any, rtol: Any, atol: Any, equal_nan: bool) -> Any:
    return jnp.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _equal_all(x: Any, y: Any) -> Any:
    return jnp.all(x == y)


def _isin(x: Any, test: Any, invert: bool) -> Any:
    out = jnp.isin(x, test)
    return ~out if invert else out


def _isreal(x: Any) -> Any:
    return jnp.isreal(x)


def _bitwise_not(x: Any) -> Any:
    return jnp.logical_not(x) if x.dtype == jnp.bool_ else jnp.bitwise_not(x)


def _mvlgamma(x: Any, p: int) -> Any:
    return jsp.multigammaln(_float(x), p)


def _special(module: str, name: str) -> Any:
    """The kernel ``name`` of ``spx.special.<module>``, which a method shares with its
    ``spx.special`` twin (one implementation of torch's values and derivatives at the edges).
    spx.special builds on Tensor, so it is looked up when the kernel first runs, not here."""

    def kernel(*args: Any) -> Any:
        return getattr(importlib.import_module(f"spx.special.{module}"), name)(*args)

    kernel.__name__ = kernel.__qualname__ = name
    return kernel


# Each promotes as torch does (ints to float32, float16/bfloat16 computed in float32 and cast
# back); _xlogy applies the 0-d rule too.
_i0 = _special("modified_bessel", "_i0")
_sinc = _special("elementary", "_sinc")
_xlogy = _special("elementary", "_xlogy")
_lgamma = _special("gamma", "_gammaln")
_digamma = _special("gamma", "_digamma")
_igamma = _special("gamma", "_igamma")
_igammac = _special("gamma", "_igammac")


def _isposinf(x: Any) -> Any:
    return jnp.isposinf(x)


@jax.custom_jvp
def _abs(x: Any) -> Any:
    """``|x|`` with torch's derivative ``sgn(x)``: 0 at 0 (JAX's is 1 there, which moves L1
    penalties and L1 losses at exact zeros)."""
    return jnp.abs(x)


@_abs.defjvp
def _abs_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    if not jnp.issubdtype(x.dtype, jnp.floating):  # complex and integer: JAX's own rule
        return jax.jvp(jnp.abs, (x,), (t,))
    return jnp.abs(x), jnp.sign(x) * t


def _isneginf(x: Any) -> Any:
    return jnp.isneginf(x)


def _angle(x: Any) -> Any:
    """torch's angle of a real number: pi below 0, else 0 (-0.0 too; JAX gives pi), NaN kept;
    its gradient is 0."""
    if jnp.iscomplexobj(x):
        return jnp.angle(x)
    x = jax.lax.stop_gradient(_float(x))
    return jnp.where(jnp.isnan(x), x, jnp.where(x < 0, jnp.pi, 0.0).astype(x.dtype))


@jax.custom_jvp
def _atan2_float(y: Any, x: Any) -> Any:
    return jnp.arctan2(y, x)


@_atan2_float.defjvp
def _atan2_jvp(primals: tuple, tangents: tuple) -> tuple:
    # torch's derivative, which is 0 at (0, 0) (JAX's is NaN there: 0 / 0).
    (y, x), (ty, tx) = primals, tangents
    r2 = x * x + y * y
    at_origin = r2 == 0
    safe = jnp.where(at_origin, 1, r2)
    dy = jnp.where(at_origin, 0, x / safe)
    dx = jnp.where(at_origin, 0, -y / safe)
    return _atan2_float(y, x), ty * dy + tx * dx


def _atan2(y: Any, x: Any) -> Any:
    dtype = jnp.result_type(y, x)
    if not jnp.issubdtype(dtype, jnp.inexact):
        dtype = jnp.float32
    return _atan2_float(jnp.asarray(y, dtype), jnp.asarray(x, dtype))


_UNARY = {
    "abs": _abs, "absolute": _abs, "neg": _neg, "negative": _neg,
    "positive": jnp.positive, "exp": jnp.exp, "exp2": jnp.exp2, "expm1": jnp.expm1,
    "log": jnp.log, "log2": jnp.log2, "log10": jnp.log10, "log1p": jnp.log1p, "sqrt": jnp.sqrt,
    "rsqrt": _rsqrt, "sin": jnp.sin, "cos": jnp.cos, "tan": jnp.tan, "asin": jnp.arcsin,
    "arcsin": jnp.arcsin, "acos": jnp.arccos, "arccos": jnp.arccos, "atan": jnp.arctan,
    "arctan": jnp.arctan, "sinh": jnp.sinh, "cosh": jnp.cosh, "tanh": jnp.tanh,
    "asinh": jnp.arcsinh, "arcsinh": jnp.arcsinh, "acosh": jnp.arccosh, "arccosh": jnp.arccosh,
    "atanh": jnp.arctanh, "arctanh": jnp.arctanh, "sigmoid": _sigmoid, "relu": jax.nn.relu,
    "floor": jnp.floor, "ceil": jnp.ceil, "trunc": jnp.trunc, "fix": jnp.trunc, "frac": _frac,
    "sign": _sign, "sgn": _sign, "reciprocal": jnp.reciprocal, "square": jnp.square,
    "erf": jsp.erf, "erfc": jsp.erfc, "erfinv": jsp.erfinv, "lgamma": _lgamma,
    "digamma": _digamma, "sinc": _sinc, "deg2rad": jnp.deg2rad, "rad2deg": jnp.rad2deg,
    "logical_not": jnp.logical_not, "bitwise_not": _bitwise_not, "isnan": jnp.isnan,
    "isinf": jnp.isinf, "isfinite": jnp.isfinite, "isposinf": _isposinf, "isneginf": _isneginf,
    "signbit": jnp.signbit, "conj": jnp.conj, "angle": _angle, "i0": _i0,
}  # fmt: skip

_BINARY = {
    "mul": _mul, "multiply": _mul, "true_divide": _true_divide,
    "floor_divide": jnp.floor_divide, "remainder": jnp.remainder, "fmod": jnp.fmod,
    "pow": _pow, "float_power": _float_power, "atan2": _atan2, "arctan2": _atan2,
    "maximum": _maximum, "minimum": _minimum, "fmax": jnp.fmax, "fmin": jnp.fmin,
    "eq": jnp.equal, "ne": jnp.not_equal, "not_equal": jnp.not_equal, "lt": jnp.less,
    "less": jnp.less, "le": jnp.less_equal, "less_equal": jnp.less_equal, "gt": jnp.greater,
    "greater": jnp.greater, "ge": jnp.greater_equal, "greater_equal": jnp.greater_equal,
    "logical_and": _logical_and, "logical_or": _logical_or, "logical_xor": _logical_xor,
    "bitwise_and": _bitwise_and, "bitwise_or": _bitwise_or, "bitwise_xor": _bitwise_xor,
    "hypot": jnp.hypot, "copysign": _copysign, "xlogy": _xlogy,
    "bitwise_left_shift": jnp.left_shift, "bitwise_right_shift": jnp.right_shift,
    "logaddexp": jnp.logaddexp, "logaddexp2": jnp.logaddexp2, "heaviside": _heaviside,
    "gcd": jnp.gcd, "lcm": jnp.lcm, "ldexp": _ldexp, "igamma": _igamma,
    "igammac": _igammac, "nextafter": jnp.nextafter,
}  # fmt: skip

# These apply the 0-d rule themselves.
_PLAIN = {_mul, _maximum, _minimum, _pow, _xlogy, _true_divide, _copysign, _float_power}
_WRAPPED: dict[Any, Any] = {}


def _with_rule(fn: Any) -> Any:
    """``fn`` itself if it applies torch's 0-d rule (or needs none), else one shared wrapper."""
    if fn in _PLAIN:
        return fn
    if fn not in _WRAPPED:
        _WRAPPED[fn] = _promoting(fn)
    return _WRAPPED[fn]


_BINARY = {name: _with_rule(fn) for name, fn in _BINARY.items()}

_OPERATORS = {
    "__mul__": _mul, "__truediv__": _true_divide, "__floordiv__": jnp.floor_divide,
    "__mod__": jnp.remainder, "__pow__": _pow, "__and__": _bitwise_and,
    "__or__": _bitwise_or, "__xor__": _bitwise_xor, "__lshift__": jnp.left_shift,
    "__rshift__": jnp.right_shift, "__lt__": jnp.less, "__le__": jnp.less_equal,
    "__gt__": jnp.greater, "__ge__": jnp.greater_equal, "__eq__": jnp.equal,
    "__ne__": jnp.not_equal,
}  # fmt: skip

_REFLECTED = {
    "__rmul__": _mul, "__rtruediv__": _true_divide,
    "__rfloordiv__": jnp.floor_divide, "__rmod__": jnp.remainder, "__rpow__": _pow,
    "__rand__": _bitwise_and, "__ror__": _bitwise_or, "__rxor__": _bitwise_xor,
    "__rlshift__": jnp.left_shift, "__rrshift__": jnp.right_shift,
}  # fmt: skip
_OPERATORS = {name: _with_rule(fn) for name, fn in _OPERATORS.items()}
_REFLECTED = {name: _with_rule(fn) for name, fn in _REFLECTED.items()}


class MathMethods(LinalgMethods):
    """Elementwise math, operators, comparisons (products: :class:`LinalgMethods`)."""

    __slots__ = ()

    def add(self, other: Any, *, alpha: Any = 1) -> Any:
        if alpha == 1 and not hasattr(alpha, "_ref"):
            return apply(_add, (), (self, other))
        return apply(_add_scaled, (), (self, other, alpha))

    def sub(self, other: Any, *, alpha: Any = 1) -> Any:
        if alpha == 1 and not hasattr(alpha, "_ref"):
            return apply(_sub, (), (self, other))
        return apply(_sub_scaled, (), (self, other, alpha))

    subtract = sub

    def div(self, other: Any, *, rounding_mode: str | None = None) -> Any:
        if rounding_mode is None:
            return apply(_true_divide, (), (self, other))
        if rounding_mode == "floor":
            _check_divisor(self, other, "division")
            return apply(jnp.floor_divide, (), (self, other))
        if rounding_mode == "trunc":
            _check_divisor(self, other, "division")
            if jnp.issubdtype(self.dtype, jnp.integer) and (
                isinstance(other, int)
                or jnp.issubdtype(getattr(other, "dtype", float), jnp.integer)
            ):
                return apply(_div_trunc_int, (), (self, other))
            return apply(_div_trunc, (), (self, other))
        raise RuntimeError(
            f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"{rounding_mode!r}"
        )

    divide = div

    def round(self, decimals: int = 0) -> Any:
        if decimals:
            return apply(_round_decimals, (int(decimals),), (self,))
        return apply(jnp.round, (), (self,))

    def logit(self, eps: float | None = None) -> Any:
        """``log(p / (1 - p))``, ``p`` clamped to ``[eps, 1 - eps]`` if ``eps`` is given
        (mirrors ``torch.Tensor.logit``; :func:`spx.special.logit`)."""
        from spx.special import logit  # builds on Tensor: imported when called

        return logit(self, eps)

    def clamp(self, min: Any = None, max: Any = None) -> Any:
        """Limit values to ``[min, max]`` (either may be None, a number or a tensor)."""
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        if min is None:
            return apply(_clamp_max, (), (self, max))
        if max is None:
            return apply(_clamp_min, (), (self, min))
        return apply(_clamp, (), (self, min, max))

    clip = clamp

    def clamp_min(self, min: Any) -> Any:
        return apply(_clamp_min, (), (self, min))

    def clamp_max(self, max: Any) -> Any:
        return apply(_clamp_max, (), (self, max))

    def nan_to_num(self, nan: float = 0.0, posinf: float | None = None, neginf=None) -> Any:
        return apply(_nan_to_num, (nan, posinf, neginf), (self,))

    def lerp(self, end: Any, weight: Any) -> Any:
        return apply(_lerp, (), (self, end, weight))

    def addcmul(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
        return apply(_addcmul, (), (self, tensor1, tensor2, value))

    def addcdiv(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
        return apply(_addcdiv, (), (self, tensor1, tensor2, value))

    def isclose(self, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan=False):
        """Elementwise closeness; infinities are close to themselves; NaN only with
        ``equal_nan`` (mirrors ``torch.isclose``)."""
        other_dtype = getattr(other, "dtype", None)
        if other_dtype is not None and other_dtype != self.dtype:
            raise RuntimeError(
                f"isclose(): {self.dtype} did not match {other_dtype}; cast one: "
                "a.isclose(b.to(a.dtype))"
            )
        return apply(_isclose, (bool(equal_nan),), (self, other, rtol, atol))

    def allclose(self, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan=False):
        """Whether every element is close (a Python bool: needs the values now)."""
        return bool(self.isclose(other, rtol, atol, equal_nan).all())

    def equal(self, other: Any) -> bool:
        """Whether both have the same shape and the same values (a Python bool)."""
        if tuple(self.shape) != tuple(getattr(other, "shape", ())):
            return False
        return bool(apply(_equal_all, (), (self, other)))

    def isreal(self) -> Any:
        return apply(_isreal, (), (self,))

    def polygamma(self, n: int) -> Any:
        """The ``n``-th derivative of the digamma function (mirrors ``torch.Tensor.polygamma``;
        :func:`spx.special.polygamma`)."""
        from spx.special import polygamma  # builds on Tensor: imported when called

        return polygamma(n, self)

    def stft(self, n_fft: int, *args: Any, **kwargs: Any) -> Any:
        """The short-time Fourier transform (mirrors ``torch.Tensor.stft``; :func:`spx.stft`)."""
        from spx.ops.spectral import stft  # builds on Tensor: imported when called

        return stft(self, n_fft, *args, **kwargs)

    def istft(self, n_fft: int, *args: Any, **kwargs: Any) -> Any:
        """The inverse short-time Fourier transform (mirrors ``torch.Tensor.istft``;
        :func:`spx.istft`)."""
        from spx.ops.spectral import istft  # builds on Tensor: imported when called

        return istft(self, n_fft, *args, **kwargs)

    def mvlgamma(self, p: int) -> Any:
        """The multivariate log-gamma function of dimension ``p``."""
        return apply(_mvlgamma, (int(p),), (self,))

    def where(self, condition: Any, other: Any) -> Any:
        """``self`` where ``condition`` holds, else ``other`` (torch's ``Tensor.where``)."""
        return apply(_where, (), (condition, self, other))

    def masked_fill(self, mask: Any, value: Any) -> Any:
        """``value`` where ``mask`` is True, else ``self`` (``value``: number or 0-d tensor)."""
        if getattr(value, "ndim", 0):
            raise RuntimeError(
                f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.ndim} dimension(s). (For a tensor of values: torch.where(mask, value, "
                "x), here spx.where.)"
            )
        check_scalar_fits(value, self.dtype)
        return apply(_masked_fill, (), (self, mask, value))

    def softmax(self, dim: int, dtype: Any = None) -> Any:
        d = _dims.dim(dim, self.ndim)
        return apply(_softmax, (d, None if dtype is None else canonical(dtype)), (self,))

    def log_softmax(self, dim: int, dtype: Any = None) -> Any:
        d = _dims.dim(dim, self.ndim)
        return apply(_log_softmax, (d, None if dtype is None else canonical(dtype)), (self,))

    # -- operators ---------------------------------------------------------------------------
    def __add__(self, other: Any) -> Any:
        if not _checked(other):
            return NotImplemented
        return apply(_add, (), (self, other))

    def __radd__(self, other: Any) -> Any:
        if not _checked(other):
            return NotImplemented
        return apply(_add, (), (other, self))

    def __sub__(self, other: Any) -> Any:
        if not _checked(other):
            return NotImplemented
        return apply(_sub, (), (self, other))

    def __rsub__(self, other: Any) -> Any:
        if not _checked(other):
            return NotImplemented
        return apply(_sub, (), (other, self))

    def __neg__(self) -> Any:
        return apply(_neg, (), (self,))

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return apply(_abs, (), (self,))

    def __invert__(self) -> Any:
        return apply(_bitwise_not, (), (self,))


def _unary_method(name: str, fn: Any) -> Any:
    def method(self: Any) -> Any:
        return apply(fn, (), (self,))

    method.__name__ = name
    method.__doc__ = f"Elementwise ``{name}`` (mirrors ``torch.Tensor.{name}``)."
    return method


def _check_exponent(x: Any, y: Any) -> None:
    """torch's errors for an integer tensor raised to an integer *number* that is negative
    (XLA gives 0, or 1 for a base of 1; torch gives 0 for a tensor exponent too, and so does
    spx) or past the tensor's type (``uint8 ** 1000``: torch casts the exponent to it)."""
    # A Python or numpy integer, not a bool (is_int) and not a tensor or array (which torch
    # accepts: 0 for a negative entry).
    if not (isinstance(y, int | np.integer) and is_int(y)) or not hasattr(x, "dtype"):
        return
    if y >= 0:
        if _integral(x):  # torch casts the exponent to the base's type first
            check_scalar_fits(y, x.dtype)
        return
    if _integral(x):
        raise RuntimeError(
            f"Integers to negative integer powers are not allowed. (x ** {y} on a tensor of "
            f"dtype {x.dtype}: compute in floats, x.float() ** {y})"
        )


def _divisor_check(what: str) -> Any:
    return lambda x, y: _check_divisor(x, y, what)


# Value checks torch makes before these ops, by method name; called as check(x, y) with the
# operands in the op's order (a reflected ``5 // t`` checks t as the divisor).
_PRECHECKS = {
    "floor_divide": _divisor_check("division"), "remainder": _divisor_check("modulo"),
    "fmod": _divisor_check("modulo"), "__floordiv__": _divisor_check("division"),
    "__mod__": _divisor_check("modulo"), "__rfloordiv__": _divisor_check("division"),
    "__rmod__": _divisor_check("modulo"), "pow": _check_exponent, "__pow__": _check_exponent,
}  # fmt: skip


def _binary_method(name: str, fn: Any) -> Any:
    check = _PRECHECKS.get(name)
    if check is not None:

        def method(self: Any, other: Any) -> Any:
            check(self, other)
            return apply(fn, (), (self, other))

    else:

        def method(self: Any, other: Any) -> Any:
            return apply(fn, (), (self, other))

    method.__name__ = name
    method.__doc__ = f"``{name}`` with ``other`` (mirrors ``torch.Tensor.{name}``)."
    return method


def _operator(name: str, fn: Any, reflected: bool) -> Any:
    check = _PRECHECKS.get(name)
    if reflected:

        def method(self: Any, other: Any) -> Any:
            if not _checked(other):
                return NotImplemented
            if check is not None:
                check(other, self)
            return apply(fn, (), (other, self))

    elif check is not None:

        def method(self: Any, other: Any) -> Any:
            if not _checked(other):
                return NotImplemented
            check(self, other)
            return apply(fn, (), (self, other))

    else:

        def method(self: Any, other: Any) -> Any:
            if not _checked(other):
                return NotImplemented
            return apply(fn, (), (self, other))

    method.__name__ = name
    return method


for _name, _fn in _UNARY.items():
    setattr(MathMethods, _name, _unary_method(_name, _fn))
for _name, _fn in _BINARY.items():
    setattr(MathMethods, _name, _binary_method(_name, _fn))
for _name, _fn in _OPERATORS.items():
    setattr(MathMethods, _name, _operator(_name, _fn, False))
for _name, _fn in _REFLECTED.items():
    setattr(MathMethods, _name, _operator(_name, _fn, True))
