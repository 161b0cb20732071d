"""``spx.accelerator``: torch's device-generic ``torch.accelerator`` calls, answered by JAX's GPUs.

pytorch/examples pick their device with::

    use_accel = torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")

Here the accelerator is JAX's GPU backend (what ``spx.cuda`` answers for): without a GPU,
``is_available()`` is False, ``current_accelerator()`` is None and the calls that need a device
raise torch's ``RuntimeError``, as torch's CPU build does.

Example:
    >>> import spx
    >>> acc = spx.accelerator.current_accelerator(check_available=True)
    >>> device = acc if acc is not None else spx.device("cpu")
    >>> spx.zeros(2, device=device).shape
    spx.Size([2])
"""

from __future__ import annotations

from typing import Any

import jax

from spx import cuda as _cuda
from spx._device import device as _resolve

__all__ = [
    "current_accelerator",
    "current_device_idx",
    "current_device_index",
    "device_count",
    "device_index",
    "empty_cache",
    "is_available",
    "max_memory_allocated",
    "memory_allocated",
    "set_device_idx",
    "set_device_index",
    "synchronize",
]  # fmt: skip

_NONE = "Cannot access accelerator device when none is available."  # torch's message


def _require() -> None:
    if not _cuda.is_available():
        raise RuntimeError(_NONE)


def is_available() -> bool:
    """Whether JAX has a local GPU (``torch.accelerator.is_available``)."""
    return _cuda.is_available()


def current_accelerator(check_available: bool = False) -> jax.Device | None:
    """The GPU ``"cuda"`` means in this thread, or None without one (``current_accelerator``).

    Args:
        check_available: accepted for torch's signature; JAX's GPU backend is there at run time
            exactly when it has a device, so the answer is the same either way.
    """
    if not _cuda.is_available():
        return None
    return _resolve("cuda")


def device_count() -> int:
    """The number of local GPUs (``torch.accelerator.device_count``); 0 without one."""
    return _cuda.device_count()


def current_device_index() -> int:
    """The index ``set_device_index`` chose in this thread, 0 by default.

    Raises:
        RuntimeError: no GPU (torch's message).
    """
    _require()
    return _cuda.current_device()


def set_device_index(device: Any, /) -> None:
    """Make ``device`` (an index, ``"cuda:N"`` or a device) the current GPU of this thread.

    Raises:
        RuntimeError: no GPU (torch's message).
    """
    _require()
    _cuda.set_device(device)


current_device_idx = current_device_index  # torch's older names
set_device_idx = set_device_index


class device_index:
    """Context manager: ``device`` is the current GPU inside the block (torch's ``device_index``).

    ``None`` changes nothing, as in torch; entering with an index and no GPU raises RuntimeError.
    """

    def __init__(self, device: int | None, /) -> None:
        self.idx = device
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc: object) -> None:
        if self.idx is not None:
            set_device_index(self.prev_idx)


def synchronize(device: Any = None, /) -> None:
    """Wait until every computation issued so far has finished (``torch.accelerator.synchronize``).

    Raises:
        RuntimeError: no GPU (torch's message).
    """
    _require()
    _cuda.synchronize(device)


def empty_cache() -> None:
    """Accepted, releases nothing (see ``spx.cuda.empty_cache``); RuntimeError without a GPU."""
    _require()
    _cuda.empty_cache()


def memory_allocated(device_index: Any = None, /) -> int:
    """Bytes of GPU memory in use by arrays (``torch.accelerator.memory_allocated``)."""
    _require()
    return _cuda.memory_allocated(device_index)


def max_memory_allocated(device_index: Any = None, /) -> int:
    """The peak of :func:`memory_allocated` (``torch.accelerator.max_memory_allocated``)."""
    _require()
    return _cuda.max_memory_allocated(device_index)
