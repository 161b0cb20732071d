"""spx.fft against torch.fft: values for every transform, n/s, dim and norm variant, and
gradients through real-valued losses of the (complex) outputs.

Complex outputs are compared in complex64; an FFT of n float32 values accumulates rounding
~log(n) * eps * sum|x|, hence atol 1e-5 on unit-scale data. spx's gradients with respect to
complex leaves follow JAX's convention (the conjugate of torch's), so gradients are taken
with respect to real leaves, through real parts, imaginary parts and magnitudes.
"""

import math

import numpy as np
import pytest

import spx
from tests.tensor._parity import check, check_grad, check_raises

torch = pytest.importorskip("torch")

TOL = {"rtol": 1e-4, "atol": 1e-5}
NORMS = ["backward", "ortho", "forward"]  # None is "backward": test_default_norm


def _real_parts(out):
    """A real view of an output for check_grad (which differentiates float32 outputs)."""
    if out.is_complex():  # (* 1: torch's .imag of a conjugate view has its negative bit set)
        return out.real * 1, out.imag * 1, out.abs()
    return out


def _complex(m, x, y):
    return x + y * 1j  # complex input built from real leaves, so gradients reach them


ONE_D = [
    ("fft", lambda m, x, **k: m.fft.fft(x, **k), False),
    ("ifft", lambda m, x, **k: m.fft.ifft(x, **k), False),
    ("rfft", lambda m, x, **k: m.fft.rfft(x, **k), False),
    ("ihfft", lambda m, x, **k: m.fft.ihfft(x, **k), False),
    ("irfft", lambda m, x, **k: m.fft.irfft(x, **k), True),
    ("hfft", lambda m, x, **k: m.fft.hfft(x, **k), True),
    ("fft_complex", lambda m, x, **k: m.fft.fft(x, **k), True),
    ("ifft_complex", lambda m, x, **k: m.fft.ifft(x, **k), True),
]


@pytest.mark.parametrize("name,fn,complex_in", ONE_D, ids=[c[0] for c in ONE_D])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("kw", [{}, {"n": 6}, {"n": 3}, {"dim": 0}, {"n": 7, "dim": -2}])
def test_one_dimensional(name, fn, complex_in, norm, kw):
    def case(m, x, y):
        inp = _complex(m, x, y) if complex_in else x
        return _real_parts(fn(m, inp, norm=norm, **kw))

    check(case, (4, 5), (4, 5), **TOL)
    check_grad(case, (4, 5), (4, 5), **TOL)


N_D = [
    ("fftn", lambda m, x, **k: m.fft.fftn(x, **k), False),
    ("ifftn", lambda m, x, **k: m.fft.ifftn(x, **k), True),
    ("rfftn", lambda m, x, **k: m.fft.rfftn(x, **k), False),
    ("irfftn", lambda m, x, **k: m.fft.irfftn(x, **k), True),
    ("hfftn", lambda m, x, **k: m.fft.hfftn(x, **k), True),
    ("ihfftn", lambda m, x, **k: m.fft.ihfftn(x, **k), False),
]
PLANS = [{}, {"dim": (0, 2)}, {"s": (4, 6)}, {"s": (-1, 3), "dim": (2, 1)}, {"dim": 1}]


@pytest.mark.parametrize("name,fn,complex_in", N_D, ids=[c[0] for c in N_D])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("kw", PLANS)
def test_n_dimensional(name, fn, complex_in, norm, kw):
    def case(m, x, y):
        inp = _complex(m, x, y) if complex_in else x
        return _real_parts(fn(m, inp, norm=norm, **kw))

    check(case, (3, 4, 5), (3, 4, 5), **TOL)
    check_grad(case, (3, 4, 5), (3, 4, 5), **TOL)


TWO_D = ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"]


@pytest.mark.parametrize("name", TWO_D)
@pytest.mark.parametrize("kw", [{}, {"s": (3, 4)}, {"dim": (0, 2), "norm": "ortho"}])
def test_two_dimensional(name, kw):
    complex_in = name in ("ifft2", "irfft2", "hfft2")

    def case(m, x, y):
        inp = _complex(m, x, y) if complex_in else x
        return _real_parts(getattr(m.fft, name)(inp, **kw))

    check(case, (2, 4, 5), (2, 4, 5), **TOL)
    check_grad(case, (2, 4, 5), (2, 4, 5), **TOL)


