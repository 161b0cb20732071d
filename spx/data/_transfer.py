"""Moving a collated batch from host numpy to Tensors on a device.

The DataLoader's last step, the counterpart of torch's ``pin_memory`` + ``.to(device)``: every
numeric numpy leaf of the batch becomes an :class:`spx.Tensor` with one transfer per leaf, and
the structure (dicts, lists, namedtuples) and non-array leaves (strings, None) are kept.
"""

from __future__ import annotations

import collections.abc
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx import _context
from spx._tensor.tensor import Tensor
from spx.data.collate import _rebuild_mapping, _rebuild_sequence, is_numeric

DeviceLike = str | jax.Device | jax.sharding.Sharding


def resolve_target(device: DeviceLike | None) -> jax.Device | jax.sharding.Sharding | None:
    """The placement for batches, resolved in the *consumer's* thread.

    Resolution happens once per epoch in the thread that iterates the loader, because the
    answer depends on that thread: a rank thread of ``spx.distributed`` has its own device, and
    ``jax.default_device(...)`` contexts are thread-local - worker threads see neither.

    Args:
        device: the DataLoader's ``device`` argument.

    Returns:
        A device or sharding, or None for JAX's default device.
    """
    if device is None:
        own = _context.current().device
        if own is not None:
            return own
        default = jax.config.jax_default_device  # None unless the user set one
        if isinstance(default, str):  # jax.default_device("cpu") stores the platform name
            return jax.local_devices(backend=default)[0]
        return default
    if isinstance(device, str):
        from spx._device import device as resolve_device

        return resolve_device(device)
    if isinstance(device, jax.Device | jax.sharding.Sharding):
        return device
    raise TypeError(
        f"DataLoader: device must be None, a str like 'cpu' or 'cuda:0', a jax.Device or a "
        f"jax.sharding.Sharding; got {type(device).__name__}"
    )


def _leaf_to_jax(x: Any, target: Any) -> Any:
    if isinstance(x, np.ndarray):
        if not is_numeric(x.dtype):
            return x
        # jnp.asarray is the cheapest host-to-device path for the default device (about half
        # the cost of jax.device_put on CPU); an explicit placement needs device_put.
        return Tensor._of(jnp.asarray(x) if target is None else jax.device_put(x, target))
    if isinstance(x, np.generic) and is_numeric(x.dtype):
        return _leaf_to_jax(np.asarray(x), target)
    if isinstance(x, jax.Array):
        return Tensor._of(x if target is None else jax.device_put(x, target))
    if isinstance(x, Tensor):
        return x if target is None else x.to(target)
    return x


def to_jax(batch: Any, target: jax.Device | jax.sharding.Sharding | None) -> Any:
    """Return ``batch`` with every numeric leaf turned into a Tensor on ``target``.

    Args:
        batch: a collated batch (numpy leaves inside dicts/lists/tuples/namedtuples).
        target: a device or sharding, or None for the default device.

    Returns:
        The same structure with Tensor leaves.

    Example:
        >>> import numpy as np
        >>> out = to_jax({"x": np.ones((2, 3), np.float32)}, None)
        >>> type(out["x"]).__name__
        'Tensor'
    """
    if isinstance(batch, np.ndarray | np.generic | jax.Array | Tensor):
        return _leaf_to_jax(batch, target)
    if isinstance(batch, list):
        return [to_jax(b, target) for b in batch]
    if isinstance(batch, str | bytes):
        return batch
    if isinstance(batch, collections.abc.Mapping):
        return _rebuild_mapping(batch, {k: to_jax(v, target) for k, v in batch.items()})
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(to_jax(b, target) for b in batch))
    if isinstance(batch, tuple):
        return tuple(to_jax(b, target) for b in batch)
    if isinstance(batch, collections.abc.Sequence):
        return _rebuild_sequence(batch, [to_jax(b, target) for b in batch])
    return batch
