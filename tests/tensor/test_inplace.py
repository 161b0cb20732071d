"""In-place methods of spx.Tensor against torch: values, return self, dtype rules, leaves
that require grad, and gradients through in-place updates of non-leaves."""

import numpy as np
import pytest

import spx
from spx._tensor.methods.inplace import _FROM_OUT_OF_PLACE
from tests.tensor._parity import check, check_grad, check_raises, data

torch = pytest.importorskip("torch")

X = (3, 4)
POS = data(X, 1, "pos")
UNIT = (data(X, 2, "pos") - 1.0).astype(np.float32)

# name -> (args builder over m, input); default: no args on a float input.
_ARGS = {
    "renorm": lambda m: (2, 0, 1.0),
    "add": lambda m: (m.ones(4),), "sub": lambda m: (0.5,), "subtract": lambda m: (m.ones(3, 1),),
    "mul": lambda m: (2.5,), "multiply": lambda m: (m.full((4,), 3.0),),
    "div": lambda m: (4.0,), "divide": lambda m: (m.full((4,), 2.0),),
    "true_divide": lambda m: (3.0,), "floor_divide": lambda m: (0.3,),
    "remainder": lambda m: (0.7,), "fmod": lambda m: (0.7,), "pow": lambda m: (2,),
    "float_power": lambda m: (2.0,), "atan2": lambda m: (m.ones(4),),
    "arctan2": lambda m: (m.ones(4),), "hypot": lambda m: (m.ones(4),),
    "copysign": lambda m: (m.ones(4) * -1,), "lerp": lambda m: (m.zeros(4), 0.3),
    "addcmul": lambda m: (m.ones(4), m.ones(3, 1)), "addcdiv": lambda m: (m.ones(4), m.ones(4)),
    "addmm": lambda m: (m.ones(3, 2), m.ones(2, 4)), "clamp": lambda m: (-0.5, 0.5),
    "clip": lambda m: (-0.2, None), "clamp_min": lambda m: (0.1,), "clamp_max": lambda m: (0.1,),
    "masked_fill": lambda m: (m.tensor([True, False, True, False]), 9.0),
    "eq": lambda m: (m.zeros(4),), "ne": lambda m: (0.0,), "lt": lambda m: (0.0,),
    "le": lambda m: (0.0,), "gt": lambda m: (0.0,), "ge": lambda m: (0.0,),
    "less": lambda m: (0.0,), "less_equal": lambda m: (0.0,), "greater": lambda m: (0.0,),
    "greater_equal": lambda m: (0.0,), "not_equal": lambda m: (0.0,),
    "xlogy": lambda m: (m.full((4,), 2.0),), "logical_and": lambda m: (m.ones(4),),
    "logical_or": lambda m: (m.zeros(4),), "logical_xor": lambda m: (m.ones(4),),
    "scatter": lambda m: (1, m.tensor([[0], [1], [2]]), m.zeros(3, 1)),
    "scatter_add": lambda m: (0, m.tensor([[0, 1, 2, 0]]), m.ones(1, 4)),
    "scatter_reduce": lambda m: (0, m.tensor([[0, 1, 2, 0]]), m.ones(1, 4), "amax"),
    "index_add": lambda m: (0, m.tensor([1]), m.ones(1, 4)),
    "index_copy": lambda m: (1, m.tensor([3]), m.zeros(3, 1)),
    "index_reduce": lambda m: (0, m.tensor([1, 1]), m.full((2, 4), 2.0), "prod"),
    "index_fill": lambda m: (1, m.tensor([0, 2]), 5.0),
    "cumsum": lambda m: (1,), "cumprod": lambda m: (0,), "round": lambda m: (),
    "nan_to_num": lambda m: (), "logit": lambda m: (), "heaviside": lambda m: (m.ones(4),),
    "ldexp": lambda m: (m.ones(4),), "baddbmm": lambda m: (m.ones(2, 3, 2), m.ones(2, 2, 4)),
    "addbmm": lambda m: (m.ones(5, 3, 2), m.ones(5, 2, 4)), "addmv": lambda m: (m.ones(4, 2),
    m.ones(2)), "addr": lambda m: (m.ones(3), m.ones(4)), "igamma": lambda m: (m.ones(4),),
    "igammac": lambda m: (m.ones(4),), "nextafter": lambda m: (m.zeros(4),),
    "polygamma": lambda m: (1,), "mvlgamma": lambda m: (2,),
}  # fmt: skip
_POSITIVE = ["log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "lgamma", "digamma",
             "pow", "float_power", "xlogy"]  # fmt: skip
