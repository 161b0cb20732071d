"""Tensor creation with torch's names and signatures (``spx.zeros(2, 3)``, ``spx.randn(...)``).

Results are :class:`spx.Tensor`. Host data (lists, numpy arrays, torch tensors) is copied now;
``zeros``/``ones``/``full``/``arange``/``eye``/random draws are recorded like any operation and
computed with the program that uses them, unless ``device=`` names a device other than the
calling rank's default (then they are created there now). ``requires_grad=True`` makes a leaf
that requires grad. Python ints give int32 (torch: int64) unless ``jax_enable_x64`` is on; Python
floats and float creation functions give the default dtype (float32, ``spx.set_default_dtype``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx import _context, _validate
from spx import random as spx_random
from spx._device import device as resolve_device
from spx._host import device_array
from spx._tensor import graph, numpy_names
from spx._tensor.dispatch import apply
from spx._tensor.methods._dtypes import canonical, check_scalar_fits
from spx._tensor.placement import known_device
from spx._tensor.tensor import Tensor
from spx.ops.types import default_complex_dtype, get_default_dtype

__all__ = [
    "arange", "as_tensor", "empty", "empty_like", "eye", "from_numpy", "full", "full_like",
    "linspace", "logspace", "ones", "ones_like", "rand", "rand_like", "randint", "randint_like",
    "randn", "randn_like", "randperm", "scalar_tensor", "tensor", "tril_indices", "triu_indices",
    "zeros", "zeros_like",
]  # fmt: skip


def _size(size: tuple[Any, ...], fn: str) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], Sequence | np.ndarray):
        size = tuple(size[0])
    hint = f"call e.g. spx.{fn}(2, 3) or spx.{fn}((2, 3))"
    return tuple(
        _validate.as_int(s, f"size[{i}]", f"spx.{fn}", minimum=0, hint=hint, wrong_type=ValueError)
        for i, s in enumerate(size)
    )


def _default_float() -> Any:
    return get_default_dtype()  # float32 unless spx.set_default_dtype changed it


def _dtype(dtype: Any, default: Any) -> np.dtype:
    return canonical(default if dtype is None else dtype)


def as_value(data: Any, dtype: Any = None) -> jax.Array:
    """A ``jax.Array`` of ``data`` (a Tensor's value, an array, numpy, numbers), host-copied."""
    if isinstance(data, Tensor):
        value = data._value()
        return value if dtype is None else value.astype(dtype)
    if isinstance(data, bool | int | float | complex):
        # A Python number makes a tensor of torch's default dtype for its kind (jnp.array
        # would make a weakly typed array, which then takes other operands' dtypes).
        kind = dtype if dtype is not None else _number_dtype(data)
        return jnp.asarray(data, dtype=kind)
    if isinstance(data, list | tuple) and any(isinstance(d, Tensor) for d in _flat(data)):
        data = jax.tree.map(lambda d: d._value() if isinstance(d, Tensor) else d, data)
        return jnp.asarray(np.asarray(jax.tree.map(np.asarray, data)), dtype=dtype)
    if dtype is None and isinstance(data, list | tuple):
        return _python_sequence(data)
    return device_array(data, dtype=dtype)


def _number_dtype(number: Any) -> np.dtype:
    """torch's dtype for a Python number: floats (complex numbers) take the default dtype."""
    if isinstance(number, complex | float) and not isinstance(number, np.generic):
        return default_complex_dtype() if isinstance(number, complex) else _default_float()
    return canonical(np.asarray(number).dtype)


def _python_sequence(data: Any) -> jax.Array:
    """A (nested) list of numbers; Python floats make the default dtype, as in torch."""
    value = device_array(data)
    kind = value.dtype.kind
    want = _default_float() if kind == "f" else default_complex_dtype() if kind == "c" else None
    if want is None or value.dtype == want:
        return value
    if not all(type(d) in (bool, int, float, complex) for d in _flat(data)):
        return value  # numpy scalars and arrays in the list keep their dtype, as in torch
    # From the numbers themselves: one rounding to the default dtype, not two via float32.
    return jnp.asarray(np.asarray(data).astype(want))


def _flat(data: Any) -> list:
    out = []
    stack = [data]
    while stack:
        d = stack.pop()
        if isinstance(d, list | tuple):
            stack.extend(d)
        else:
            out.append(d)
    return out


def _finish(x: Any, device: Any, requires_grad: bool) -> Tensor:
    """Place a created value (array or recorded Tensor) and set requires_grad."""
    if device is not None:
        target = resolve_device(device)
        own = _context.current().device
        if own is None or target != own:
            value = x._value() if isinstance(x, Tensor) else x
            x = jax.device_put(value, target)
    t = x if isinstance(x, Tensor) else Tensor._of(x)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _numeric(data: Any, dtype: Any, fn: str) -> jax.Array:
    """``as_value(data)``, with torch's kind of error for data that isn't numbers."""
    try:
        return as_value(data, dtype=None if dtype is None else canonical(dtype))
    except (TypeError, ValueError) as e:  # non-numbers, None, ragged lists
        raise type(e)(
            f"spx.{fn}: can't make a tensor of {data!r:.60} ({type(data).__name__}): "
            f"{str(e).rstrip('.')}. "
            "Pass numbers, (nested) lists of numbers, numpy arrays or tensors."
        ) from None


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (mirrors ``torch.tensor``).

    Example:
        >>> import spx
        >>> spx.tensor([[1.0, 2.0]]).shape
        spx.Size([1, 2])
    """
    if isinstance(data, Tensor):
        x = data.detach().clone() if dtype is None else data.detach().to(dtype).clone()
        return _finish(x, device, requires_grad)
    return _finish(_numeric(data, dtype, "tensor"), device, requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """``data`` as a tensor: a Tensor as it is (cast/moved if asked), anything else copied.

    Host memory (numpy, torch tensors) is copied: a jax array can't share mutable memory, which
    torch's ``as_tensor`` does.
    """
    if isinstance(data, Tensor):
        out = data if dtype is None else data.to(dtype)
        return out if device is None else out.to(device)
    return _finish(_numeric(data, dtype, "as_tensor"), device, False)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor from a numpy array, copied (torch's shares memory; a jax array can't)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"spx.from_numpy expects a numpy.ndarray, got {type(ndarray).__name__}")
    return Tensor._of(device_array(ndarray))


def _legacy_tensor(args: tuple, kwargs: dict) -> jax.Array:
    """``spx.Tensor(data)`` / ``spx.Tensor(2, 3)``: float32, as torch's legacy constructor."""
    if kwargs:
        raise TypeError(f"spx.Tensor() got unexpected keyword arguments {sorted(kwargs)}")
    if len(args) == 1 and not isinstance(args[0], int):
        return _numeric(args[0], _default_float(), "Tensor")
    return jnp.zeros(_size(args, "Tensor"), _default_float())


def _fill(value: Any, shape: tuple, dtype: Any) -> Any:
    return jnp.full(shape, value, dtype)


def _made(fn: Any, static: tuple, args: tuple, device: Any, requires_grad: bool) -> Tensor:
    return _finish(apply(fn, static, args), device, requires_grad)


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False, **_):
    """Zeros of the given size (float32 by default). Example: ``spx.zeros(2, 3)``."""
    static = (_size(size, "zeros"), _dtype(dtype, _default_float()))
    return _made(_fill, static, (0,), device, requires_grad)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False, **_):
    """Ones of the given size (float32 by default). Example: ``spx.ones(2, 3)``."""
    static = (_size(size, "ones"), _dtype(dtype, _default_float()))
    return _made(_fill, static, (1,), device, requires_grad)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False, **_):
    """Like torch.empty: spx fills the memory with zeros (it is never uninitialized)."""
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def full(
    size: Sequence[int], fill_value: Any, *, dtype: Any = None, device=None, requires_grad=False
):
    """A tensor filled with ``fill_value`` (dtype inferred from it, as torch does)."""
    if dtype is None:
        # torch's inference: bool, int (int32 here: no x64), complex (the default complex
        # dtype), numpy scalars by kind, other floats the default dtype.
        dtype = fill_value.dtype if isinstance(fill_value, Tensor) else _number_dtype(fill_value)
    static = (_size((size,), "full"), canonical(dtype))
    check_scalar_fits(fill_value, static[1])
    return _made(_fill, static, (fill_value,), device, requires_grad)


