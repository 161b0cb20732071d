"""Array creation with torch's names and signatures (``spx.zeros(2, 3)``, ``spx.randn(...)``).

Results are plain ``jax.Array``. ``device=`` takes the same specs as :func:`spx.device`.
Random functions draw from the calling rank's generator (:func:`spx.manual_seed`) unless a
``generator`` (a ``jax.random`` key) is given. Python ints become int32 and floats float32, as
JAX does without ``jax_enable_x64`` (torch would give int64 for ints).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx import _validate
from spx import random as spx_random
from spx._host import device_array
from spx.device import device as resolve_device


def _size(size: tuple[Any, ...], fn: str) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], Sequence | np.ndarray):
        size = tuple(size[0])
    hint = f"call e.g. spx.{fn}(2, 3) or spx.{fn}((2, 3))"
    return tuple(
        _validate.as_int(s, f"size[{i}]", f"spx.{fn}", minimum=0, hint=hint, wrong_type=ValueError)
        for i, s in enumerate(size)
    )


def _place(x: jax.Array, device: Any) -> jax.Array:
    return x if device is None else jax.device_put(x, resolve_device(device))


def _key(generator: Any) -> jax.Array:
    return spx_random.next_key() if generator is None else generator


def _float_dtype(dtype: Any, fn: str) -> Any:
    dt = jnp.dtype(dtype or jnp.float32)
    if not jnp.issubdtype(dt, jnp.floating):
        raise TypeError(f"spx.{fn}: expected a floating dtype, got {dt}")
    return dt


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """An array from data (mirrors ``torch.tensor``); ``requires_grad=True`` gives a Parameter.

    Example:
        >>> import spx
        >>> spx.tensor([[1.0, 2.0]]).shape
        (1, 2)
    """
    data = _unwrap(data)
    # torch.tensor always copies; so does this (a donated step could free a shared buffer).
    if isinstance(data, jax.Array):
        x = jnp.array(data, dtype=dtype)
    else:
        x = _numeric(data, dtype, "tensor")
    x = _place(x, device)
    if requires_grad:
        from spx.nn.parameter import Parameter

        return Parameter(x)
    return x


def _unwrap(data: Any) -> Any:
    """A Parameter's array (numpy arrays have a ``.data`` too: a memoryview, not the values)."""
    from spx.nn.parameter import Parameter

    return data.data if isinstance(data, Parameter) else data


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> jax.Array:
    """Like :func:`tensor`, without copying when ``data`` already is a jax array.

    Host memory (numpy, torch tensors) is copied: a jax array can't share mutable memory, which
    torch's ``as_tensor`` does.
    """
    return _place(_numeric(_unwrap(data), dtype, "as_tensor"), device)


def _numeric(data: Any, dtype: Any, fn: str) -> jax.Array:
    """``device_array(data)``, with torch's kind of error for data that isn't numbers."""
    try:
        return device_array(data, dtype=dtype)
    except (TypeError, ValueError) as e:  # non-numbers, None, ragged lists
        raise type(e)(
            f"spx.{fn}: can't make an array of {data!r:.60} ({type(data).__name__}): "
            f"{str(e).rstrip('.')}. "
            "Pass numbers, (nested) lists of numbers, numpy arrays or jax arrays."
        ) from None


def from_numpy(ndarray: np.ndarray) -> jax.Array:
    """A ``jax.Array`` from a numpy array, copied (torch's shares memory; a jax array can't)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"spx.from_numpy expects a numpy.ndarray, got {type(ndarray).__name__}")
    return device_array(ndarray)


def zeros(*size: Any, dtype: Any = None, device: Any = None) -> jax.Array:
    """Zeros of the given size (float32 by default). Example: ``spx.zeros(2, 3)``."""
    return _place(jnp.zeros(_size(size, "zeros"), dtype or jnp.float32), device)


def ones(*size: Any, dtype: Any = None, device: Any = None) -> jax.Array:
    """Ones of the given size (float32 by default). Example: ``spx.ones(2, 3)``."""
    return _place(jnp.ones(_size(size, "ones"), dtype or jnp.float32), device)


def zeros_like(input: Any, dtype: Any = None, device: Any = None) -> jax.Array:
    return _place(jnp.zeros_like(jnp.asarray(input), dtype=dtype), device)


def ones_like(input: Any, dtype: Any = None, device: Any = None) -> jax.Array:
    return _place(jnp.ones_like(jnp.asarray(input), dtype=dtype), device)


def full(size: Sequence[int], fill_value: Any, dtype: Any = None, device: Any = None) -> jax.Array:
    """An array filled with ``fill_value`` (dtype inferred from it, as torch does)."""
    return _place(jnp.full(_size((size,), "full"), fill_value, dtype), device)


def arange(
    start: Any, end: Any = None, step: Any = 1, dtype: Any = None, device: Any = None
) -> jax.Array:
    """``[start, end)`` with ``step`` (mirrors ``torch.arange``). Example: ``spx.arange(5)``."""
    if step == 0:
        raise ValueError("spx.arange: step must be nonzero")
    if end is None:
        start, end = 0, start
    return _place(jnp.arange(start, end, step, dtype=dtype), device)


def randn(*size: Any, generator: Any = None, dtype: Any = None, device: Any = None) -> jax.Array:
    """Standard normal samples. Example: ``spx.randn(2, 3)``."""
    shape = _size(size, "randn")
    return _place(jax.random.normal(_key(generator), shape, _float_dtype(dtype, "randn")), device)


def rand(*size: Any, generator: Any = None, dtype: Any = None, device: Any = None) -> jax.Array:
    """Uniform samples on [0, 1). Example: ``spx.rand(2, 3)``."""
    shape = _size(size, "rand")
    return _place(jax.random.uniform(_key(generator), shape, _float_dtype(dtype, "rand")), device)


def randint(
    low: int,
    high: int | None = None,
    size: Sequence[int] | None = None,
    *,
    generator: Any = None,
    dtype: Any = None,
    device: Any = None,
) -> jax.Array:
    """Integers on ``[low, high)`` (``randint(high, size)`` form too, as torch)."""
    if size is None:
        if high is None or not isinstance(high, Sequence):
            raise TypeError("spx.randint: give size, e.g. spx.randint(0, 10, (3,))")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError(f"spx.randint: expected low < high, got low={low}, high={high}")
    shape = _size((size,), "randint")
    out = jax.random.randint(_key(generator), shape, low, high, dtype=dtype or jnp.int32)
    return _place(out, device)


def cat(tensors: Sequence[Any], dim: int = 0) -> jax.Array:
    """Concatenate along ``dim`` (mirrors ``torch.cat``)."""
    if not len(tensors):
        raise ValueError("spx.cat: expected a non-empty list of arrays")
    return jnp.concatenate([jnp.asarray(t) for t in tensors], axis=dim)


def stack(tensors: Sequence[Any], dim: int = 0) -> jax.Array:
    """Stack along a new ``dim`` (mirrors ``torch.stack``)."""
    if not len(tensors):
        raise ValueError("spx.stack: expected a non-empty list of arrays")
    return jnp.stack([jnp.asarray(t) for t in tensors], axis=dim)
