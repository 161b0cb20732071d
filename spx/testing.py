"""``spx.testing``: torch.testing's ``assert_close`` and ``make_tensor``.

:func:`assert_close` follows ``torch.testing.assert_close`` rule for rule: the default
tolerances per dtype, the attribute checks (shape, device, dtype, stride), the recursion through
sequences and mappings, which input types may be compared with which, and the text of every
failure (``Tensor-likes are not close!``, the mismatched element count, the greatest absolute
and relative differences with their indices, ``The failure occurred for item [1]``), so a test
ported from torch fails with the same message. Inputs are spx Tensors, ``jax.Array``s, numpy
arrays, Python and numpy numbers, and lists, tuples and dicts of them; values are compared on
the host with numpy, in the inputs' dtype as torch compares them.

Example:
    >>> import spx
    >>> spx.testing.assert_close(spx.tensor([1.0, 2.0]), spx.tensor([1.0, 2.0 + 1e-7]))
    >>> spx.testing.assert_close({"w": spx.ones(2)}, {"w": spx.ones(2)})
"""

from __future__ import annotations

import cmath
import collections.abc
import contextlib
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["assert_close", "make_tensor"]

# torch's table (torch/testing/_comparison.py): {dtype name: (rtol, atol)}; others compare
# exactly. float64/complex128 apply to spx tensors only with jax_enable_x64, and to numpy arrays.
_PRECISIONS = {
    "float16": (0.001, 1e-5),
    "bfloat16": (0.016, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}
# A Python number compares as torch's tensor of its type would.
_NUMBER_DTYPES = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}


class _Failure(Exception):
    """A failed check: the exception type to raise, its message and the item it concerns."""

    def __init__(self, kind: type[Exception], msg: str, item: tuple[Any, ...] = ()) -> None:
        super().__init__(msg)
        self.kind, self.msg, self.item = kind, msg, item

    def to_error(self, msg: str | Callable[[str], str] | None = None) -> Exception:
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.msg
        if self.item:
            text += f"\n\nThe failure occurred for item {''.join(str([i]) for i in self.item)}"
        return self.kind(msg(text) if callable(msg) else text)


class _Unsupported(Exception):
    """This pair type does not handle these inputs: try the next one."""


def _tolerances(
    *dtypes: str, rtol: float | None, atol: float | None, item: tuple[Any, ...]
) -> tuple[float, float]:
    if (rtol is None) != (atol is None):
        raise _Failure(
            ValueError,
            "Both 'rtol' and 'atol' must be either specified or omitted, "
            f"but got no {'rtol' if rtol is None else 'atol'}.",
            item,
        )
    if rtol is not None and atol is not None:
        return rtol, atol
    rtols, atols = zip(*[_PRECISIONS.get(d, (0.0, 0.0)) for d in dtypes], strict=True)
    return max(rtols), max(atols)


