"""spx's pointwise top-level functions (spx.exp, spx.add, spx.clamp, ...) against torch's."""

import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx.ops import math as ops_math
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
