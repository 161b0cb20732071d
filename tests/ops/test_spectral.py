"""spx.stft / spx.istft (and the Tensor methods) against torch's: values and gradients over a
grid of arguments (centring and pad modes, windows and win_length, hop_length, normalization,
one- and two-sided spectra, batches, complex signals and windows, return_complex, length,
align_to_window), float64 under x64, round trips, torch's warnings, every error torch raises,
and both inside spx.compile.

Complex outputs are compared through real parts, imaginary parts and magnitudes, and gradients
are taken with respect to real leaves (spx's gradients for complex leaves follow JAX's
convention, the conjugate of torch's). The window is an input too, so its gradient is checked.
"""

from __future__ import annotations

from contextlib import nullcontext

import jax
import numpy as np
import pytest

import spx
from tests.tensor._parity import check, check_grad, data

torch = pytest.importorskip("torch")

# torch warns when no window is given, as spx does (test_warnings checks both).
pytestmark = pytest.mark.filterwarnings("ignore:.*A window was not provided:UserWarning")

TOL = {"rtol": 1e-4, "atol": 1e-4}
N_FFT = 16
HANN = torch.hann_window(N_FFT).numpy()
HANN_10 = torch.hann_window(10).numpy()
HAMMING = torch.hamming_window(N_FFT).numpy()  # nonzero at its ends: NOLA holds uncentred


def _real_parts(out):
    if out.is_complex():  # (* 1: torch's .imag of a conjugate view has its negative bit set)
        return out.real * 1, out.imag * 1, out.abs()
    return out


def _window_args(kind):
    """(extra array inputs, stft keyword arguments from them)."""
    if kind == "none":
        return (), lambda: {}
    if kind == "none_short":  # torch's ones(win_length), zero-padded to n_fft
        return (), lambda: {"win_length": 10}
    if kind == "hann":
        return (HANN,), lambda w: {"window": w}
    return (HANN_10,), lambda w: {"window": w, "win_length": 10}  # zero-padded to n_fft


# -- stft --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "center,pad_mode",
    [(True, "reflect"), (True, "constant"), (True, "replicate"), (True, "circular"), (False, "")],
)
@pytest.mark.parametrize("window", ["none", "none_short", "hann", "hann_short"])
@pytest.mark.parametrize("shape", [(40,), (3, 40)], ids=["1d", "batched"])
def test_stft_centring_windows_and_batches(center, pad_mode, window, shape):
    extra, kwargs = _window_args(window)
    pad = {"pad_mode": pad_mode} if pad_mode else {}

    def case(m, x, *w):
        kw = kwargs(*w)
        return _real_parts(
            m.stft(x, N_FFT, hop_length=3, center=center, return_complex=True, **pad, **kw)
        )

    check(case, shape, *extra, **TOL)
    check_grad(case, shape, *extra, **TOL)


@pytest.mark.parametrize("hop_length", [None, 1, 5, 20])
@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("onesided", [None, True, False])
def test_stft_hop_normalized_onesided(hop_length, normalized, onesided):
    def case(m, x, w):
        out = m.stft(x, N_FFT, hop_length, window=w, normalized=normalized, onesided=onesided,
                     return_complex=True)  # fmt: skip
        return _real_parts(out)

    check(case, (2, 45), HANN, **TOL)
    check_grad(case, (2, 45), HANN, **TOL)


@pytest.mark.parametrize("n_fft", [5, 8, 15])
def test_stft_odd_and_small_sizes(n_fft):
    def case(m, x):
        return _real_parts(m.stft(x, n_fft, return_complex=True, center=n_fft != 8))

    check(case, (30,), **TOL)
    check_grad(case, (30,), **TOL)


@pytest.mark.parametrize("window", ["none", "hann"])
@pytest.mark.parametrize("onesided", [None, False])
def test_stft_complex_signal(window, onesided):
    extra, kwargs = _window_args(window)
    onesided_kw = {} if onesided is None else {"onesided": onesided}

    def case(m, re, im, *w):  # return_complex defaults to True for complex input
        return _real_parts(m.stft(re + im * 1j, N_FFT, hop_length=4, **onesided_kw, **kwargs(*w)))

    check(case, (2, 40), (2, 40), *extra, **TOL)
    check_grad(case, (2, 40), (2, 40), *extra, **TOL)


