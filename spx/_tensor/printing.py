"""``repr(tensor)`` as torch prints it, and ``spx.set_printoptions``.

The text follows torch's ``torch/_tensor_str.py`` step by step, so a value prints as it does in
torch: one width for every element (``tensor([ 1.0000, -2.5000])``), scientific notation when
the magnitudes span more than 1000x or leave [1e-4, 1e8), ``1.`` for integral floats, rows
wrapped at ``linewidth`` and tensors of more than ``threshold`` elements summarised with
``...`` after ``edgeitems`` values per dimension. Only the dtype reads ``dtype=spx.float16``
where torch writes ``dtype=torch.float16``.

The options are process-wide, as torch's are. :func:`get_printoptions` and :func:`printoptions`
mirror torch's ``torch._tensor_str`` helpers (torch has no top-level ``get_printoptions``).

Example:
    >>> import spx
    >>> spx.tensor([1.0, -2.5])
    tensor([ 1.0000, -2.5000])
    >>> spx.set_printoptions(precision=2)
    >>> spx.tensor([1.12345])
    tensor([1.12])
    >>> spx.set_printoptions(profile="default")
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import jax
import numpy as np

from spx import _validate
from spx._tensor import checks

__all__ = ["get_printoptions", "printoptions", "set_printoptions", "tensor_repr"]


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set how tensors print (mirrors ``torch.set_printoptions``; process-wide).

    Options left as None keep their value, except ``sci_mode``, which every call sets (None
    lets each tensor choose), as in torch. ``profile`` is applied first, then the others.

    Args:
        precision: digits after the decimal point (default 4).
        threshold: more elements than this are summarised with ``...`` (default 1000).
        edgeitems: values kept at each end of a summarised dimension (default 3).
        linewidth: characters per line before wrapping (default 80).
        profile: ``"default"``, ``"short"`` (precision 2, edgeitems 2) or ``"full"`` (never
            summarise).
        sci_mode: True for scientific notation always, False never, None to choose per tensor.

    Raises:
        ValueError: an unknown ``profile`` or a negative count (torch ignores an unknown
            profile silently; a typo should not go unseen).
        TypeError: a count that is not an int, or a ``sci_mode`` that is not a bool.

    Example:
        >>> import spx
        >>> spx.set_printoptions(threshold=5)
        >>> spx.arange(10)
        tensor([0, 1, 2,  ..., 7, 8, 9])
        >>> spx.set_printoptions(profile="default")
    """
    where = "set_printoptions"
    if profile is not None and profile not in _PROFILES:
        raise ValueError(f"{where}: profile must be one of {sorted(_PROFILES)}, got {profile!r}")
    counts = {"precision": precision, "edgeitems": edgeitems, "linewidth": linewidth}
    checked = {k: _validate.as_optional_int(v, k, where, minimum=0) for k, v in counts.items()}
    if threshold is not None:
        threshold = _validate.as_float(threshold, "threshold", where, minimum=0)
    if sci_mode is not None and not isinstance(sci_mode, bool | np.bool_):
        raise TypeError(f"{where}: sci_mode must be a bool or None, got {sci_mode!r:.40}")
    if profile is not None:
        for name, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, name, value)
    for name, value in {**checked, "threshold": threshold}.items():
        if value is not None:
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = None if sci_mode is None else bool(sci_mode)


def get_printoptions() -> dict[str, Any]:
    """The current options, as keyword arguments :func:`set_printoptions` takes back
    (mirrors ``torch._tensor_str.get_printoptions``).

    Example:
        >>> from spx._tensor.printing import get_printoptions
        >>> get_printoptions()["precision"]
        4
    """
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs: Any) -> Iterator[None]:
    """Print with other options inside a ``with`` block (torch's ``_tensor_str.printoptions``).

    Example:
        >>> import spx
        >>> from spx._tensor.printing import printoptions
        >>> with printoptions(precision=1):
        ...     print(spx.tensor([0.25]))
        tensor([0.2])
    """
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


# -- the text of the values (torch's _Formatter, _vector_str, _tensor_str_with_formatter) -----


def _is_float(arr: np.ndarray) -> bool:
    return arr.dtype.kind == "f" or arr.dtype.name == "bfloat16"


class _Formatter:
    """One element's text: a common width, integral/fixed/scientific as torch decides."""

    def __init__(self, arr: np.ndarray) -> None:
        self.floating = _is_float(arr)
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = arr.reshape(-1)
        if not self.floating:
            for value in flat.tolist():
                self.max_width = max(self.max_width, len(f"{value}"))
            return
        # Exact values as doubles (float16/bfloat16/float32 widen without rounding).
        values = flat.astype(np.float64)
        values = values[np.isfinite(values) & (values != 0)]
        if values.size == 0:
            return
        magnitudes = np.abs(values)
        lo, hi = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(values == np.ceil(values)))
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        precision = PRINT_OPTS.precision
        for value in values.tolist():
            if self.sci_mode:
                width = len(f"{value:.{precision}e}")
            elif self.int_mode:
                width = len(f"{value:.0f}") + 1  # the "." after an integral float
            else:
                width = len(f"{value:.{precision}f}")
            self.max_width = max(self.max_width, width)

    def format(self, value: Any) -> str:
        if self.floating:
            if self.sci_mode:
                text = f"{value:{self.max_width}.{PRINT_OPTS.precision}e}"
            elif self.int_mode:
                text = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    text += "."
            else:
                text = f"{value:.{PRINT_OPTS.precision}f}"
        else:
            text = f"{value}"
        return (self.max_width - len(text)) * " " + text