def _fill_reading(_like: Any, value: Any, shape: tuple, dtype: Any) -> Any:
    return jnp.full(shape, value, dtype)


def _device_of_input(input: Any, device: Any) -> Any:
    """torch's ``*_like`` default: ``input``'s device (None: it has none of its own)."""
    return known_device(input) if device is None and isinstance(input, Tensor) else None


def _like(fn: str, input: Any, value: Any, dtype: Any, device: Any, requires_grad: bool):
    like = input if isinstance(input, Tensor) else as_tensor(input)
    static = (tuple(like.shape), canonical(like.dtype if dtype is None else dtype))
    check_scalar_fits(value, static[1])
    if _device_of_input(input, device) is not None:
        # Made on input's device, as torch's: a fill that reads input (without its history)
        # runs where input is, in the program that computes input if it is pending.
        previous = graph.set_grad_enabled_flag(False)
        try:
            out = apply(_fill_reading, static, (input, value))
        finally:
            graph.set_grad_enabled_flag(previous)
        return _finish(out, None, requires_grad)
    return _made(_fill, static, (value,), device, requires_grad)


def zeros_like(input: Any, *, dtype: Any = None, device=None, requires_grad=False, **_) -> Tensor:
    return _like("zeros_like", input, 0, dtype, device, requires_grad)


