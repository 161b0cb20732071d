"""Where a tensor lives, known without computing it; keeping in-place results there.

torch keeps a tensor on its device through in-place writes (``x.zero_()``, ``x.copy_(cpu)``,
``x.fill_(cpu_scalar)``, ``x.normal_()``), and ``zeros_like(x)`` / ``x.new_zeros(n)`` are made on
``x``'s device. A JAX program runs on the device of its *committed* inputs (arrays placed with
``device_put``/``.to(...)``), and uncommitted values (made without a device) follow them. So:

* the device of a tensor is the committed device of its value, or, while it is pending, of the
  first committed value among the values it is computed from (:func:`known_device`);
* an in-place write reads the tensor it overwrites (so its program runs there), and a source
  committed to another device is moved to the tensor's own (:func:`current_device`, which knows
  a computed value's device even when it is not committed) first (:func:`moved_to`), as torch's
  cross-device copy.

A tensor with no committed value in its history is on JAX's default device, wherever it is
computed: ``known_device`` returns None for it and nothing is moved.
"""

from __future__ import annotations

from typing import Any

import jax

# How many recorded operations known_device looks through for a pending tensor: a forward
# pass's activation reaches a parameter or an input batch within a few.
_MAX_WALK = 64


def _committed(value: Any) -> Any:
    if isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer):
        try:
            if value.committed:
                devices = value.devices()
                if len(devices) == 1:
                    return next(iter(devices))
        except RuntimeError:  # a deleted (donated) array
            return None
    return None


def known_device(t: Any) -> jax.Device | None:
    """The device ``t`` (a Tensor) is on, if committed to one; None otherwise. Computes nothing.

    Example:
        >>> import jax, jax.numpy as jnp, spx
        >>> dev = jax.devices()[0]
        >>> x = spx.as_tensor(jax.device_put(jnp.ones(2), dev))  # committed to dev
        >>> known_device(x * 2) == dev
        True
        >>> known_device(spx.ones(2)) is None  # made without a device: the default device
        True
    """
    s = t._cur()
    node, idx = s.node, s.idx
    if node.values is not None:
        return _committed(node.values[idx])
    seen: set[int] = set()
    todo = [node]
    while todo and len(seen) < _MAX_WALK:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.values is not None:
            for v in node.values:
                dev = _committed(v)
                if dev is not None:
                    return dev
            continue
        todo.extend(i[0] for i in node.inputs if type(i) is tuple)
    return None


def current_device(t: Any) -> jax.Device | None:
    """The device ``t``'s value is on if it is computed (committed or not), else where it will
    be computed (:func:`known_device`, or JAX's default device): where an in-place write into
    ``t`` must leave it.

    Example:
        >>> import jax, spx
        >>> current_device(spx.tensor([1.0, 2.0])) == jax.devices()[0]  # the default device
        True
    """
    s = t._cur()
    values = s.node.values
    if values is not None:
        value = values[s.idx]
        if isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer):
            try:
                devices = value.devices()
            except RuntimeError:  # a deleted (donated) array
                return None
            return next(iter(devices)) if len(devices) == 1 else None
        return None
    # Pending: where its committed inputs are, else where JAX runs what has none.
    return known_device(t) or _default_device()


def _default_device() -> jax.Device:
    default = jax.config.jax_default_device
    return default if isinstance(default, jax.Device) else jax.devices()[0]


def moved_to(x: Any, device: jax.Device | None) -> Any:
    """``x`` (a Tensor or array) on ``device`` if it is committed to another one, else ``x``."""
    if device is None:
        return x
    from spx._tensor.tensor import Tensor

    if isinstance(x, Tensor):
        current = known_device(x)
        if current is None or current == device:
            return x
        return x.to(device)
    current = _committed(x)
    if current is None or current == device:
        return x
    return jax.device_put(x, device)