_INPUT = {
    **dict.fromkeys(_POSITIVE, POS),
    **dict.fromkeys(["asin", "arcsin", "acos", "arccos", "atanh", "arctanh", "erfinv"], UNIT),
    "logit": POS / 2,
    "baddbmm": data((2, 3, 4)),
    "addmv": data((4,)),
    **dict.fromkeys(["igamma", "igammac", "polygamma"], POS),
    "mvlgamma": POS + 2,
    **dict.fromkeys(["acosh", "arccosh"], POS + 1),
}
_INT_ONLY = {"bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
             "bitwise_right_shift", "gcd", "lcm"}  # fmt: skip
# float_power_ on float32: torch refuses (its result is float64); spx's float_power is float32.
FLOAT_NAMES = sorted(n for n in _FROM_OUT_OF_PLACE if n not in _INT_ONLY | {"float_power"})


@pytest.mark.parametrize("name", FLOAT_NAMES)
def test_inplace_matches_out_of_place(name):
    args = _ARGS.get(name, lambda m: ())
    x = _INPUT.get(name, data(X))

    def fn(m, t):
        y = t.clone()
        out = getattr(y, name + "_")(*args(m))
        assert out is y, f"{name}_ must return self"
        return y

    check(fn, x, rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(_INT_ONLY))
def test_inplace_int(name):
    a = np.abs(data(X, 3, "int")) + 1

    def fn(m, t):
        args = () if name == "bitwise_not" else (m.tensor(2),)
        return getattr(t.clone(), name + "_")(*args)

    check(fn, a)


def test_every_torch_inplace_name_exists():
    missing = [n + "_" for n in _FROM_OUT_OF_PLACE if not hasattr(torch.Tensor, n + "_")]
    assert not missing, f"spx has in-place methods torch lacks: {missing}"


def test_operators_in_place():
    def fn(m, x, y):
        z = x.clone()
        w = z
        z += y
        z -= 0.5
        z *= y
        z /= 2
        z **= 2
        assert z is w
        return z

    check(fn, X, X)

    def ints(m, x):
        z = x.clone()
        z //= 2
        z %= 3
        z &= 6
        z |= 1
        z ^= 2
        return z

    check(ints, np.abs(data(X, 3, "int")) + 3)


def test_fill_zero_copy():
    check(lambda m, x: x.clone().fill_(2.5), X)
    check(lambda m, x: x.clone().fill_(m.tensor(1.5)), X)
    check(lambda m, x: x.clone().zero_(), X)
    check(lambda m, x, y: x.clone().copy_(y), X, X)
    check(lambda m, x, y: x.clone().copy_(y), X, (4,))  # broadcast
    check(lambda m, x, y: x.clone().copy_(y.int()), X, X)  # cast
    check(lambda m, x: x.clone().copy_(x.double()), X)
    check(lambda m, x: x.int().copy_(x), X)  # float into int: copy_ casts (truncates)
    check(lambda m, x: x.clone().fill_diagonal_(5.0), X)
    check(lambda m, x: x.clone().fill_diagonal_(5.0, wrap=True), (7, 3))
    check(lambda m, x: x.clone().fill_diagonal_(-1.0), (3, 7))
    check(lambda m, x: x.clone().fill_diagonal_(2.0, wrap=True), (3, 7))
    check(lambda m, x: x.clone().fill_diagonal_(2.0), (2, 2, 2))
    check_raises(lambda m, x: x.clone().fill_diagonal_(2.0), (2, 3, 2), error=RuntimeError)


