"""Window functions (hann, hamming, blackman, bartlett, kaiser) against torch: values for every
length kind and dtype, defaults, keyword forms and torch's errors."""

import numpy as np
import pytest

import spx

torch = pytest.importorskip("torch")

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]
LENGTHS = [0, 1, 2, 3, 4, 5, 17, 1001, 4099]  # 4099 > 2048: float16 rounds the index


def _both(name, *args, dtype=None, **kwargs):
    t_kw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    s_kw = {} if dtype is None else {"dtype": getattr(spx, dtype)}
    t = getattr(torch, name)(*args, **t_kw, **kwargs)
    s = getattr(spx, name)(*args, **s_kw, **kwargs)
    return t, s


def _close(s, t, exact):
    assert tuple(s.shape) == tuple(t.shape)
    assert s.dtype.name == str(t.dtype).removeprefix("torch.")
    got, want = np.asarray(s.float()), t.float().numpy()
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        torch.testing.assert_close(torch.from_numpy(got.copy()), torch.from_numpy(want))


@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("name", WINDOWS)
def test_float32_values_match_torch(name, periodic):
    for n in LENGTHS:
        t, s = _both(name, n, periodic)
        _close(s, t, exact=False)  # XLA's cos/i0 and torch's differ in the last bit


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", WINDOWS)
def test_half_precision_rounds_step_by_step_as_torch(name, dtype):
    """torch rounds every step (and every scalar) to the window's dtype: the windows are the
    same bits, not a float32 window cast at the end. Kaiser is one float32 expression in torch
    too, rounded once; its I0 differs from XLA's in the last float32 bits, which can move a
    rounding by one unit of the half-precision dtype."""
    for periodic in (True, False):
        for n in LENGTHS:
            t, s = _both(name, n, periodic, dtype=dtype)
            if name == "kaiser_window":
                eps = float(torch.finfo(getattr(torch, dtype)).eps)
                got, want = np.asarray(s.float()), t.float().numpy()
                assert s.dtype == getattr(spx, dtype)
                np.testing.assert_allclose(got, want, rtol=eps, atol=0)
            else:
                _close(s, t, exact=True)


@pytest.mark.parametrize(
    "name,args",
    [
        ("hamming_window", (12, True, 0.5, 0.3)),
        ("hamming_window", (12, False, 0.6, 0.4)),
        ("kaiser_window", (12, True, 5.0)),
        ("kaiser_window", (12, False, -3.0)),
        ("kaiser_window", (12, False, 0.0)),
    ],
)
def test_coefficients(name, args):
    t, s = _both(name, *args)
    _close(s, t, exact=False)


def test_defaults_and_keywords():
    for name in WINDOWS:
        t, s = _both(name, 9)
        _close(s, t, exact=False)  # periodic=True by default
        t, s = _both(name, 9, periodic=False)
        _close(s, t, exact=False)
    # torch takes alpha/beta positionally only; spx also by keyword.
    _close(spx.kaiser_window(9, beta=4.0), torch.kaiser_window(9, True, 4.0), exact=False)
    _close(spx.hamming_window(9, alpha=0.5, beta=0.5), torch.hann_window(9), exact=False)
    assert spx.hann_window(4).tolist() == [0.0, 0.5, 1.0, 0.5]


def test_periodic_is_the_longer_symmetric_window_without_its_last_value():
    for name in WINDOWS:
        fn = getattr(spx, name)
        np.testing.assert_allclose(
            np.asarray(fn(10, periodic=True)), np.asarray(fn(11, periodic=False))[:-1], atol=1e-6
        )


def test_requires_grad_device_and_length_as_tensor():
    w = spx.hann_window(5, requires_grad=True)
    assert w.requires_grad and w.is_leaf
    (w * 2).sum().backward()
    assert w.grad.tolist() == [2.0] * 5
    w = spx.blackman_window(spx.tensor(6), device="cpu")  # a 0-d integer tensor, as torch
    _close(w, torch.blackman_window(torch.tensor(6)), exact=False)
    assert spx.hann_window(np.int64(3)).shape == (3,)


def test_default_dtype_is_followed():
    try:
        for lib in (torch, spx):
            lib.set_default_dtype(lib.bfloat16)
        for name in WINDOWS:
            t, s = _both(name, 7)
            assert s.dtype == spx.bfloat16
            _close(s, t, exact=name != "kaiser_window")
    finally:
        for lib in (torch, spx):
            lib.set_default_dtype(lib.float32)


def test_complex_dtype_gives_the_real_window():
    # torch accepts complex dtypes but has no CPU kernel for them (arange); spx computes them.
    w = spx.hann_window(6, dtype=spx.complex64)
    assert w.dtype == spx.complex64
    np.testing.assert_allclose(np.asarray(w).real, np.asarray(spx.hann_window(6)))
    assert not np.asarray(w).imag.any()


@pytest.mark.parametrize("name", WINDOWS)
def test_errors_match_torch(name):
    t_fn, s_fn = getattr(torch, name), getattr(spx, name)
    with pytest.raises(RuntimeError, match="requires non-negative window_length"):
        t_fn(-1)
    with pytest.raises(RuntimeError, match=f"{name} requires non-negative window_length, got "):
        s_fn(-1)
    for dtype in ("int32", "int64", "bool"):
        with pytest.raises(RuntimeError, match="expects floating point dtypes"):
            t_fn(4, dtype=getattr(torch, dtype))
        with pytest.raises(RuntimeError, match=f"{name} expects floating point dtypes"):
            s_fn(4, dtype=getattr(spx, dtype))
    for length in (2.5, True, None, "4"):
        with pytest.raises(TypeError):
            t_fn(length)
        with pytest.raises(TypeError, match="window_length"):
            s_fn(length)
    with pytest.raises(TypeError):
        t_fn(4, None)
    with pytest.raises(TypeError, match="periodic must be a bool"):
        s_fn(4, None)


def test_coefficient_errors():
    with pytest.raises(TypeError, match="beta"):
        spx.kaiser_window(4, True, "12")
    with pytest.raises(TypeError, match="alpha"):
        spx.hamming_window(4, True, None)


def test_inside_a_compiled_function():
    @spx.compile
    def weighted(x):
        return (x * spx.hann_window(8) * spx.kaiser_window(8, False, 3.0)).sum()

    x = spx.arange(8.0)
    eager = (x * spx.hann_window(8) * spx.kaiser_window(8, False, 3.0)).sum().item()
    assert weighted(x).item() == pytest.approx(eager, rel=1e-6)
    assert weighted(x * 2).item() == pytest.approx(2 * eager, rel=1e-6)
