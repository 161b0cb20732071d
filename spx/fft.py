"""``spx.fft``: torch's discrete Fourier transforms (``torch.fft``), with torch's ``n``/``s``,
``dim`` and ``norm`` arguments.

``norm`` is ``"backward"`` (default: no scaling forward, ``1/n`` on the inverse), ``"ortho"``
(``1/sqrt(n)`` both ways) or ``"forward"`` (``1/n`` forward). Real input gives complex64
output (complex128 with ``jax_enable_x64``); integer and bool input is computed as float32, as
torch promotes it. float16/bfloat16 input is computed in float32 too: torch runs half FFTs only
on CUDA, as complex32, which spx does not have. JAX differentiates every transform.

Example:
    >>> import spx
    >>> spx.fft.fft(spx.tensor([1.0, 0.0, 0.0, 0.0])).real.tolist()
    [1.0, 1.0, 1.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp

from spx._tensor import _dims, numpy_names
from spx._tensor.dispatch import apply
from spx._tensor.methods._dtypes import canonical
from spx._tensor.tensor import Tensor
from spx._validate import as_int
from spx.ops._args import tensor_arg
from spx.ops.creation import arange

__all__ = [
    "fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft", "ifft2",
    "ifftn", "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2", "irfftn", "rfft",
    "rfft2", "rfftfreq", "rfftn",
]  # fmt: skip

_NORMS = ("backward", "ortho", "forward")
# hfft/ihfft are irfft/rfft of the conjugate with the opposite scaling (numpy's definition).
_SWAPPED = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


# -- the transforms over arrays (module level: their identity keys the program cache) ----------
def _c2c(x: Any, s: tuple, axes: tuple, norm: str, inverse: bool) -> Any:
    return (jnp.fft.ifftn if inverse else jnp.fft.fftn)(x, s, axes, norm)


def _r2c(x: Any, s: tuple, axes: tuple, norm: str) -> Any:
    return jnp.fft.rfftn(x, s, axes, norm)


def _c2r(x: Any, s: tuple, axes: tuple, norm: str) -> Any:
    return jnp.fft.irfftn(x, s, axes, norm)


def _hermitian_to_real(x: Any, s: tuple, axes: tuple, norm: str) -> Any:
    return jnp.fft.irfftn(jnp.conj(x), s, axes, _SWAPPED[norm])


def _real_to_hermitian(x: Any, s: tuple, axes: tuple, norm: str) -> Any:
    return jnp.conj(jnp.fft.rfftn(x, s, axes, _SWAPPED[norm]))


def _shift(x: Any, axes: tuple | None, inverse: bool) -> Any:
    return (jnp.fft.ifftshift if inverse else jnp.fft.fftshift)(x, axes)


def _freq_scale(k: Any, n: int, d: float, half: bool) -> Any:
    if not half:  # [0, 1, ..., ceil(n/2)-1, -floor(n/2), ..., -1]
        k = jnp.where(k >= (n + 1) // 2, k - n, k)
    return k * (1.0 / (n * d))


# -- argument checks -------------------------------------------------------------------------
def _input(x: Any, fn: str, real: bool = False) -> Tensor:
    t = tensor_arg(x, f"fft.{fn}")
    if jnp.issubdtype(t.dtype, jnp.complexfloating):
        if real:
            raise RuntimeError(
                f"{fn} expects a real input tensor, but got {t.dtype}; take x.real first, or "
                "use spx.fft.fft for complex input"
            )
        return t
    if t.dtype not in (canonical(jnp.float32), canonical(jnp.float64)):
        t = t.float()  # ints, bools, float16/bfloat16 -> float32
    return t


def _norm(norm: Any) -> str:
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise RuntimeError(
            f'Invalid normalization mode: "{norm}"; expected "backward", "ortho" or "forward"'
        )
    return norm


def _size(n: Any) -> int:
    n = as_int(n, "n", "spx.fft")
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return n


def _plan(t: Tensor, s: Any, dim: Any, last_half: bool = False) -> tuple[tuple, tuple]:
    """torch's ``(s, dim)`` rule as concrete ``(sizes, axes)``: ``dim=None`` means the last
    ``len(s)`` dimensions (all of them without ``s``); ``s[i] = -1`` keeps that size; a
    ``c2r`` transform (``last_half``) defaults its last size to ``2 * (m - 1)``."""
    if dim is not None:
        dims = (dim,) if not isinstance(dim, Sequence) else tuple(dim)
        axes = tuple(_dims.dim(d, t.ndim) for d in dims)
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"FFT dims must be unique (got dim={dim!r})")
    elif s is not None:
        if len(s) > t.ndim:
            raise RuntimeError(
                f"Got shape with {len(s)} values but input tensor only has {t.ndim} dimensions."
            )
        axes = tuple(range(t.ndim - len(s), t.ndim))
    else:
        axes = tuple(range(t.ndim))
    if s is not None and len(s) != len(axes):
        raise RuntimeError("When given, dim and shape arguments must have the same length")
    if not axes:
        raise RuntimeError("fft: there are no dimensions to transform (0-d input or dim=())")
    sizes = [t.shape[a] for a in axes] if s is None else [int(v) for v in s]
    for i, (v, a) in enumerate(zip(sizes, axes, strict=True)):
        if v == -1:
            sizes[i] = t.shape[a]
    if last_half and (s is None or s[-1] == -1):
        sizes[-1] = 2 * (t.shape[axes[-1]] - 1)
    for v in sizes:
        _size(v)
    return tuple(sizes), axes


def _one(t: Tensor, n: Any, dim: int, last_half: bool = False) -> tuple[tuple, tuple]:
    return _plan(t, None if n is None else (_size(n),), (as_int(dim, "dim", "spx.fft"),), last_half)


# -- one dimension ----------------------------------------------------------------------------
def fft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The one-dimensional discrete Fourier transform along ``dim`` (mirrors
    ``torch.fft.fft``).

    Args:
        input: any shape, real or complex.
        n: the signal length: ``input`` is zero-padded or trimmed to it. Default: its size.
        dim: the dimension to transform. Default: the last.
        norm: ``"backward"`` (default), ``"ortho"`` or ``"forward"``.

    Returns:
        Complex, with ``dim`` of size ``n``.

    Example:
        >>> import spx
        >>> spx.fft.fft(spx.ones(4)).real.tolist()
        [4.0, 0.0, 0.0, 0.0]
    """
    t = _input(input, "fft")
    return apply(_c2c, (*_one(t, n, dim), _norm(norm), False), (t,))