def _mismatch_msg(
    identifier: str,
    extra: str,
    abs_diff: Any,
    abs_idx: tuple[int, ...] | None,
    rel_diff: Any,
    rel_idx: tuple[int, ...] | None,
    rtol: float,
    atol: float,
) -> str:
    equality = rtol == 0 and atol == 0

    def line(kind: str, diff: Any, idx: tuple[int, ...] | None, tol: float) -> str:
        text = (
            f"{kind.title()} difference: {diff}"
            if idx is None
            else (f"Greatest {kind} difference: {diff} at index {idx}")
        )
        return text + ("" if equality else f" (up to {tol} allowed)") + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n{extra.strip()}\n"
    msg += line("absolute", abs_diff, abs_idx, atol) + line("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_mismatch_msg(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    extra = f"Expected {expected} but got {actual}."
    return _mismatch_msg("Scalars", extra, abs_diff, None, rel_diff, None, rtol, atol)


# -- pairs of inputs: each type takes the inputs it understands (torch's Pair classes) ---------


class _Pair:
    def __init__(self, actual: Any, expected: Any, item: tuple[Any, ...]) -> None:
        self.actual, self.expected, self.item = actual, expected, item

    def fail(self, msg: str, kind: type[Exception] = AssertionError) -> NoReturn:
        raise _Failure(kind, msg, self.item)

    def compare(self) -> None:
        raise NotImplementedError


class _NonePair(_Pair):
    def __init__(self, actual: Any, expected: Any, item: tuple[Any, ...], **_: Any) -> None:
        if not (actual is None or expected is None):
            raise _Unsupported
        super().__init__(actual, expected, item)

    def compare(self) -> None:
        if not (self.actual is None and self.expected is None):
            self.fail(f"None mismatch: {self.actual} is not {self.expected}")


class _BooleanPair(_Pair):
    def __init__(self, actual: Any, expected: Any, item: tuple[Any, ...], **_: Any) -> None:
        if not all(isinstance(x, bool | np.bool_) for x in (actual, expected)):
            raise _Unsupported
        super().__init__(bool(actual), bool(expected), item)

    def compare(self) -> None:
        if self.actual is not self.expected:
            self.fail(f"Booleans mismatch: {self.actual} is not {self.expected}")


class _NumberPair(_Pair):
    def __init__(
        self,
        actual: Any,
        expected: Any,
        item: tuple[Any, ...],
        *,
        rtol: float | None,
        atol: float | None,
        equal_nan: bool,
        check_dtype: bool,
        **_: Any,
    ) -> None:
        numbers = (int, float, complex, np.number)
        if not all(isinstance(x, numbers) for x in (actual, expected)):
            raise _Unsupported
        actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
        super().__init__(actual, expected, item)
        dtypes = [_NUMBER_DTYPES.get(type(x), "int64") for x in (actual, expected)]
        self.rtol, self.atol = _tolerances(*dtypes, rtol=rtol, atol=atol, item=item)
        self.equal_nan, self.check_dtype = equal_nan, check_dtype

    def compare(self) -> None:
        actual, expected = self.actual, self.expected
        if self.check_dtype and type(actual) is not type(expected):
            self.fail(f"The (d)types do not match: {type(actual)} != {type(expected)}.")
        if actual == expected:
            return
        if self.equal_nan and cmath.isnan(actual) and cmath.isnan(expected):
            return
        abs_diff = abs(actual - expected)
        if cmath.isfinite(abs_diff) and abs_diff <= self.atol + self.rtol * abs(expected):
            return
        self.fail(_scalar_mismatch_msg(actual, expected, self.rtol, self.atol))


def _is_numeric(dtype: np.dtype) -> bool:
    return dtype.kind in "biufc" or dtype.name == "bfloat16" or dtype.name.startswith("float8")


def _is_inexact(dtype: np.dtype) -> bool:
    return dtype.kind in "fc" or dtype.name == "bfloat16" or dtype.name.startswith("float8")


class _TensorLike:
    """An input as the host values and the attributes torch checks."""

    def __init__(self, x: Any) -> None:
        from spx._tensor.tensor import Tensor

        if isinstance(x, Tensor):
            self.values = x.numpy(force=True)
            self.device: Any = x.device
            self.stride = tuple(x.stride())
        else:
            if isinstance(x, jax.Array):
                devices = x.devices()
                self.device = next(iter(devices)) if len(devices) == 1 else devices
            else:
                self.device = "cpu"  # numpy arrays and numbers live in host memory
            try:
                self.values = np.asarray(x)
            except Exception:
                raise _Unsupported from None
            self.stride = tuple(s // max(self.values.itemsize, 1) for s in self.values.strides)
        if not _is_numeric(self.values.dtype):
            raise _Unsupported  # strings, objects: not tensor-likes (torch.as_tensor fails too)
        self.dtype = self.values.dtype
        self.shape = self.values.shape


def _dtype_text(dtype: np.dtype) -> str:
    return f"spx.{dtype.name}"


def _promoted(a: np.dtype, b: np.dtype) -> np.dtype:
    # torch compares uint16/32/64 as int64 (promote_types refuses them with signed types).
    wide = {"uint16", "uint32", "uint64"}
    a, b = (np.dtype(np.int64) if d.name in wide else d for d in (a, b))
    return np.dtype(jnp.promote_types(a, b))


def _isclose(a: np.ndarray, e: np.ndarray, rtol: float, atol: float, equal_nan: bool) -> np.ndarray:
    """torch.isclose on the host: the same arithmetic, in the same dtypes."""
    with np.errstate(all="ignore"):
        close = a == e
        if equal_nan and _is_inexact(a.dtype):
            close |= np.isnan(a) & np.isnan(e)
        if rtol == 0 and atol == 0:
            return close
        if _is_inexact(a.dtype):
            allowed, actual = atol + np.abs(rtol * e), np.abs(a - e)
        else:
            # torch: the tolerance of integer and bool tensors is in the default dtype, and the
            # (exact) integer difference is compared in it.
            from spx.ops.types import get_default_dtype

            default = get_default_dtype()
            allowed = atol + np.abs(rtol * e.astype(default))
            actual = np.abs(a.astype(np.int64) - e.astype(np.int64)).astype(default)
        return close | (np.isfinite(actual) & (actual <= allowed))


def _tensor_mismatch_msg(
    a: np.ndarray, e: np.ndarray, matches: np.ndarray, rtol: float, atol: float
) -> str:
    def index(flat: int) -> tuple[int, ...]:
        return tuple(int(i) for i in np.unravel_index(flat, matches.shape))

    size = matches.size
    total = size - int(matches.sum())
    extra = f"Mismatched elements: {total} / {size} ({total / size:.1%})"
    if _is_inexact(a.dtype) and a.dtype.itemsize == 1:  # float8: compared bit for bit
        first = index(int(np.flatnonzero(~matches)[0]))
        msg = f"Tensor-likes are not 'equal'!\n\n{extra}\n"
        return (msg + f"The first mismatched element is at index {first}.\n").strip()
    a, e, hits = a.ravel(), e.ravel(), matches.ravel()
    if not _is_inexact(a.dtype):
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[hits] = 0
        i = int(np.argmax(abs_diff))  # the first greatest, or the first NaN, as torch.max
        greatest = abs_diff[i].item()
        denominator = np.abs(e)
        if not _is_inexact(a.dtype):
            # int64 / int64 is a division in the default dtype in torch.
            from spx.ops.types import get_default_dtype

            abs_diff, denominator = (x.astype(get_default_dtype()) for x in (abs_diff, denominator))
        rel_diff = abs_diff / denominator
        rel_diff[hits] = 0
        j = int(np.argmax(rel_diff))
    return _mismatch_msg(
        "Tensor-likes", extra, greatest, index(i), rel_diff[j].item(), index(j),
        rtol, atol,
    )  # fmt: skip


class _TensorLikePair(_Pair):
    def __init__(
        self,
        actual: Any,
        expected: Any,
        item: tuple[Any, ...],
        *,
        allow_subclasses: bool,
        rtol: float | None,
        atol: float | None,
        equal_nan: bool,
        check_device: bool,
        check_dtype: bool,
        check_stride: bool,
        **_: Any,
    ) -> None:
        related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
        if not related or (not allow_subclasses and type(actual) is not type(expected)):
            raise _Unsupported
        actual, expected = _TensorLike(actual), _TensorLike(expected)
        super().__init__(actual, expected, item)
        names = (actual.dtype.name, expected.dtype.name)
        self.rtol, self.atol = _tolerances(*names, rtol=rtol, atol=atol, item=item)
        self.equal_nan = equal_nan
        self.check_device, self.check_dtype, self.check_stride = (
            check_device, check_dtype, check_stride,
        )  # fmt: skip

    def _mismatch(self, name: str, actual: Any, expected: Any) -> NoReturn:
        self.fail(f"The values for attribute '{name}' do not match: {actual} != {expected}.")

    def compare(self) -> None:
        from spx._tensor._dims import Size

        a, e = self.actual, self.expected
        if a.shape != e.shape:
            self._mismatch("shape", Size(a.shape), Size(e.shape))
        if self.check_stride and a.stride != e.stride:
            self._mismatch("stride()", a.stride, e.stride)
        if self.check_device and a.device != e.device:
            self._mismatch("device", a.device, e.device)
        if self.check_dtype and a.dtype != e.dtype:
            self._mismatch("dtype", _dtype_text(a.dtype), _dtype_text(e.dtype))
        actual, expected = a.values, e.values
        if actual.dtype != expected.dtype:
            common = _promoted(actual.dtype, expected.dtype)
            actual, expected = actual.astype(common), expected.astype(common)
        rtol, atol = self.rtol, self.atol
        if _is_inexact(actual.dtype) and actual.dtype.itemsize == 1 and (rtol or atol):
            self.fail(
                f"Rtol={rtol} and atol={atol} are not supported for bitwise comparison of low "
                "dimensional floats. Please use rtol=0.0 and atol=0.0."
            )
        matches = _isclose(actual, expected, rtol, atol, self.equal_nan)
        if np.all(matches):
            return
        if actual.shape == ():
            self.fail(_scalar_mismatch_msg(actual.item(), expected.item(), rtol, atol))
        self.fail(_tensor_mismatch_msg(actual, expected, matches, rtol, atol))


_PAIR_TYPES: tuple[type[_Pair], ...] = (_NonePair, _BooleanPair, _NumberPair, _TensorLikePair)


def _pairs(actual: Any, expected: Any, item: tuple[Any, ...], options: dict) -> list[_Pair]:
    """The pairs to compare, recursing through sequences and mappings as torch does."""
    sequence = collections.abc.Sequence
    if (
        isinstance(actual, sequence)
        and not isinstance(actual, str)
        and isinstance(expected, sequence)
        and not isinstance(expected, str)
    ):
        if len(actual) != len(expected):
            raise _Failure(
                AssertionError,
                f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                item,
            )
        return [
            p
            for i in range(len(actual))
            for p in _pairs(actual[i], expected[i], (*item, i), options)
        ]
    mapping = collections.abc.Mapping
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise _Failure(
                AssertionError,
                "The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {sorted(expected_keys - actual_keys)}\n"
                f"Additional keys in the actual mapping: {sorted(actual_keys - expected_keys)}",
                item,
            )
        keys: Any = actual_keys
        with contextlib.suppress(Exception):  # deterministic order where keys sort
            keys = sorted(keys)
        return [p for k in keys for p in _pairs(actual[k], expected[k], (*item, k), options)]
    for pair_type in _PAIR_TYPES:
        try:
            return [pair_type(actual, expected, item, **options)]
        except _Unsupported:
            continue
    raise _Failure(
        TypeError,
        f"No comparison pair was able to handle inputs of type {type(actual)} and "
        f"{type(expected)}.",
        item,
    )


def assert_close(
    actual: Any,
    expected: Any,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg: str | Callable[[str], str] | None = None,
) -> None:
    r"""Assert that ``actual`` and ``expected`` are close (mirrors
    ``torch.testing.assert_close``).

    Values are close when :math:`|actual - expected| \le atol + rtol \cdot |expected|`;
    infinities only equal themselves and NaNs match only with ``equal_nan=True``. Defaults by
    dtype (the loosest of the two inputs'): float16 ``(1e-3, 1e-5)``, bfloat16
    ``(1.6e-2, 1e-5)``, float32 and complex64 ``(1.3e-6, 1e-5)``, float64 and complex128
    ``(1e-7, 1e-7)``, every other dtype exact.

    Args:
        actual: spx Tensor, ``jax.Array``, numpy array, number, or a sequence/mapping of them.
        expected: the reference, of a type related to ``actual``'s (a Tensor and a numpy array
            are not related, as a torch tensor and a numpy array are not).
        allow_subclasses: compare a subclass with its base (``Parameter`` with ``Tensor``).
        rtol: relative tolerance; give ``atol`` with it.
        atol: absolute tolerance; give ``rtol`` with it.
        equal_nan: NaNs in the same places count as equal.
        check_device: require the same device (else compare on the host).
        check_dtype: require the same dtype (else compare in the promoted dtype).
        check_layout: accepted for torch's signature (spx tensors are all strided).
        check_stride: require the same strides.
        msg: replaces the message, or a function of the generated message returning it.

    Raises:
        AssertionError: values, shapes, devices, dtypes or strides differ, or sequences or
            mappings differ in length or keys (torch's messages).
        TypeError: inputs of unrelated types, or not tensor-like.
        ValueError: only one of ``rtol`` and ``atol`` given.

    Example:
        >>> import spx
        >>> try:
        ...     spx.testing.assert_close(spx.tensor([1.0, 2.0]), spx.tensor([1.0, 3.0]))
        ... except AssertionError as e:
        ...     print(e)
        Tensor-likes are not close!
        <BLANKLINE>
        Mismatched elements: 1 / 2 (50.0%)
        Greatest absolute difference: 1.0 at index (1,) (up to 1e-05 allowed)
        Greatest relative difference: 0.3333333432674408 at index (1,) (up to 1.3e-06 allowed)
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this function's
    options = {
        "allow_subclasses": allow_subclasses, "rtol": rtol, "atol": atol, "equal_nan": equal_nan,
        "check_device": check_device, "check_dtype": check_dtype, "check_stride": check_stride,
    }  # fmt: skip
    try:
        pairs = _pairs(actual, expected, (), options)
    except _Failure as failure:
        # torch reports a failure to pair the inputs with its own text, even when msg is given.
        raise failure.to_error() from None
    for pair in pairs:
        try:
            pair.compare()
        except _Failure as failure:
            raise failure.to_error(msg) from None


# -- make_tensor ------------------------------------------------------------------------------


def _bounds(
    low: float | None,
    high: float | None,
    dtype: np.dtype,
    lowest: float,
    highest: float,
    default: tuple[float, float],
) -> tuple[float, float]:
    low = default[0] if low is None else low
    high = default[1] if high is None else high
    inexact = _is_inexact(dtype)
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and inexact:
        warnings.warn(
            "Passing `low==high` to `spx.testing.make_tensor` for floating or complex types is "
            "deprecated (as in torch). Use `spx.full(...)` instead.",
            FutureWarning,
            stacklevel=3,
        )
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(
            f"The value interval specified by `low` and `high` is [{low}, {high}), "
            f"but {_dtype_text(dtype)} only supports [{lowest}, {highest})"
        )
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if not inexact:
        # ceil both: no value below low, and randint's high is exclusive already.
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(
    *shape: int | Sequence[int],
    dtype: Any,
    device: Any,
    low: float | None = None,
    high: float | None = None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
    memory_format: Any = None,
) -> Any:
    """A tensor of values drawn uniformly from ``[low, high)`` (mirrors
    ``torch.testing.make_tensor``; the draws come from spx's generator, not torch's).

    Default ranges: bool ``[0, 2)``, unsigned ``[0, 10)``, signed integers ``[-9, 10)``,
    floating and complex ``[-9, 9)``; bounds outside the dtype's range are clamped to it.

    Args:
        *shape: the sizes, or one sequence of them.
        dtype: the dtype (required, as in torch).
        device: where to create it (required, as in torch; ``"cpu"``, ``"cuda"``, a device).
        low: inclusive lower bound.
        high: exclusive upper bound.
        requires_grad: make a leaf that requires grad (floating and complex dtypes only).
        noncontiguous: return a strided view (every other element of a twice-as-wide draw).
        exclude_zero: replace zeros by 1 (bool, integers) or the dtype's ``tiny`` (floats).
        memory_format: accepted for torch's signature; spx has no memory formats, so only the
            check that it is not combined with ``noncontiguous`` remains.

    Raises:
        ValueError: ``requires_grad`` for a bool/integer dtype, ``low >= high``, a NaN bound,
            bounds outside the dtype's range, ``noncontiguous`` with ``memory_format``.
        TypeError: a dtype make_tensor does not support.

    Example:
        >>> import spx
        >>> x = spx.testing.make_tensor(2, 3, dtype=spx.float32, device="cpu", low=-1, high=1)
        >>> x.shape, bool(((x >= -1) & (x < 1)).all())
        (spx.Size([2, 3]), True)
    """
    import spx
    from spx._tensor.methods._dtypes import canonical

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = tuple(shape[0])
    size = tuple(int(s) for s in shape)  # type: ignore[arg-type]
    if noncontiguous and memory_format is not None:
        raise ValueError(
            "The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
            f"noncontiguous={noncontiguous} and memory_format={memory_format}"
        )
    dt = canonical(dtype)
    integral = dt.kind in "biu"
    if requires_grad and integral:
        raise ValueError(
            "`requires_grad=True` is not supported for boolean and integral dtypes, but got "
            f"dtype={_dtype_text(dt)}"
        )
    noncontiguous = noncontiguous and math.prod(size) > 1
    if noncontiguous:
        size = (*size[:-1], 2 * size[-1])  # every other element of a wider draw is a view
    if dt.kind == "b":
        lo, hi = _bounds(low, high, dt, 0, 2, (0, 2))
        result = spx.randint(lo, hi, size, device=device).to(dt)
    elif integral:
        info = np.iinfo(dt)
        # torch's exclusive top is max + 1 (max for int64). spx.randint draws int32, whose
        # bound can't be 2**31: 32- and 64-bit ranges stop one short of torch's.
        top = info.max + 1 if info.bits < 32 else min(info.max, 2**31 - 1)
        lo, hi = _bounds(low, high, dt, max(info.min, -(2**31)), top, (-9, 10))
        result = spx.randint(lo, hi, size, dtype=dt, device=device)
    elif _is_inexact(dt):
        info = jnp.finfo(dt)
        lo, hi = _bounds(low, high, dt, float(info.min), float(info.max), (-9, 9))
        real = np.dtype(info.dtype)

        # Drawn in float32 at least: float16's range is too narrow for high - low.
        draw = np.dtype(np.float32) if real.itemsize < 4 else real
        # A range wider than the dtype's largest value is drawn at half scale, as torch does.
        half = hi - lo >= float(jnp.finfo(draw).max)

        # torch draws as many random bits as the dtype has digits, so that low + x * range
        # rounds below high even in bfloat16.
        steps = float(2 ** (jnp.finfo(real).nmant + 1))

        def uniform() -> Any:
            x = (spx.rand(size, dtype=draw, device=device) * steps).floor() / steps
            x = x * (hi / 2 - lo / 2) + lo / 2 if half else x * (hi - lo) + lo
            return (x * 2 if half else x).clamp(lo, hi).to(real)

        result = spx.complex(uniform(), uniform()) if dt.kind == "c" else uniform()
        result = result.to(dt)
    else:
        raise TypeError(
            f"The requested dtype '{_dtype_text(dt)}' is not supported by "
            "spx.testing.make_tensor()."
        )
    if noncontiguous:
        result = result[..., 1::2]  # offset by one to also catch offset bugs, as torch
    if exclude_zero:
        replacement = 1 if integral else float(jnp.finfo(dt).tiny)
        result[result == 0] = replacement  # in place, so a noncontiguous view stays one
    if requires_grad:
        result.requires_grad_(True)
    return result