def test_copy_gradient():
    check_grad(lambda m, x, y: (x * 1).copy_(y), X, X)
    check_grad(lambda m, x, y: (x * 1).copy_(y), X, (4,))


INPLACE_ERRORS = [
    ("float_into_int", lambda m, x: x.long().add_(1.5)),
    ("int_div_into_int", lambda m, x: x.long().div_(2)),
    ("broadcast_grows", lambda m, x: x[0].add_(x)),
    ("bool_into_bool_add", lambda m, x: (x > 0).add_(1.5)),
    ("copy_wrong_shape", lambda m, x: x.clone().copy_(m.ones(5))),
    # A 1-d value was taken elementwise (a silent copy_); torch refuses it.
    ("fill_vector", lambda m, x: x.clone().fill_(m.ones(4))),
    ("masked_fill_vector", lambda m, x: x.clone().masked_fill_(x > 0, m.ones(4))),
    ("masked_fill_out_of_place_vector", lambda m, x: x.masked_fill(x > 0, m.ones(4))),
]


@pytest.mark.parametrize("fn", [e[1] for e in INPLACE_ERRORS], ids=[e[0] for e in INPLACE_ERRORS])
def test_inplace_errors(fn):
    check_raises(fn, X, error=(RuntimeError, ValueError, TypeError))


def test_inplace_chain_needing_its_own_output():
    # torch refuses this backward (sigmoid's saved output was modified in place); spx, whose
    # values are immutable, differentiates it: the result equals the out-of-place form.
    x0 = data(X)
    x = spx.tensor(x0, requires_grad=True)
    (x + 0).sigmoid_().mul_(x).sum().backward()
    t = torch.tensor(x0, requires_grad=True)
    (t.sigmoid() * t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5)


def test_int_inplace_keeps_int():
    check(lambda m, x: x.clone().add_(2), data(X, kind="int"))
    check(lambda m, x: x.clone().mul_(m.tensor(3)), data(X, kind="int"))
    check(lambda m, x: x.clone().floor_divide_(2), data(X, kind="int"))
    check(lambda m, x: x.clone().clamp_(-1, 1), data(X, kind="int"))
    check(lambda m, x: x.half().add_(1.0 / 3), X, rtol=1e-3)


def test_leaf_requiring_grad():
    for lib in (torch, spx):
        w = lib.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            w.add_(1)
        with pytest.raises(RuntimeError, match="leaf Variable"):
            w.zero_()
        with lib.no_grad():
            assert w.mul_(2) is w
        assert w.tolist() == [2.0, 2.0, 2.0] and w.requires_grad and w.is_leaf
        w.data.add_(1)  # through .data: allowed, seen by w
        assert w.tolist() == [3.0, 3.0, 3.0]


