"""Elementwise math, operators, comparisons and products of spx.Tensor against torch."""

import numpy as np
import pytest

import spx
from tests.tensor._parity import check, check_grad, check_raises, data

torch = pytest.importorskip("torch")

X = (2, 3)
POS = data(X, 1, "pos")  # (0.5, 1.5): in the domain of log, sqrt, acosh (after +1), ...
UNIT = (data(X, 2, "pos") - 1.0).astype(np.float32)  # (-0.5, 0.5): asin, atanh, erfinv
INTS = data(X, 3, "int")
BOOLS = data(X, 4, "bool")

# (name, input): every unary method, by domain.
ANY_REAL = """abs absolute neg negative positive exp exp2 expm1 sin cos tan atan arctan sinh cosh
    tanh asinh arcsinh sigmoid relu floor ceil trunc fix frac sign sgn square erf erfc sinc deg2rad
    rad2deg isnan isinf isfinite isposinf isneginf signbit conj angle i0 round logical_not"""
POSITIVE = "log log2 log10 log1p sqrt rsqrt reciprocal lgamma digamma"
IN_UNIT = "asin arcsin acos arccos atanh arctanh erfinv"
UNARY = [
    *[(n, X) for n in ANY_REAL.split()],
    *[(n, POS) for n in POSITIVE.split()],
    *[(n, UNIT) for n in IN_UNIT.split()],
    *[(n, POS + 1) for n in ("acosh", "arccosh")],
]
INT_UNARY = [
    "abs", "neg", "sign", "square", "floor", "ceil", "trunc", "round", "bitwise_not", "exp",
    "sqrt", "sin", "sigmoid", "logical_not", "isnan", "isfinite", "positive",
]  # fmt: skip
BOOL_UNARY = ["logical_not", "bitwise_not", "isnan", "sign"]


@pytest.mark.parametrize("name,x", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, x):
    check(lambda m, t: getattr(t, name)(), x, rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("name", INT_UNARY)
def test_unary_int(name):
    check(lambda m, t: getattr(t, name)(), INTS, rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("name", BOOL_UNARY)
def test_unary_bool(name):
    check(lambda m, t: getattr(t, name)(), BOOLS)


NOT_DIFFERENTIABLE = {"isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit",
                      "logical_not", "round", "floor", "ceil", "trunc", "fix", "sign", "sgn",
                      "angle"}  # fmt: skip


@pytest.mark.parametrize(
    "name,x", [u for u in UNARY if u[0] not in NOT_DIFFERENTIABLE],
    ids=[u[0] for u in UNARY if u[0] not in NOT_DIFFERENTIABLE],
)  # fmt: skip
def test_unary_grad(name, x):
    check_grad(lambda m, t: getattr(t, name)(), x, rtol=1e-4, atol=1e-5)


def test_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -2.5, 2.5], np.float32)
    for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "sign",
                 "abs", "round", "nan_to_num", "relu", "sigmoid"):  # fmt: skip
        check(lambda m, t, name=name: getattr(t, name)(), x)


BINARY = [
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide",
    "remainder", "fmod", "pow", "float_power", "atan2", "arctan2", "maximum", "minimum", "fmax",
    "fmin", "eq", "ne", "not_equal", "lt", "less", "le", "less_equal", "gt", "greater", "ge",
    "greater_equal", "logical_and", "logical_or", "logical_xor", "hypot", "copysign", "xlogy",
]  # fmt: skip


@pytest.mark.parametrize("name", [n for n in BINARY if n != "float_power"])
def test_binary_tensor(name):
    y = POS if name in ("pow", "float_power", "xlogy") else (2, 1)
    x = POS if name in ("pow", "float_power") else X
    check(lambda m, a, b: getattr(a, name)(b), x, y, rtol=2e-5, atol=1e-5)


# torch takes a Python number as ``other`` for these (the others need a tensor).
SCALAR_BINARY = [n for n in BINARY if n not in {
    "atan2", "arctan2", "maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or",
    "logical_xor", "hypot", "float_power"}]  # fmt: skip


@pytest.mark.parametrize("name", SCALAR_BINARY)
@pytest.mark.parametrize("scalar", [2, 0.5, -1.5])
def test_binary_scalar(name, scalar):
    x = POS if name == "pow" and not isinstance(scalar, int) else X
    if name == "xlogy":
        scalar = abs(scalar)
    check(lambda m, a: getattr(a, name)(scalar), x, rtol=2e-5, atol=1e-5)