def ones_like(input: Any, *, dtype: Any = None, device=None, requires_grad=False, **_) -> Tensor:
    return _like("ones_like", input, 1, dtype, device, requires_grad)


def empty_like(input: Any, *, dtype: Any = None, device=None, requires_grad=False, **_) -> Tensor:
    return _like("empty_like", input, 0, dtype, device, requires_grad)


def full_like(input: Any, fill_value: Any, *, dtype=None, device=None, requires_grad=False, **_):
    return _like("full_like", input, fill_value, dtype, device, requires_grad)


def _arange(start: Any, step: Any, n: int, dtype: Any) -> Any:
    return (start + step * jnp.arange(n)).astype(dtype)


def _steps(
    start: Any, step: Any, n: int, dtype: Any, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """``start + step * i`` for ``i < n``, cast to ``dtype``: the values of arange and range."""
    return _made(_arange, (n, canonical(dtype)), (start, step), device, requires_grad)


# torch's names for the dtypes its CPU arange has no kernel for.
_NO_ARANGE_KERNEL = {
    np.dtype(np.bool_): "Bool",
    np.dtype(np.complex64): "ComplexFloat",
    np.dtype(np.complex128): "ComplexDouble",
}


def _to_int64(value: Any, name: str) -> int:
    """torch's ``Scalar.to<int64_t>()``: a float truncated toward zero; out of range raises."""
    if isinstance(value, float | np.floating):
        if not -(2.0**63) <= value < 2.0**63:  # NaN and the infinities fail too
            raise RuntimeError(
                f"value cannot be converted to type int64_t without overflow (arange's {name} "
                f"{value}, for an integer result); pass a floating dtype for this range"
            )
        return math.trunc(value)
    return int(value)


def _wrap(value: int, bits: int) -> int:
    """``value`` as a ``bits``-bit two's-complement integer, as C++'s cast would leave it."""
    half = 1 << (bits - 1)
    return (value + half) % (1 << bits) - half


def _check_range(start: float, end: float, step: float) -> None:
    """torch's ``arange_check_bounds``, on the arguments as doubles."""
    if not (step > 0 or step < 0):
        raise RuntimeError(f"step must be nonzero, got step={step:g}")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start:g} -> {end:g}; pass finite bounds")
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise RuntimeError(
            f"upper bound and lower bound inconsistent with step sign: start={start:g}, "
            f"end={end:g}, step={step:g}; a positive step needs end >= start, a negative one "
            "end <= start"
        )


def _integer_range(start: Any, end: Any, step: Any, long: bool) -> tuple[int, int, int]:
    """``(n, start, step)`` of an integer arange, computed as torch computes it.

    torch casts the arguments to int64 (truncating) before it counts or fills: for int64 all
    three, and the length is ``len(range(start, end, step))`` of the casts; for the narrower
    integer dtypes the length comes from the arguments as doubles, and only ``start`` and
    ``step`` are cast, for the values.
    """
    istart, istep = _to_int64(start, "start"), _to_int64(step, "step")
    if long:
        iend = _to_int64(end, "end")
        if istep == 0:
            raise ValueError(
                f"step must be nonzero: step={step} is 0 as an integer (arange computes in the "
                "result's integer dtype); pass an integer step, or a floating dtype/out"
            )
        sign = 1 if istep > 0 else -1
        # The bounds agree with the step's sign (checked), so floor division is C++'s.
        n = (iend - istart + istep - sign) // istep
    else:
        n = _length(float(start), float(end), float(step))
    return n, istart, istep


