"""The short-time Fourier transform and its inverse (``spx.stft``, ``spx.istft``), mirroring
``torch.stft`` / ``torch.istft`` argument for argument.

``stft`` cuts the (optionally padded) signal into frames ``hop_length`` apart, multiplies each by
the window (``win_length`` long, zero-padded to ``n_fft`` at its centre; all ones when None) and
takes the FFT of each frame. ``istft`` inverts it by least-squares overlap-add: inverse FFTs,
times the window, summed where frames overlap, divided by the summed squared window (which must
not vanish anywhere: the NOLA condition, checked as torch checks it).

torch's defaults hold: ``hop_length = n_fft // 4``, ``win_length = n_fft``, one-sided output for
real input and window, ``return_complex`` required for real input. float16/bfloat16 are computed
in float32, as in :mod:`spx.fft`. JAX differentiates everything, window included.

Example:
    >>> import spx
    >>> x = spx.arange(16.0)
    >>> w = spx.hann_window(8)
    >>> S = spx.stft(x, 8, hop_length=2, window=w, return_complex=True)
    >>> tuple(S.shape)
    (5, 9)
    >>> y = spx.istft(S, 8, hop_length=2, window=w, length=16)
    >>> bool((y - x).abs().max() < 1e-4)
    True
"""

from __future__ import annotations

import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx._tensor.dispatch import apply
from spx._tensor.tensor import Tensor
from spx._validate import as_int
from spx.ops._args import tensor_arg

__all__ = ["istft", "stft"]

# torch's pad modes as jnp.pad's (constant pads with zeros, as stft passes no value).
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}
_NO_WINDOW = (
    "{fn}: A window was not provided. A rectangular window will be applied{extra}. To suppress "
    "this warning and use a rectangular window, explicitly set `window=spx.ones(n_fft)`."
)


# -- the transforms over arrays (module level: their identity keys the program cache) ----------
def _pad_window(w: Any, n_fft: int) -> Any:
    left = (n_fft - w.shape[0]) // 2
    return jnp.pad(w, (left, n_fft - w.shape[0] - left))


def _stft(x: Any, w: Any, n_fft: int, hop: int, win: int, center: bool, mode: str,
          normalized: bool, onesided: bool, as_real: bool, align: bool) -> Any:  # fmt: skip
    if center:
        pad = n_fft // 2
        x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(pad, pad)], mode=_PAD_MODES[mode])
    left = (n_fft - win) // 2
    # Only the window's support is read: frame t holds x[t*hop + offset : ... + win] at `left`.
    if align:  # the window starts where the frame does (torch's align_to_window)
        n_frames, offset = 1 + (x.shape[-1] - win) // hop, 0
    else:
        n_frames, offset = 1 + (x.shape[-1] - n_fft) // hop, left
    idx = offset + hop * jnp.arange(n_frames)[:, None] + jnp.arange(win)[None, :]
    frames = x[..., idx]  # (*, n_frames, win)
    if w is not None:
        frames = frames * w
    frames = jnp.pad(frames, [(0, 0)] * (frames.ndim - 1) + [(left, n_fft - win - left)])
    norm = "ortho" if normalized else "backward"
    if jnp.iscomplexobj(frames) or not onesided:
        spec = jnp.fft.fft(frames, axis=-1, norm=norm)
    else:
        spec = jnp.fft.rfft(frames, axis=-1, norm=norm)
    spec = jnp.swapaxes(spec, -1, -2)  # (*, freq, n_frames)
    return jnp.stack([spec.real, spec.imag], axis=-1) if as_real else spec


def _stft_rectangular(x: Any, *static: Any) -> Any:
    return _stft(x, None, *static)


def _istft(spec: Any, w: Any, n_fft: int, hop: int, win: int, start: int, end: int,
           pad_to: int, normalized: bool, return_complex: bool) -> Any:  # fmt: skip
    frames = jnp.swapaxes(spec, -1, -2)  # (*, n_frames, freq)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        frames = jnp.fft.ifft(frames, axis=-1, norm=norm)
    else:  # a real signal: only the first n_fft // 2 + 1 bins are read
        frames = jnp.fft.irfft(frames[..., : n_fft // 2 + 1], n=n_fft, axis=-1, norm=norm)
    w = _pad_window(jnp.ones(win, frames.real.dtype) if w is None else w, n_fft)
    frames = frames * w
    n_frames = frames.shape[-2]
    expected = n_fft + hop * (n_frames - 1)
    idx = hop * jnp.arange(n_frames)[:, None] + jnp.arange(n_fft)[None, :]
    y = jnp.zeros((*frames.shape[:-2], expected), frames.dtype).at[..., idx].add(frames)
    # torch divides by the overlap-added w ** 2 (not |w| ** 2 for a complex window).
    envelope = jnp.zeros(expected, w.dtype).at[idx].add(jnp.broadcast_to(w * w, idx.shape))
    y = y[..., start:end] / envelope[start:end]
    return jnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, pad_to)]) if pad_to else y