DIFF_BINARY = ["add", "sub", "mul", "div", "pow", "atan2", "maximum", "minimum", "hypot",
               "xlogy", "fmax", "fmin", "copysign", "remainder", "fmod"]  # fmt: skip


@pytest.mark.parametrize("name", DIFF_BINARY)
def test_binary_grad(name):
    x = POS if name == "pow" else X
    y = POS if name in ("pow", "xlogy") else (2, 1)
    check_grad(lambda m, a, b: getattr(a, name)(b), x, y, rtol=1e-4, atol=1e-5)


INT_BINARY = ["add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "maximum",
              "minimum", "eq", "lt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor",
              "logical_and", "logical_xor"]  # fmt: skip


@pytest.mark.parametrize("name", INT_BINARY)
def test_binary_int(name):
    other = np.where(INTS == 0, 3, INTS)[::-1].copy()
    check(lambda m, a, b: getattr(a, name)(b), INTS, other)


INT_DIVISIONS = [
    lambda m, a, b: a // b, lambda m, a, b: a % b, lambda m, a, b: a // 0,
    lambda m, a, b: a % 0, lambda m, a, b: 5 // b, lambda m, a, b: 5 % b,
    lambda m, a, b: m.floor_divide(a, b), lambda m, a, b: m.remainder(a, b),
    lambda m, a, b: m.fmod(a, b), lambda m, a, b: m.fmod(a, 0),
    lambda m, a, b: m.remainder(5, b), lambda m, a, b: a.div(b, rounding_mode="floor"),
    lambda m, a, b: a.div(0, rounding_mode="trunc"), lambda m, a, b: a.clone().floor_divide_(b),
    lambda m, a, b: a.to(m.uint8) // 0, lambda m, a, b: a[0, 0] // b[0, 0],
]  # fmt: skip


@pytest.mark.parametrize("fn", INT_DIVISIONS)
def test_integer_division_by_zero_raises_as_torch(fn):
    # XLA returns a number for an integer division by zero (7 // 0 is -1 on CPU); torch raises.
    # A computed divisor (b[0, 0]) is checked once computed: by the read of the result.
    divisor = np.where(INTS == 0, 3, INTS)
    divisor[0, 0] = 0
    check_raises(lambda m, a, b: fn(m, a, b).tolist(), INTS, divisor, error=RuntimeError)


def test_integer_division_without_zero_and_float_division_by_zero_do_not_raise():
    check(lambda m, a: a // 0.0, INTS)
    check(lambda m, a: a.float() % 0, INTS)
    check(lambda m, a: m.zeros(0, dtype=m.int32) // 0, INTS)
    check(lambda m, a, b: a % b, INTS, np.where(INTS == 0, 3, INTS))


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor", "logical_and",
                                  "logical_or", "eq", "ne", "add", "mul"])  # fmt: skip
def test_binary_bool(name):
    check(lambda m, a, b: getattr(a, name)(b), BOOLS, BOOLS[::-1].copy())


def test_shifts():
    a = np.abs(INTS)
    check(lambda m, x: x.bitwise_left_shift(2), a)
    check(lambda m, x: x.bitwise_right_shift(1), a)
    check(lambda m, x: (x << 2, x >> 1), a)


@pytest.mark.parametrize("name", ["atan2", "maximum", "minimum", "fmax", "fmin", "hypot",
                                  "logical_and", "logical_or", "logical_xor"])  # fmt: skip
def test_binary_scalar_other_accepted(name):
    # torch wants a tensor here; spx also takes a Python number, with the same result.
    got = getattr(spx.tensor(data(X)), name)(0.5)
    want = getattr(torch.tensor(data(X)), name)(torch.tensor(0.5))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("alpha", [2, 0.5, -1])
def test_add_sub_alpha(alpha):
    check(lambda m, a, b: a.add(b, alpha=alpha), X, X)
    check(lambda m, a, b: a.sub(b, alpha=alpha), X, X)
    check(lambda m, a: a.add(3, alpha=alpha), X)
    check_grad(lambda m, a, b: a.sub(b, alpha=alpha), X, (3,))


def test_float_power_is_float32_without_x64():
    # torch computes float_power in float64; spx (JAX without x64) in float32: same values.
    got = spx.tensor(POS).float_power(spx.tensor(POS[::-1].copy()))
    want = torch.tensor(POS).float_power(torch.tensor(POS[::-1].copy()))
    assert got.dtype == spx.float32 and want.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    np.testing.assert_allclose(
        spx.tensor(POS).float_power(2.5).numpy(), torch.tensor(POS).float_power(2.5), rtol=1e-5
    )


