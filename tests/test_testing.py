"""spx.testing.assert_close and make_tensor against torch.testing: which inputs pass, and the
exact text of every failure."""

import collections
import math
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import spx

torch = pytest.importorskip("torch")


def _outcome(fn):
    try:
        fn()
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


def _as_spx_text(text):
    if text is None:
        return None
    return (
        text.replace("<class 'torch.Tensor'>", "<class 'spx.Tensor'>")
        .replace("torch.Size", "spx.Size")
        .replace("torch.", "spx.")
    )


# (actual, expected) built from a library, so the same case runs in torch and in spx.
CASES = {
    "close floats": (lambda L: L.tensor([1.0, 2.0]), lambda L: L.tensor([1.0, 2.0 + 1e-6])),
    "far floats": (lambda L: L.tensor([1.0, 2.0, 3.0]), lambda L: L.tensor([1.0, 3.0, 3.5])),
    "2d": (
        lambda L: L.tensor([[1.0, 2.0], [0.5, 4.0]]),
        lambda L: L.tensor([[1.0, 2.1], [0.0, 4.0]]),
    ),
    "nan": (lambda L: L.tensor([math.nan, 1.0]), lambda L: L.tensor([math.nan, 1.0])),
    "inf": (lambda L: L.tensor([math.inf, 1.0]), lambda L: L.tensor([-math.inf, 1.0])),
    "int": (
        lambda L: L.tensor([1, 2, 3], dtype=L.int32),
        lambda L: L.tensor([1, 5, 3], dtype=L.int32),
    ),
    "int vs 0": (
        lambda L: L.tensor([1, 2, 3], dtype=L.int32),
        lambda L: L.tensor([1, 0, 3], dtype=L.int32),
    ),
    "bool": (lambda L: L.tensor([True, False]), lambda L: L.tensor([True, True])),
    "0-d": (lambda L: L.tensor(1.0), lambda L: L.tensor(2.0)),
    "shape": (lambda L: L.ones(2), lambda L: L.ones(3)),
    "dtype": (lambda L: L.ones(2), lambda L: L.ones(2, dtype=L.float16)),
    "float16": (
        lambda L: L.tensor([1.0, 2.0], dtype=L.float16),
        lambda L: L.tensor([1.001, 2.0], dtype=L.float16),
    ),
    "bfloat16": (
        lambda L: L.tensor([1.0, 2.0], dtype=L.bfloat16),
        lambda L: L.tensor([1.02, 2.5], dtype=L.bfloat16),
    ),
    "complex": (lambda L: L.tensor([1 + 1j, 2]), lambda L: L.tensor([1 + 1.5j, 2])),
    "list": (lambda L: [L.ones(2), L.zeros(2)], lambda L: [L.ones(2), L.ones(2)]),
    "list length": (lambda L: [L.ones(2)], lambda L: [L.ones(2), L.ones(2)]),
    "dict": (
        lambda L: {"a": L.ones(2), "b": [L.ones(1)]},
        lambda L: {"a": L.ones(2), "b": [L.zeros(1)]},
    ),
    "dict keys": (lambda L: {"a": 1, "c": 2}, lambda L: {"a": 1, "b": 2}),
    "ordered dict": (
        lambda L: collections.OrderedDict(w=L.ones(2)),
        lambda L: collections.OrderedDict(w=L.ones(2) * 1.5),
    ),
    "nested": (
        lambda L: [[L.ones(1)], (L.ones(1), {"x": L.ones(2)})],
        lambda L: [[L.ones(1)], (L.ones(1), {"x": L.tensor([1.0, 0.0])})],
    ),
    "floats": (lambda L: 1.0, lambda L: 1.1),
    "floats close": (lambda L: 1.0, lambda L: 1.0 + 1e-9),
    "int and float": (lambda L: 1, lambda L: 1.0),
    "None": (lambda L: None, lambda L: 1),
    "bools": (lambda L: True, lambda L: False),
    "numpy bool": (lambda L: np.bool_(True), lambda L: True),
    "tensor and number": (lambda L: L.ones(()), lambda L: 1.0),
    "numpy float64": (lambda L: np.array([1.0, 2.0]), lambda L: np.array([1.0, 2.5])),
    "numpy float32": (
        lambda L: np.array([1.0, 2.0], np.float32),
        lambda L: np.array([1.0, 2.0001], np.float32),
    ),
    "tensor and numpy": (lambda L: L.ones(2), lambda L: np.ones(2)),
    "strings": (lambda L: "a", lambda L: "a"),
    "all differ": (lambda L: L.zeros(4), lambda L: L.ones(4)),
    "1000 values": (
        lambda L: L.arange(1000.0).reshape(10, 100),
        lambda L: L.arange(1000.0).reshape(10, 100) * 1.001,
    ),
    "numpy scalars": (lambda L: np.float32(1.0), lambda L: np.float32(1.5)),
}
OPTIONS = {
    "defaults": {},
    "equal": {"rtol": 0, "atol": 0},
    "loose": {"rtol": 0.1, "atol": 0.1},
    "rtol only": {"rtol": 1e-3},
    "no dtype check": {"check_dtype": False},
    "equal_nan": {"equal_nan": True},
    "msg": {"msg": "custom"},
    "msg function": {"msg": lambda m: "Note: " + m},
}


