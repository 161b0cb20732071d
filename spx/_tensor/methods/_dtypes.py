"""torch dtypes as the dtypes spx computes in.

Without ``jax_enable_x64`` JAX computes 64-bit types in 32 bits (and warns each time it is
asked for one). torch code names ``torch.long``/``torch.float64`` everywhere
(``torch.zeros(n, dtype=torch.long)``), so spx maps them to what JAX will compute —
``int64 -> int32``, ``float64 -> float32`` — up front, silently, as ``Tensor.long()`` does.
With x64 on, dtypes are kept.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def canonical(dtype: Any) -> np.dtype:
    """``dtype`` as spx will hold it (64-bit types narrowed unless x64 is on)."""
    return np.dtype(jax.dtypes.canonicalize_dtype(np.dtype(dtype)))


def category(dtype: Any) -> int:
    """torch's dtype category: 0 bool, 1 integer, 2 floating, 3 complex. Promotion compares
    them, and an in-place result may be written into a tensor of the same or a higher one
    (torch's ``canCast``: int64 into uint8 yes, float into int no).

    Example:
        >>> category(np.float16), category(np.uint8)
        (2, 1)
    """
    if dtype == np.bool_:
        return 0
    if jax.numpy.issubdtype(dtype, np.integer):
        return 1
    return 2 if jax.numpy.issubdtype(dtype, np.floating) else 3  # bfloat16 and float8 too


_HALF = (np.dtype("float16"), np.dtype(jax.numpy.bfloat16))


def half_in_float32(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` computed in float32 when its first argument is float16 or bfloat16, the result
    cast back: torch's kernels accumulate half types in float (its "opmath" type).

    A float16 sum overflows past 65504: computed in float16, the norm of 1024 values around 10
    is inf, a softmax over 100k logits sums its exps to inf (every probability 0) and a 64x64
    average pool of 20s is inf. For reductions (norms, variances, softmax, average pooling).

    Example:
        >>> import jax.numpy as jnp
        >>> norm = half_in_float32(lambda x: jnp.sqrt(jnp.sum(x * x)))
        >>> float(norm(jnp.full(1024, 10.0, jnp.float16)))
        320.0
    """

    @functools.wraps(fn)
    def wrapped(x: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(x, "dtype", None) in _HALF:
            return fn(x.astype(np.float32), *args, **kwargs).astype(x.dtype)
        return fn(x, *args, **kwargs)

    return wrapped


_INT32_MIN = np.iinfo(np.int32).min


def cast(x: Any, dtype: Any) -> Any:
    """``x`` as ``dtype``, with torch's CPU results for floats out of an integer's range.

    XLA saturates (300.0 -> int8 127, NaN -> 0); torch's CPU casts go through a 32-bit
    integer as x86 converts: NaN, inf and values past int32 become INT32_MIN, narrower types
    then wrap (-1.5 -> uint8 255, 300.0 -> 44). Image code casting unclamped values to uint8
    sees the same pixels as with torch.
    """
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu" or not jnp.issubdtype(x.dtype, jnp.inexact):
        return x.astype(dtype)
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        x = jnp.real(x)  # torch casts a complex value's real part (with a warning)
    if dtype.itemsize == 8:  # int64/uint64 with x64 on: through int64
        wide = x.astype(jnp.int64)
        outside = ~((x >= -(2.0**63)) & (x < 2.0**63))
        return jnp.where(outside, jnp.int64(np.iinfo(np.int64).min), wide).astype(dtype)
    if dtype == np.uint32:
        return x.astype(dtype)
    wide = x.astype(jnp.int32)
    outside = ~((x >= -(2.0**31)) & (x < 2.0**31))  # NaN included
    wide = jnp.where(outside, jnp.int32(_INT32_MIN), wide)
    return wide if dtype == np.int32 else wide.astype(dtype)


# torch names the C type in its error: int8_t, ..., plain "int" for int32, c10::Half, float.
_C_NAMES = {name: f"{name}_t" for name in ("int8", "int16", "int64", "uint8", "uint16", "uint32")}
_C_NAMES.update(
    int32="int", float16="c10::Half", bfloat16="c10::BFloat16", float32="float", float64="double"
)
# What spx holds a torch type in while x64 is off (the value might fit the type asked for).
_NARROWED = {"int32": ("int64", "int32"), "float32": ("float64", "float32")}


@functools.cache
def _finite_range(dtype: np.dtype) -> tuple[float, float] | None:
    """The numbers a ``dtype`` holds without overflow, or None where torch does not check."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return float(info.min), float(info.max)
    if dtype.kind == "b" or not jnp.issubdtype(dtype, jnp.floating):
        return None
    top = float(jnp.finfo(dtype).max)
    return -top, top


def check_scalar_fits(value: Any, dtype: Any, *, half_types: bool = True) -> None:
    """torch's error for a Python number written into a tensor it does not fit: ``x[0] = -1.5``
    for uint8, NaN or inf for any integer type, a finite number past the largest float16
    (65504), bfloat16 or float32 value. torch refuses it where a tensor value would be cast
    (integers wrap, floats become inf). ``half_types=False`` lets float16/bfloat16 become inf
    as torch's ``x[i] = v`` does (it makes a float tensor of ``v`` and casts it).

    Example:
        >>> check_scalar_fits(2.5, np.uint8)  # truncated to 2, as torch
        >>> check_scalar_fits(float("inf"), np.float16)  # inf is a float16 value
    """
    dtype = np.dtype(dtype)
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        return  # tensors and arrays are cast instead
    bounds = _finite_range(dtype)
    if bounds is None or (not half_types and dtype in _HALF):
        return
    if dtype.kind not in "iu" and not math.isfinite(value):
        return  # inf and NaN are float values
    if not bounds[0] <= value <= bounds[1]:  # NaN fails too
        narrowed = (
            " (if the tensor was made as {0}: spx holds {0} as {1} unless jax_enable_x64 is "
            "on)".format(*_NARROWED[dtype.name])
            if dtype.name in _NARROWED and not jax.config.jax_enable_x64
            else ""
        )
        raise RuntimeError(
            f"value cannot be converted to type {_C_NAMES.get(dtype.name, dtype.name)} without "
            f"overflow{narrowed}"
        )


# torch's ScalarType names, which its dtype errors print ("got Long for the destination").
_SCALAR_TYPE = {
    "float16": "Half", "float32": "Float", "float64": "Double", "bfloat16": "BFloat16",
    "int8": "Char", "uint8": "Byte", "int16": "Short", "int32": "Int", "int64": "Long",
    "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "bool": "Bool",
    "complex64": "ComplexFloat", "complex128": "ComplexDouble",
}  # fmt: skip


def scalar_type(dtype: Any) -> str:
    """torch's ScalarType name of ``dtype``, as torch's dtype errors print it.

    Example:
        >>> scalar_type(np.float32), scalar_type(np.uint8)
        ('Float', 'Byte')
    """
    name = np.dtype(dtype).name
    return _SCALAR_TYPE.get(name, name)


def check_same_dtype(dtype: Any, source: Any, message: str) -> None:
    """torch's error for a tensor ``source`` whose dtype is not ``dtype``, where torch writes
    it into a tensor of ``dtype`` without casting (scatter, index_put, index_add, put, ...).

    ``message`` is torch's, with ``{self}`` and ``{source}`` for the two ScalarType names; the
    fix is appended. A Python number is not checked: torch casts numbers.

    Example:
        >>> check_same_dtype(np.float32, jnp.ones(2), "put_(): {self} and {source}")
    """
    if not (hasattr(source, "_ref") or isinstance(source, jax.Array)):
        return
    if np.dtype(source.dtype) == np.dtype(dtype):
        return
    raise RuntimeError(
        message.format(self=scalar_type(dtype), source=scalar_type(source.dtype))
        + f"; cast the source first: source.to(spx.{np.dtype(dtype).name})"
    )