@pytest.mark.parametrize("mode", [None, "floor", "trunc"])
def test_div_rounding(mode):
    check(lambda m, a, b: a.div(b, rounding_mode=mode), X, POS)
    check(lambda m, a: a.div(-0.7, rounding_mode=mode), X)
    other = np.where(INTS == 0, 3, INTS)[::-1].copy()
    check(lambda m, a, b: a.div(b, rounding_mode=mode), INTS, other)
    check(lambda m, a: a.div(3, rounding_mode=mode), INTS)


def test_div_bad_mode():
    check_raises(lambda m, a: a.div(2, rounding_mode="ceil"), X, error=RuntimeError)


@pytest.mark.parametrize("decimals", [0, 1, 2, -1])
def test_round_decimals(decimals):
    x = (data(X, 5) * 37).astype(np.float32)
    check(lambda m, a: a.round(decimals=decimals), x, rtol=1e-5, atol=1e-4)


def test_logit():
    check(lambda m, a: a.logit(), POS / 2)
    check(lambda m, a: a.logit(eps=0.3), POS / 2)
    check_grad(lambda m, a: a.logit(), POS / 2, rtol=1e-4)


CLAMPS = [
    ("min_max", lambda m, a: a.clamp(-0.5, 0.5)),
    ("min_only", lambda m, a: a.clamp(min=0.1)),
    ("max_only", lambda m, a: a.clamp(max=0.1)),
    ("int_bounds", lambda m, a: a.clamp(0, 1)),
    ("tensor_bounds", lambda m, a: a.clamp(m.full((3,), -0.2), m.full((2, 1), 0.3))),
    ("clip", lambda m, a: a.clip(-0.3, 0.2)),
    ("clamp_min", lambda m, a: a.clamp_min(0.0)),
    ("clamp_max", lambda m, a: a.clamp_max(0.0)),
    ("min_gt_max", lambda m, a: a.clamp(0.5, -0.5)),
]


@pytest.mark.parametrize("fn", [c[1] for c in CLAMPS], ids=[c[0] for c in CLAMPS])
def test_clamp(fn):
    check(fn, X)
    check_grad(fn, X)


def test_clamp_int():
    check(lambda m, a: a.clamp(-2, 3), INTS)
    check(lambda m, a: a.clamp(min=-2.5), INTS)  # torch promotes: float result


def test_clamp_needs_a_bound():
    check_raises(lambda m, a: a.clamp(), X, error=RuntimeError)


def test_nan_to_num():
    x = np.array([np.nan, np.inf, -np.inf, 1.5], np.float32)
    check(lambda m, a: a.nan_to_num(), x)
    check(lambda m, a: a.nan_to_num(1.0, 2.0, -3.0), x)
    check(lambda m, a: a.nan_to_num(nan=0.5, posinf=10.0), x)


def test_lerp_addcmul_addcdiv():
    check(lambda m, a, b: a.lerp(b, 0.3), X, X)
    check(lambda m, a, b, w: a.lerp(b, w), X, X, (3,))
    check(lambda m, a, b, c: a.addcmul(b, c, value=0.5), X, X, (3,))
    check(lambda m, a, b, c: a.addcmul(b, c), X, X, X)
    check(lambda m, a, b, c: a.addcdiv(b, c, value=-2), X, X, POS)
    check_grad(lambda m, a, b, w: a.lerp(b, w), X, X, (3,))
    check_grad(lambda m, a, b, c: a.addcmul(b, c, value=0.5), X, X, (3,))
    check_grad(lambda m, a, b, c: a.addcdiv(b, c, value=0.5), X, X, POS)