@pytest.mark.parametrize("options", list(OPTIONS.values()), ids=list(OPTIONS))
@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_outcome_and_message_match_torch(case, options):
    actual, expected = case
    want = _outcome(lambda: torch.testing.assert_close(actual(torch), expected(torch), **options))
    got = _outcome(lambda: spx.testing.assert_close(actual(spx), expected(spx), **options))
    assert got == _as_spx_text(want)


def test_message_format():
    with pytest.raises(AssertionError) as info:
        spx.testing.assert_close(
            spx.tensor([[1.0, 2.0], [3.0, 4.0]]), spx.tensor([[1.0, 2.0], [3.5, 6.0]])
        )
    assert str(info.value) == (
        "Tensor-likes are not close!\n\n"
        "Mismatched elements: 2 / 4 (50.0%)\n"
        "Greatest absolute difference: 2.0 at index (1, 1) (up to 1e-05 allowed)\n"
        "Greatest relative difference: 0.3333333432674408 at index (1, 1) (up to 1.3e-06 allowed)"
    )


def test_jax_arrays_parameters_and_subclasses():
    spx.testing.assert_close(jnp.ones(3), jnp.ones(3))
    with pytest.raises(AssertionError, match="Mismatched elements: 3 / 3"):
        spx.testing.assert_close(jnp.ones(3), jnp.zeros(3))
    p = spx.nn.Parameter(spx.ones(2))
    spx.testing.assert_close(p, spx.ones(2))  # requires_grad does not matter
    with pytest.raises(TypeError, match="No comparison pair was able to handle"):
        spx.testing.assert_close(p, spx.ones(2), allow_subclasses=False)
    with pytest.raises(TypeError, match="No comparison pair"):
        spx.testing.assert_close(spx.ones(2), jnp.ones(2))  # unrelated types, as in torch


def test_device_and_stride_checks():
    import jax

    cpus = jax.devices("cpu")
    if len(cpus) > 1:
        a, b = spx.ones(2).to(cpus[0]), spx.ones(2).to(cpus[1])
        with pytest.raises(AssertionError, match="attribute 'device' do not match"):
            spx.testing.assert_close(a, b)
        spx.testing.assert_close(a, b, check_device=False)
    view = spx.ones(4)[::2]
    spx.testing.assert_close(view, spx.ones(2))
    with pytest.raises(AssertionError, match=r"'stride\(\)' do not match: \(2,\) != \(1,\)"):
        spx.testing.assert_close(view, spx.ones(2), check_stride=True)
    # torch's own answer for the same view
    with pytest.raises(AssertionError, match=r"'stride\(\)' do not match: \(2,\) != \(1,\)"):
        torch.testing.assert_close(torch.ones(4)[::2], torch.ones(2), check_stride=True)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "complex64"])
