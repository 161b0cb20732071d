"""``spx.device``: torch device strings resolved to JAX devices.

Rules (chosen so that a ported torch script picks the device it meant):

* ``"cpu"`` (or ``"cuda"``/``"gpu"`` with no index) is the calling rank's own device when the
  thread belongs to a rank (``spx.distributed``), else the first local device of that platform.
* ``"cuda:N"`` / ``"gpu:N"`` is the N-th local device of the accelerator backend; on a machine
  without one it is the N-th local CPU device, so ``cuda:{local_rank}`` in a ported script picks
  each rank's own device. ``"cpu:N"`` is the N-th local CPU device. In a rank process of a
  multi-process job (one device per process), N == ``LOCAL_RANK`` is the rank's own device.
* ``"cuda"`` without an index after ``spx.cuda.set_device(N)`` is ``"cuda:N"``.
* A ``jax.Device`` is returned as it is.

JAX devices get torch's two fields, so that device-generic code ports: ``device.type``
(``"cpu"``, or ``"cuda"`` for a GPU, ``"tpu"``) and ``device.index`` (None on CPU, as torch's
CPU tensors; else the index among the process's local devices of that platform, which
``spx.device(f"cuda:{index}")`` resolves back to the same device).
"""

from __future__ import annotations

import functools

import jax

from spx import _context


def _torch_type(d: jax.Device) -> str:
    return "cuda" if d.platform == "gpu" else d.platform


def _torch_index(d: jax.Device) -> int | None:
    if d.platform == "cpu":
        return None  # torch's CPU tensors have device("cpu"), index None
    if d.process_index != jax.process_index():
        return d.id
    return jax.local_devices(backend=d.platform).index(d)


# torch's device fields on JAX's device class (absent there; checked so a JAX that adds
# fields of these names keeps its own).
for _name, _getter in (("type", _torch_type), ("index", _torch_index)):
    if not hasattr(jax.Device, _name):
        setattr(jax.Device, _name, property(_getter))


@functools.cache
def _accelerator_platform() -> str:
    """ "gpu" when an accelerator backend exists, else "cpu"."""
    for platform in ("gpu", "tpu"):
        try:
            if jax.local_devices(backend=platform):
                return platform
        except RuntimeError:
            continue
    return "cpu"


def _local(platform: str, index: int, spec: str) -> jax.Device:
    devices = jax.local_devices(backend=platform)
    if not 0 <= index < len(devices):
        raise ValueError(
            f"spx.device({spec!r}): index {index} is out of range; this process has "
            f"{len(devices)} {platform} device(s). For more CPU devices call "
            f"jax.config.update('jax_num_cpu_devices', N) before JAX starts."
        )
    return devices[index]


def device(spec: str | jax.Device, index: int | None = None) -> jax.Device:
    """Resolve a torch-style device spec to a ``jax.Device`` (mirrors ``torch.device``).

    Args:
        spec: ``"cpu"``, ``"cpu:N"``, ``"cuda"``, ``"cuda:N"``, ``"gpu:N"`` or a ``jax.Device``.
        index: optional index, as in ``torch.device("cuda", 1)``.

    Returns:
        The JAX device.

    Example:
        >>> import spx
        >>> spx.device("cpu").platform
        'cpu'
    """
    if isinstance(spec, jax.Device):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"spx.device expects a str or jax.Device, got {type(spec).__name__}")
    kind, _, idx = spec.partition(":")
    kind = kind.strip().lower()
    if idx:
        if index is not None:
            raise ValueError(f"spx.device({spec!r}, {index}): give the index once")
        if not idx.isdigit():
            raise ValueError(f"spx.device({spec!r}): the index must be a non-negative integer")
        index = int(idx)
    if kind not in ("cpu", "cuda", "gpu"):
        raise ValueError(
            f"spx.device({spec!r}): unknown device type {kind!r}; use 'cpu', 'cuda:N' or 'gpu:N'"
        )
    platform = "cpu" if kind == "cpu" else _accelerator_platform()
    ctx = _context.current()
    if index is None and kind != "cpu":
        index = ctx.extras.get("spx.cuda.current_device")  # spx.cuda.set_device's choice
    if index is None:
        if ctx.device is not None:
            return ctx.device
        return _local(platform, 0, spec)
    if ctx.device is not None and ctx.extras.get("spx.distributed.local_rank") == index:
        return ctx.device  # a rank process: "cuda:{LOCAL_RANK}" is its own (only) device
    return _local(platform, index, spec)