def test_view_of_leaf_requiring_grad():
    for lib in (torch, spx):
        w = lib.ones(2, 3, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable"):
            w[0].add_(1)
        with pytest.raises(RuntimeError, match="leaf Variable"):
            w.t().zero_()


INPLACE_GRADS = [
    ("mul_", lambda m, x: (x * 1).mul_(2)),
    ("add_tensor", lambda m, x, y: (x * 1).add_(y, alpha=3), (3, 4)),
    ("exp_", lambda m, x: (x * 1).exp_()),
    ("clamp_", lambda m, x: (x * 2).clamp_(-0.5, 0.5)),
    ("masked_fill_", lambda m, x: (x * 1).masked_fill_(x > 0, 0.0)),
    ("setitem_then_op", lambda m, x: (x * 1).pow_(2) + x),
    ("div_by_tensor", lambda m, x, y: (x * 1).div_(y.abs() + 1), (3, 4)),
    ("index_add_", lambda m, x, y: (x * 1).index_add_(0, m.tensor([0, 0, 2]), y), (3, 4)),
    ("scatter_", lambda m, x, y: (x * 1).scatter_(1, m.tensor([[1], [0], [3]]), y), (3, 1)),
    ("lerp_", lambda m, x, y: (x * 1).lerp_(y, 0.25), (3, 4)),
]


@pytest.mark.parametrize("case", [c[1:] for c in INPLACE_GRADS], ids=[c[0] for c in INPLACE_GRADS])
def test_gradient_through_inplace(case):
    fn, *extra = case
    check_grad(fn, X, *extra)


def test_uniform_normal_inplace():
    spx.manual_seed(0)
    u = spx.empty(20000).uniform_(-2, 3)
    assert u.min().item() >= -2 and u.max().item() < 3 and abs(u.mean().item() - 0.5) < 0.05
    n = spx.zeros(20000).normal_(1.0, 2.0)
    assert abs(n.mean().item() - 1.0) < 0.06 and abs(n.std().item() - 2.0) < 0.06
    b = spx.zeros(20000).bernoulli_(0.25)
    assert abs(b.mean().item() - 0.25) < 0.02
    e = spx.zeros(20000).exponential_(2.0)
    assert e.min().item() >= 0 and abs(e.mean().item() - 0.5) < 0.03
    r = spx.zeros(20000, dtype=spx.int32).random_(3, 7)
    assert set(np.unique(r.numpy())) == {3, 4, 5, 6}
    r2 = spx.zeros(1000).random_(5)
    assert set(np.unique(r2.numpy())) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    c = spx.zeros(20000).cauchy_(1.0, 2.0)
    assert abs(c.median().item() - 1.0) < 0.1  # the median (a Cauchy has no mean)
    q = (c - 1).abs().quantile(0.5).item()
    assert abs(q - 2.0) < 0.15  # half the mass within sigma of the median
    ln = spx.zeros(20000).log_normal_(0.5, 0.25)
    assert ln.min().item() > 0 and abs(ln.log().mean().item() - 0.5) < 0.01
    g = spx.zeros(20000).geometric_(0.25)
    assert g.min().item() == 1.0 and abs(g.mean().item() - 4.0) < 0.15
    x = spx.zeros(3)
    assert x.uniform_() is x and x.normal_() is x and x.cauchy_() is x


def test_random_inplace_on_leaf_needs_no_grad():
    w = spx.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        w.normal_()
    with spx.no_grad():
        w.normal_()
    assert w.requires_grad and w.is_leaf


def test_inplace_bumps_aliases():
    x = spx.zeros(3)
    d = x.detach()
    x.add_(1)
    assert d.tolist() == [1.0, 1.0, 1.0]
    d.mul_(5)
    assert x.tolist() == [5.0, 5.0, 5.0]


def test_inplace_errors_messages():
    check_raises(lambda m, x: x.long().add_(0.5), X, error=RuntimeError)


# -- writes autograd does not record keep the tensor's history (torch keeps its grad_fn) ------
def _data_assign(m, x):
    y = x * 1.5
    y.data = y.data.round()  # the straight-through estimator's form
    return y * x


def _detached_item(m, x):
    y = x * 2
    y.detach()[0] = 100.0
    return y * x


def _data_inplace(m, x):
    y = x * 2
    y.data.mul_(10)
    return y * x


def _no_grad_item(m, x):
    y = x * 2
    with m.no_grad():
        y[1] = 100.0
    return y * x


def _no_grad_view(m, x):
    y = x * 2
    v = y[1:]
    with m.no_grad():
        v.add_(1)
    return v * x[1:]


def _no_grad_whole(m, x):
    y = x * 2
    with m.no_grad():
        y.mul_(3)
    return y * x


@pytest.mark.parametrize(
    "fn",
    [_data_assign, _detached_item, _data_inplace, _no_grad_item, _no_grad_view, _no_grad_whole],
)
def test_unrecorded_writes_keep_the_history(fn):
    # Before: the write replaced the history, so x's gradient through y was silently lost.
    x = np.array([0.3, 1.6, -0.7, 2.2], np.float32)
    check(fn, x)
    check_grad(fn, x)


def test_unrecorded_write_keeps_the_history_at_second_order():
    def run(m):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = x**3
        with m.no_grad():
            y.mul_(2)
        (g,) = m.autograd.grad((y * y).sum(), x, create_graph=True)
        g.sum().backward()
        return x.grad.tolist()

    assert run(spx) == run(torch)


# Distribution parameters outside their domain: torch raises; spx drew from them silently.
DRAW_ERRORS = [
    ("normal_negative_std", lambda m, x: x.normal_(0.0, -1.0)),
    ("uniform_from_above_to", lambda m, x: x.uniform_(2.0, 1.0)),
    ("bernoulli_p_above_1", lambda m, x: x.bernoulli_(1.5)),
    ("bernoulli_p_negative", lambda m, x: x.bernoulli_(-0.1)),
    ("exponential_zero_lambda", lambda m, x: x.exponential_(0.0)),
    ("cauchy_negative_sigma", lambda m, x: x.cauchy_(0.0, -1.0)),
    ("log_normal_negative_std", lambda m, x: x.log_normal_(1.0, -1.0)),
    ("geometric_p_0", lambda m, x: x.geometric_(0.0)),
    ("geometric_p_above_1", lambda m, x: x.geometric_(1.5)),
    ("random_from_above_to", lambda m, x: x.random_(5, 2)),
    ("random_to_0", lambda m, x: x.random_(0)),
]


@pytest.mark.parametrize("fn", [e[1] for e in DRAW_ERRORS], ids=[e[0] for e in DRAW_ERRORS])
def test_draw_parameters_out_of_domain_raise_as_torch(fn):
    check_raises(fn, X, error=RuntimeError)


DRAW_EDGES = [
    ("normal_zero_std", lambda m, x: x.normal_(2.0, 0.0)),
    ("uniform_empty_range", lambda m, x: x.uniform_(1.0, 1.0)),
    ("bernoulli_int_p_1", lambda m, x: x.bernoulli_(1)),
    ("bernoulli_int_p_0", lambda m, x: x.bernoulli_(0)),
    ("random_single_value", lambda m, x: x.random_(3, 4)),
    ("random_to_1", lambda m, x: x.random_(1)),
]


@pytest.mark.parametrize("fn", [e[1] for e in DRAW_EDGES], ids=[e[0] for e in DRAW_EDGES])
def test_draw_parameters_at_domain_edges_match_torch(fn):
    check(fn, X)


IN_PLACE_INTO_UINT8 = [
    ("<<= tensor", lambda m, u: u.__ilshift__(m.tensor([1, 1]))),
    (">>= tensor", lambda m, u: u.__irshift__(m.tensor([1, 1]))),
    ("<<= int", lambda m, u: u.__ilshift__(1)),
    ("add_(int tensor)", lambda m, u: u.add_(m.tensor([1, 300]))),
    ("mul_(int tensor)", lambda m, u: u.mul_(m.tensor([2, 100]))),
    ("+= int tensor", lambda m, u: u.__iadd__(m.tensor([1, 1]))),
    ("clamp_(int tensors)", lambda m, u: u.clamp_(m.tensor([2, 2]), m.tensor([3, 3]))),
]


@pytest.mark.parametrize(
    "fn", [c[1] for c in IN_PLACE_INTO_UINT8], ids=[c[0] for c in IN_PLACE_INTO_UINT8]
)
def test_integer_results_write_into_a_uint8_tensor_as_torchs(fn):
    # torch writes any integer result into an integer tensor in place (its canCast); `u <<= t`
    # must update u itself, which aliases see. spx refused uint8 destinations, and `<<=`/`>>=`
    # rebound the name to a new int32 tensor.
    import torch

    results = []
    for m in (torch, spx):
        u = m.tensor([1, 4], dtype=m.uint8)
        alias = u
        out = fn(m, u)
        assert out is alias and str(alias.dtype).endswith("uint8")
        results.append(alias.tolist())
    assert results[1] == results[0]


def test_a_float_result_still_cannot_be_written_into_an_integer_tensor():
    for m in (pytest.importorskip("torch"), spx):
        with pytest.raises(RuntimeError):
            m.ones(2, dtype=m.int32).add_(m.tensor([0.5, 0.5]))
        with pytest.raises(RuntimeError):
            m.tensor([True, False]).add_(m.tensor([1, 1]))
