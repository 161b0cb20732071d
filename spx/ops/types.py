"""torch's dtype functions: ``spx.dtype``, ``get_default_dtype``/``set_default_dtype``,
``finfo``/``iinfo``, ``promote_types``, ``result_type``, ``can_cast``, ``is_floating_point``, ...

spx dtypes *are* numpy dtypes (``spx.float32`` is ``jnp.float32``; ``t.dtype`` is a
``numpy.dtype``), so ``spx.dtype`` is ``numpy.dtype`` and ``isinstance(t.dtype, spx.dtype)``
holds.

The default float dtype (float32) is what Python floats and spx's float creation functions make
(``spx.tensor([1.0])``, ``spx.zeros(3)``, ``spx.randn``, the windows). ``set_default_dtype``
changes it to float16 or bfloat16, or to float64 when ``jax_enable_x64`` is on; without it JAX
computes in 32 bits and float64 is refused with the fix (see :func:`set_default_dtype`).

Example:
    >>> import spx
    >>> isinstance(spx.ones(2).dtype, spx.dtype)
    True
    >>> spx.promote_types(spx.int32, spx.float16) == spx.float16
    True
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx._tensor.tensor import Tensor
from spx.ops._args import tensor_arg

__all__ = [
    "can_cast", "dtype", "finfo", "get_default_dtype", "iinfo", "is_complex",
    "is_floating_point", "is_nonzero", "promote_types", "result_type", "set_default_dtype",
]  # fmt: skip

dtype = np.dtype
finfo = jnp.finfo
iinfo = jnp.iinfo


# Process-wide, as torch's is: it is configuration every rank of a job sets the same way, not
# per-rank state (a thread rank that set it would expect its model code to follow it).
_DEFAULT_FLOAT: list[np.dtype] = [np.dtype(jnp.float32)]

_FLOATS = ("float16", "bfloat16", "float32", "float64")


def get_default_dtype() -> np.dtype:
    """The dtype Python floats and float creation functions make (mirrors
    ``torch.get_default_dtype``): float32 unless :func:`set_default_dtype` changed it.

    Example:
        >>> import spx
        >>> spx.get_default_dtype()
        dtype('float32')
    """
    return _DEFAULT_FLOAT[0]


def default_complex_dtype() -> np.dtype:
    """The complex dtype Python complex numbers make: complex128 when the default float dtype
    is float64, else complex64 (torch's complex32 for a float16 default has no JAX type)."""
    wide = _DEFAULT_FLOAT[0] == np.dtype(np.float64)
    return np.dtype(np.complex128 if wide else np.complex64)


def _as_dtype(d: Any) -> np.dtype | None:
    """``d`` as a numpy dtype if it is a dtype object (spx/numpy dtype, numpy or JAX scalar
    type), else None. Strings and Python's ``float`` are not dtypes to torch either."""
    if isinstance(d, np.dtype):
        return d
    if isinstance(d, type):
        if issubclass(d, np.generic):
            return np.dtype(d)
        dt = getattr(d, "dtype", None)  # jnp.float32 and friends carry their numpy dtype
        if isinstance(dt, np.dtype):
            return dt
    return None


def set_default_dtype(d: Any, /) -> None:
    """Set the dtype of Python floats and of float creation functions (mirrors
    ``torch.set_default_dtype``; process-wide, as in torch).

    What follows it: ``spx.tensor``/``as_tensor``/``spx.Tensor`` of Python floats (complex
    numbers give complex128 under a float64 default, complex64 otherwise), and ``zeros``,
    ``ones``, ``empty``, ``full`` with a float fill, ``arange`` with float bounds, ``linspace``,
    ``logspace``, ``eye``, ``rand``, ``randn``, ``scalar_tensor`` and the window functions when
    no ``dtype=`` is given, the parameters and buffers ``spx.nn`` layers create, and the dtype a
    tensor's ``repr`` leaves out. What does not (unlike torch): an integer tensor times a Python
    float is float32 (JAX's rule).
    numpy float64 arrays keep their own dtype rule (float32 without ``jax_enable_x64``).

    Args:
        d: a floating dtype: ``spx.float32``, ``spx.float16``, ``spx.bfloat16``, or
            ``spx.float64`` when ``jax_enable_x64`` is on.

    Raises:
        TypeError: ``d`` is not a floating dtype (torch's error).
        ValueError: ``d`` is float64 and ``jax_enable_x64`` is off: JAX would compute every
            such tensor in float32, which is not what a script asking for float64 wants. The
            message names the fix.

    Example:
        >>> import spx
        >>> spx.set_default_dtype(spx.bfloat16)
        >>> spx.tensor([1.5]).dtype
        dtype(bfloat16)
        >>> spx.set_default_dtype(spx.float32)
    """
    dt = _as_dtype(d)
    if dt is None or dt.name not in _FLOATS:
        shown = f"spx.{dt.name}" if dt is not None else f"{type(d).__name__} {d!r:.40}"
        raise TypeError(
            "set_default_dtype: only floating-point types are supported as the default type "
            f"(spx.float32, spx.float16, spx.bfloat16, spx.float64), got {shown}"
        )
    if dt == np.dtype(np.float64) and not jax.config.read("jax_enable_x64"):
        raise ValueError(
            "set_default_dtype(spx.float64): JAX computes in 32 bits unless 64-bit mode is on, "
            "so every float64 tensor would be float32. Turn it on before creating tensors: "
            'jax.config.update("jax_enable_x64", True) (or JAX_ENABLE_X64=1), then call '
            "spx.set_default_dtype(spx.float64)."
        )
    _DEFAULT_FLOAT[0] = dt


def promote_types(type1: Any, type2: Any) -> np.dtype:
    """The smallest dtype both promote to (mirrors ``torch.promote_types``)."""
    return np.dtype(jnp.promote_types(type1, type2))


def result_type(tensor1: Any, tensor2: Any) -> np.dtype:
    """The dtype of an arithmetic result of the two (Python numbers count as torch's wrapped
    numbers: they don't widen a tensor's dtype)."""
    args = [a.dtype if isinstance(a, Tensor) else a for a in (tensor1, tensor2)]
    return np.dtype(jnp.result_type(*args))


def can_cast(from_: Any, to: Any) -> bool:
    """Whether torch's casting rule allows ``from_`` -> ``to`` (no float -> int, no
    complex -> real, no non-bool -> bool)."""
    return bool(np.can_cast(np.dtype(from_), np.dtype(to), casting="same_kind"))


def is_floating_point(input: Any) -> bool:
    """Whether ``input`` has a floating dtype (float16, bfloat16, float32, float64)."""
    return tensor_arg(input, "is_floating_point").is_floating_point()


def is_complex(input: Any) -> bool:
    """Whether ``input`` has a complex dtype."""
    return tensor_arg(input, "is_complex").is_complex()


def is_nonzero(input: Any) -> bool:
    """Whether a one-element tensor is nonzero (a Python bool; mirrors ``torch.is_nonzero``)."""
    return tensor_arg(input, "is_nonzero").is_nonzero()