def test_stft_complex_window_on_a_real_signal():
    def case(m, x, wr, wi):
        return _real_parts(m.stft(x, N_FFT, window=wr + wi * 1j, return_complex=True))

    check(case, (40,), HANN, HAMMING, **TOL)
    check_grad(case, (40,), HANN, HAMMING, **TOL)


@pytest.mark.filterwarnings("ignore:stft with return_complex=False is deprecated")
@pytest.mark.parametrize("complex_input", [False, True])
def test_stft_return_complex_false_is_view_as_real(complex_input):
    def case(m, x, y):
        x = x + y * 1j if complex_input else x
        return m.stft(x, N_FFT, window=m.hann_window(N_FFT), return_complex=False)

    out = check(case, (2, 40), (2, 40), **TOL)
    assert out.dtype == spx.float32 and out.shape[-1] == 2
    check_grad(case, (2, 40), (2, 40), **TOL)


@pytest.mark.parametrize("hop_length", [2, 3])
@pytest.mark.parametrize("align", [False, True])
def test_stft_align_to_window(hop_length, align):
    def case(m, x, w):
        out = m.stft(x, N_FFT, hop_length, win_length=10, window=w, center=False,
                     return_complex=True, align_to_window=align)  # fmt: skip
        return _real_parts(out)

    check(case, (2, 41), HANN_10, **TOL)
    check_grad(case, (2, 41), HANN_10, **TOL)


def test_stft_window_dtype_promotes_and_ints_window():
    check(lambda m, x: m.stft(x, 8, window=m.ones(8, dtype=m.int32), return_complex=True),
          (30,), **TOL)  # fmt: skip


def test_stft_half_precision_is_computed_in_float32():
    # torch's CPU FFTs refuse float16 ("MKL FFT doesn't support ... Half"); spx computes it in
    # float32, as spx.fft does, so the result is the float32 signal's.
    x = data((40,))
    half = spx.stft(spx.tensor(x, dtype=spx.float16), 8, return_complex=True)
    assert half.dtype == spx.complex64
    want = torch.stft(torch.tensor(x).half().float(), 8, return_complex=True)
    np.testing.assert_allclose(np.asarray(half), want.numpy(), rtol=1e-5, atol=1e-5)


# -- istft -------------------------------------------------------------------------------------
def _spectrum(m, re, im):
    return re + im * 1j  # built from real leaves, so gradients reach them


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("onesided", [True, False])
@pytest.mark.parametrize("batched", [False, True])
def test_istft_against_torch(center, normalized, onesided, batched):
    freq = N_FFT // 2 + 1 if onesided else N_FFT
    shape = (2, freq, 9) if batched else (freq, 9)
    window = HANN if center else HAMMING

    def case(m, re, im, w):
        return m.istft(_spectrum(m, re, im), N_FFT, 4, window=w, center=center,
                       normalized=normalized, onesided=onesided)  # fmt: skip

    check(case, shape, shape, window, **TOL)
    check_grad(case, shape, shape, window, **TOL)


@pytest.mark.parametrize("length", [None, 20, 31, 32, 45])
@pytest.mark.parametrize("win", ["none", "hann_short"])
def test_istft_length_and_win_length(length, win):
    extra, kwargs = _window_args(win)

    def case(m, re, im, *w):
        return m.istft(_spectrum(m, re, im), N_FFT, 4, length=length, **kwargs(*w))

    if length == 45 and win == "hann_short":
        # Past the last frame's short window nothing overlaps: torch's NOLA check refuses it.
        _assert_both_raise(case, [data((9, 9)), data((9, 9)), HANN_10], RuntimeError, "NOLA")
        return
    padding = length == 45  # longer than the 40 samples 9 frames give: zeros, with a warning
    with pytest.warns(UserWarning, match="padded with zeros") if padding else nullcontext():
        check(case, (9, 9), (9, 9), *extra, **TOL)
    with pytest.warns(UserWarning, match="padded with zeros") if padding else nullcontext():
        check_grad(case, (9, 9), (9, 9), *extra, **TOL)