def test_matrix_products():
    check(lambda m, a, b: a.mm(b), (2, 3), (3, 4))
    check(lambda m, a, b: a.matmul(b), (2, 2, 3), (3, 4))
    check(lambda m, a, b: a.matmul(b), (3,), (3,))
    check(lambda m, a, b: a.matmul(b), (3,), (2, 3, 4))
    check(lambda m, a, b: a @ b, (2, 3), (3,))
    check(lambda m, a, b: a.bmm(b), (2, 2, 3), (2, 3, 4))
    check(lambda m, a, b: a.mv(b), (2, 3), (3,))
    check(lambda m, a, b: a.dot(b), (3,), (3,))
    check(lambda m, a, b: a.vdot(b), (3,), (3,))
    check(lambda m, a, b: a.inner(b), (2, 3), (4, 3))
    check(lambda m, a, b: a.outer(b), (2,), (3,))
    check(lambda m, a, b: a.ger(b), (2,), (3,))
    check(lambda m, a, b: a.kron(b), (2, 2), (2, 3))
    check(lambda m, x, a, b: x.addmm(a, b), (2, 4), (2, 3), (3, 4))
    check(lambda m, x, a, b: x.addmm(a, b, beta=0.5, alpha=2), (4,), (2, 3), (3, 4))
    check(lambda m, x, a, b: x.baddbmm(a, b, alpha=0.5), (2, 2, 4), (2, 2, 3), (2, 3, 4))
    for fn, shapes in [
        (lambda m, a, b: a.mm(b), [(2, 3), (3, 4)]),
        (lambda m, a, b: a @ b, [(2, 2, 3), (3, 4)]),
        (lambda m, a, b: a.bmm(b), [(2, 2, 3), (2, 3, 4)]),
        (lambda m, a, b: a.mv(b), [(2, 3), (3,)]),
        (lambda m, a, b: a.dot(b), [(3,), (3,)]),
        (lambda m, a, b: a.outer(b), [(2,), (3,)]),
        (lambda m, x, a, b: x.addmm(a, b, beta=0.5), [(2, 4), (2, 3), (3, 4)]),
    ]:
        check_grad(fn, *shapes, rtol=1e-4)


MATMUL_ERRORS = [
    ("mm_3d", lambda m, a, b: a.mm(b), (2, 2, 3), (3, 4)),
    ("mm_mismatch", lambda m, a, b: a.mm(b), (2, 3), (4, 4)),
    ("bmm_2d", lambda m, a, b: a.bmm(b), (2, 3), (3, 4)),
    ("mv_2d_vec", lambda m, a, b: a.mv(b), (2, 3), (3, 1)),
    ("dot_2d", lambda m, a, b: a.dot(b), (2, 3), (2, 3)),
    ("matmul_mismatch", lambda m, a, b: a @ b, (2, 3), (2, 3)),
]


@pytest.mark.parametrize(
    "fn,a,b", [c[1:] for c in MATMUL_ERRORS], ids=[c[0] for c in MATMUL_ERRORS]
)
def test_matrix_product_errors(fn, a, b):
    check_raises(fn, a, b, error=RuntimeError)


