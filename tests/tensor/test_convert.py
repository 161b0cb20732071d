"""Conversions of spx.Tensor against torch: dtypes, devices, Python and numpy values, copies,
aliases, new_* constructors."""

import warnings

import jax
import numpy as np
import pytest

import spx
from tests.tensor._parity import check, check_raises, data

torch = pytest.importorskip("torch")

X = (2, 3)
INTS = data(X, 3, "int")

CASTS = [
    ("to_dtype", lambda m, x: x.to(m.float16)),
    ("to_dtype_kw", lambda m, x: x.to(dtype=m.int32)),
    ("to_bool", lambda m, x: x.to(m.bool)),
    ("to_tensor", lambda m, x: x.to(m.zeros(1, dtype=m.int32))),
    ("to_cpu_dtype", lambda m, x: x.to("cpu", m.bfloat16)),
    ("float", lambda m, x: x.int().float()),
    ("half", lambda m, x: x.half()),
    ("bfloat16", lambda m, x: x.bfloat16()),
    ("long", lambda m, x: x.long()),
    ("int", lambda m, x: x.int()),
    ("short", lambda m, x: x.short()),
    ("char", lambda m, x: x.char()),
    ("byte", lambda m, x: x.abs().byte()),
    ("bool", lambda m, x: x.bool()),
    ("type_as", lambda m, x: x.type_as(m.zeros(1, dtype=m.float16))),
    ("type_dtype", lambda m, x: x.type(m.int32)),
    ("int_to_float", lambda m, x: (x * 3).int().float()),
    ("float_to_int_truncates", lambda m, x: (x * 3).int()),
    ("cpu", lambda m, x: x.cpu()),
    ("contiguous", lambda m, x: x.contiguous()),
]


@pytest.mark.parametrize("fn", [c[1] for c in CASTS], ids=[c[0] for c in CASTS])
def test_casts(fn):
    check(fn, X, rtol=1e-2, atol=1e-2)


# Floats out of an integer type's range: torch's CPU casts go through int32 (NaN, inf and
# values past int32 become INT32_MIN) and narrower types wrap; XLA alone saturates.
OUT_OF_RANGE = np.array(
    [-1.5, -128.9, 300.0, -300.0, 255.9, 256.0, 1e10, -1e10, np.nan, np.inf, -np.inf, 2.5, -0.7],
    np.float32,
)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32"])
def test_float_to_int_casts_out_of_range_are_torchs(name):
    check(lambda m, x: x.to(getattr(m, name)), OUT_OF_RANGE)
    check(lambda m, x: x.half().to(getattr(m, name)), OUT_OF_RANGE)
    check(lambda m, x: m.zeros(13, dtype=getattr(m, name)).copy_(x), OUT_OF_RANGE)

    def write(m, x):
        out = m.zeros(13, dtype=getattr(m, name))
        out[:] = x
        return out

    check(write, OUT_OF_RANGE)
    check(lambda m, x: x.byte(), OUT_OF_RANGE)


def test_complex_to_int_casts_take_the_real_part_as_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "Casting complex values to real discards ..."
        check(lambda m, x: (x * (1 + 2j)).to(m.uint8), np.array([-1.5, 300.0, 2.0], np.float32))


WRITES = {
    "setitem": lambda x, m, v: x.__setitem__(0, v),
    "masked_fill": lambda x, m, v: x.masked_fill_(m.tensor([True, False, False]), v),
    "fill_": lambda x, m, v: x.fill_(v),
    "index_fill": lambda x, m, v: x.index_fill_(0, m.tensor([0]), v),
    "scatter": lambda x, m, v: x.scatter_(0, m.tensor([0]), v),
    "full": lambda x, m, v: m.full((3,), v, dtype=x.dtype),
    "full_like": lambda x, m, v: m.full_like(x, v),
    "new_full": lambda x, m, v: x.new_full((3,), v),
}


