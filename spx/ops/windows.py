"""torch's window functions: ``spx.hann_window``, ``hamming_window``, ``blackman_window``,
``bartlett_window``, ``kaiser_window`` (the tapers ``stft`` and filter design use).

Each mirrors its torch namesake: ``periodic=True`` by default (the window of length
``window_length + 1`` without its last value, ready for ``stft``), a 1-D tensor of the default
dtype unless ``dtype=`` says otherwise, ``window_length`` 0 gives an empty tensor and 1 gives
``[1.]``. A negative length or a non-floating dtype raises torch's ``RuntimeError``; a length
that is not an int raises ``TypeError``.

The arithmetic follows torch's steps in torch's order (``arange``, scale, ``cos``, ...), each
rounded to ``dtype``, so float16 and bfloat16 windows round as torch's do instead of being a
float32 window cast once at the end. Complex dtypes, which torch accepts but cannot compute on
CPU, give the real window as complex numbers. Like the other creation functions, a window is
recorded and computed with the program that uses it.

Example:
    >>> import spx
    >>> spx.hann_window(4).tolist()
    [0.0, 0.5, 1.0, 0.5]
    >>> spx.hann_window(5, periodic=False).tolist()
    [0.0, 0.5, 1.0, 0.5, 0.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import i0

from spx import _validate
from spx._tensor.dispatch import apply
from spx._tensor.methods._dtypes import canonical
from spx._tensor.tensor import Tensor
from spx.ops.creation import _finish
from spx.ops.types import get_default_dtype

__all__ = [
    "bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window",
]  # fmt: skip


def _checked(fn: str, window_length: Any, periodic: Any, dtype: Any) -> tuple[int, bool, np.dtype]:
    """torch's argument checks (``window_function_checks``), in torch's order of kinds."""
    n = _validate.as_int(window_length, "window_length", f"spx.{fn}")
    if not isinstance(periodic, bool | np.bool_):
        raise TypeError(
            f"spx.{fn}: periodic must be a bool, got {type(periodic).__name__} {periodic!r:.40}"
        )
    dt = canonical(get_default_dtype() if dtype is None else dtype)
    if not (jnp.issubdtype(dt, jnp.floating) or jnp.issubdtype(dt, jnp.complexfloating)):
        raise RuntimeError(
            f"{fn} expects floating point dtypes, got: spx.{dt.name}; pass dtype=spx.float32 "
            "(or leave dtype out for the default dtype) and cast the window afterwards"
        )
    if n < 0:
        raise RuntimeError(f"{fn} requires non-negative window_length, got window_length={n}")
    return n, bool(periodic), dt


class _Steps:
    """torch's arithmetic for a window of ``dtype``: each operation computes in float32
    (float64 for float64) and rounds its result to ``dtype``; each Python scalar operand is
    first rounded to ``dtype`` (torch wraps it as a tensor of the window's dtype)."""

    def __init__(self, dtype: np.dtype) -> None:
        info = jnp.finfo(dtype)
        self.real = np.dtype(info.dtype)  # complex64 -> float32, complex128 -> float64
        self.compute = np.dtype(np.float64 if self.real == np.float64 else np.float32)
        self._bits = (info.nexp, info.nmant)

    def round(self, x: jax.Array) -> jax.Array:
        """``x`` rounded to the window's dtype, kept in the compute dtype."""
        if self.real == self.compute:
            return x
        # reduce_precision, not astype(real).astype(compute): XLA drops such a round trip (it
        # allows excess precision by default), and the values would then differ from torch's.
        exponent, mantissa = self._bits
        return jax.lax.reduce_precision(x, exponent_bits=exponent, mantissa_bits=mantissa)

    def scalar(self, value: float) -> np.generic:
        """A Python scalar as torch converts it: double -> float -> the window's dtype."""
        if self.real == self.compute:
            return self.compute.type(value)
        return np.float32(value).astype(self.real).astype(self.compute)

    def arange(self, n: int) -> jax.Array:
        return self.round(jnp.arange(n, dtype=self.compute))


def _done(window: jax.Array, periodic: bool, dtype: np.dtype) -> jax.Array:
    return (window[:-1] if periodic else window).astype(dtype)


def _hamming(n: int, periodic: bool, alpha: float, beta: float, dtype: np.dtype) -> jax.Array:
    if n < 2:
        return jnp.ones((n,), dtype)
    m = n + 1 if periodic else n
    op = _Steps(dtype)
    w = op.round(op.arange(m) * op.scalar(2.0 * math.pi / (m - 1)))
    w = op.round(jnp.cos(w))
    w = op.round(w * op.scalar(-beta))
    w = op.round(w + op.scalar(alpha))
    return _done(w, periodic, dtype)


def _blackman(n: int, periodic: bool, dtype: np.dtype) -> jax.Array:
    if n < 2:
        return jnp.ones((n,), dtype)
    m = n + 1 if periodic else n
    op = _Steps(dtype)
    w = op.round(op.arange(m) * op.scalar(math.pi / (m - 1)))

    def term(k: float, coefficient: float) -> jax.Array:
        return op.round(op.round(jnp.cos(op.round(w * op.scalar(k)))) * op.scalar(coefficient))

    w = op.round(op.round(term(4, 0.08) - term(2, 0.5)) + op.scalar(0.42))
    return _done(w, periodic, dtype)


def _bartlett(n: int, periodic: bool, dtype: np.dtype) -> jax.Array:
    if n < 2:
        return jnp.ones((n,), dtype)
    m = n + 1 if periodic else n
    op = _Steps(dtype)
    w = op.round(op.arange(m) * op.scalar(2.0 / (m - 1)))
    first_half = ((m - 1) >> 1) + 1
    w = w.at[first_half:].set(op.round(op.scalar(2) - w[first_half:]))
    return _done(w, periodic, dtype)


def _kaiser(n: int, periodic: bool, beta: float, dtype: np.dtype) -> jax.Array:
    if n < 2:
        return jnp.ones((n,), dtype)
    m = n + 1 if periodic else n
    op = _Steps(dtype)
    w = op.arange(m)
    # torch's kernel: one expression in float32 (float64 for float64) with the scalars
    # converted straight from double, rounded to dtype once at the end.
    alpha = op.compute.type((m - 1) / 2.0)
    b = op.compute.type(beta)
    ratio = (w - alpha) / alpha
    w = i0(b * jnp.sqrt(jnp.abs(1 - ratio**2))) / i0(b)
    return _done(w, periodic, dtype)


def _window(
    fn: Callable[..., jax.Array],
    static: tuple,
    device: Any,
    requires_grad: bool,
) -> Tensor:
    return _finish(apply(fn, static, ()), device, requires_grad)


def hann_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    r"""The Hann window :math:`w[n] = \sin^2(\pi n / (N - 1))` (mirrors ``torch.hann_window``).

    Args:
        window_length: the number of values (an int >= 0).
        periodic: ``True`` (default) for the periodic window ``stft`` wants (``N`` is
            ``window_length + 1``, last value dropped); ``False`` for the symmetric one.
        dtype: a floating dtype; the default dtype (``spx.get_default_dtype()``) if None.
        layout: accepted for torch's signature (spx tensors are always dense).
        device: where to create the window (the rank's device if None).
        pin_memory: accepted for torch's signature (no effect).
        requires_grad: make the window a leaf that requires grad.

    Returns:
        Shape ``(window_length,)``.

    Raises:
        TypeError: ``window_length`` is not an int, or ``periodic`` not a bool.
        RuntimeError: a negative ``window_length`` or a non-floating ``dtype`` (torch's).

    Example:
        >>> import spx
        >>> spx.hann_window(4).tolist()
        [0.0, 0.5, 1.0, 0.5]
    """
    n, periodic, dt = _checked("hann_window", window_length, periodic, dtype)
    return _window(_hamming, (n, periodic, 0.5, 0.5, dt), device, requires_grad)


def hamming_window(
    window_length: int,
    periodic: bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    r"""The generalised Hamming window :math:`w[n] = \alpha - \beta \cos(2 \pi n / (N - 1))`
    (mirrors ``torch.hamming_window``; ``alpha=beta=0.5`` is :func:`hann_window`).

    Args:
        window_length: the number of values (an int >= 0).
        periodic: ``True`` (default) for the periodic window, ``False`` for the symmetric one.
        alpha: the constant term.
        beta: the cosine's coefficient.
        dtype: a floating dtype; the default dtype if None.
        layout: accepted for torch's signature (spx tensors are always dense).
        device: where to create the window (the rank's device if None).
        pin_memory: accepted for torch's signature (no effect).
        requires_grad: make the window a leaf that requires grad.

    Returns:
        Shape ``(window_length,)``.

    Raises:
        TypeError: a non-int ``window_length``, a non-bool ``periodic``, non-real coefficients.
        RuntimeError: a negative ``window_length`` or a non-floating ``dtype`` (torch's).

    Example:
        >>> import spx
        >>> [round(v, 2) for v in spx.hamming_window(3, periodic=False).tolist()]
        [0.08, 1.0, 0.08]
    """
    n, periodic, dt = _checked("hamming_window", window_length, periodic, dtype)
    a = _validate.as_float(alpha, "alpha", "spx.hamming_window")
    b = _validate.as_float(beta, "beta", "spx.hamming_window")
    return _window(_hamming, (n, periodic, a, b, dt), device, requires_grad)


def blackman_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    r"""The Blackman window
    :math:`w[n] = 0.42 - 0.5 \cos(2 \pi n / (N - 1)) + 0.08 \cos(4 \pi n / (N - 1))`
    (mirrors ``torch.blackman_window``).

    Args:
        window_length: the number of values (an int >= 0).
        periodic: ``True`` (default) for the periodic window, ``False`` for the symmetric one.
        dtype: a floating dtype; the default dtype if None.
        layout: accepted for torch's signature (spx tensors are always dense).
        device: where to create the window (the rank's device if None).
        pin_memory: accepted for torch's signature (no effect).
        requires_grad: make the window a leaf that requires grad.

    Returns:
        Shape ``(window_length,)``.

    Raises:
        TypeError: ``window_length`` is not an int, or ``periodic`` not a bool.
        RuntimeError: a negative ``window_length`` or a non-floating ``dtype`` (torch's).

    Example:
        >>> import spx
        >>> [round(v, 2) for v in spx.blackman_window(3, periodic=False).tolist()]
        [-0.0, 1.0, -0.0]
    """
    n, periodic, dt = _checked("blackman_window", window_length, periodic, dtype)
    return _window(_blackman, (n, periodic, dt), device, requires_grad)


def bartlett_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    r"""The Bartlett (triangular) window :math:`w[n] = 1 - |2n / (N - 1) - 1|` (mirrors
    ``torch.bartlett_window``).

    Args:
        window_length: the number of values (an int >= 0).
        periodic: ``True`` (default) for the periodic window, ``False`` for the symmetric one.
        dtype: a floating dtype; the default dtype if None.
        layout: accepted for torch's signature (spx tensors are always dense).
        device: where to create the window (the rank's device if None).
        pin_memory: accepted for torch's signature (no effect).
        requires_grad: make the window a leaf that requires grad.

    Returns:
        Shape ``(window_length,)``.

    Raises:
        TypeError: ``window_length`` is not an int, or ``periodic`` not a bool.
        RuntimeError: a negative ``window_length`` or a non-floating ``dtype`` (torch's).

    Example:
        >>> import spx
        >>> spx.bartlett_window(4).tolist()
        [0.0, 0.5, 1.0, 0.5]
    """
    n, periodic, dt = _checked("bartlett_window", window_length, periodic, dtype)
    return _window(_bartlett, (n, periodic, dt), device, requires_grad)


def kaiser_window(
    window_length: int,
    periodic: bool = True,
    beta: float = 12.0,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    r"""The Kaiser window
    :math:`w[i] = I_0(\beta \sqrt{1 - ((i - N/2) / (N/2))^2}) / I_0(\beta)` with ``N``
    ``window_length - 1`` (``window_length`` when periodic) (mirrors ``torch.kaiser_window``).

    Args:
        window_length: the number of values (an int >= 0).
        periodic: ``True`` (default) for the periodic window, ``False`` for the symmetric one.
        beta: the shape parameter (larger is narrower).
        dtype: a floating dtype; the default dtype if None.
        layout: accepted for torch's signature (spx tensors are always dense).
        device: where to create the window (the rank's device if None).
        pin_memory: accepted for torch's signature (no effect).
        requires_grad: make the window a leaf that requires grad.

    Returns:
        Shape ``(window_length,)``.

    Raises:
        TypeError: a non-int ``window_length``, a non-bool ``periodic``, a non-real ``beta``.
        RuntimeError: a negative ``window_length`` or a non-floating ``dtype`` (torch's).

    Example:
        >>> import spx
        >>> [round(v, 4) for v in spx.kaiser_window(3, periodic=False, beta=5.0).tolist()]
        [0.0367, 1.0, 0.0367]
    """
    n, periodic, dt = _checked("kaiser_window", window_length, periodic, dtype)
    b = _validate.as_float(beta, "beta", "spx.kaiser_window")
    return _window(_kaiser, (n, periodic, b, dt), device, requires_grad)