OPERATORS = [
    ("add", lambda m, a, b: a + b),
    ("radd", lambda m, a, b: 2 + a),
    ("sub", lambda m, a, b: a - b),
    ("rsub", lambda m, a, b: 1.5 - a),
    ("mul", lambda m, a, b: a * b),
    ("rmul", lambda m, a, b: 3 * a),
    ("truediv", lambda m, a, b: a / b),
    ("rtruediv", lambda m, a, b: 2 / b),
    ("floordiv", lambda m, a, b: a // b),
    ("rfloordiv", lambda m, a, b: 2 // b),
    ("mod", lambda m, a, b: a % b),
    ("rmod", lambda m, a, b: 2.5 % b),
    ("pow", lambda m, a, b: b**a),
    ("pow_scalar", lambda m, a, b: a**2),
    ("rpow", lambda m, a, b: 2**a),
    ("neg", lambda m, a, b: -a),
    ("pos", lambda m, a, b: +a),
    ("abs", lambda m, a, b: abs(a)),
    ("lt", lambda m, a, b: a < b),
    ("le", lambda m, a, b: a <= 0.1),
    ("gt", lambda m, a, b: a > b),
    ("ge", lambda m, a, b: 0.5 >= a),  # noqa: SIM300 - the reflected form
    ("eq", lambda m, a, b: a == b),
    ("eq_scalar", lambda m, a, b: a == 1.0),
    ("ne", lambda m, a, b: a != b),
    ("matmul", lambda m, a, b: a @ b.t()),
    ("invert", lambda m, a, b: ~(a > 0)),
    ("and", lambda m, a, b: (a > 0) & (b > 1)),
    ("or", lambda m, a, b: (a > 0) | (b > 1)),
    ("xor", lambda m, a, b: (a > 0) ^ (b > 1)),
    ("numpy_left", lambda m, a, b: np.float32(2.0) * a),
]


@pytest.mark.parametrize("fn", [o[1] for o in OPERATORS], ids=[o[0] for o in OPERATORS])
def test_operators(fn):
    check(fn, X, POS, rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize(
    "fn", [o[1] for o in OPERATORS if o[0] not in {
        "lt", "le", "gt", "ge", "eq", "eq_scalar", "ne", "invert", "and", "or", "xor",
        "floordiv", "rfloordiv", "numpy_left", "rmod"}],
    ids=[o[0] for o in OPERATORS if o[0] not in {
        "lt", "le", "gt", "ge", "eq", "eq_scalar", "ne", "invert", "and", "or", "xor",
        "floordiv", "rfloordiv", "numpy_left", "rmod"}],
)  # fmt: skip
def test_operator_grads(fn):
    check_grad(fn, X, POS, rtol=1e-4)


PROMOTION = [
    ("int_plus_float_scalar", lambda m, i, f: i + 2.5),
    ("int_times_int_scalar", lambda m, i, f: i * 2),
    ("int_div_int", lambda m, i, f: i / 2),
    ("int_plus_float_tensor", lambda m, i, f: i + f),
    ("bool_plus_int", lambda m, i, f: (f > 0) + 1),
    ("bool_times_float", lambda m, i, f: (f > 0) * 1.5),
    ("bool_sum_bool", lambda m, i, f: (f > 0) + (f < 0)),
    ("half_times_scalar", lambda m, i, f: f.half() * 2.5),
    ("half_plus_float", lambda m, i, f: f.half() + f),
    ("bf16_times_int", lambda m, i, f: f.bfloat16() * 3),
    ("int_pow_scalar", lambda m, i, f: i**2),
    ("int_pow_float", lambda m, i, f: i.abs() ** 0.5),
    ("int_floordiv", lambda m, i, f: i // 2),
    ("int_mod", lambda m, i, f: i % 3),
    ("float_scalar_tensor_0d", lambda m, i, f: f * m.tensor(2.0)),
    ("int_tensor_times_0d_float", lambda m, i, f: i * m.tensor(2.5)),
    ("compare_int_float", lambda m, i, f: i < f),
    ("where_int_float", lambda m, i, f: m.where(f > 0, i, f)),
    # torch: a 0-d tensor counts only by category next to a dimensioned one
    ("half_times_0d_float", lambda m, i, f: f.half() * m.tensor(2.0)),
    ("0d_float_plus_half", lambda m, i, f: m.tensor(2.0) + f.half()),
    ("bf16_div_0d", lambda m, i, f: f.bfloat16() / m.tensor(3.0)),
    ("half_pow_0d", lambda m, i, f: f.half().abs() ** m.tensor(2.0)),
    ("int8_plus_0d_int", lambda m, i, f: i.to(m.int8) + m.tensor(5)),
    ("half_max_0d", lambda m, i, f: m.maximum(f.half(), m.tensor(0.0))),
    ("half_clamp_0d", lambda m, i, f: f.half().clamp(m.tensor(-0.5), m.tensor(0.5))),
    ("half_where_0d", lambda m, i, f: m.where(f > 0, f.half(), m.tensor(0.0))),
    ("half_lerp_0d", lambda m, i, f: f.half().lerp(m.zeros_like(f).half(), m.tensor(0.5))),
    ("half_sub_alpha_0d", lambda m, i, f: f.half().sub(m.tensor(1.0), alpha=2)),
    ("int_times_0d_float", lambda m, i, f: i * m.tensor(2.5)),  # a higher category: float32
    ("0d_times_0d", lambda m, i, f: f.half()[0, 0] * m.tensor(2.0)),
]


@pytest.mark.parametrize("fn", [p[1] for p in PROMOTION], ids=[p[0] for p in PROMOTION])
def test_type_promotion(fn):
    check(fn, INTS, X, rtol=1e-2, atol=1e-2)


def test_where_masked_fill():
    check(lambda m, a, b: a.where(a > 0, b), X, X)
    check(lambda m, a: a.where(a > 0, 0.0), X)
    check(lambda m, a: a.masked_fill(a > 0, -1.0), X)
    check(lambda m, a: a.masked_fill(m.tensor([True, False, True]), 2), X)
    check(lambda m, a: a.masked_fill(a > 0, m.tensor(3.0)), X)
    check(lambda m, a: a.masked_fill(a > 0, 2.7), INTS)
    check_grad(lambda m, a, b: a.where(a > 0, b), X, X)
    check_grad(lambda m, a: a.masked_fill(a > 0, 0.0), X)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax(dim):
    check(lambda m, a: a.softmax(dim), (3, 4))
    check(lambda m, a: a.log_softmax(dim), (3, 4))
    check(lambda m, a: a.half().softmax(dim, dtype=m.float32), (3, 4), rtol=1e-3, atol=1e-3)
    check(lambda m, a: a.log_softmax(dim=dim), (3, 4))
    check_grad(lambda m, a: a.softmax(dim), (3, 4))
    check_grad(lambda m, a: a.log_softmax(dim), (3, 4))


def test_softmax_half():
    check(lambda m, a: a.half().softmax(-1), (3, 4), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize(
    "fn", [lambda m, a, b: a + b, lambda m, a, b: a * b, lambda m, a, b: m.maximum(a, b),
           lambda m, a, b: a < b, lambda m, a, b: a.sub(b, alpha=2), lambda m, a, b: a ** b],
)  # fmt: skip
def test_binary_broadcast_error(fn):
    check_raises(fn, (2, 3), (4,), error=RuntimeError)
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of "
                       r"tensor b \(4\) at non-singleton dimension 1"):  # fmt: skip
        fn(spx, spx.ones(2, 3), spx.ones(4))


def test_operator_with_unsupported_type():
    with pytest.raises(TypeError):
        spx.ones(2) + "a"
    with pytest.raises(TypeError):
        spx.ones(2) * object()


def test_scalar_stays_weak():
    x = spx.ones(3, dtype=spx.float16)
    assert (x * 1e3).dtype == spx.float16
    assert (x + 2).dtype == spx.float16
    assert (2.0 - x).dtype == spx.float16


# -- pow's corner cases (found by differential fuzzing against torch) --------------------------
POW_BASE = np.array([0.0, 0.0, 2.0, -2.0, 1.5], np.float32)
POW_EXP = np.array([0.0, 2.0, 0.5, 3.0, -1.0], np.float32)


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, x: x**0,
        lambda m, x: x**2,
        lambda m, x: x**3.0,
        lambda m, x: x ** x.abs(),
        lambda m, x: 2.0**x,
    ],
)
def test_pow_gradients_at_zero_are_torchs_not_nan(fn):
    check(fn, POW_BASE)
    check_grad(fn, POW_BASE)


def test_pow_tensor_exponent_gradients_at_zero_base():
    check(lambda m, x, y: m.pow(x, y), POW_BASE, POW_EXP)
    check_grad(lambda m, x, y: m.pow(x, y), POW_BASE, np.abs(POW_EXP))


def test_integer_pow_with_negative_exponents():
    base = np.array([3, -3, 2, 1, -1, -1, 0], np.int64)
    exp = np.array([-1, -2, -1, -5, -3, -2, 2], np.int64)
    check(lambda m, x, y: x**y, base, exp)
    check(lambda m, x, y: m.pow(x, y), base.astype(np.int8), exp.astype(np.int8))


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, x: x**-1, lambda m, x: x.pow(-2), lambda m, x: m.pow(x, -1),
        lambda m, x: x.clone().pow_(-1), lambda m, x: x.to(m.uint8) ** -1,
        lambda m, x: x.bool() ** -1, lambda m, x: x[:0] ** -1,
    ],
)  # fmt: skip
def test_integer_tensor_to_a_negative_number_raises_as_torch(fn):
    # XLA gives 0 (1 for a base of 1); torch refuses a negative Python-number exponent.
    check_raises(fn, np.array([2, 3, 1], np.int64), error=RuntimeError)