def _python(value: Any) -> Any:
    """A numpy element as the Python number torch's ``tolist()`` gives (exact doubles)."""
    if isinstance(value, np.ndarray):
        value = value[()]
    if isinstance(value, np.complexfloating):
        return complex(value)
    if _is_float(np.asarray(value)):
        return float(value)
    return value.item()


def _element(value: Any, real: _Formatter, imag: _Formatter | None) -> str:
    if imag is None:
        return real.format(value)
    real_text = real.format(value.real)
    imag_text = (imag.format(value.imag) + "j").lstrip()
    # A sign of its own (negative numbers, -0.0, +0.0) needs no "+".
    if imag_text[0] in "+-":
        return real_text + imag_text
    return real_text + "+" + imag_text


def _vector_str(
    arr: np.ndarray, indent: int, summarize: bool, real: _Formatter, imag: _Formatter | None
) -> str:
    element_length = real.max_width + 2
    if imag is not None:
        element_length += imag.max_width + 1
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    edge = PRINT_OPTS.edgeitems

    def texts(part: np.ndarray) -> list[str]:
        return [_element(_python(v), real, imag) for v in part]

    if summarize and not edge:
        data = ["..."]
    elif summarize and arr.shape[0] > 2 * edge:
        data = [*texts(arr[:edge]), " ...", *texts(arr[-edge:])]
    else:
        data = texts(arr)
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _with_formatter(
    arr: np.ndarray, indent: int, summarize: bool, real: _Formatter, imag: _Formatter | None
) -> str:
    if arr.ndim == 0:
        return _element(_python(arr), real, imag)
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, real, imag)
    edge = PRINT_OPTS.edgeitems
    if summarize and arr.shape[0] > 2 * edge:
        head = [_with_formatter(arr[i], indent + 1, summarize, real, imag) for i in range(edge)]
        tail = [
            _with_formatter(arr[i], indent + 1, summarize, real, imag)
            for i in range(len(arr) - edge, len(arr))
        ]
        slices = [*head, "...", *tail]
    else:
        slices = [_with_formatter(a, indent + 1, summarize, real, imag) for a in arr]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _summarized(arr: np.ndarray) -> np.ndarray:
    """The values a summarised tensor shows, for its formatter (torch's get_summarized_data)."""
    edge = PRINT_OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1:
        return np.concatenate([arr[:edge], arr[-edge:]]) if arr.shape[0] > 2 * edge else arr
    if not edge:
        return np.zeros((0,) * arr.ndim, arr.dtype)
    rows = list(arr[:edge]) + list(arr[-edge:]) if arr.shape[0] > 2 * edge else list(arr)
    return np.stack([_summarized(r) for r in rows])


def _tensor_str(arr: np.ndarray, indent: int) -> str:
    if arr.size == 0:
        return "[]"
    summarize = arr.size > PRINT_OPTS.threshold
    shown = _summarized(arr) if summarize else arr
    if arr.dtype.kind == "c":
        real, imag = _Formatter(shown.real), _Formatter(shown.imag)
        return _with_formatter(arr, indent, summarize, real, imag)
    return _with_formatter(arr, indent, summarize, _Formatter(shown), None)


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    parts = [text]
    # torch's arithmetic, "+ 1" included, so the suffixes wrap where torch's do.
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _has_default_dtype(dtype: np.dtype) -> bool:
    from spx._tensor.methods._dtypes import canonical
    from spx.ops.types import default_complex_dtype, get_default_dtype

    # spx's default integer is torch's int64 as spx holds it (int32 without jax_enable_x64).
    defaults = (get_default_dtype(), default_complex_dtype(), canonical(np.int64), np.bool_)
    return any(dtype == d for d in defaults)


def _single_device(value: Any) -> Any:
    """The one device holding ``value``, or None (traced, or sharded over several)."""
    if isinstance(value, jax.core.Tracer) or not isinstance(value, jax.Array):
        return None
    devices = value.devices()
    return next(iter(devices)) if len(devices) == 1 else None


def tensor_repr(t: Any) -> str:
    """torch's text for a Tensor (computes pending values; a traced value prints its type).

    Example:
        >>> import spx
        >>> tensor_repr(spx.tensor([[1.0, 2.0], [3.0, -4.0]]))
        'tensor([[ 1.,  2.],\\n        [ 3., -4.]])'
    """
    from spx.nn.parameter import Parameter
    from spx.ops.types import get_default_dtype

    prefix = "tensor("
    indent = len(prefix)
    value = t._value()
    checks.run_ready(block=True)  # printing reads the values on the host
    suffixes = []
    device = _single_device(value)
    if device is not None and device.platform != "cpu":
        suffixes.append(f"device='{device}'")  # torch prints the device unless it is the CPU
    if isinstance(value, jax.core.Tracer):
        body = f"<traced {value.aval.str_short()}>"
    else:
        arr = np.asarray(value)
        if arr.size == 0:
            if arr.ndim != 1:
                suffixes.append(f"size={tuple(arr.shape)}")
            if arr.dtype != get_default_dtype():
                suffixes.append(f"dtype=spx.{arr.dtype.name}")
            body = "[]"
        else:
            if not PRINT_OPTS.edgeitems:
                suffixes.append(f"size={tuple(arr.shape)}")
            if not _has_default_dtype(arr.dtype):
                suffixes.append(f"dtype=spx.{arr.dtype.name}")
            body = _tensor_str(arr, indent)
    fn = t.grad_fn
    if fn is not None:
        suffixes.append(f"grad_fn={fn!r}")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    text = _add_suffixes(prefix + body, suffixes, indent)
    if isinstance(t, Parameter):
        return "Parameter containing:\n" + text  # torch's Parameter.__repr__
    return text
