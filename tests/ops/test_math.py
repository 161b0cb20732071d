"""spx's pointwise top-level functions (spx.exp, spx.add, spx.clamp, ...) against torch's."""

import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx.ops import math as ops_math
from tests.special._compare import DTYPES, EDGES, compare
from tests.tensor._parity import check, check_grad, check_raises, data

torch = pytest.importorskip("torch")

X = (2, 3)
POS = data(X, 1, "pos")
UNIT = (data(X, 2, "pos") - 1.0).astype(np.float32)
INTS = data(X, 3, "int")

_DOMAIN = {
    **dict.fromkeys(
        ["log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "lgamma", "digamma"], POS
    ),
    **dict.fromkeys(["asin", "arcsin", "acos", "arccos", "atanh", "arctanh", "erfinv"], UNIT),
    "acosh": POS + 1,
    "arccosh": POS + 1,
}
UNARY = list(ops_math._UNARY_NAMES)


@pytest.mark.parametrize("name", UNARY)
def test_unary_function(name):
    x = _DOMAIN.get(name, data(X))
    if name in ("bitwise_not", "logical_not"):
        x = INTS
    check(lambda m, t: getattr(m, name)(t), x, rtol=2e-5, atol=1e-5)


BINARY = [n for n in ops_math._BINARY_NAMES if n not in ("gcd", "lcm")]
_INT_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
             "bitwise_right_shift"}  # fmt: skip


@pytest.mark.parametrize("name", BINARY)
def test_binary_function(name):
    if name in _INT_ONLY:
        a, b = np.abs(INTS), np.abs(INTS[::-1]).copy()
    elif name in ("pow", "float_power", "xlogy", "ldexp"):
        a, b = POS, POS[::-1].copy()
    else:
        a, b = data(X), (2, 1)
    if name == "float_power":  # torch computes in float64, spx in float32 (no x64)
        got = spx.float_power(spx.tensor(a), spx.tensor(b))
        np.testing.assert_allclose(got.numpy(), torch.float_power(torch.tensor(a),
                                   torch.tensor(b)).numpy(), rtol=1e-5)  # fmt: skip
        return
    check(lambda m, x, y: getattr(m, name)(x, y), a, b, rtol=2e-5, atol=1e-5)


def test_gcd_lcm():
    a, b = np.array([12, 18, -7, 0]), np.array([8, 12, 21, 5])
    check(lambda m, x, y: m.gcd(x, y), a, b)
    check(lambda m, x, y: m.lcm(x, y), a, b)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "remainder",
                                  "true_divide", "floor_divide", "xlogy"])  # fmt: skip