@pytest.mark.parametrize("normalized", [False, True])
def test_istft_return_complex(normalized):
    def case(m, re, im, w):
        out = m.istft(_spectrum(m, re, im), N_FFT, window=w, normalized=normalized,
                      onesided=False, return_complex=True)  # fmt: skip
        return _real_parts(out)

    check(case, (2, N_FFT, 7), (2, N_FFT, 7), HANN, **TOL)
    check_grad(case, (2, N_FFT, 7), (2, N_FFT, 7), HANN, **TOL)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"window": "hann"},
        {"window": "hann", "normalized": True, "hop_length": 3},
        {"window": "hann", "onesided": False, "pad_mode": "constant"},
        {"window": "hann_10", "win_length": 10, "hop_length": 5},
        {"window": "hamming", "center": False, "hop_length": 8},
        {"window": None},
    ],
)
def test_round_trips_recover_the_signal(kwargs):
    windows = {"hann": HANN, "hann_10": HANN_10, "hamming": HAMMING, None: None}
    kw = dict(kwargs)
    w = windows[kw.pop("window")]
    pad_mode = kw.pop("pad_mode", "reflect")
    x = data((3, 64))
    w = None if w is None else spx.tensor(w)
    S = spx.stft(spx.tensor(x), N_FFT, window=w, pad_mode=pad_mode, return_complex=True, **kw)
    y = spx.istft(S, N_FFT, window=w, length=64, **kw)
    np.testing.assert_allclose(np.asarray(y), x, atol=2e-5)
    # and through the Tensor methods
    y2 = S.istft(N_FFT, window=w, length=64, **kw)
    np.testing.assert_allclose(np.asarray(y2), np.asarray(y))


def test_round_trip_of_a_complex_signal():
    x = data((2, 50)) + 1j * data((2, 50), 1)
    w = spx.hann_window(N_FFT)
    S = spx.stft(spx.tensor(x.astype(np.complex64)), N_FFT, window=w)  # two-sided, complex
    assert S.dtype == spx.complex64 and S.shape[-2] == N_FFT
    y = spx.istft(S, N_FFT, window=w, length=50, return_complex=True)
    np.testing.assert_allclose(np.asarray(y), x, atol=2e-5)


def test_pad_mode_is_only_read_when_centring():
    check(lambda m, x: m.stft(x, 8, center=False, pad_mode="foo", return_complex=True), (20,))


def test_round_trip_gradients_match_torch():
    def case(m, x, w):
        S = m.stft(x, N_FFT, 4, window=w, return_complex=True)
        return m.istft(S * S.abs(), N_FFT, 4, window=w, length=50)

    check(case, (2, 50), HANN, **TOL)
    check_grad(case, (2, 50), HANN, **TOL)