def ifft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`fft` (mirrors ``torch.fft.ifft``)."""
    t = _input(input, "ifft")
    return apply(_c2c, (*_one(t, n, dim), _norm(norm), True), (t,))


def rfft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The FFT of a real signal, non-negative frequencies only: ``dim`` of size ``n // 2 + 1``
    (mirrors ``torch.fft.rfft``).

    Example:
        >>> import spx
        >>> spx.fft.rfft(spx.ones(4)).shape
        spx.Size([3])
    """
    t = _input(input, "rfft", real=True)
    return apply(_r2c, (*_one(t, n, dim), _norm(norm)), (t,))


def irfft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`rfft`: a real signal of length ``n`` (default ``2 * (m - 1)`` for
    ``m`` input frequencies) (mirrors ``torch.fft.irfft``).

    Example:
        >>> import spx
        >>> spx.fft.irfft(spx.fft.rfft(spx.tensor([1.0, 2.0, 3.0, 4.0]))).tolist()
        [1.0, 2.0, 3.0, 4.0]
    """
    t = _input(input, "irfft")
    return apply(_c2r, (*_one(t, n, dim, last_half=True), _norm(norm)), (t,))


def hfft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The FFT of a Hermitian-symmetric signal given by its first half: a real result of
    length ``n`` (default ``2 * (m - 1)``) (mirrors ``torch.fft.hfft``)."""
    t = _input(input, "hfft")
    return apply(_hermitian_to_real, (*_one(t, n, dim, last_half=True), _norm(norm)), (t,))


def ihfft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`hfft`: the first ``n // 2 + 1`` frequencies of a real signal's
    inverse FFT (mirrors ``torch.fft.ihfft``)."""
    t = _input(input, "ihfft", real=True)
    return apply(_real_to_hermitian, (*_one(t, n, dim), _norm(norm)), (t,))


# -- n dimensions -------------------------------------------------------------------------------
def fftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The N-dimensional FFT over ``dim`` (mirrors ``torch.fft.fftn``).

    Args:
        input: any shape, real or complex.
        s: signal sizes per transformed dimension (``-1``: keep that size). Default: the sizes
            of ``input``.
        dim: dimensions to transform. Default: the last ``len(s)``, or all without ``s``.
        norm: ``"backward"`` (default), ``"ortho"`` or ``"forward"``.

    Example:
        >>> import spx
        >>> spx.fft.fftn(spx.ones(2, 3)).real.tolist()
        [[6.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    t = _input(input, "fftn")
    return apply(_c2c, (*_plan(t, s, dim), _norm(norm), False), (t,))


def ifftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The inverse of :func:`fftn` (mirrors ``torch.fft.ifftn``)."""
    t = _input(input, "ifftn")
    return apply(_c2c, (*_plan(t, s, dim), _norm(norm), True), (t,))


def rfftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The N-dimensional FFT of a real signal, half of the last dimension's frequencies
    (mirrors ``torch.fft.rfftn``)."""
    t = _input(input, "rfftn", real=True)
    return apply(_r2c, (*_plan(t, s, dim), _norm(norm)), (t,))


def irfftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The inverse of :func:`rfftn`; the last size defaults to ``2 * (m - 1)`` (mirrors
    ``torch.fft.irfftn``)."""
    t = _input(input, "irfftn")
    return apply(_c2r, (*_plan(t, s, dim, last_half=True), _norm(norm)), (t,))


def hfftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The N-dimensional :func:`hfft` (mirrors ``torch.fft.hfftn``)."""
    t = _input(input, "hfftn")
    return apply(_hermitian_to_real, (*_plan(t, s, dim, last_half=True), _norm(norm)), (t,))


def ihfftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The N-dimensional :func:`ihfft` (mirrors ``torch.fft.ihfftn``)."""
    t = _input(input, "ihfftn", real=True)
    return apply(_real_to_hermitian, (*_plan(t, s, dim), _norm(norm)), (t,))


# -- two dimensions: the N-dimensional ones with dim=(-2, -1) ----------------------------------
def fft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """:func:`fftn` over the last two dimensions (mirrors ``torch.fft.fft2``)."""
    return fftn(input, s, dim, norm)


def ifft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """:func:`ifftn` over the last two dimensions (mirrors ``torch.fft.ifft2``)."""
    return ifftn(input, s, dim, norm)


def rfft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """:func:`rfftn` over the last two dimensions (mirrors ``torch.fft.rfft2``)."""
    return rfftn(input, s, dim, norm)


def irfft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """:func:`irfftn` over the last two dimensions (mirrors ``torch.fft.irfft2``)."""
    return irfftn(input, s, dim, norm)


def hfft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """:func:`hfftn` over the last two dimensions (mirrors ``torch.fft.hfft2``)."""
    return hfftn(input, s, dim, norm)


def ihfft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """:func:`ihfftn` over the last two dimensions (mirrors ``torch.fft.ihfft2``)."""
    return ihfftn(input, s, dim, norm)


# -- frequencies and shifts -------------------------------------------------------------------
def _freqs(n: Any, d: float, half: bool, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    n = as_int(n, "n", "spx.fft.rfftfreq" if half else "spx.fft.fftfreq", minimum=1)
    count = n // 2 + 1 if half else n
    k = arange(count, dtype=canonical(jnp.float32 if dtype is None else dtype), device=device)
    out = apply(_freq_scale, (n, float(d), half), (k,))
    return out.requires_grad_() if requires_grad else out


def fftfreq(
    n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None, requires_grad=False, **_
) -> Tensor:
    """The sample frequencies of an ``n``-point FFT with sample spacing ``d``:
    ``[0, 1, ..., -2, -1] / (n * d)`` (mirrors ``torch.fft.fftfreq``; float32 by default).

    Example:
        >>> import spx
        >>> spx.fft.fftfreq(4).tolist()
        [0.0, 0.25, -0.5, -0.25]
    """
    return _freqs(n, d, False, dtype, device, requires_grad)


def rfftfreq(
    n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None, requires_grad=False, **_
) -> Tensor:
    """The non-negative sample frequencies of an ``n``-point :func:`rfft`:
    ``[0, 1, ..., n // 2] / (n * d)`` (mirrors ``torch.fft.rfftfreq``).

    Example:
        >>> import spx
        >>> spx.fft.rfftfreq(4).tolist()
        [0.0, 0.25, 0.5]
    """
    return _freqs(n, d, True, dtype, device, requires_grad)


def _shift_axes(t: Tensor, dim: Any) -> tuple | None:
    if dim is None:
        return None
    return _dims.dims(dim, t.ndim)


def fftshift(input: Any, dim: Any = None) -> Tensor:
    """Moves the zero frequency to the middle of ``dim`` (default: every dimension) (mirrors
    ``torch.fft.fftshift``).

    Example:
        >>> import spx
        >>> spx.fft.fftshift(spx.fft.fftfreq(4)).tolist()
        [-0.5, -0.25, 0.0, 0.25]
    """
    t = tensor_arg(input, "fft.fftshift")
    return apply(_shift, (_shift_axes(t, dim), False), (t,))


def ifftshift(input: Any, dim: Any = None) -> Tensor:
    """The inverse of :func:`fftshift` (mirrors ``torch.fft.ifftshift``)."""
    t = tensor_arg(input, "fft.ifftshift")
    return apply(_shift, (_shift_axes(t, dim), True), (t,))


# numpy's axis= as torch accepts it (torch.fft.fft(x, axis=0)).
numpy_names.accept(globals(), __all__)
