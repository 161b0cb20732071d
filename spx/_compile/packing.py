"""Gradients leave a compiled step packed: one buffer per dtype, each ``p.grad`` a lazy part.

torch's training step keeps ``p.grad`` after ``optimizer.step()``, so a compiled step returns
every gradient. Each array a jitted program returns costs the runtime on every call: on an
H100 (jax 0.11.2, ``tools/bench_step.py``) returning the 29 gradients of the tiny GPT doubled
raw JAX's step, 0.67 -> 1.34 ms, while returning them as one flat buffer cost 0.06 ms.

So the gradients a step computes afresh (their old value is not read: cleared by
``zero_grad()``, or None) leave the program as one flat buffer per dtype. Each ``p.grad`` then
holds its part as a pending slice: one multi-output node over the buffer per dtype
(:func:`unpack`). Nothing is sliced unless it is needed: the next step's ``zero_grad()``
discards the gradients unread, and a read (``p.grad.norm()``, a step that accumulates into
them) computes all the slices of a buffer in one program (:func:`materialize`).

Only programs whose parameters all live on one device pack: a concatenation across devices
or shardings would move data.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from spx._tensor import program
from spx._tensor.graph import Node, Storage, value_node
from spx._tensor.tensor import Tensor

# Per dtype group: positions in the program's state outputs, their shapes and abstract values
# (made once, at trace time: a ShapedArray costs ~10 us to build, 29 of them most of a step).
Layout = tuple[tuple[tuple[int, ...], tuple[tuple[int, ...], ...], tuple[Any, ...]], ...]


def _unpack(flat: jax.Array, shapes: tuple[tuple[int, ...], ...]) -> tuple[jax.Array, ...]:
    """The arrays of ``shapes`` laid end to end in ``flat`` (the recorded function)."""
    out, start = [], 0
    for shape in shapes:
        size = 1
        for n in shape:
            size *= n
        out.append(jax.lax.slice(flat, (start,), (start + size,)).reshape(shape))
        start += size
    return tuple(out)


program.RELEASES_INPUTS.add(_unpack)


def is_pending(node: Node) -> bool:
    """Whether ``node`` is a packed buffer's slices that nobody computed yet."""
    return node.fn is _unpack and node.values is None


def pack(new: list[Any], slots: tuple[int, ...], grad_slots: range, unread: set[int]) -> tuple:
    """Inside the trace: take the packable gradients out of ``new`` (the state outputs, one per
    flat slot in ``slots``); return ``(layout, buffers)`` and leave None in their places.

    A gradient packs when its slot's old value is not read (``unread``) — a donated input
    is paired with an output of its shape, which must stay — and at least one other
    gradient of its dtype packs with it.
    """
    groups: dict[Any, list[int]] = {}
    for k, i in enumerate(slots):
        x = new[k]
        if i in grad_slots and i in unread and isinstance(x, jax.Array | jax.core.Tracer):
            groups.setdefault(x.dtype, []).append(k)
    layout, buffers = [], []
    for ks in groups.values():
        if len(ks) < 2:
            continue
        shapes = tuple(tuple(new[k].shape) for k in ks)
        avals = tuple(
            jax.core.ShapedArray(shape, new[k].dtype) for shape, k in zip(shapes, ks, strict=True)
        )
        layout.append((tuple(ks), shapes, avals))
        buffers.append(jnp.concatenate([new[k].ravel() for k in ks]))
        for k in ks:
            new[k] = None
    return tuple(layout), buffers


def unpack(values: list[Any], layout: Layout, buffers: list[jax.Array]) -> None:
    """After the call: put a part of its buffer where each gradient was, as the Storage a new
    gradient tensor will hold (see :func:`tensor`)."""
    for (ks, shapes, avals), flat in zip(layout, buffers, strict=True):
        node = Node(_unpack, (shapes,), ((value_node(flat), 0),), avals, None, False)
        for idx, k in enumerate(ks):
            values[k] = Storage(node, idx)


def materialize(values: list[Any]) -> list[Any]:
    """``values`` with every packed part (a :class:`Storage` standing in for the array, from
    :func:`unpack` or :meth:`Binding.read_flat`) replaced by its array (one program per buffer)."""
    if not any(type(x) is Storage for x in values):
        return values
    nodes = {id(x.node): x.node for x in values if type(x) is Storage and x.node.values is None}
    if nodes:
        program.run([Storage(n) for n in nodes.values()], with_pending=False)
    return [x.node.values[x.idx] if type(x) is Storage else x for x in values]


def tensor(part: Storage) -> Tensor:
    """A new gradient tensor holding ``part`` (made by :func:`unpack` for it), uncomputed."""
    t = object.__new__(Tensor)
    t._init(part, False)
    return t


def hold(storage: Storage, part: Storage) -> None:
    """Make ``storage`` (a gradient tensor's) hold ``part``, uncomputed."""
    storage.node, storage.idx = part.node, part.idx
    storage.version += 1


def packable(flat_state: list[Any], n_params: int) -> bool:
    """Whether the parameters all are concrete arrays on one and the same device."""
    devices = set()
    for x in flat_state[:n_params]:
        if not isinstance(x, jax.Array) or isinstance(x, jax.core.Tracer):
            return False
        devices.update(x.sharding.device_set)
        if len(devices) > 1:
            return False
    return True
