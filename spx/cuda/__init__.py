"""``spx.cuda``: the ``torch.cuda`` calls training scripts make, answered by JAX's devices.

Ported scripts start with ``device = "cuda" if torch.cuda.is_available() else "cpu"``, seed
with ``torch.cuda.manual_seed_all``, pick their GPU with ``torch.cuda.set_device(local_rank)``
and time with ``torch.cuda.synchronize()``. Here "CUDA" is JAX's GPU backend: ``is_available()``
is True when JAX has a local GPU. ``set_device(i)`` chooses what ``"cuda"`` without an index
means (``spx.device`` resolves it; on a machine without a GPU ``"cuda:i"`` is the i-th CPU device
and, in a rank process, ``cuda:{LOCAL_RANK}`` is the rank's own device).

Example:
    >>> import spx
    >>> device = "cuda" if spx.cuda.is_available() else "cpu"
    >>> spx.zeros(2, device=device).device.platform in ("cpu", "gpu")
    True
"""

from __future__ import annotations

from typing import Any

import jax

from spx import _context, _validate
from spx._device import device as _resolve

__all__ = [
    "amp",
    "current_device",
    "device_count",
    "empty_cache",
    "get_device_name",
    "is_available",
    "is_bf16_supported",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "memory_allocated",
    "set_device",
    "synchronize",
]  # fmt: skip

_CURRENT = "spx.cuda.current_device"  # key in the thread's RankContext.extras


def _gpus() -> list[jax.Device]:
    try:
        return jax.local_devices(backend="gpu")
    except RuntimeError:  # no GPU backend in this jaxlib / on this machine
        return []


def is_available() -> bool:
    """Whether JAX has a local GPU (mirrors ``torch.cuda.is_available``)."""
    return bool(_gpus())


def device_count() -> int:
    """The number of local GPUs JAX sees in this process (``torch.cuda.device_count``)."""
    return len(_gpus())


def set_device(device: int | str | jax.Device) -> None:
    """Make ``device`` what ``"cuda"`` without an index means in this thread.

    Args:
        device: an index (``LOCAL_RANK``), ``"cuda:N"`` or a ``jax.Device``.

    Raises:
        ValueError: an index this process has no device for (the message names it).
    """
    if isinstance(device, jax.Device):
        index = jax.local_devices(backend=device.platform).index(device)
    elif isinstance(device, str):
        kind, _, idx = device.partition(":")
        if kind.strip().lower() not in ("cuda", "gpu"):
            raise ValueError(f"spx.cuda.set_device: expected a cuda device, got {device!r}")
        if not idx:
            return  # torch: "cuda" without an index leaves the current device as it is
        if not idx.isdigit():
            raise ValueError(f"spx.cuda.set_device({device!r}): the index must be an integer >= 0")
        index = int(idx)
    else:
        index = _validate.as_int(device, "device", "spx.cuda.set_device")
        if index < 0:
            return  # torch: a negative index leaves the current device as it is
    _resolve("cuda", index)  # raises, naming the index, when out of range
    _context.current().extras[_CURRENT] = index


def current_device() -> int:
    """The index ``set_device`` chose in this thread, 0 by default (``current_device``)."""
    return _context.current().extras.get(_CURRENT, 0)


def get_device_name(device: int | None = None) -> str:
    """The GPU's name, e.g. ``"NVIDIA H100 80GB HBM3"`` (``torch.cuda.get_device_name``).

    Raises:
        RuntimeError: no GPU (torch raises too).
    """
    gpus = _gpus()
    if not gpus:
        raise RuntimeError("spx.cuda.get_device_name: JAX has no GPU in this process")
    index = current_device()
    if device is not None:
        index = _validate.as_int(device, "device", "spx.cuda.get_device_name")
    if not 0 <= index < len(gpus):
        raise ValueError(f"spx.cuda.get_device_name: no GPU {index}; this process has {len(gpus)}")
    return gpus[index].device_kind


def synchronize(device: object = None) -> None:
    """Wait until every computation issued so far has finished (``torch.cuda.synchronize``).

    Recorded tensor operations still pending are computed first; then every live JAX array is
    waited for (the device arrays torch's call would wait for; on CPU, the CPU's), so a timer
    read afterwards measures finished work.
    """
    from spx._tensor import program

    program.flush()
    for array in jax.live_arrays():
        array.block_until_ready()


def empty_cache() -> None:
    """Accepted; releases nothing (``torch.cuda.empty_cache``).

    torch returns its caching allocator's free blocks to the driver; JAX's allocator keeps its
    pool for the process (``XLA_PYTHON_CLIENT_PREALLOCATE=false`` or
    ``XLA_PYTHON_CLIENT_ALLOCATOR=platform`` change that at start-up). Scripts call this between
    phases, so it must not fail.
    """


def _memory_stat(device: Any, key: str) -> int:
    gpus = _gpus()
    if not gpus:
        return 0  # torch's CUDA counters are 0 without CUDA use
    index = current_device() if device is None else _validate.as_int(device, "device", key)
    stats = gpus[index].memory_stats() or {}
    return int(stats.get(key, 0))


def memory_allocated(device: Any = None) -> int:
    """Bytes of GPU memory in use by arrays (``torch.cuda.memory_allocated``); 0 without a GPU."""
    return _memory_stat(device, "bytes_in_use")


def max_memory_allocated(device: Any = None) -> int:
    """The peak of :func:`memory_allocated` (``torch.cuda.max_memory_allocated``)."""
    return _memory_stat(device, "peak_bytes_in_use")


def is_bf16_supported() -> bool:
    """Whether the GPU computes in bfloat16 natively (compute capability 8.0 or newer)."""
    gpus = _gpus()
    if not gpus:
        return False
    capability = getattr(gpus[current_device()], "compute_capability", None)
    try:
        return float(capability) >= 8.0
    except (TypeError, ValueError):
        return False


def manual_seed(seed: int) -> None:
    """Seed the random numbers drawn on the GPU; ignored without a GPU, as in torch.

    spx has one generator per thread for every device (``spx.manual_seed``): with a GPU this
    seeds it, like ``spx.manual_seed(seed)``.
    """
    seed = _validate.as_int(seed, "seed", "spx.cuda.manual_seed")
    if is_available():
        from spx.random import manual_seed as _seed

        _seed(seed)


def manual_seed_all(seed: int) -> None:
    """``manual_seed`` for every GPU (one generator serves them all)."""
    manual_seed(seed)


# torch.cuda's legacy tensor types (spx.cuda.FloatTensor, ...): tensors on spx.device("cuda").
from spx._tensor.legacy_types import CUDA_TYPES as _CUDA_TYPES  # noqa: E402
from spx.cuda import amp as amp  # noqa: E402 - needs the functions above (GradScaler)

BFloat16Tensor = _CUDA_TYPES["BFloat16Tensor"]
BoolTensor = _CUDA_TYPES["BoolTensor"]
ByteTensor = _CUDA_TYPES["ByteTensor"]
CharTensor = _CUDA_TYPES["CharTensor"]
DoubleTensor = _CUDA_TYPES["DoubleTensor"]
FloatTensor = _CUDA_TYPES["FloatTensor"]
HalfTensor = _CUDA_TYPES["HalfTensor"]
IntTensor = _CUDA_TYPES["IntTensor"]
LongTensor = _CUDA_TYPES["LongTensor"]
ShortTensor = _CUDA_TYPES["ShortTensor"]
__all__ += [*_CUDA_TYPES]