def test_negative_tensor_exponents_and_float_bases_do_not_raise():
    check(lambda m, x: 2 ** (x * -1), np.array([1, 2], np.int64))
    check(lambda m, x: x.float() ** -1, np.array([2, 4], np.int64))
    check(lambda m, x: x**-1.0, np.array([2, 4], np.int64))


def test_bool_pow_follows_torch():
    # torch has no Bool pow kernel: bool ** bool tensor and a bool base raise; a number
    # exponent is special-cased (x ** True is x, x ** False all True) and stays bool. spx gave
    # int32 results for all of them.
    check(lambda m, x: x**True, BOOLS)
    check(lambda m, x: x**False, BOOLS)
    check(lambda m, x: x.clone().pow_(True), BOOLS)
    check(lambda m, x: x**2, BOOLS)  # an int exponent promotes, as before
    check_raises(lambda m, x: x**x, BOOLS, error=NotImplementedError)
    check_raises(lambda m, x: m.pow(True, x), BOOLS, error=NotImplementedError)


def test_unsigned_pow_with_negative_exponent_is_not_garbage():
    x = spx.tensor([3, 1, 0], dtype=spx.uint8)
    assert (x ** spx.tensor([-1, -1, 2])).tolist() == [0, 1, 0]  # 3 ** -1 gave 171