def _length(start: float, end: float, step: float) -> int:
    size = (end - start) / step
    if not size <= 2.0**63 - 1:  # torch's check against int64's largest value
        raise RuntimeError(
            f"invalid size, possible overflow? (arange({start:g}, {end:g}, {step:g}) would "
            f"have {size:g} elements)"
        )
    return math.ceil(size)


def arange(
    start: Any,
    end: Any = None,
    step: Any = 1,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    **_: Any,
) -> Tensor:
    """``[start, end)`` with ``step`` (mirrors ``torch.arange``, errors included).

    As torch, an integer result is computed in integers: the arguments are truncated toward
    zero first, so ``arange(0, 2, 0.5, dtype=spx.long)`` (or ``out=`` an integer tensor) raises
    "step must be nonzero", and ``arange(0.5, 3, dtype=spx.long)`` is ``[0, 1, 2]``. int64
    follows torch's int64 rule (the length is that of the truncated range) and so does int32
    while ``jax_enable_x64`` is off, since spx holds torch's int64 as int32 then; the other
    integer dtypes (and int32 under x64) take their length from the arguments as given, as
    torch's do, and wrap around like them.

    Args:
        start: the first value (``end`` when it is the only argument; then ``start`` is 0).
        end: the bound, excluded.
        step: the spacing, nonzero, of the sign of ``end - start``.
        dtype: int32 (torch: int64) when all arguments are integers, else the default float
            dtype.

    Example:
        >>> import spx
        >>> spx.arange(5).tolist(), spx.arange(0, 1, 0.25).tolist()
        ([0, 1, 2, 3, 4], [0.0, 0.25, 0.5, 0.75])
    """
    if end is None:
        start, end = 0, start
    # A tensor argument is a number to torch: an int tensor counts as an int.
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if dtype is None:
        ints = all(isinstance(v, int | np.integer) for v in (start, end, step))
        dtype = jnp.int32 if ints else _default_float()
    dtype = canonical(dtype)
    if dtype in _NO_ARANGE_KERNEL:
        raise NotImplementedError(
            f"\"arange_cpu\" not implemented for '{_NO_ARANGE_KERNEL[dtype]}'; pass an integer "
            "or floating dtype"
        )
    _check_range(float(start), float(end), float(step))
    if jnp.issubdtype(dtype, jnp.integer):
        long = dtype == canonical(np.int64)  # int32 too, while x64 is off
        n, start, step = _integer_range(start, end, step, long)
        if not long:  # torch's values are int64 sums cast down: they wrap modulo the width
            start, step = _wrap(start, 32), _wrap(step, 32)
    else:
        n = _length(float(start), float(end), float(step))
    return _steps(start, step, n, dtype, device, requires_grad)


def _linspace(start: Any, end: Any, steps: int, dtype: Any) -> Any:
    return jnp.linspace(start, end, steps).astype(dtype)


def linspace(start: Any, end: Any, steps: int, *, dtype=None, device=None, requires_grad=False):
    static = (int(steps), _dtype(dtype, _default_float()))
    return _made(_linspace, static, (start, end), device, requires_grad)


def _logspace(start: Any, end: Any, steps: int, base: float, dtype: Any) -> Any:
    return jnp.logspace(start, end, steps, base=base).astype(dtype)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    static = (int(steps), float(base), _dtype(dtype, _default_float()))
    return _made(_logspace, static, (start, end), device, requires_grad)


def _eye(n: int, m: int, dtype: Any) -> Any:
    return jnp.eye(n, m, dtype=dtype)


def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    static = (int(n), int(n if m is None else m), _dtype(dtype, _default_float()))
    return _made(_eye, static, (), device, requires_grad)


def _key(generator: Any) -> Any:
    return spx_random.key_for(generator)


def _float_dtype(dtype: Any, fn: str) -> np.dtype:
    dt = _dtype(dtype, _default_float())
    if not jnp.issubdtype(dt, jnp.floating):
        raise TypeError(f"spx.{fn}: expected a floating dtype, got {dt}")
    return dt


def _normal(key: Any, shape: tuple, dtype: Any) -> Any:
    return jax.random.normal(key, shape, dtype)


def _uniform(key: Any, shape: tuple, dtype: Any) -> Any:
    return jax.random.uniform(key, shape, dtype)


def _randint(key: Any, low: Any, high: Any, shape: tuple, dtype: Any) -> Any:
    return jax.random.randint(key, shape, low, high, jnp.int32).astype(dtype)


def _randperm(key: Any, n: int, dtype: Any) -> Any:
    return jax.random.permutation(key, n).astype(dtype)