def _istft_rectangular(spec: Any, *static: Any) -> Any:
    return _istft(spec, None, *static)


# -- argument checks ---------------------------------------------------------------------------
def _sizes(fn: str, n_fft: Any, hop_length: Any, win_length: Any) -> tuple[int, int, int]:
    n_fft = as_int(n_fft, "n_fft", fn)
    hop = n_fft >> 2 if hop_length is None else as_int(hop_length, "hop_length", fn)
    win = n_fft if win_length is None else as_int(win_length, "win_length", fn)
    return n_fft, hop, win


def _is_complex(t: Tensor | None) -> bool:
    return t is not None and jnp.issubdtype(t.dtype, jnp.complexfloating)


def _half_to_float(t: Tensor) -> Tensor:
    # torch's CPU FFTs refuse half precision; spx.fft computes it in float32, and so does this.
    return t.float() if t.dtype in (jnp.float16, jnp.bfloat16) else t


def _check_window(fn: str, w: Tensor | None, win: int, extra: str) -> None:
    if w is None:
        warnings.warn(_NO_WINDOW.format(fn=fn, extra=extra), UserWarning, stacklevel=3)
    elif w.ndim != 1 or w.shape[0] != win:
        raise RuntimeError(
            f"{fn}: expected a 1-D window of win_length={win} values, got one of shape "
            f"{list(w.shape)}; pass a window of {win} values (e.g. spx.hann_window({win})) or "
            "set win_length to the window's length"
        )


def _check_padding(t: Tensor, pad: int, mode: str) -> None:
    if mode not in _PAD_MODES:
        raise NotImplementedError(
            f"stft: unrecognised pad_mode {mode!r}; use one of {', '.join(map(repr, _PAD_MODES))}"
        )
    length = t.shape[-1]
    if mode == "replicate" and length == 0 and pad > 0:
        raise RuntimeError(
            "stft: center=True with pad_mode='replicate' repeats the edge samples of the "
            "signal, but it is empty (length 0); pass a non-empty signal"
        )
    if (mode == "reflect" and pad >= length) or (mode == "circular" and pad > length):
        limit = "less than" if mode == "reflect" else "at most"
        raise RuntimeError(
            f"stft: center=True pads n_fft // 2 = {pad} samples on each side, which {mode!r} "
            f"padding needs to be {limit} the signal length {length}; use a longer signal, a "
            "smaller n_fft, pad_mode='constant', or center=False"
        )


def _check_stft_sizes(n_fft: int, hop: int, win: int, length: int, center: bool) -> None:
    if n_fft <= 0 or n_fft > length:
        padded = " after center padding" if center else ""
        raise RuntimeError(
            f"stft: expected 0 < n_fft <= {length} (the signal length{padded}), got "
            f"n_fft={n_fft}; use a smaller n_fft or a longer signal"
        )
    if hop <= 0:
        raise RuntimeError(
            f"stft: expected hop_length > 0, got hop_length={hop} (the default is n_fft // 4); "
            "pass a positive hop_length"
        )
    if win <= 0 or win > n_fft:
        raise RuntimeError(
            f"stft: expected 0 < win_length <= n_fft={n_fft}, got win_length={win}; pass a "
            "win_length in that range"
        )