# -- poles and branch points (found by differential fuzzing against torch) ---------------------
def test_digamma_at_its_pole_is_torchs_infinity():
    x = np.array([0.0, -0.0, -1.0, 1.0, 2.5], np.float32)
    check(lambda m, x: m.digamma(x), x)
    check_grad(lambda m, x: m.digamma(x), np.array([0.5, 1.0, 2.5], np.float32))
    check(lambda m, x: m.digamma(x), np.array([0, 1, 3], np.int64))
    check(lambda m, x: m.polygamma(0, x), x)


def test_gamma_gradients_at_infinity_and_at_the_pole_are_torchs():
    # digamma' (trigamma) is 0 at +inf (JAX gave NaN); lgamma' (digamma) is -inf/+inf at +0/-0.
    check_grad(lambda m, x: m.digamma(x), np.array([np.inf, 0.5, 3.0], np.float32))
    check_grad(lambda m, x: m.lgamma(x), np.array([0.0, -0.0, np.inf, 2.5, -0.5], np.float32))
    check(lambda m, x: m.lgamma(x), np.array([0.0, -0.0, np.inf, -2.0, 2.5], np.float32))


def test_angle_of_negative_zero_is_zero():
    x = np.array([-0.0, 0.0, -1.0, 2.0, np.nan, -np.inf], np.float32)
    check(lambda m, x: m.angle(x), x)
    check(lambda m, x: x.angle(), np.array([-2, 0, 3], np.int64))
    check_grad(lambda m, x: m.angle(x), np.array([-1.0, 2.0], np.float32))


def test_atan2_gradient_at_the_origin_is_zero_not_nan():
    y = np.array([0.0, 1.0, 0.0, -2.0], np.float32)
    x = np.array([0.0, 0.0, -1.0, 3.0], np.float32)
    check(lambda m, a, b: m.atan2(a, b), y, x)
    check_grad(lambda m, a, b: m.atan2(a, b), y, x)
    check_grad(lambda m, a, b: a.atan2(b), y, np.array(0.0, np.float32))  # broadcast
    check(lambda m, a, b: m.atan2(a, b), np.array([1, 0], np.int64), np.array([0, 0], np.int64))


# -- methods that share their kernels with spx.special: torch's values and gradients -----------
def test_i0_polygamma_logit_methods_and_their_in_place_forms_match_torch():
    x = np.array([0.0, -0.0, 1e-6, 0.5, -1.0, -2.5, 3.0], np.float32)
    p = np.array([0.0, 0.3, 1.0, -0.5, 1.5, 0.9], np.float32)
    check(lambda m, a: a.i0(), x)
    check_grad(lambda m, a: a.i0(), x)  # i0'(0) = i1(0) = 0
    check(lambda m, a: (a * 1).i0_(), x)
    check_grad(lambda m, a: (a * 1).i0_(), x)
    for n in range(5):
        check(lambda m, a: a.polygamma(n), x, rtol=2e-5)  # noqa: B023
        check_grad(lambda m, a: (a * 1).polygamma_(n), x, rtol=2e-5)  # noqa: B023
    check(lambda m, a: a.logit(), p)
    check_grad(lambda m, a: a.logit(), p)  # NaN outside [0, 1], inf at 0 and 1
    check_grad(lambda m, a: (a * 1).logit_(0.2), p)  # 0 outside [0.2, 0.8]


def test_xlogy_method_gradient_at_zero_x_is_torchs():
    # d/dx = log(y), but 0 where x == 0 and y <= 0 (JAX's: -inf or NaN there).
    x = np.array([0.0, 0.0, 0.0, 0.0, 1.0, 2.0], np.float32)
    y = np.array([0.0, -1.0, 2.0, np.inf, 0.5, 3.0], np.float32)
    check(lambda m, a, b: a.xlogy(b), x, y)
    check_grad(lambda m, a, b: a.xlogy(b), x, y)
    check_grad(lambda m, a, b: (a * 1).xlogy_(b), x, y)
    check_grad(lambda m, a: a.xlogy(0.0), x)