# -- float64, Tensor methods, spx.compile -------------------------------------------------------
def test_float64_under_x64():
    x, w = data((2, 50)).astype(np.float64), HANN.astype(np.float64)
    with jax.enable_x64(True):
        sx, sw = spx.tensor(x, requires_grad=True), spx.tensor(w, requires_grad=True)
        tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
        outs = []
        for m, xi, wi in ((spx, sx, sw), (torch, tx, tw)):
            S = m.stft(xi, N_FFT, 3, window=wi, return_complex=True)
            y = m.istft(S * S.abs(), N_FFT, 3, window=wi, length=50)
            loss = (S.abs() * m.tensor(data(tuple(S.shape), 1).astype(np.float64))).sum()
            (loss + (y * y).sum()).backward()
            outs.append((S, y))
        assert outs[0][0].dtype == spx.complex128 and outs[0][1].dtype == spx.float64
        for got, want in zip(outs[0], outs[1], strict=True):
            np.testing.assert_allclose(np.asarray(got.detach()), want.detach().numpy(),
                                       rtol=1e-10, atol=1e-10)  # fmt: skip
        np.testing.assert_allclose(np.asarray(sx.grad), tx.grad.numpy(), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(np.asarray(sw.grad), tw.grad.numpy(), rtol=1e-9, atol=1e-9)


def test_tensor_methods_match_the_functions():
    check(lambda m, x, w: _real_parts(x.stft(N_FFT, 4, window=w, return_complex=True)),
          (2, 40), HANN, **TOL)  # fmt: skip
    check(lambda m, re, im, w: _spectrum(m, re, im).istft(N_FFT, 4, window=w, length=30),
          (9, 8), (9, 8), HANN, **TOL)  # fmt: skip


def test_inside_spx_compile():
    x0, w0 = data((2, 48)), HANN

    def loss_of(m, x, w):
        S = m.stft(x, N_FFT, 4, window=w, return_complex=True)
        y = m.istft(S * 0.5, N_FFT, 4, window=w, length=48)
        return S.abs().sum() + (y * m.tensor(data((2, 48), 3))).sum()

    @spx.compile
    def step(x, w):
        loss = loss_of(spx, x, w)
        loss.backward()
        return loss

    x, w = spx.tensor(x0, requires_grad=True), spx.tensor(w0, requires_grad=True)
    tx, tw = torch.tensor(x0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    want = loss_of(torch, tx, tw)
    want.backward()
    got = step(x, w)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(x.grad), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(w.grad), tw.grad.numpy(), rtol=1e-4, atol=1e-4)


# -- warnings and errors -----------------------------------------------------------------------
@pytest.mark.filterwarnings("always")
def test_warnings():
    x = spx.tensor(data((40,)))
    with pytest.warns(UserWarning, match=r"window was not provided.*window=spx.ones\(n_fft\)"):
        S = spx.stft(x, 8, return_complex=True)
    with pytest.warns(UserWarning, match="window was not provided.*same window used by stft"):
        spx.istft(S, 8)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated.*view_as_real"):
        spx.stft(x, 8, window=spx.ones(8), return_complex=False)
    with pytest.warns(UserWarning, match="padded with zeros"):
        spx.istft(S, 8, window=spx.ones(8), length=60)


def _stft(**kw):
    return lambda m, x: m.stft(x, **{"n_fft": 8, "return_complex": True, **kw})


STFT_ERRORS = [
    ("return_complex", _stft(return_complex=None), (20,), RuntimeError, "return_complex=True"),
    ("int", lambda m, x: m.stft((x * 4).int(), 8, return_complex=True), (20,), RuntimeError,
     r"floating point or complex signal, got int32"),
    ("3d", _stft(), (2, 2, 20), RuntimeError, r"2-D batch of signals, got shape \[2, 2, 20\]"),
    ("n_fft_0", _stft(n_fft=0), (20,), RuntimeError, "got n_fft=0"),
    ("n_fft_long", _stft(n_fft=21, center=False), (20,), RuntimeError,
     r"0 < n_fft <= 20 \(the signal length\), got n_fft=21"),
    ("align_long", _stft(win_length=4, center=False, align_to_window=True), (7,), RuntimeError,
     "got n_fft=8"),
    ("hop_0", _stft(hop_length=0), (20,), RuntimeError, "got hop_length=0"),
    ("hop_default_0", _stft(n_fft=3), (20,), RuntimeError, r"hop_length=0 \(the default"),
    ("win_0", _stft(win_length=0), (20,), RuntimeError, "got win_length=0"),
    ("win_9", _stft(win_length=9), (20,), RuntimeError, "n_fft=8, got win_length=9"),
    ("window_size", lambda m, x: m.stft(x, 8, window=m.ones(7), return_complex=True),
     (20,), RuntimeError, r"win_length=8 values, got one of shape \[7\]"),
    ("window_2d", lambda m, x: m.stft(x, 8, window=m.ones(1, 8), return_complex=True),
     (20,), RuntimeError, r"shape \[1, 8\]"),
    ("window_vs_win_length", lambda m, x: m.stft(x, 8, 2, 4, window=m.ones(5),
                                                 return_complex=True),
     (20,), RuntimeError, "win_length=4"),
    ("pad_mode", _stft(pad_mode="foo"), (20,), NotImplementedError, "pad_mode 'foo'"),
    ("reflect_short", _stft(), (4,), RuntimeError, "'reflect' padding needs to be less than"),
    ("reflect_short_batch", _stft(), (2, 4), RuntimeError, "signal length 4"),
    ("circular_short", _stft(pad_mode="circular"), (3,), RuntimeError, "at most the signal"),
    ("align_center", _stft(align_to_window=True), (20,), RuntimeError, "center=False"),
    ("align_false_center", _stft(align_to_window=False), (20,), RuntimeError, "center=False"),
    ("complex_onesided", lambda m, x: m.stft(x * 1j, 8, onesided=True), (20,), RuntimeError,
     "onesided=False"),
    ("complex_window_onesided", lambda m, x: m.stft(x, 8, window=m.ones(8) * 1j,
                                                    onesided=True, return_complex=True),
     (20,), RuntimeError, "onesided output if window or input is complex"),
    ("n_fft_float", _stft(n_fft=8.0), (20,), TypeError, "n_fft must be an int"),
    ("hop_float", _stft(hop_length=2.0), (20,), TypeError, "hop_length must be an int"),
    ("n_fft_bool", _stft(n_fft=True, hop_length=1), (20,), TypeError, "bool"),
    ("window_list", lambda m, x: m.stft(x, 8, window=[1.0] * 8, return_complex=True), (20,),
     TypeError, "window"),
]  # fmt: skip


def _istft(shape=(5, 11), dtype="complex", **kw):
    def case(m, _):
        spec = m.ones(*shape) * (1j if dtype == "complex" else 1)
        return m.istft(spec, **{"n_fft": 8, "window": m.hann_window(8), **kw})

    return case


ISTFT_ERRORS = [
    ("real", _istft(dtype="real"), RuntimeError, "complex-valued input.*view_as_complex"),
    ("1d", _istft(shape=(5,)), IndexError, r"got shape \[5\]"),
    ("empty", _istft(shape=(5, 0)), RuntimeError, "cannot be empty"),
    ("4d", _istft(shape=(1, 2, 5, 3)), RuntimeError, r"got shape \[1, 2, 5, 3\]"),
    ("onesided_size", _istft(n_fft=10, window=None), RuntimeError,
     r"n_fft // 2 \+ 1 when onesided=True \(n_fft=10: 6\), got 5"),
    ("twosided_size", _istft(onesided=False), RuntimeError, "n_fft when onesided=False"),
    ("n_fft_0", _istft(n_fft=0, window=None), RuntimeError, "frequency dimension"),
    ("hop_gt_win", _istft(hop_length=9), RuntimeError, "hop_length=9 and win_length=8"),
    ("hop_0", _istft(hop_length=0), RuntimeError, "hop_length=0"),
    ("hop_default_0", _istft(shape=(2, 3), n_fft=2, window=None), RuntimeError,
     "hop_length=0"),
    ("win_9", _istft(win_length=9, window=None), RuntimeError, "win_length <= n_fft=8"),
    ("win_0", _istft(win_length=0, window=None), RuntimeError, "win_length=0"),
    ("nola_uncentred", _istft(center=False), RuntimeError, "NOLA condition fails"),
    ("nola_hop", _istft(hop_length=8), RuntimeError, r"is 0 at output sample 8"),
    ("return_complex_onesided", _istft(return_complex=True), RuntimeError,
     "return_complex=True needs the two-sided spectrum"),
    ("length_0", _istft(length=0), RuntimeError, "output is empty"),
    ("length_negative", _istft(length=-3), RuntimeError, "length=-3"),
    ("one_centred_frame", _istft(shape=(5, 1)), RuntimeError, "output is empty"),
]  # fmt: skip


def _assert_both_raise(case, arrays, error, match):
    with pytest.raises(error):
        case(torch, *[torch.tensor(a) for a in arrays])
    with pytest.raises(error, match=match):
        case(spx, *[spx.tensor(a) for a in arrays])


@pytest.mark.parametrize(
    "name,case,shape,error,match", STFT_ERRORS, ids=[c[0] for c in STFT_ERRORS]
)
def test_stft_errors(name, case, shape, error, match):
    _assert_both_raise(case, [data(shape)], error, match)


@pytest.mark.parametrize("name,case,error,match", ISTFT_ERRORS, ids=[c[0] for c in ISTFT_ERRORS])
def test_istft_errors(name, case, error, match):
    _assert_both_raise(case, [data((1,))], error, match)


def test_istft_window_errors():
    def wrong_size(m):
        return m.istft(m.ones(5, 11) * 1j, 8, window=m.ones(7))

    def complex_window(m):
        return m.istft(m.ones(8, 11) * 1j, 8, window=m.ones(8) * 1j, onesided=False)

    for fn, match in ((wrong_size, r"win_length=8 values, got one of shape \[7\]"),
                      (complex_window, "Complex windows are incompatible")):  # fmt: skip
        with pytest.raises(RuntimeError):
            fn(torch)
        with pytest.raises(RuntimeError, match=match):
            fn(spx)


def test_replicate_padding_of_an_empty_signal_is_refused_with_the_fix():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError):  # torch's message is about the padding kernel
        torch.stft(torch.zeros(0), 8, window=torch.hann_window(8), pad_mode="replicate",
                   return_complex=True)  # fmt: skip
    with pytest.raises(RuntimeError, match=r"pad_mode='replicate'.*empty"):
        spx.stft(spx.zeros(0), 8, window=spx.hann_window(8), pad_mode="replicate",
                 return_complex=True)  # fmt: skip
