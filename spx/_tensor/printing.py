"""``repr(tensor)`` in torch's style: ``tensor([1., 2.], requires_grad=True)``."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np


def _format_array(arr: np.ndarray, indent: int) -> str:
    kind = arr.dtype.kind
    if kind == "f" or kind == "c" or arr.dtype.name == "bfloat16":
        if kind != "c" and arr.dtype.itemsize < 4:  # float16/bfloat16: analyse in float32
            arr = arr.astype(np.float32)
        finite = arr[np.isfinite(arr)] if arr.size else arr
        as_int = finite.size and np.all(finite == np.round(finite)) and np.abs(finite).max() < 1e8
        big = finite.size and (
            np.abs(finite).max() >= 1e8 or 0 < np.abs(finite[finite != 0]).min(initial=1) < 1e-4
        )

        def fmt(v: Any) -> str:
            if not np.isfinite(v):
                return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
            if big:
                return f"{v:.4e}"
            if as_int:
                return f"{v:.0f}."
            return f"{v:.4f}"

        formatter = {"float_kind": fmt, "complex_kind": lambda v: f"{v:.4f}"}
    else:
        formatter = None
    return np.array2string(
        arr, separator=", ", prefix=" " * indent, formatter=formatter, threshold=1000
    )


def tensor_repr(t: Any) -> str:
    """torch-like text for a Tensor (computes pending values; tracers print their shape)."""
    from spx.nn.parameter import Parameter

    value = t._value()
    extras = []
    if isinstance(value, jax.core.Tracer):
        body = f"<traced {value.aval.str_short()}>"
    else:
        arr = np.asarray(value)
        body = _format_array(arr, len("tensor("))
        if arr.dtype not in (np.float32, np.complex64, np.int32, np.bool_) or arr.size == 0:
            extras.append(f"dtype=spx.{arr.dtype.name}")
        if arr.size == 0 and arr.ndim > 1:
            extras.append(f"size={tuple(arr.shape)}")
    fn = t.grad_fn
    if fn is not None:
        extras.append(f"grad_fn={fn!r}")
    elif t.requires_grad and not isinstance(t, Parameter):
        extras.append("requires_grad=True")
    text = "tensor(" + body + "".join(", " + e for e in extras) + ")"
    if isinstance(t, Parameter):
        return "Parameter containing:\n" + text
    return text