def test_number_first_keeps_tensor_dtype(name):
    # torch.sub(2, half) is float16: the number is a "wrapped number".
    check(lambda m, t: getattr(m, name)(2, t.half()), POS, rtol=2e-3, atol=2e-3)
    check(lambda m, t: getattr(m, name)(2.5, t), POS, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("alpha", [1, 2, -0.5])
def test_add_sub_alpha(alpha):
    check(lambda m, a, b: m.add(a, b, alpha=alpha), X, X)
    check(lambda m, a, b: m.sub(a, b, alpha=alpha), X, (3,))
    check(lambda m, a, b: m.subtract(a, b, alpha=alpha), X, X)
    check(lambda m, a: m.add(a, 2, alpha=alpha), X)
    check(lambda m, a, b: m.rsub(a, b, alpha=alpha), X, X)
    check(lambda m, a: m.rsub(a, 2.0), X)


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_div(mode):
    check(lambda m, a, b: m.div(a, b, rounding_mode=mode), X, POS)
    check(lambda m, a, b: m.divide(a, b, rounding_mode=mode), INTS, np.full(X, 3))


def test_round_logit_nan_to_num():
    check(lambda m, a: m.round(a * 10, decimals=1), X, rtol=1e-5, atol=1e-4)
    check(lambda m, a: m.round(a), X)
    check(lambda m, a: m.logit(a), POS / 2)
    check(lambda m, a: m.logit(a, eps=0.2), POS / 2)
    x = np.array([np.nan, np.inf, -np.inf, 2.0], np.float32)
    check(lambda m, a: m.nan_to_num(a), x)
    check(lambda m, a: m.nan_to_num(a, nan=1.0, posinf=9.0, neginf=-9.0), x)


def test_clamp_family():
    check(lambda m, a: m.clamp(a, -0.5, 0.5), X)
    check(lambda m, a: m.clamp(a, min=0.0), X)
    check(lambda m, a: m.clip(a, max=0.1), X)
    check(lambda m, a: m.clamp_min(a, 0.2), X)
    check(lambda m, a: m.clamp_max(a, 0.2), X)
    check(lambda m, a, lo: m.clamp(a, min=lo), X, (3,))
    check_grad(lambda m, a, lo, hi: m.clamp(a, lo, hi + 1), X, (3,), (2, 1))
    check_raises(lambda m, a: m.clamp(a), X, error=RuntimeError)


def test_lerp_addcmul_addcdiv():
    check(lambda m, a, b: m.lerp(a, b, 0.25), X, X)
    check(lambda m, a, b, w: m.lerp(a, b, w), X, X, X)
    check(lambda m, a, b, c: m.addcmul(a, b, c, value=2), X, X, X)
    check(lambda m, a, b, c: m.addcdiv(a, b, c, value=-1), X, X, POS)
    check_grad(lambda m, a, b, w: m.lerp(a, b, w), X, X, X)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_log_softmax(dim):
    check(lambda m, a: m.softmax(a, dim), (3, 4))
    check(lambda m, a: m.log_softmax(a, dim=dim), (3, 4))
    check_grad(lambda m, a: m.softmax(a, dim), (3, 4))
    check_grad(lambda m, a: m.log_softmax(a, dim), (3, 4))


@pytest.mark.parametrize("name", ["exp", "sigmoid", "tanh", "abs", "sqrt", "log1p", "relu",
                                  "square", "sin", "erf"])  # fmt: skip
def test_unary_function_grad(name):
    check_grad(lambda m, t: getattr(m, name)(t), POS, rtol=1e-4)


@pytest.mark.parametrize("name", ["mul", "pow", "atan2", "hypot", "logaddexp", "xlogy"])
def test_binary_function_grad(name):
    check_grad(lambda m, a, b: getattr(m, name)(a, b), POS, POS[::-1].copy(), rtol=1e-4)


@pytest.mark.parametrize(
    "make",
    [lambda a: jnp.asarray(a), lambda a: a, lambda a: spx.tensor(a)],
    ids=["jax", "numpy", "tensor"],
)
def test_accepts_arrays(make):
    a = data(X)
    want = torch.exp(torch.tensor(a)) + torch.tensor(a)
    got = spx.add(spx.exp(make(a)), make(a))
    assert isinstance(got, spx.Tensor)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert isinstance(spx.mul(make(a), make(a)), spx.Tensor)


def test_numbers_become_tensors():
    assert spx.exp(0.0).dtype == spx.float32 and spx.exp(0.0).item() == 1.0
    assert spx.abs(-3).dtype == spx.int32 and spx.abs(-3).item() == 3
    assert spx.add(2, 3).item() == 5


def test_list_input_is_refused_with_the_fix():
    with pytest.raises(TypeError, match=r"spx\.exp\(\): argument 'input'.*spx\.tensor"):
        spx.exp([1.0, 2.0])
    with pytest.raises(TypeError, match=r"spx\.add\(\): argument 'other'.*spx\.tensor"):
        spx.add(spx.ones(2), [1.0, 2.0])
    with pytest.raises(TypeError, match="'input' must be a Tensor, got str"):
        spx.sigmoid("x")


def test_every_function_is_documented_and_exists_in_torch():
    for name in spx.ops.__all__:
        fn = getattr(spx, name)
        assert hasattr(torch, name), f"spx.{name} has no torch counterpart"
        if callable(fn) and not isinstance(fn, type) and fn.__module__ != "spx.ops.creation":
            assert fn.__doc__, f"spx.{name} has no docstring"


def test_special_functions():
    check(lambda m, a: m.polygamma(1, a), POS, rtol=1e-4)
    check(lambda m, a: a.polygamma(2), POS, rtol=1e-4)
    check(lambda m, a: m.mvlgamma(a + 2, 2), POS, rtol=1e-5)
    check(lambda m, a, b: m.igamma(a, b), POS, POS[::-1].copy(), rtol=1e-4)
    check(lambda m, a, b: m.igammac(a, b), POS, POS[::-1].copy(), rtol=1e-4)
    check(lambda m, a, b: m.nextafter(a, b), X, X)
    check_grad(lambda m, a: m.polygamma(1, a), POS, rtol=1e-3)


# -- edge values: values, dtypes and gradients against torch -----------------------------------
# Each of these shares its kernel with its spx.special twin; these pin the top-level names (and
# the Tensor methods behind them) to torch at zeros, poles, infinities and NaN.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "name",
    ["i0", "sinc", "digamma", "lgamma", "erf", "erfc", "erfinv", "expm1", "log1p", "exp2",
     "sigmoid"],
)  # fmt: skip
def test_unary_function_matches_torch_at_edge_values(name, dtype):
    x = np.concatenate([EDGES, [1e-20, -1e-20, 0.5, -0.5, 0.999, -0.999, -1.5]])
    compare(lambda m, t: getattr(m, name)(t), [x], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_i0_gradient_is_i1(dtype):
    # i0'(0) = i1(0) = 0 (JAX's own derivative gave NaN where i0 overflows: torch gives +-inf).
    x = np.array([0.0, -0.0, 1e-6, 1.0, -3.0, 100.0, 1e4, -1e4, np.inf, np.nan])
    compare(lambda m, t: m.i0(t), [x], dtype)
    compare(lambda m, t: t.i0(), [x], dtype)


# Negative integers (torch: finite for n = 0's derivative and n = 1, -inf or NaN above), the
# half-integers and values between the poles (XLA's Hurwitz zeta is wrong below about -9),
# signed zeros, infinities, NaN, tiny and large values.
POLYGAMMA_X = np.array([
    -1.0, -2.0, -3.0, -10.0, -1e4, -0.5, -1.5, -2.5, -9.5, -10.03, -10.7, -23.9976, -0.001,
    0.0, -0.0, 1e-3, 0.5, 1.0, 2.5, 30.0, 1e4, np.inf, -np.inf, np.nan,
])  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 4])
def test_polygamma_matches_torch_at_poles_infinities_and_negative_values(n, dtype):
    compare(lambda m, t: m.polygamma(n, t), [POLYGAMMA_X], dtype)
    compare(lambda m, t: t.polygamma(n), [POLYGAMMA_X], dtype)