def stft(
    input: Any,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Any = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
    align_to_window: bool | None = None,
) -> Tensor:
    """The short-time Fourier transform of a signal (or a batch of signals).

    Args:
        input: ``(L,)`` or ``(B, L)`` signal, real or complex floating point.
        n_fft: the FFT size (frame length).
        hop_length: samples between frame starts (default ``n_fft // 4``).
        win_length: the window's length, at most ``n_fft`` (default ``n_fft``).
        window: ``(win_length,)`` window, zero-padded to ``n_fft`` at its centre (default: all
            ones, with torch's warning).
        center: pad ``n_fft // 2`` samples on both sides, so frame ``t`` is centred at
            ``t * hop_length``.
        pad_mode: how ``center`` pads: ``"reflect"``, ``"constant"`` (zeros), ``"replicate"``
            or ``"circular"``.
        normalized: scale by ``n_fft ** -0.5``.
        onesided: keep only the ``n_fft // 2 + 1`` non-negative frequencies (default True for
            real input and window; impossible when either is complex).
        return_complex: a complex result; False gives its ``view_as_real`` (deprecated, as in
            torch). Required for real input and window.
        align_to_window: with ``center=False``, frames start where the window does (frame
            ``t`` reads ``input[t * hop_length : t * hop_length + win_length]``).

    Returns:
        ``(B?, N, T)`` complex (``(B?, N, T, 2)`` real with ``return_complex=False``), where
        ``N`` is ``n_fft // 2 + 1`` one-sided or ``n_fft``, and ``T`` the number of frames:
        ``1 + L // hop_length`` centred, else ``1 + (L - n_fft) // hop_length``.
        Mirrors ``torch.stft``.

    Example:
        >>> import spx
        >>> S = spx.stft(spx.ones(64), 16, window=spx.hann_window(16), return_complex=True)
        >>> tuple(S.shape), S.dtype
        ((9, 17), dtype('complex64'))
    """
    t = tensor_arg(input, "stft")
    if center and align_to_window is not None:
        raise RuntimeError(
            f"stft: align_to_window={align_to_window} applies only to frames that are not "
            "centred; pass center=False, or leave align_to_window=None"
        )
    n_fft, hop, win = _sizes("stft", n_fft, hop_length, win_length)
    if t.ndim not in (1, 2):
        raise RuntimeError(
            f"stft: expected a 1-D signal or a 2-D batch of signals, got shape {list(t.shape)}; "
            "reshape the input to (batch, length)"
        )
    if center:
        _check_padding(t, n_fft // 2, pad_mode)
    w = None if window is None else tensor_arg(window, "stft", "window")
    any_complex = _is_complex(t) or _is_complex(w)
    if return_complex is None and not any_complex:
        raise RuntimeError(
            "stft requires the return_complex parameter be given for real inputs: pass "
            "return_complex=True (spx.view_as_real(result) gives the older real layout)"
        )
    as_real = not (any_complex if return_complex is None else return_complex)
    if as_real:
        warnings.warn(
            "stft with return_complex=False is deprecated, as in torch: pass "
            "return_complex=True, and spx.view_as_real(result) for the real layout",
            UserWarning,
            stacklevel=2,
        )
    if not (jnp.issubdtype(t.dtype, jnp.floating) or _is_complex(t)):
        raise RuntimeError(
            f"stft: expected a floating point or complex signal, got {t.dtype}; convert it "
            "first, e.g. x.float()"
        )
    _check_stft_sizes(n_fft, hop, win, t.shape[-1] + (n_fft // 2 * 2 if center else 0), center)
    _check_window("stft", w, win, ", which is known to cause spectral leakage")
    if onesided is None:
        onesided = not any_complex
    elif onesided and any_complex:
        raise RuntimeError(
            "stft: cannot have onesided output if window or input is complex (the spectrum is "
            "not conjugate-symmetric); pass onesided=False or leave it None"
        )
    static = (n_fft, hop, win, bool(center), pad_mode, bool(normalized), bool(onesided), as_real,
              bool(align_to_window))  # fmt: skip
    t = _half_to_float(t)
    if w is None:
        return apply(_stft_rectangular, static, (t,))
    return apply(_stft, static, (t, _half_to_float(w)))


def _window_values(w: Tensor | None, win: int) -> np.ndarray | None:
    """The window's values on the host for the NOLA check (torch reads them too); None inside
    a JAX transformation (spx.compile, spx.func), where they are not known while tracing."""
    if w is None:
        return np.ones(win, np.float32)
    values = w._value()
    return None if isinstance(values, jax.core.Tracer) else np.asarray(values)


def _check_nola(w: np.ndarray, n_fft: int, hop: int, n_frames: int, start: int, stop: int):
    left = (n_fft - w.shape[0]) // 2
    padded = np.pad(w, (left, n_fft - w.shape[0] - left))
    envelope = np.zeros(n_fft + hop * (n_frames - 1), padded.dtype)
    idx = hop * np.arange(n_frames)[:, None] + np.arange(n_fft)
    # (flat, not broadcast: numpy's add.at mis-adds broadcast values on some versions)
    np.add.at(envelope, idx.ravel(), np.tile(padded * padded, n_frames))
    magnitude = np.abs(envelope[start:stop])
    if magnitude.min() < 1e-11:
        at = start + int(magnitude.argmin())
        raise RuntimeError(
            f"istft: the window's overlap-add (sum of squared windows) is {magnitude.min():.3g} "
            f"at output sample {at}, so the NOLA condition fails (window overlap add min < "
            "1e-11) and that sample cannot be recovered. Pass the window stft used, a smaller "
            "hop_length, or center=True if stft centred its frames"
        )


def istft(
    input: Any,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Any = None,
    center: bool = True,
    normalized: bool = False,
    onesided: bool | None = None,
    length: int | None = None,
    return_complex: bool = False,
) -> Tensor:
    """The inverse of :func:`stft`: the least-squares signal of a spectrogram, by overlap-add.

    Args:
        input: ``(B?, N, T)`` complex spectrum, as ``stft(..., return_complex=True)`` returns:
            ``N`` is ``n_fft // 2 + 1`` (one-sided) or ``n_fft``, ``T`` the number of frames.
        n_fft, hop_length, win_length, window, center, normalized: as given to :func:`stft`.
        onesided: whether the spectrum is one-sided (default: ``N != n_fft``).
        length: the output length (default ``(T - 1) * hop_length`` centred, else
            ``n_fft + (T - 1) * hop_length``); longer than that pads zeros, with torch's warning.
        return_complex: a complex signal (needs a two-sided spectrum); False assumes a real
            signal and reads only the first ``n_fft // 2 + 1`` frequencies.

    Returns:
        ``(B?, length)``, real (complex with ``return_complex=True``). Mirrors ``torch.istft``.

    Raises:
        RuntimeError: the windows' overlap-add vanishes at some output sample (NOLA); checked
            from the window's values, except inside spx.compile / spx.func transforms.

    Example:
        >>> import spx
        >>> x = spx.randn(2, 100)
        >>> w = spx.hann_window(32)
        >>> S = spx.stft(x, 32, window=w, return_complex=True)
        >>> y = spx.istft(S, 32, window=w, length=100)
        >>> bool((y - x).abs().max() < 1e-4)
        True
    """
    t = tensor_arg(input, "istft")
    n_fft, hop, win = _sizes("istft", n_fft, hop_length, win_length)
    length = None if length is None else as_int(length, "length", "istft")
    if not _is_complex(t):
        raise RuntimeError(
            f"istft requires a complex-valued input tensor matching the output from stft with "
            f"return_complex=True, got {t.dtype}; for stft's older real layout (..., 2) pass "
            "spx.view_as_complex(x)"
        )
    if t.ndim < 2:
        raise IndexError(
            f"istft: expected a (freq, frames) or (batch, freq, frames) spectrum, got shape "
            f"{list(t.shape)}"
        )
    if t.numel() == 0:
        raise RuntimeError(f"istft: input tensor cannot be empty (got shape {list(t.shape)})")
    if t.ndim > 3:
        raise RuntimeError(
            f"istft: expected a (freq, frames) or (batch, freq, frames) spectrum, got shape "
            f"{list(t.shape)}; reshape the batch dimensions into one"
        )
    fft_size, n_frames = t.shape[-2], t.shape[-1]
    onesided = fft_size != n_fft if onesided is None else bool(onesided)
    want = n_fft // 2 + 1 if onesided else n_fft
    if fft_size != want:
        which = "n_fft // 2 + 1 when onesided=True" if onesided else "n_fft when onesided=False"
        raise RuntimeError(
            f"istft: expected the frequency dimension (dim -2) of the input to be {which} "
            f"(n_fft={n_fft}: {want}), got {fft_size}; pass the n_fft (and onesided) stft used"
        )
    if not 0 < hop <= win:
        raise RuntimeError(
            f"istft: expected 0 < hop_length <= win_length, got hop_length={hop} and "
            f"win_length={win}; pass the hop_length and win_length stft used"
        )
    if not 0 < win <= n_fft:
        raise RuntimeError(f"istft: expected 0 < win_length <= n_fft={n_fft}, got win_length={win}")
    w = None if window is None else tensor_arg(window, "istft", "window")
    extra = ". Please provide the same window used by stft to make the inversion lossless"
    _check_window("istft", w, win, extra)
    if return_complex and onesided:
        raise RuntimeError(
            "istft: cannot have onesided output if window or input is complex: "
            "return_complex=True needs the two-sided spectrum (stft(..., onesided=False))"
        )
    if not return_complex and _is_complex(w):
        raise RuntimeError(
            "istft: Complex windows are incompatible with return_complex=False; pass "
            "return_complex=True"
        )
    expected = n_fft + hop * (n_frames - 1)
    start = n_fft // 2 if center else 0
    if length is not None and length < 0:
        raise RuntimeError(f"istft: length must be positive, got length={length}")
    if length is None:  # torch trims the centre padding at the start, and as much at the end
        length = expected - n_fft // 2 - start if center else expected
    end = start + length
    stop = min(end, expected)
    if stop <= start:
        raise RuntimeError(
            f"istft: the output is empty (samples {start} to {end} of the {expected} that "
            f"{n_frames} frames reconstruct); pass a positive length, or more frames"
        )
    w = None if w is None else _half_to_float(w)
    values = _window_values(w, win)
    if values is not None:
        _check_nola(values, n_fft, hop, n_frames, start, stop)
    if end > expected:
        warnings.warn(
            f"istft: the signal is {expected - start} samples long, shorter than length="
            f"{length}; the result is padded with zeros at the end. Check center and hop_length",
            UserWarning,
            stacklevel=2,
        )
    static = (n_fft, hop, win, start, stop, end - stop, bool(normalized), bool(return_complex))
    if w is None:
        return apply(_istft_rectangular, static, (t,))
    return apply(_istft, static, (t, w))
