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

import weakref
from typing import Any

import jax

# Per recorded node, the committed device found among the values it is computed from (or
# _NONE): each node is looked at once, so a lookup costs O(1) amortized, not a walk of the graph
# (BatchNorm's running-statistics copy_ asks on every training call).
_MEMO: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_NONE = object()


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
    return _node_device(node)


def _node_device(root: Any) -> jax.Device | None:
    """The first committed device among the values ``root`` is computed from (memoized)."""
    memo = _MEMO
    stack = [(root, False)]
    while stack:
        node, inputs_done = stack.pop()
        if node in memo:
            continue
        if node.values is not None:
            found = next((d for v in node.values if (d := _committed(v)) is not None), None)
            memo[node] = _NONE if found is None else found
            continue
        inputs = [i[0] for i in node.inputs if type(i) is tuple]
        if not inputs_done:
            stack.append((node, True))
            stack.extend((i, False) for i in inputs if i not in memo)
            continue
        found = next((d for i in inputs if (d := memo.get(i, _NONE)) is not _NONE), None)
        memo[node] = _NONE if found is None else found
    found = memo[root]
    return None if found is _NONE else found


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
