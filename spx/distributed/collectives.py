"""Collectives and point-to-point ops (mirror ``torch.distributed``'s functions of the same names).

spx arrays are immutable, so where torch fills ``tensor`` in place these functions **return**
the result, placed on the calling rank's own device. Lists that torch fills (``all_gather``'s
``tensor_list``, ``gather``'s ``gather_list``) are filled here too, and also returned. With
``async_op=True`` a :class:`Work` is returned and ``work.wait()`` returns the result.

Rank arguments follow torch: ``src``/``dst`` are global ranks, ``group_src``/``group_dst``
ranks within ``group``. On a rank outside ``group`` every function warns and returns None.
Collectives run eagerly; call them between compiled steps, not inside ``jax.jit``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx.distributed.backend import Work
from spx.distributed.process_group import (
    ProcessGroup,
    resolve_group,
    warn_not_in_group,
)
from spx.distributed.reduce_op import ReduceOp, check_op

Array = jax.Array


def _check_tensor(x: Any, name: str) -> None:
    if isinstance(x, jax.core.Tracer):
        raise TypeError(
            f"{name} is a tracer: spx.distributed collectives run eagerly and cannot be called "
            "inside jax.jit/grad; call them on concrete arrays between compiled steps"
        )
    if not isinstance(x, (jax.Array, np.ndarray)):
        raise TypeError(f"{name} must be a jax.Array or numpy array, got {type(x).__name__}")


def _check_like(xs: Sequence[Any], like: Any, name: str) -> None:
    for i, x in enumerate(xs):
        _check_tensor(x, f"{name}[{i}]")
        if tuple(x.shape) != tuple(like.shape) or x.dtype != like.dtype:
            raise ValueError(
                f"{name}[{i}] has shape {tuple(x.shape)} {x.dtype}, expected "
                f"{tuple(like.shape)} {like.dtype} (the shape and dtype of the input tensor)"
            )


def _check_len(xs: Sequence[Any] | None, pg: ProcessGroup, name: str) -> None:
    if xs is None or len(xs) != pg.size():
        got = "None" if xs is None else f"{len(xs)} entries"
        raise ValueError(f"{name} must hold one tensor per rank ({pg.size()}), got {got}")


def _peer(pg: ProcessGroup, rank: int | None, group_rank: int | None, what: str) -> int:
    """torch's ``_canonicalize_group_rank``: a group rank from a global or a group rank."""
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"Can't specify both {what} and group_{what}")
        pg.global_rank(group_rank)  # range check
        return group_rank
    if rank is None:
        raise ValueError(f"Must specify {what} (global rank) or group_{what} (rank in the group)")
    return pg.group_rank(rank)


class _ThenWork(Work):
    """``inner``'s result passed through ``fn`` (fills torch-style output lists on completion)."""

    __slots__ = ("_fn", "_inner")

    def __init__(self, inner: Work, fn: Callable[[Any], Any]) -> None:
        super().__init__()
        self._done = False
        self._inner, self._fn = inner, fn

    def _finish(self, timeout: float | None) -> None:
        self._result = self._fn(self._inner.wait(timeout))
        self._done = True

    def _poll(self) -> None:
        if self._inner.is_completed():
            if self._inner._error is not None:
                self._error, self._done = self._inner._error, True
            else:
                self._finish(None)


def _out(work: Work, async_op: bool, fn: Callable[[Any], Any] | None = None) -> Any:
    if async_op:
        return work if fn is None else _ThenWork(work, fn)
    out = work.wait()
    return out if fn is None else fn(out)