def test_default_tolerances_per_dtype(dtype):
    rtol = {"float32": 1.3e-6, "float16": 1e-3, "bfloat16": 1.6e-2, "complex64": 1.3e-6}[dtype]
    x = spx.tensor([1000.0], dtype=getattr(spx, dtype))
    spx.testing.assert_close(x, x * (1 + rtol / 4))
    with pytest.raises(AssertionError, match=f"up to {rtol} allowed"):
        spx.testing.assert_close(x, x * (1 + rtol * 8))


# -- make_tensor ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype,low,high",
    [
        ("float32", -9, 9),
        ("float16", -9, 9),
        ("bfloat16", -9, 9),
        ("int32", -9, 10),
        ("uint8", 0, 10),
        ("bool", 0, 2),
    ],
)
def test_make_tensor_default_ranges(dtype, low, high):
    x = spx.testing.make_tensor(4, 50, dtype=getattr(spx, dtype), device="cpu")
    assert x.shape == (4, 50) and x.dtype == getattr(spx, dtype) and not x.requires_grad
    values = np.asarray(x).astype(np.float64)
    assert values.min() >= low and values.max() < high


def test_make_tensor_options():
    x = spx.testing.make_tensor((3, 4), dtype=spx.float32, device="cpu", low=-1, high=1)
    assert x.shape == (3, 4) and bool(((x >= -1) & (x < 1)).all())
    x = spx.testing.make_tensor(3, 4, dtype=spx.float32, device="cpu", requires_grad=True)
    assert x.requires_grad and x.is_leaf
    x = spx.testing.make_tensor(2, 3, dtype=spx.float32, device="cpu", noncontiguous=True)
    t = torch.testing.make_tensor(2, 3, dtype=torch.float32, device="cpu", noncontiguous=True)
    assert x.shape == t.shape and x.stride() == t.stride() == (6, 2)
    x = spx.testing.make_tensor(50, dtype=spx.int32, device="cpu", low=0, high=1, exclude_zero=True)
    assert x.tolist() == [1] * 50
    x = spx.testing.make_tensor(4, dtype=spx.complex64, device="cpu", low=-1, high=1)
    assert x.dtype == spx.complex64 and bool((x.real.abs() <= 1).all())
    x = spx.testing.make_tensor(3, dtype=spx.float32, device="cpu", low=-1e39, high=1e39)
    assert bool(x.isfinite().all())  # clamped to the dtype's range, as torch
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FutureWarning, match="low==high"):
            spx.testing.make_tensor(3, dtype=spx.float32, device="cpu", low=2, high=2)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"dtype": "int32", "requires_grad": True},
        {"dtype": "float32", "low": 2, "high": 1},
        {"dtype": "float32", "low": math.nan},
        {"dtype": "uint8", "low": 300, "high": 400},
        {"dtype": "float32", "noncontiguous": True, "memory_format": "channels_last"},
    ],
)
def test_make_tensor_errors_match_torch(kwargs):
    dtype = kwargs.pop("dtype")
    memory_format = kwargs.pop("memory_format", None)
    t_kwargs = dict(kwargs, memory_format=torch.channels_last if memory_format else None)
    with pytest.raises(ValueError) as torch_error:
        torch.testing.make_tensor(2, 3, dtype=getattr(torch, dtype), device="cpu", **t_kwargs)
    with pytest.raises(ValueError) as spx_error:
        spx.testing.make_tensor(
            2, 3, dtype=getattr(spx, dtype), device="cpu", memory_format=memory_format, **kwargs
        )
    want = str(torch_error.value).replace("torch.", "spx.").split("memory_format=")[0]
    assert str(spx_error.value).startswith(want)