@pytest.mark.parametrize("how", sorted(WRITES))
@pytest.mark.parametrize(
    "name", ["uint8", "int8", "int16", "int32", "bool", "float16", "bfloat16", "float32"]
)
def test_numbers_that_do_not_fit_a_tensor_raise_as_torch(how, name):
    # Integers: out of range, NaN, inf; floats: finite numbers past the largest value (torch's
    # x[i] = v lets float16/bfloat16 overflow to inf, and refuses it for float32).
    values = (-1.5, -0.5, 255.5, 300, 2.5, 1e6, 65519.0, 3.5e38, -1e39, float("nan"), float("inf"))
    for v in values:
        results = []
        for m in (torch, spx):
            x = m.zeros(3, dtype=getattr(m, name))
            try:
                out = WRITES[how](x, m, v)
                results.append(str((x if out is None else out)[0].item()))
            except RuntimeError as e:
                assert "without overflow" in str(e)
                results.append("refused")
        assert results[0] == results[1], (how, name, v, results)


def test_to_returns_self_when_nothing_changes():
    for lib in (torch, spx):
        x = lib.ones(2)
        assert x.to(lib.float32) is x
        assert x.to("cpu") is x
        assert x.float() is x
        assert x.to(x) is x
        assert x.to(lib.float32, copy=True) is not x


def test_to_errors():
    with pytest.raises(TypeError, match="neither a dtype, a device nor a tensor"):
        spx.ones(2).to(3.5)
    with pytest.raises(TypeError, match="unexpected keyword"):
        spx.ones(2).to(dtype=spx.float16, colour="red")


def test_casts_keep_autograd():
    for lib in (torch, spx):
        w = lib.ones(2, requires_grad=True)
        (w.half().float() * 3).sum().backward()
        assert w.grad.tolist() == [3.0, 3.0]


ITEMS = [
    ("float", lambda m, x: x[0, 0].item()),
    ("int", lambda m, x: x.int()[0, 1].item()),
    ("bool", lambda m, x: (x > 0)[0, 2].item()),
    ("one_element_1d", lambda m, x: x[0, :1].item()),
    ("tolist", lambda m, x: x.tolist()),
    ("tolist_int", lambda m, x: x.int().tolist()),
    ("tolist_bool", lambda m, x: (x > 0).tolist()),
    ("tolist_0d", lambda m, x: x.sum().tolist()),
    ("float()", lambda m, x: float(x[0, 0])),
    ("int()", lambda m, x: int(x[1, 1] * 10)),
    ("bool()", lambda m, x: bool(x[0, 0] > 0)),
    ("index", lambda m, x: [10, 20, 30][x.int().abs().clamp(max=2)[0, 0]]),
    ("format", lambda m, x: f"{x.sum():.3f}"),
    ("dim_sizes", lambda m, x: (x.element_size(), x.half().element_size(), x.nbytes, x.itemsize)),
    ("floating", lambda m, x: (x.is_floating_point(), x.int().is_floating_point())),
    ("complex_signed", lambda m, x: (x.is_complex(), x.is_signed(), x.bool().is_signed())),
    ("is_cpu", lambda m, x: (x.is_cpu, x.is_cuda, x.get_device())),
]


@pytest.mark.parametrize("fn", [c[1] for c in ITEMS], ids=[c[0] for c in ITEMS])
def test_python_values(fn):
    got, want = fn(spx, spx.tensor(data(X))), fn(torch, torch.tensor(data(X)))
    if isinstance(want, list) and want and isinstance(want[0], list):
        np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                                   rtol=1e-6)  # fmt: skip
        assert type(got[0][0]) is type(want[0][0])
    elif isinstance(want, float):
        assert type(got) is float and abs(got - want) < 1e-6
    else:
        assert got == want and type(got) is type(want)


VALUE_ERRORS = [
    ("item_many", lambda m, x: x.item(), RuntimeError),
    ("bool_many", lambda m, x: bool(x), RuntimeError),
    ("index_float", lambda m, x: [1, 2][x[0, 0]], TypeError),
    ("len_0d", lambda m, x: len(x.sum()), TypeError),
    ("iter_0d", lambda m, x: iter(x.sum()), TypeError),
]