def randn(*size: Any, generator=None, dtype=None, device=None, requires_grad=False, **_) -> Tensor:
    """Standard normal samples. Example: ``spx.randn(2, 3)``."""
    static = (_size(size, "randn"), _float_dtype(dtype, "randn"))
    return _made(_normal, static, (_key(generator),), device, requires_grad)


def rand(*size: Any, generator=None, dtype=None, device=None, requires_grad=False, **_) -> Tensor:
    """Uniform samples on [0, 1). Example: ``spx.rand(2, 3)``."""
    static = (_size(size, "rand"), _float_dtype(dtype, "rand"))
    return _made(_uniform, static, (_key(generator),), device, requires_grad)


def _key_for(generator: Any, input: Any, device: Any) -> Any:
    """The next key; on ``input``'s device for a ``*_like`` draw (the draw runs there)."""
    key = _key(generator)
    target = _device_of_input(input, device)
    return key if target is None else jax.device_put(key, target)


def randn_like(
    input: Any, *, generator=None, dtype=None, device=None, requires_grad=False, **_
) -> Tensor:
    static = (tuple(input.shape), _float_dtype(dtype or input.dtype, "randn_like"))
    key = _key_for(generator, input, device)
    return _made(_normal, static, (key,), device, requires_grad)


def rand_like(
    input: Any, *, generator=None, dtype=None, device=None, requires_grad=False, **_
) -> Tensor:
    static = (tuple(input.shape), _float_dtype(dtype or input.dtype, "rand_like"))
    key = _key_for(generator, input, device)
    return _made(_uniform, static, (key,), device, requires_grad)


def randint(
    low: int,
    high: int | None = None,
    size: Sequence[int] | None = None,
    *,
    generator: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Integers on ``[low, high)`` (``randint(high, size)`` form too, as torch)."""
    if size is None:
        if high is None or not isinstance(high, Sequence):
            raise TypeError("spx.randint: give size, e.g. spx.randint(0, 10, (3,))")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError(f"spx.randint: expected low < high, got low={low}, high={high}")
    static = (_size((size,), "randint"), _dtype(dtype, jnp.int32))
    return _made(_randint, static, (_key(generator), low, high), device, requires_grad)


def randint_like(
    input: Any, low: int = 0, high: int | None = None, *, generator=None, dtype=None, device=None
):
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError(f"spx.randint_like: expected low < high, got low={low}, high={high}")
    static = (tuple(input.shape), _dtype(dtype or input.dtype, jnp.int32))
    key = _key_for(generator, input, device)
    return _made(_randint, static, (key, low, high), device, False)


def randperm(n: int, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A random permutation of ``0 .. n-1`` (mirrors ``torch.randperm``)."""
    if int(n) < 0:
        raise RuntimeError(
            f"Trying to create tensor with negative dimension {int(n)}: [{int(n)}] (randperm's n "
            "must be >= 0)"
        )
    static = (int(n), _dtype(dtype, jnp.int32))
    return _made(_randperm, static, (_key(generator),), device, requires_grad)


def scalar_tensor(s: Any, *, dtype: Any = None, device: Any = None, requires_grad=False) -> Tensor:
    """A 0-d tensor holding ``s`` (float32 unless ``dtype`` says otherwise, as torch)."""
    dtype = _dtype(dtype, _default_float())
    return tensor(s, dtype=dtype, device=device, requires_grad=requires_grad)


def _triangle(which: str, row: int, col: int, offset: int, dtype: Any, device: Any) -> Tensor:
    pick = np.tril_indices if which == "tril" else np.triu_indices
    rows, cols = pick(int(row), int(offset), int(col))
    host = np.stack([rows, cols]).astype(_dtype(dtype, jnp.int32))
    return _finish(device_array(host), device, False)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, **_) -> Tensor:
    """``(2, N)`` coordinates of the lower triangle of a ``row x col`` matrix (with the
    ``offset`` diagonal; mirrors ``torch.tril_indices``).

    Example:
        >>> import spx
        >>> spx.tril_indices(2, 2).tolist()
        [[0, 1, 1], [0, 0, 1]]
    """
    return _triangle("tril", row, col, offset, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, **_) -> Tensor:
    """``(2, N)`` coordinates of the upper triangle of a ``row x col`` matrix."""
    return _triangle("triu", row, col, offset, dtype, device)


# numpy's axis=/keepdims= as torch accepts them (torch.sum(x, axis=0)).
numpy_names.accept(globals(), __all__)