def test_default_norm_is_backward():
    check(lambda m, x: _real_parts(m.fft.fft(x, norm=None)), (5,), **TOL)
    check(lambda m, x: m.fft.irfftn(m.fft.rfftn(x, norm=None), norm=None), (2, 4), **TOL)


def test_round_trips():
    check(lambda m, x: m.fft.irfft(m.fft.rfft(x), n=7), (7,), **TOL)
    check(lambda m, x: m.fft.ifftn(m.fft.fftn(x)).real, (2, 3, 4), **TOL)


def test_dtypes():
    check(lambda m, x: m.fft.fft(x).real, np.arange(4))  # ints are computed as float32
    assert spx.fft.fft(spx.ones(4)).dtype == spx.complex64
    assert spx.fft.irfft(spx.ones(3) * 1j).dtype == spx.float32
    assert spx.fft.fft(spx.ones(4, dtype=spx.float16)).dtype == spx.complex64


@pytest.mark.parametrize("n,d", [(1, 1.0), (4, 1.0), (5, 0.5), (8, 0.1)])
def test_frequencies(n, d):
    check(lambda m: m.fft.fftfreq(n, d), rtol=1e-6)
    check(lambda m: m.fft.rfftfreq(n, d), rtol=1e-6)
    check(lambda m: m.fft.fftfreq(n, dtype=m.float64 if m is torch else m.float32).float())
    assert spx.fft.fftfreq(3, requires_grad=True).requires_grad


@pytest.mark.parametrize("dim", [None, 0, (0, 1), -1])
def test_shifts(dim):
    check(lambda m, x: m.fft.fftshift(x, dim), (4, 5))
    check(lambda m, x: m.fft.ifftshift(x, dim), (4, 5))
    check(lambda m, x: m.fft.ifftshift(m.fft.fftshift(x, dim), dim), (3, 5))
    check_grad(lambda m, x: m.fft.fftshift(x, dim), (4, 5))


def test_numpy_alias():
    check(lambda m, x: m.fft.fft(x, axis=0).real, (3, 2), **TOL)


@pytest.mark.parametrize(
    "fn,shape,error",
    [
        (lambda m, x: m.fft.fft(x, norm="foo"), (3,), RuntimeError),
        (lambda m, x: m.fft.fft(x, dim=2), (3,), IndexError),
        (lambda m, x: m.fft.fft(x, n=0), (3,), RuntimeError),
        (lambda m, x: m.fft.rfft(x * 1j), (3,), RuntimeError),
        (lambda m, x: m.fft.ihfft(x * 1j), (3,), RuntimeError),
        (lambda m, x: m.fft.fftn(x, s=(3,), dim=(0, 1)), (3, 3), RuntimeError),
        (lambda m, x: m.fft.fftn(x, dim=(0, 0)), (3, 3), RuntimeError),
        (lambda m, x: m.fft.fftn(x, s=(2, 2, 2)), (3, 3), RuntimeError),
        (lambda m, x: m.fft.fft2(x), (3,), IndexError),
        (lambda m, x: m.fft.irfft(x, n=0), (3,), RuntimeError),
    ],
)
def test_errors(fn, shape, error):
    check_raises(fn, shape, error=error)


def test_messages():
    with pytest.raises(RuntimeError, match=r'Invalid normalization mode: "foo"; expected'):
        spx.fft.fft(spx.ones(2), norm="foo")
    with pytest.raises(RuntimeError, match=r"rfft expects a real input tensor.*x.real"):
        spx.fft.rfft(spx.ones(2) * 1j)


def test_real_and_imag_of_tensors():
    z = np.array([1 + 2j, -3 + 0.5j], np.complex64)
    check(lambda m, x: (x.real * 1, x.imag * 1), z)
    check(lambda m, x: x.real, (3,))
    check_raises(lambda m, x: x.imag, (3,), error=RuntimeError)
    check_grad(lambda m, x, y: (_complex(m, x, y) * 2).imag, (3,), (3,))


def test_namespace_matches_torch():
    theirs = {n for n in dir(torch.fft) if not n.startswith("_") and n != "Tensor"}
    theirs = {n for n in theirs if callable(getattr(torch.fft, n))}
    assert set(spx.fft.__all__) == theirs
    assert math.isclose(spx.fft.fftfreq(2)[1].item(), -0.5)