DIVISIONS = [
    ("uint8 / -2", lambda m: m.tensor([10, 20], dtype=m.uint8) / -2),
    ("-2 / uint8", lambda m: -2 / m.tensor([10, 20], dtype=m.uint8)),
    ("uint8.div(-2)", lambda m: m.tensor([10, 20], dtype=m.uint8).div(-2)),
    ("div(uint8, 0-d -2)", lambda m: m.div(m.tensor([10, 20], dtype=m.uint8), m.tensor(-2))),
    ("uint8.copysign(-3)", lambda m: m.tensor([10, 20], dtype=m.uint8).copysign(-3)),
    ("bool / 2", lambda m: m.tensor([True, False]) / 2),
    ("int / int", lambda m: m.tensor([7, -7]) / m.tensor([2, 2])),
    ("bf16.div(0-d float32)", lambda m: m.ones(2, dtype=m.bfloat16).div(m.tensor(3.0))),
    ("f16.true_divide(3)", lambda m: m.ones(2, dtype=m.float16).true_divide(3)),
]


@pytest.mark.parametrize("fn", [d[1] for d in DIVISIONS], ids=[d[0] for d in DIVISIONS])
def test_true_division_values_and_dtypes_are_torchs(fn):
    # An integer operand is divided as the number it is (JAX would first cast -2 to uint8,
    # 254), and div() applies torch's 0-d promotion rule as `/` does.
    import torch

    expected, got = fn(torch), fn(spx)
    assert str(got.dtype) == str(expected.dtype).removeprefix("torch.")
    np.testing.assert_allclose(got.tolist(), expected.tolist(), rtol=1e-6)


EDGES = [
    ("1 << t", lambda m: 1 << m.tensor([1, 2])),
    ("8 >> t", lambda m: 8 >> m.tensor([1, 2])),
    ("clamp(min=nan tensor)", lambda m: m.tensor([1.0, 2.0]).clamp(min=m.tensor(float("nan")))),
    ("clamp(max=nan tensor)", lambda m: m.tensor([1.0, 2.0]).clamp(max=m.tensor(float("nan")))),
    (
        "clamp(tensor bounds, one nan)",
        lambda m: m.tensor([1.0, 2.0]).clamp(m.tensor([0.0, 3.0]), m.tensor([0.5, float("nan")])),
    ),
    ("clamp of nan", lambda m: m.tensor([1.0, 2.0, float("nan")]).clamp(0.0, 1.5)),
]


@pytest.mark.parametrize("fn", [e[1] for e in EDGES], ids=[e[0] for e in EDGES])
def test_reflected_shifts_and_nan_clamp_bounds_are_torchs(fn):
    import torch

    expected, got = fn(torch), fn(spx)
    np.testing.assert_array_equal(np.asarray(got.tolist()), np.asarray(expected.tolist()))


def test_heaviside_and_addcmul_dtypes_as_torch():
    x = np.array([np.nan, -0.0, 2.0, -1.0], np.float32)
    check(lambda m, a: m.heaviside(a, m.tensor([0.5])), x)  # NaN gives 0, as torch's
    check(lambda m, a: m.heaviside(a, m.tensor([5, 5, 5, 5])), np.array([-1, 0, 2, 0]))
    check_raises(lambda m, a: m.heaviside(a, m.tensor([0.5])), np.array([1, 0]))
    big = np.array([100, 100], np.int8)  # the product is taken in float32, as torch's
    check(lambda m, a: m.addcmul(m.zeros(2), a, a), big)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32"])
def test_integer_powers_use_every_bit_of_the_exponent_as_torch(name):
    # XLA's integer power read the exponent's low 6 bits (3 ** 100 was 3 ** 36, 2 ** 64 was 1).
    exponents = [0, 1, 5, 31, 32, 33, 63, 64, 65, 100, 127, 128, 255, 1000, 2**31 - 1, -1, -2]
    bases = [b for b in (-3, -2, -1, 0, 1, 2, 3, 7) if name != "uint8" or b >= 0]
    for e in exponents:
        results = []
        for m in (torch, spx):
            x = m.tensor(bases, dtype=getattr(m, name))
            by_tensor = (x ** m.tensor([e] * len(bases), dtype=m.int32)).tolist()
            try:
                by_number = (x**e).tolist()
            except RuntimeError as err:  # negative, or not of the base's type: torch refuses
                by_number = "refused"
                assert "Integers to negative" in str(err) or "without overflow" in str(err)
            results.append((by_tensor, by_number))
        assert results[0] == results[1], (name, e, results)
