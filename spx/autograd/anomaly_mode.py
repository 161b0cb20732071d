"""Anomaly detection: ``detect_anomaly`` / ``set_detect_anomaly`` (mirror torch's).

With it on, every eager ``backward()`` checks the gradients it produced and raises a
RuntimeError when one holds NaN, as torch's anomaly mode does (``check_nan=True``). torch
checks each backward function's output and names the function; spx's backward is one
compiled program, so the check is on the gradients it wrote and names the tensor's shape
and dtype. Inside ``spx.compile`` the gradients are traced values: they are not checked.
The check reads the gradients on the host (a sync per backward), as torch's mode is slow too:
use it for debugging.

Example:
    >>> import spx
    >>> x = spx.tensor([0.0], requires_grad=True)
    >>> with spx.autograd.detect_anomaly():  # doctest: +SKIP
    ...     x.sqrt().div(x.sqrt()).sum().backward()
    RuntimeError: anomaly detection: backward() gave a gradient with NaN values ...
"""

from __future__ import annotations

import warnings
from typing import Any

import jax
import numpy as np

from spx._tensor.autograd import register_post_backward_callback

__all__ = [
    "detect_anomaly", "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "set_detect_anomaly",
]  # fmt: skip

_STATE = {"enabled": False, "check_nan": True}
_WARNING = (
    "Anomaly Detection has been enabled. This mode will increase the runtime and should only "
    "be enabled for debugging."
)


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on."""
    return _STATE["enabled"]


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks gradients for NaN."""
    return _STATE["check_nan"]


def _set(enabled: bool, check_nan: bool) -> tuple[bool, bool]:
    previous = (_STATE["enabled"], _STATE["check_nan"])
    _STATE["enabled"], _STATE["check_nan"] = bool(enabled), bool(check_nan)
    return previous


class detect_anomaly:  # torch's class name
    """Context manager turning anomaly detection on inside it.

    Args:
        check_nan: raise when a backward produces a NaN gradient (torch's default True).
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self._previous: tuple[bool, bool] | None = None
        warnings.warn(_WARNING, UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        self._previous = _set(True, self.check_nan)

    def __exit__(self, *exc: Any) -> None:
        _set(*self._previous)


class set_detect_anomaly:  # torch's class name
    """Turn anomaly detection on or off now (``set_detect_anomaly(True)``), or inside a
    ``with`` block (restored after it).

    Args:
        mode: on or off.
        check_nan: raise when a backward produces a NaN gradient.
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._previous = _set(mode, check_nan)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        _set(*self._previous)


def _check_gradients(leaves: list) -> None:
    if not (_STATE["enabled"] and _STATE["check_nan"]):
        return
    for leaf in leaves:
        grad = leaf._grad
        if grad is None:
            continue
        value = grad._data
        if isinstance(value, jax.core.Tracer) or not np.issubdtype(value.dtype, np.inexact):
            continue
        if bool(np.isnan(np.asarray(value)).any()):
            raise RuntimeError(
                f"anomaly detection: backward() gave a gradient with NaN values (a tensor of "
                f"shape {tuple(leaf.shape)}, dtype {leaf.dtype}). torch names the backward "
                "function that produced it; find it by checking the intermediate results of "
                "the forward (x.register_hook(print), or spx.isnan(t).any())."
            )


# Held by the module (the engine keeps callbacks weakly).
_HANDLE = register_post_backward_callback(_check_gradients)