@pytest.mark.parametrize(
    "fn,error", [c[1:] for c in VALUE_ERRORS], ids=[c[0] for c in VALUE_ERRORS]
)
def test_value_errors(fn, error):
    check_raises(fn, X, error=error)


def test_numpy():
    x = spx.tensor(data(X))
    a = x.numpy()
    assert isinstance(a, np.ndarray) and a.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(x), a)
    np.testing.assert_array_equal(np.array(x, dtype=np.float64), a.astype(np.float64))
    for lib in (torch, spx):
        w = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match=r"detach\(\)\.numpy\(\)"):
            w.numpy()
        with pytest.raises(RuntimeError, match="requires grad"):
            np.asarray(w * 2)
        assert w.detach().numpy().tolist() == [1.0, 1.0]
        assert (w * 2).detach().numpy().tolist() == [2.0, 2.0]
        with lib.no_grad():
            assert (w * 2).numpy().tolist() == [2.0, 2.0]


def test_jnp_conversion_of_a_tensor_that_requires_grad_raises():
    import jax.numpy as jnp

    w = spx.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"test_convert.py:\d+: `jnp.asarray\(w\)` \(in as"):
        jnp.asarray(w)
    with pytest.raises(RuntimeError, match=r"the add operator of a jax array.*spx.as_tensor"):
        jnp.ones(2) + w
    assert float(jnp.sum(w.detach())) == 2.0
    assert float(jnp.sum(spx.ones(3))) == 3.0


@pytest.mark.parametrize(
    ("fn", "fix"),
    [
        ("sin", "spx.sin(t)"),
        ("sum", "spx.sum(t)"),
        ("relu", "spx.relu(t)"),
        ("tanh", "spx.tanh(t)"),
    ],
)
def test_jitted_jnp_function_on_a_tensor_that_requires_grad_raises(fn, fix):
    """The error names the user's line and the JAX function, and the spx function to use."""
    import jax.numpy as jnp

    w = spx.ones(2, requires_grad=True)
    call = {
        "sin": lambda: jnp.sin(w),
        "sum": lambda: jnp.sum(w),
        "relu": lambda: jax.nn.relu(w),
        "tanh": lambda: jnp.tanh(w),
    }[fn]
    with pytest.raises(RuntimeError) as info:
        call()
    message = str(info.value)
    assert f"(in {fn})" in message and f"Use {fix} instead" in message
    assert "test_convert.py:" in message


def test_clone_is_independent_and_differentiable():
    for lib in (torch, spx):
        x = lib.zeros(3)
        c = x.clone()
        c.add_(1)
        assert x.tolist() == [0.0, 0.0, 0.0] and c.tolist() == [1.0, 1.0, 1.0]
        w = lib.ones(2, requires_grad=True)
        c = w.clone()
        assert c.requires_grad and not c.is_leaf
        (c * 2).sum().backward()
        assert w.grad.tolist() == [2.0, 2.0]


def test_detach_of_a_leaf_shares_storage():
    for lib in (torch, spx):
        w = lib.ones(3, requires_grad=True)
        d = w.detach()
        assert not d.requires_grad and d.is_leaf
        d[0] = 5.0  # in place through the detached alias: seen by w (same storage)
        assert w.tolist() == [5.0, 1.0, 1.0]
        with lib.no_grad():
            w.mul_(2)
        assert d.tolist() == [10.0, 2.0, 2.0]


def test_detach_of_a_result_cuts_the_graph():
    for lib in (torch, spx):
        w = lib.ones(2, requires_grad=True)
        y = w * 2
        d = y.detach()
        assert not d.requires_grad and d.is_leaf and d.grad_fn is None
        assert d.tolist() == [2.0, 2.0]
        loss = (y * d).sum()  # d is a constant: dloss/dw = 2 * d
        loss.backward()
        assert w.grad.tolist() == [4.0, 4.0]
        with pytest.raises(RuntimeError, match="does not require grad"):
            (d * 3).sum().backward()


def test_detach_inplace():
    for lib in (torch, spx):
        w = lib.ones(2, requires_grad=True)
        y = w * 2
        loss = (y * 3).sum()
        assert y.detach_() is y
        assert not y.requires_grad and y.is_leaf and y.grad_fn is None
        assert y.tolist() == [2.0, 2.0]
        loss.backward()  # the graph recorded before detach_ is intact
        assert w.grad.tolist() == [6.0, 6.0]