def all_reduce(
    tensor: Array,
    op: ReduceOp = ReduceOp.SUM,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Array | Work | None:
    """Reduce ``tensor`` over the group; every rank gets the result (torch ``all_reduce``).

    Args:
        tensor: this rank's contribution; same shape and dtype on every rank.
        op: the :class:`ReduceOp`; computed in ``tensor``'s dtype, in rank order.
        group: the group (default group if None).
        async_op: return a :class:`Work` instead of waiting.

    Returns:
        The reduced array on this rank's device (torch would overwrite ``tensor``).

    Example:
        >>> total = dist.all_reduce(jnp.ones(3))  # doctest: +SKIP
    """
    pg = resolve_group(group)
    _check_tensor(tensor, "tensor")
    if pg is None:
        return warn_not_in_group("all_reduce")
    op = check_op(op, tensor.dtype)
    return _out(pg.backend.all_reduce(tensor, op, async_op), async_op)


def reduce(
    tensor: Array,
    dst: int | None = None,
    op: ReduceOp = ReduceOp.SUM,
    group: ProcessGroup | None = None,
    async_op: bool = False,
    group_dst: int | None = None,
) -> Array | Work | None:
    """Reduce ``tensor`` onto rank ``dst``; returns the result there, ``tensor`` elsewhere."""
    pg = resolve_group(group)
    _check_tensor(tensor, "tensor")
    if pg is None:
        return warn_not_in_group("reduce")
    peer = _peer(pg, dst, group_dst, "dst")
    op = check_op(op, tensor.dtype)
    return _out(pg.backend.reduce(tensor, peer, op, async_op), async_op)


def broadcast(
    tensor: Array,
    src: int | None = None,
    group: ProcessGroup | None = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Array | Work | None:
    """Copy ``src``'s ``tensor`` to every rank (torch ``broadcast``).

    Args:
        tensor: the data on ``src``; on other ranks a template of the same shape and dtype.
        src: global rank that sends.
        group: the group (default group if None).
        async_op: return a :class:`Work` instead of waiting.
        group_src: ``src`` as a rank of ``group`` (instead of ``src``).

    Returns:
        ``src``'s array on this rank's device.

    Example:
        >>> w = dist.broadcast(w, src=0)  # doctest: +SKIP
    """
    pg = resolve_group(group)
    _check_tensor(tensor, "tensor")
    if pg is None:
        return warn_not_in_group("broadcast")
    peer = _peer(pg, src, group_src, "src")
    return _out(pg.backend.broadcast(tensor, peer, async_op), async_op)


def all_gather(
    tensor_list: list[Array] | None,
    tensor: Array,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> list[Array] | Work | None:
    """Collect every rank's ``tensor`` on every rank (torch ``all_gather``).

    Args:
        tensor_list: torch-style output list with one entry per rank (shape/dtype of
            ``tensor``); its entries are replaced by the gathered arrays. None to only return.
        tensor: this rank's contribution; same shape and dtype on every rank.
        group: the group (default group if None).
        async_op: return a :class:`Work` instead of waiting (the list is filled on completion).

    Returns:
        The list of arrays in rank order, on this rank's device.

    Example:
        >>> parts = dist.all_gather(None, x)  # doctest: +SKIP
    """
    pg = resolve_group(group)
    _check_tensor(tensor, "tensor")
    if pg is None:
        return warn_not_in_group("all_gather")
    if tensor_list is not None:
        _check_len(tensor_list, pg, "tensor_list")
        _check_like(tensor_list, tensor, "tensor_list")

    def fill(outs: list[Array]) -> list[Array]:
        if tensor_list is None:
            return outs
        tensor_list[:] = outs
        return tensor_list

    return _out(pg.backend.all_gather(tensor, async_op), async_op, fill)


def _stacked_or_concat(big: Any, small: Any, n: int, name: str) -> bool:
    """Whether ``big`` is ``small`` stacked n times (True) or concatenated on dim 0 (False)."""
    shape, part = tuple(big.shape), tuple(small.shape)
    if shape == (n, *part):
        return True
    if part and shape == (n * part[0], *part[1:]):
        return False
    concat = f" or {(n * part[0], *part[1:])}" if part else ""
    raise ValueError(
        f"{name} has shape {shape}; expected {(n, *part)}{concat} for {n} ranks of shape {part}"
    )


def all_gather_into_tensor(
    output_tensor: Array | None,
    input_tensor: Array,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Array | Work | None:
    """Gather every rank's ``input_tensor`` into one array (torch ``all_gather_into_tensor``).

    Args:
        output_tensor: template: shape ``(world * n, ...)`` concatenates on dim 0, shape
            ``(world, n, ...)`` stacks; None concatenates (stacks 0-d inputs).
        input_tensor: this rank's contribution, shape ``(n, ...)``.
        group: the group (default group if None).
        async_op: return a :class:`Work` instead of waiting.

    Returns:
        The gathered array on this rank's device.
    """
    pg = resolve_group(group)
    _check_tensor(input_tensor, "input_tensor")
    if pg is None:
        return warn_not_in_group("all_gather_into_tensor")
    if output_tensor is None:
        stack = input_tensor.ndim == 0  # scalars cannot be concatenated
    else:
        stack = _stacked_or_concat(output_tensor, input_tensor, pg.size(), "output_tensor")
    join = jnp.stack if stack else jnp.concatenate
    return _out(pg.backend.all_gather(input_tensor, async_op), async_op, join)


def reduce_scatter(
    output: Array,
    input_list: Sequence[Array],
    op: ReduceOp = ReduceOp.SUM,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Array | Work | None:
    """Rank ``r`` gets the reduction over ranks of ``input_list[r]`` (torch ``reduce_scatter``).

    Args:
        output: template of the result (shape and dtype of each ``input_list`` entry).
        input_list: one array per rank.
        op: the :class:`ReduceOp`.
        group: the group (default group if None).
        async_op: return a :class:`Work` instead of waiting.

    Returns:
        This rank's reduced chunk on its device.
    """
    pg = resolve_group(group)
    _check_tensor(output, "output")
    if pg is None:
        return warn_not_in_group("reduce_scatter")
    _check_len(input_list, pg, "input_list")
    _check_like(input_list, output, "input_list")
    op = check_op(op, output.dtype)
    return _out(pg.backend.reduce_scatter(list(input_list), op, async_op), async_op)


def reduce_scatter_tensor(
    output: Array,
    input: Array,
    op: ReduceOp = ReduceOp.SUM,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Array | Work | None:
    """:func:`reduce_scatter` with the inputs in one array, shape ``(world * n, ...)`` (chunks on
    dim 0) or ``(world, n, ...)``; ``output`` has shape ``(n, ...)``."""
    pg = resolve_group(group)
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    if pg is None:
        return warn_not_in_group("reduce_scatter_tensor")
    n = pg.size()
    if input.dtype != output.dtype:
        raise ValueError(f"input dtype {input.dtype} differs from output dtype {output.dtype}")
    if _stacked_or_concat(input, output, n, "input"):
        chunks = [input[i] for i in range(n)]
    else:
        k = output.shape[0]
        chunks = [input[i * k : (i + 1) * k] for i in range(n)]
    op = check_op(op, output.dtype)
    return _out(pg.backend.reduce_scatter(chunks, op, async_op), async_op)


def all_to_all(
    output_tensor_list: list[Array] | None,
    input_tensor_list: Sequence[Array],
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> list[Array] | Work | None:
    """Rank ``r`` sends ``input_tensor_list[j]`` to rank ``j`` and receives one array from each
    rank, in rank order (torch ``all_to_all``).

    Args:
        output_tensor_list: torch-style output list (one entry per rank, each shaped like the
            inputs); its entries are replaced by the received arrays. None to only return.
        input_tensor_list: one array per rank, all of one shape and dtype (the same on every
            rank).
        group: the group (default group if None).
        async_op: return a :class:`Work` instead of waiting.

    Returns:
        The received arrays in source-rank order, on this rank's device.

    Example:
        >>> parts = dist.all_to_all(None, [x_for_0, x_for_1])  # doctest: +SKIP
    """
    pg = resolve_group(group)
    if pg is None:
        return warn_not_in_group("all_to_all")
    _check_len(input_tensor_list, pg, "input_tensor_list")
    _check_tensor(input_tensor_list[0], "input_tensor_list[0]")
    _check_like(input_tensor_list, input_tensor_list[0], "input_tensor_list")
    if output_tensor_list is not None:
        _check_len(output_tensor_list, pg, "output_tensor_list")
        _check_like(output_tensor_list, input_tensor_list[0], "output_tensor_list")

    def fill(outs: list[Array]) -> list[Array]:
        if output_tensor_list is None:
            return outs
        output_tensor_list[:] = outs
        return output_tensor_list

    return _out(pg.backend.all_to_all(list(input_tensor_list), async_op), async_op, fill)


def all_to_all_single(
    output: Array | None,
    input: Array,
    output_split_sizes: Sequence[int] | None = None,
    input_split_sizes: Sequence[int] | None = None,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Array | Work | None:
    """:func:`all_to_all` on dim 0 of one array (torch ``all_to_all_single``), equal splits.

    ``input`` has shape ``(world * n, ...)``; chunk ``j`` goes to rank ``j``, and the result
    stacks the chunks received from ranks ``0..world-1`` in the same shape.

    Raises:
        NotImplementedError: uneven ``input_split_sizes``/``output_split_sizes``.
    """
    pg = resolve_group(group)
    _check_tensor(input, "input")
    if pg is None:
        return warn_not_in_group("all_to_all_single")
    n = pg.size()
    if input.ndim == 0 or input.shape[0] % n:
        raise ValueError(
            f"all_to_all_single: input has shape {tuple(input.shape)}; dim 0 must split into "
            f"{n} equal chunks (one per rank)"
        )
    k = input.shape[0] // n
    for name, sizes in (("input", input_split_sizes), ("output", output_split_sizes)):
        if sizes is not None and list(sizes) != [k] * n:
            raise NotImplementedError(
                f"all_to_all_single({name}_split_sizes={list(sizes)}): only equal splits are "
                f"supported ({[k] * n} here); pass None, or pad the chunks to one size"
            )
    if output is not None and (tuple(output.shape) != tuple(input.shape)):
        raise ValueError(
            f"all_to_all_single: output has shape {tuple(output.shape)}, expected "
            f"{tuple(input.shape)} (the shape of input)"
        )
    chunks = [input[i * k : (i + 1) * k] for i in range(n)]
    return _out(pg.backend.all_to_all(chunks, async_op), async_op, jnp.concatenate)


def gather(
    tensor: Array,
    gather_list: list[Array] | None = None,
    dst: int | None = None,
    group: ProcessGroup | None = None,
    async_op: bool = False,
    group_dst: int | None = None,
) -> list[Array] | Work | None:
    """Collect every rank's ``tensor`` on ``dst`` (global rank 0 if unset); torch ``gather``.

    Returns the list (also written into ``gather_list`` if given) on ``dst``, None elsewhere.
    ``gather_list`` must be None on other ranks, as in torch.
    """
    pg = resolve_group(group)
    _check_tensor(tensor, "tensor")
    if pg is None:
        return warn_not_in_group("gather")
    peer = _peer(pg, 0 if dst is None and group_dst is None else dst, group_dst, "dst")
    if pg.rank() != peer and gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    if pg.rank() == peer and gather_list is not None:
        _check_len(gather_list, pg, "gather_list")
        _check_like(gather_list, tensor, "gather_list")

    def fill(outs: list[Array] | None) -> list[Array] | None:
        if outs is None or gather_list is None:
            return outs
        gather_list[:] = outs
        return gather_list

    return _out(pg.backend.gather(tensor, peer, async_op), async_op, fill)


def scatter(
    tensor: Array,
    scatter_list: Sequence[Array] | None = None,
    src: int | None = None,
    group: ProcessGroup | None = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Array | Work | None:
    """Rank ``r`` gets ``scatter_list[r]`` from ``src`` (global rank 0 if unset); torch ``scatter``.

    ``tensor`` is the template (shape/dtype) of the received array; ``scatter_list`` is given on
    ``src`` only. Returns the received array on this rank's device.
    """
    pg = resolve_group(group)
    _check_tensor(tensor, "tensor")
    if pg is None:
        return warn_not_in_group("scatter")
    peer = _peer(pg, 0 if src is None and group_src is None else src, group_src, "src")
    if pg.rank() == peer:
        _check_len(scatter_list, pg, "scatter_list")
        _check_like(scatter_list, tensor, "scatter_list")
        items = list(scatter_list)
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    else:
        items = None
    return _out(pg.backend.scatter(tensor, items, peer, async_op), async_op)


def barrier(
    group: ProcessGroup | None = None,
    async_op: bool = False,
    device_ids: Sequence[int] | None = None,
    timeout: Any = None,
) -> Work | None:
    """Return once every rank of the group has called ``barrier`` (torch ``barrier``)."""
    pg = resolve_group(group)
    if pg is None:
        return warn_not_in_group("barrier")
    work = pg.backend.barrier(async_op)
    return work if async_op else work.wait()


def all_gather_object(object_list: list[Any], obj: Any, group: ProcessGroup | None = None) -> None:
    """Fill ``object_list`` with every rank's picklable ``obj`` (torch ``all_gather_object``)."""
    pg = resolve_group(group)
    if pg is None:
        return warn_not_in_group("all_gather_object")
    _check_len(object_list, pg, "object_list")
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
    pg = resolve_group(group)
    if pg is None:
        return warn_not_in_group("broadcast_object_list")
    peer = _peer(pg, src, group_src, "src")
    mine = list(object_list) if pg.rank() == peer else None
    object_list[:] = pg.backend.all_gather_object(mine)[peer]
    return None


# --- point to point ------------------------------------------------------------------------------
# Hot path of the pipeline runtime (one send/recv per microbatch and stage boundary): keep the
# checks to a few attribute reads and dict lookups.


def isend(
    tensor: Array,
    dst: int | None = None,
    group: ProcessGroup | None = None,
    tag: int = 0,
    group_dst: int | None = None,
) -> Work | None:
    """Send ``tensor`` to ``dst`` without waiting (torch ``isend``); sending to oneself is allowed.

    Messages from one rank to another with one tag arrive in the order sent. The copy to the
    receiver's device starts here; the returned :class:`Work` is already complete.

    Args:
        tensor: the array to send (immutable, so it may be reused at once).
        dst: global rank of the receiver.
        group: the group (default group if None).
        tag: matches the receiver's ``tag``.
        group_dst: ``dst`` as a rank of ``group`` (instead of ``dst``).

    Example:
        >>> work = dist.isend(x, dst=1)  # doctest: +SKIP
    """
    pg = resolve_group(group)
    _check_tensor(tensor, "tensor")
    if pg is None:
        return warn_not_in_group("isend")
    return pg.backend.send(tensor, _peer(pg, dst, group_dst, "dst"), tag)


def send(
    tensor: Array,
    dst: int | None = None,
    group: ProcessGroup | None = None,
    tag: int = 0,
    group_dst: int | None = None,
) -> None:
    """Send ``tensor`` to ``dst`` (torch ``send``); see :func:`isend`. ``dst`` may not be self."""
    pg = resolve_group(group)
    _check_tensor(tensor, "tensor")
    if pg is None:
        return warn_not_in_group("send")
    peer = _peer(pg, dst, group_dst, "dst")
    if peer == pg.backend.rank:
        raise ValueError(
            "Invalid destination rank: destination rank should not be the same as the rank of "
            "the current process (use isend/irecv to send to oneself)."
        )
    pg.backend.send(tensor, peer, tag).wait()
    return None


def irecv(
    tensor: Any,
    src: int | None = None,
    group: ProcessGroup | None = None,
    tag: int = 0,
    group_src: int | None = None,
) -> Work | None:
    """Post a receive (torch ``irecv``); ``work.wait()`` returns the received array.

    Receives posted for the same (src, tag) complete in the order they were posted, whatever the
    order of the ``wait`` calls.

    Args:
        tensor: template: the shape and dtype expected (a ``jax.Array``, numpy array or
            ``jax.ShapeDtypeStruct``); a mismatch raises ValueError at ``wait``.
        src: global rank of the sender, or None for any sender (matched at ``wait``; the
            sender's global rank is then ``work.source_rank``).
        group: the group (default group if None).
        tag: matches the sender's ``tag``.
        group_src: ``src`` as a rank of ``group`` (instead of ``src``).

    Example:
        >>> work = dist.irecv(jnp.zeros((8, 128)), src=0)  # doctest: +SKIP
        >>> x = work.wait()  # doctest: +SKIP
    """
    pg = resolve_group(group)
    if not hasattr(tensor, "shape") or not hasattr(tensor, "dtype"):
        raise TypeError(
            f"tensor must be a template array (shape and dtype), got {type(tensor).__name__}"
        )
    if pg is None:
        return warn_not_in_group("irecv")
    peer = None if src is None and group_src is None else _peer(pg, src, group_src, "src")
    return pg.backend.recv(tensor, peer, tag)


def recv(
    tensor: Any,
    src: int | None = None,
    group: ProcessGroup | None = None,
    tag: int = 0,
    group_src: int | None = None,
) -> Array | None:
    """Receive an array (torch ``recv``); see :func:`irecv` for the arguments.

    Returns:
        The received array, on this rank's device (torch fills ``tensor`` and returns the
        sender's rank instead).

    Example:
        >>> x = dist.recv(jnp.zeros((8, 128)), src=0)  # doctest: +SKIP
    """
    work = irecv(tensor, src, group, tag, group_src)
    return None if work is None else work.wait()


class P2POp:
    """One operation for :func:`batch_isend_irecv` (mirrors ``torch.distributed.P2POp``).

    Args:
        op: :func:`isend` or :func:`irecv`.
        tensor: the array to send, or the receive template.
        peer: global rank of the other side.
        group: the group (default group if None).
        tag: message tag.
        group_peer: ``peer`` as a rank of ``group``.
    """

    def __init__(
        self,
        op: Callable[..., Any],
        tensor: Any,
        peer: int | None = None,
        group: ProcessGroup | None = None,
        tag: int = 0,
        group_peer: int | None = None,
    ) -> None:
        if op not in (isend, irecv):
            raise ValueError(
                f"Invalid ``op``. Expected ``op`` to be of type ``spx.distributed.isend`` or "
                f"``spx.distributed.irecv``, got {op!r}"
            )
        self.op, self.tensor, self.peer = op, tensor, peer
        self.group, self.tag, self.group_peer = group, tag, group_peer


def batch_isend_irecv(p2p_op_list: Sequence[P2POp]) -> list[Work]:
    """Start every op of the list and return their :class:`Work` handles, in order.

    Sends never block in spx, so the ops cannot deadlock against each other whatever their
    order on the two sides.
    """
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("batch_isend_irecv expects a non-empty list of P2POp")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return works