def test_polygamma_refuses_a_negative_order_as_torch():
    with pytest.raises(RuntimeError):
        torch.polygamma(-1, torch.tensor([1.0]))
    with pytest.raises(RuntimeError, match="negative n"):
        spx.polygamma(-1, spx.tensor([1.0]))
    with pytest.raises(RuntimeError, match="negative n"):
        spx.tensor([1.0]).polygamma(-1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("eps", [None, 0.0, 0.2, 1e-8, -0.1, 0.5, 0.7])
def test_logit_matches_torch_in_and_out_of_the_unit_interval(eps, dtype):
    # Gradient: NaN outside [0, 1] without eps (or with a negative one), 0 outside
    # [eps, 1 - eps] with it, +-inf at 0 and 1.
    x = np.array([0.0, 1e-30, 1e-6, 0.2, 0.3, 0.5, 0.8, 0.999, 1.0, -0.1, -2.0, 1.1, 3.0, np.inf])
    compare(lambda m, t: m.logit(t, eps), [x], dtype)
    compare(lambda m, t: t.logit(eps), [x], dtype)
    compare(lambda m, t: m.logit(t, eps=eps), [np.array([np.nan, 0.4])], dtype)


# Every pairing of x in {0, -0, 1, -1, 2, nan, inf} with y in {0, -0, -1, 1, 2, inf, -inf, nan}:
# torch's d/dx is log(y), masked to 0 where x == 0 and y <= 0.
_XS, _YS = [0.0, -0.0, 1.0, -1.0, 2.0, np.nan, np.inf], [0.0, -0.0, -1.0, 1.0, 2.0, np.inf,
                                                         -np.inf, np.nan]  # fmt: skip
XLOGY_X = np.repeat(_XS, len(_YS))
XLOGY_Y = np.tile(_YS, len(_XS))


@pytest.mark.parametrize("dtype", DTYPES)
def test_xlogy_matches_torch_at_zero_x_and_every_y(dtype):
    compare(lambda m, a, b: m.xlogy(a, b), [XLOGY_X, XLOGY_Y], dtype)
    compare(lambda m, a, b: a.xlogy(b), [XLOGY_X, XLOGY_Y], dtype)
    compare(lambda m, a, b: m.xlogy(a, b), [XLOGY_X, XLOGY_Y], dtype, grad=(True, False))
    compare(lambda m, a, b: m.xlogy(a, b), [XLOGY_X, XLOGY_Y], dtype, grad=(False, True))


@pytest.mark.parametrize("dtype", DTYPES)
def test_xlogy_with_a_number_and_with_broadcasting(dtype):
    x = np.array([0.0, 0.0, 1.0, 2.0])
    y = np.array([[0.0], [2.0], [-1.0]])
    compare(lambda m, a, b: m.xlogy(a, b), [x, y], dtype)  # (4,) with (3, 1)
    for number in (0.0, 2.0, -1.0):
        compare(lambda m, a, n=number: m.xlogy(a, n), [x], dtype)
        compare(lambda m, b, n=number: m.xlogy(n, b), [y], dtype)


def test_xlogy_dtypes_and_in_place_match_torch():
    for dtype in ("float16", "bfloat16"):
        a = spx.tensor([0.0, 1.0, 2.0], dtype=getattr(spx, dtype))
        assert spx.xlogy(a, a).dtype == getattr(spx, dtype)
        assert spx.xlogy(a, 2.0).dtype == getattr(spx, dtype)
    assert spx.xlogy(spx.tensor([0, 2]), spx.tensor([0, 3])).dtype == spx.float32
    x = np.array([0.0, 0.0, 1.0, 2.0], np.float32)
    y = np.array([0.0, 2.0, 0.0, 3.0], np.float32)
    check(lambda m, a, b: a.clone().xlogy_(b), x, y)
    check_grad(lambda m, a, b: (a * 1).xlogy_(b), x, np.array([0.5, 2.0, 1.0, 3.0], np.float32))


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_igamma_edge_values_match_torch(name):
    # At a = inf (and a = 0, x = 0 / inf / NaN / negative) JAX's gammainc gives NaN or the
    # wrong limit; torch's rules apply, as in spx.special.gammainc.
    inf, nan = float("inf"), float("nan")
    a = [inf, inf, inf, inf, 1.0, 0.0, 0.0, inf, 2.0, -1.0, 2.5]
    x = [0.0, 1.0, inf, nan, inf, 1.0, 0.0, -1.0, 0.0, 1.0, 1.5]
    want = getattr(torch, name)(torch.tensor(a), torch.tensor(x)).numpy()
    got = getattr(spx, name)(spx.tensor(a), spx.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(
        getattr(spx.tensor(a), name)(spx.tensor(x)).numpy(), want, rtol=1e-6, equal_nan=True
    )
