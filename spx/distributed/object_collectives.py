"""Collectives and point-to-point ops on picklable Python objects (torch's ``*_object*``).

The group-wide ones go through the backend's object exchange (every rank's object reaches
every rank; each keeps what torch's function gives it); ``send_object_list`` /
``recv_object_list`` pickle into byte tensors sent as torch does (the sizes first, then the
bytes), so they work wherever tensor send/recv does. As in torch, the objects are unpickled:
only exchange objects from ranks you trust.

Example:
    >>> out = [None] * dist.get_world_size()  # doctest: +SKIP
    >>> dist.all_gather_object(out, {"rank": dist.get_rank()})  # doctest: +SKIP
    >>> out  # doctest: +SKIP
    [{'rank': 0}, {'rank': 1}]
"""

from __future__ import annotations

import pickle
from typing import Any

import jax.numpy as jnp
import numpy as np

from spx._tensor.tensor import Tensor
from spx.distributed import collectives
from spx.distributed import functional as F
from spx.distributed.process_group import ProcessGroup, resolve_group, warn_not_in_group

__all__ = [
    "all_gather_object", "broadcast_object_list", "gather_object", "recv_object_list",
    "scatter_object_list", "send_object_list",
]  # fmt: skip


def all_gather_object(object_list: list[Any], obj: Any, group: ProcessGroup | None = None) -> None:
    """Fill ``object_list`` with every rank's picklable ``obj`` (torch ``all_gather_object``)."""
    pg = F._group(group)
    if pg is None:
        return warn_not_in_group("all_gather_object")
    F.check_len(object_list, pg, "object_list")
    object_list[:] = pg.backend.all_gather_object(obj)
    return None


def broadcast_object_list(
    object_list: list[Any],
    src: int | None = None,
    group: ProcessGroup | None = None,
    device: Any = None,
    group_src: int | None = None,
) -> None:
    """Replace ``object_list``'s items with ``src``'s (torch ``broadcast_object_list``)."""
    pg = F._group(group)
    if pg is None:
        return warn_not_in_group("broadcast_object_list")
    peer = F.peer(pg, src, group_src, "src")
    mine = list(object_list) if pg.rank() == peer else None
    object_list[:] = pg.backend.all_gather_object(mine)[peer]
    return None


def gather_object(
    obj: Any,
    object_gather_list: list[Any] | None = None,
    dst: int | None = None,
    group: ProcessGroup | None = None,
    group_dst: int | None = None,
) -> None:
    """Fill ``dst``'s ``object_gather_list`` with every rank's picklable ``obj`` (torch
    ``gather_object``); the other ranks pass None."""
    pg = F._group(group)
    if pg is None:
        return warn_not_in_group("gather_object")
    peer = F.peer(pg, 0 if dst is None and group_dst is None else dst, group_dst, "dst")
    if pg.rank() == peer:
        if object_gather_list is None:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        F.check_len(object_gather_list, pg, "object_gather_list")
    elif object_gather_list is not None:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    every = pg.backend.all_gather_object(obj)
    if pg.rank() == peer:
        object_gather_list[:] = every
    return None


def scatter_object_list(
    scatter_object_output_list: list[Any],
    scatter_object_input_list: list[Any] | None = None,
    src: int | None = None,
    group: ProcessGroup | None = None,
    group_src: int | None = None,
) -> None:
    """Rank ``r`` gets ``src``'s ``scatter_object_input_list[r]`` as
    ``scatter_object_output_list[0]`` (torch ``scatter_object_list``)."""
    pg = F._group(group)
    if pg is None:
        return warn_not_in_group("scatter_object_list")
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError(
            "Expected argument scatter_object_output_list to be a list of size at least 1."
        )
    peer = F.peer(pg, 0 if src is None and group_src is None else src, group_src, "src")
    mine = None
    if pg.rank() == peer:
        if scatter_object_input_list is None:
            raise ValueError(
                "scatter_object_list: the source rank must pass scatter_object_input_list, one "
                "object per rank"
            )
        F.check_len(scatter_object_input_list, pg, "scatter_object_input_list")
        mine = list(scatter_object_input_list)
    scatter_object_output_list[0] = pg.backend.all_gather_object(mine)[peer][pg.rank()]
    return None


def send_object_list(
    object_list: list[Any],
    dst: int | None = None,
    group: ProcessGroup | None = None,
    device: Any = None,
    group_dst: int | None = None,
    use_batch: bool = False,
) -> None:
    """Send the picklable objects of ``object_list`` to ``dst`` (torch ``send_object_list``);
    the receiver passes a list of the same length to :func:`recv_object_list`."""
    if resolve_group(group) is None:
        return warn_not_in_group("send_object_list")
    blobs = [pickle.dumps(o) for o in object_list]
    sizes = Tensor._of(jnp.asarray([len(b) for b in blobs], jnp.int32))
    data = Tensor._of(jnp.asarray(np.frombuffer(b"".join(blobs), np.uint8)))
    collectives.send(sizes, dst, group, group_dst=group_dst)
    collectives.send(data, dst, group, group_dst=group_dst)
    return None


def recv_object_list(
    object_list: list[Any],
    src: int | None = None,
    group: ProcessGroup | None = None,
    device: Any = None,
    group_src: int | None = None,
) -> int:
    """Fill ``object_list`` with the objects :func:`send_object_list` sent (torch
    ``recv_object_list``).

    Returns:
        The sender's global rank (-1 on a rank outside ``group``).
    """
    if resolve_group(group) is None:
        warn_not_in_group("recv_object_list")
        return -1
    if not isinstance(object_list, list):
        raise TypeError(f"recv_object_list: object_list must be a list, got {object_list!r}")
    sizes = Tensor._of(jnp.zeros(len(object_list), jnp.int32))
    sender = collectives.recv(sizes, src, group, group_src=group_src)
    lengths = np.asarray(sizes).tolist()
    data = Tensor._of(jnp.zeros(sum(lengths), jnp.uint8))
    collectives.recv(data, sender, group)
    raw = np.asarray(data).tobytes()
    start = 0
    for i, n in enumerate(lengths):
        object_list[i] = pickle.loads(raw[start : start + n])
        start += n
    return sender