def test_data_of_a_result_has_no_history():
    w = spx.ones(2, requires_grad=True)
    y = w * 2
    assert not y.data.requires_grad


def test_data_alias():
    for lib in (torch, spx):
        w = lib.ones(2, requires_grad=True)
        assert not w.data.requires_grad
        w.data.mul_(3)
        assert w.tolist() == [3.0, 3.0] and w.requires_grad
        w.data = lib.zeros(2)
        assert w.tolist() == [0.0, 0.0] and w.requires_grad


NEW = [
    ("new_tensor", lambda m, x: x.new_tensor([1, 2])),
    ("new_zeros", lambda m, x: x.new_zeros(2, 3)),
    ("new_zeros_tuple", lambda m, x: x.new_zeros((4,))),
    ("new_ones", lambda m, x: x.new_ones((2,), dtype=m.int32)),
    ("new_full", lambda m, x: x.new_full((2, 2), 7)),
    ("new_empty_shape", lambda m, x: x.new_empty(3).shape),
    ("new_from_int", lambda m, x: x.int().new_zeros(2)),
]


@pytest.mark.parametrize("fn", [c[1] for c in NEW], ids=[c[0] for c in NEW])
def test_new_constructors(fn):
    check(fn, X)


def test_new_tensor_keeps_float_dtype_of_data():
    # torch.new_tensor takes self's dtype for any data.
    check(lambda m, x: x.half().new_tensor([1.5, 2.5]), X)
    check(lambda m, x: x.new_tensor([True, False]), X)


def test_repr():
    assert repr(spx.tensor([1.0, 2.5])) == "tensor([1.0000, 2.5000])"
    assert repr(spx.tensor([1.0, 2.0])) == repr(torch.tensor([1.0, 2.0]))
    assert repr(spx.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(spx.ones(2, dtype=spx.float16)) == "tensor([1., 1.], dtype=spx.float16)"
    # complex64 is the default complex dtype (torch leaves it out too), complex128 is not.
    assert "dtype" not in repr(spx.tensor(np.array([1 + 2j], np.complex64)))
    assert "dtype" not in repr(torch.tensor(np.array([1 + 2j], np.complex64)))
    assert "requires_grad=True" in repr(spx.ones(2, requires_grad=True))
    assert "grad_fn" in repr(spx.ones(2, requires_grad=True) * 2)


def test_repr_of_half_precision_values_past_float16s_range_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warning when casting 1e8 to float16
        text = repr(spx.tensor([1.5, -2.0, 7e4]).half())
    assert text == "tensor([ 1.5000, -2.0000,     inf], dtype=spx.float16)"  # torch's layout


def test_device():
    x = spx.ones(2)
    assert x.device == jax.devices("cpu")[0] and x.is_cpu
    assert x.cpu() is x


def test_conj_neg_bits():
    for lib in (torch, spx):
        x = lib.ones(2)
        assert not x.is_conj() and not x.is_neg()
        assert x.resolve_conj() is x and x.resolve_neg() is x


def test_pending_values_on_two_devices_are_each_computed():
    # One thread's pending values are computed together; values on different devices cannot
    # share one program, so each is computed on its own (pipeline ranks as threads do this).
    d0, d1 = jax.devices()[:2]
    a = spx.as_tensor(jax.device_put(np.ones(3, np.float32), d0)).clone() * 2
    b = spx.as_tensor(jax.device_put(np.ones(3, np.float32), d1)).clone() * 3
    assert b.sum().item() == 9.0
    assert a.sum().item() == 6.0
    assert a.device == d0 and b.device == d1


def test_int_and_float_of_several_elements_raise_torchs_valueerror():
    check_raises(lambda m, x: int(x), (3,), error=ValueError)
    check_raises(lambda m, x: float(x), (2, 2), error=ValueError)
    check_raises(lambda m, x: x.item(), (3,), error=RuntimeError)
