"""Collectives and point-to-point ops, in place on Tensors as in ``torch.distributed``.

``dist.all_reduce(t)`` replaces ``t``'s value with the reduction (through the Tensor's in-place
machinery: aliases such as ``t.data`` and views of ``t`` see the new value) and returns None;
``all_gather`` fills its output list, ``recv``/``irecv`` fill the given tensor, and so on. With
``async_op=True`` (and for ``isend``/``irecv``) a :class:`Work` is returned whose ``wait()``
completes the write and returns True; ``work.result()`` gives the output tensors.

Arguments written into must be ``spx.Tensor``s or writable numpy arrays (filled with
``np.copyto``, as torch fills a tensor sharing numpy's memory). A ``jax.Array`` is immutable,
so passing one where torch writes raises TypeError: wrap it with ``spx.as_tensor`` first, or
use the forms returning the result in :mod:`spx.distributed.functional`. Inputs that are only
read may be Tensors, jax arrays or numpy arrays.

Rank arguments follow torch: ``src``/``dst`` are global ranks, ``group_src``/``group_dst``
ranks within ``group``. On a rank outside ``group`` every function warns and returns None.
Collectives run eagerly; call them between compiled steps, not inside ``jax.jit``.

Example:
    >>> t = spx.ones(3) * (dist.get_rank() + 1)  # doctest: +SKIP
    >>> dist.all_reduce(t)  # doctest: +SKIP
    >>> t  # 1 + 2 on two ranks  # doctest: +SKIP
    tensor([3., 3., 3.])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx._tensor.grad_mode import enable_grad, no_grad
from spx._tensor.tensor import Tensor
from spx._validate import as_int
from spx.distributed import functional as F
from spx.distributed.backend import Work
from spx.distributed.process_group import ProcessGroup, resolve_group, warn_not_in_group
from spx.distributed.reduce_op import ReduceOp

_IMMUTABLE = (
    "{fn}: {name} is a jax.Array, which cannot be updated in place (JAX arrays are "
    "immutable), so torch's in-place result would be lost. Wrap it as a tensor first:\n"
    "    t = spx.as_tensor(x); dist.{fn}(t, ...)  # t now holds the result"
)
_FUNCTIONAL = "\nor use the form returning the result: spx.distributed.functional.{fn}(x, ...)"
_HAS_FUNCTIONAL = frozenset(
    (
        "all_reduce",
        "broadcast",
        "all_gather_into_tensor",
        "reduce_scatter_tensor",
        "all_to_all_single",
    )
)


# -- writing results in place -------------------------------------------------------------------
def _check_out(x: Any, name: str, fn: str) -> None:
    """``x`` must be something this module can write into, as torch does."""
    if isinstance(x, Tensor):
        return
    if isinstance(x, np.ndarray):
        if not x.flags.writeable:
            raise ValueError(f"{fn}: {name} is a read-only numpy array; pass a writable one")
        return
    if isinstance(x, jax.Array):
        extra = _FUNCTIONAL.format(fn=fn) if fn in _HAS_FUNCTIONAL else ""
        raise TypeError(_IMMUTABLE.format(fn=fn, name=name) + extra)
    raise TypeError(f"{fn}: {name} must be an spx.Tensor, got {type(x).__name__}")


@jax.custom_vjp
def _value_passing_gradient(x: Any, value: Any) -> Any:
    """``value``, differentiated as ``x``: an in-place collective on a tensor with history."""
    return value


def _pass_fwd(x: Any, value: Any) -> tuple[Any, None]:
    return value, None


def _pass_bwd(_: None, g: Any) -> tuple[Any, None]:
    return g, None


_value_passing_gradient.defvjp(_pass_fwd, _pass_bwd)


def write(dst: Any, value: Any) -> None:
    """Replace ``dst``'s value with the array ``value`` (same shape), in place."""
    if isinstance(dst, Tensor):
        value = value.astype(dst.dtype) if value.dtype != dst.dtype else value
        view = dst._view
        # A view of a leaf (a Parameter's slice) is written as data below: torch's collectives
        # write without autograd's in-place checks.
        if dst.requires_grad and not dst.is_leaf and (view is None or not view.base.is_leaf):
            # torch keeps the history of a tensor a collective writes into (``y = x * 2;
            # dist.all_reduce(y)``, under no_grad too): gradients pass through unchanged.
            with enable_grad():
                dst._assign_op(_value_passing_gradient, (), (dst, value))
        elif view is None:
            # The storage is shared by aliases (``t.data``, ``detach()``): they all see it.
            dst._data = value
        else:  # a view writes through to its base
            with no_grad():
                dst.copy_(Tensor._of(value))
    else:
        np.copyto(dst, np.asarray(value), casting="unsafe")


class _ThenWork(Work):
    """``inner``'s result passed through ``fn`` (the in-place write) when it completes.

    As torch's ``Work``: :meth:`wait` returns True once the outputs hold the result;
    :meth:`result` returns the output tensors.
    """

    __slots__ = ("_fn", "_inner")

    def __init__(self, inner: Work, fn: Callable[[Any], Any]) -> None:
        super().__init__()
        self._done = False
        self._inner, self._fn = inner, fn

    def _finish(self, timeout: float | None) -> None:
        try:
            self._result = self._fn(self._inner.wait(timeout))
        except BaseException as e:
            self._error = e
        self._done = True

    def _poll(self) -> None:
        if self._inner.is_completed():
            self._finish(None)

    def wait(self, timeout: Any = None) -> bool:
        super().wait(timeout)
        return True

    def result(self) -> Any:
        return Work.wait(self)

    def __getattr__(self, name: str) -> Any:  # source_rank of a receive
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._inner, name)


def _finish(work: Work | None, async_op: bool, fn: Callable[[Any], Any]) -> Any:
    """Complete ``work`` with the write ``fn`` now (returning None), or hand back a Work."""
    if work is None:
        return None
    if async_op:
        return _ThenWork(work, fn)
    fn(work.wait())
    return None


def _fill_list(outs: list[Any], results: list[Any]) -> list[Any]:
    """torch fills each entry in place; entries that cannot be written become new Tensors."""
    for i, (o, r) in enumerate(zip(outs, results, strict=True)):
        if isinstance(o, Tensor | np.ndarray) and (
            not isinstance(o, np.ndarray) or o.flags.writeable
        ):
            write(o, r)
        else:
            outs[i] = Tensor._of(r)
    return outs


def _single(t: Any) -> Callable[[Any], list[Any]]:
    def fill(value: Any) -> list[Any]:
        write(t, value)
        return [t]

    return fill


# -- collectives ----------------------------------------------------------------------------------
def all_reduce(
    tensor: Tensor,
    op: ReduceOp = ReduceOp.SUM,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Work | None:
    """Reduce ``tensor`` over the group in place; every rank gets the result (torch
    ``all_reduce``).

    Args:
        tensor: this rank's contribution, any shape, the same shape and dtype on every rank;
            overwritten with the result.
        op: the :class:`ReduceOp`; computed in ``tensor``'s dtype, in rank order.
        group: the group (default group if None).
        async_op: return a :class:`Work` whose ``wait()`` completes the write.

    Example:
        >>> t = spx.ones(3)  # doctest: +SKIP
        >>> dist.all_reduce(t)  # doctest: +SKIP
        >>> t.tolist()  # on 2 ranks  # doctest: +SKIP
        [2.0, 2.0, 2.0]
    """
    _check_out(tensor, "tensor", "all_reduce")
    return _finish(F.all_reduce_work(tensor, op, group, async_op), async_op, _single(tensor))


def reduce(
    tensor: Tensor,
    dst: int | None = None,
    op: ReduceOp = ReduceOp.SUM,
    group: ProcessGroup | None = None,
    async_op: bool = False,
    group_dst: int | None = None,
) -> Work | None:
    """Reduce ``tensor`` onto rank ``dst`` in place; other ranks' ``tensor`` is unchanged."""
    _check_out(tensor, "tensor", "reduce")
    work = F.reduce_work(tensor, dst, op, group, async_op, group_dst)
    if work is None:
        return None
    pg = F._group(group)
    if pg.rank() != F.peer(pg, dst, group_dst, "dst"):
        # torch leaves the tensor of the other ranks as it was.
        return _finish(work, async_op, lambda _: [tensor])
    return _finish(work, async_op, _single(tensor))


def broadcast(
    tensor: Tensor,
    src: int | None = None,
    group: ProcessGroup | None = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Work | None:
    """Copy ``src``'s ``tensor`` into ``tensor`` on every rank (torch ``broadcast``).

    Args:
        tensor: the data on ``src``; on other ranks a tensor of the same shape and dtype,
            overwritten with ``src``'s.
        src: global rank that sends.
        group: the group (default group if None).
        async_op: return a :class:`Work` whose ``wait()`` completes the write.
        group_src: ``src`` as a rank of ``group`` (instead of ``src``).

    Example:
        >>> dist.broadcast(model.weight.data, src=0)  # doctest: +SKIP
    """
    _check_out(tensor, "tensor", "broadcast")
    work = F.broadcast_work(tensor, src, group, async_op, group_src)
    return _finish(work, async_op, _single(tensor))


def all_gather(
    tensor_list: list[Tensor],
    tensor: Tensor,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Work | None:
    """Collect every rank's ``tensor`` into ``tensor_list`` on every rank (torch ``all_gather``).

    Args:
        tensor_list: one tensor per rank, each shaped like ``tensor``; entry ``r`` is
            overwritten with rank ``r``'s tensor (entries that are jax arrays are replaced by
            new Tensors in the list).
        tensor: this rank's contribution; same shape and dtype on every rank.
        group: the group (default group if None).
        async_op: return a :class:`Work` (the list is filled at ``wait()``).

    Example:
        >>> parts = [spx.zeros(2) for _ in range(dist.get_world_size())]  # doctest: +SKIP
        >>> dist.all_gather(parts, spx.ones(2) * dist.get_rank())  # doctest: +SKIP
    """
    pg = F._group(group)
    x = F.array_of(tensor, "tensor")
    if pg is None:
        return warn_not_in_group("all_gather")
    if not isinstance(tensor_list, list):
        raise TypeError(
            f"all_gather: tensor_list must be a list of tensors (one per rank) to fill, got "
            f"{type(tensor_list).__name__}; spx.distributed.functional.all_gather(tensor) "
            "returns the gathered tensors instead"
        )
    F.check_len(tensor_list, pg, "tensor_list")
    F.check_like(tensor_list, x, "tensor_list")
    work = pg.backend.all_gather(x, async_op)
    return _finish(work, async_op, lambda outs: _fill_list(tensor_list, outs))


def all_gather_into_tensor(
    output_tensor: Tensor,
    input_tensor: Tensor,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Work | None:
    """Gather every rank's ``input_tensor`` into ``output_tensor`` (torch
    ``all_gather_into_tensor``).

    Args:
        output_tensor: shape ``(world * n, ...)`` (concatenated on dim 0) or ``(world, n,
            ...)`` (stacked); overwritten.
        input_tensor: this rank's contribution, shape ``(n, ...)``.
        group: the group (default group if None).
        async_op: return a :class:`Work` whose ``wait()`` completes the write.
    """
    _check_out(output_tensor, "output_tensor", "all_gather_into_tensor")
    pg = F._group(group)
    x = F.array_of(input_tensor, "input_tensor")
    if pg is None:
        return warn_not_in_group("all_gather_into_tensor")
    out = F.array_of(output_tensor, "output_tensor")
    stack = F.stacked_or_concat(out, x, pg.size(), "output_tensor")
    join = jnp.stack if stack else jnp.concatenate
    work = pg.backend.all_gather(x, async_op)
    return _finish(work, async_op, lambda outs: _single(output_tensor)(join(outs)))


def reduce_scatter(
    output: Tensor,
    input_list: Sequence[Tensor],
    op: ReduceOp = ReduceOp.SUM,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Work | None:
    """Rank ``r``'s ``output`` becomes the reduction over ranks of ``input_list[r]`` (torch
    ``reduce_scatter``).

    Args:
        output: overwritten with this rank's reduced chunk (shape/dtype of each input).
        input_list: one tensor per rank.
        op: the :class:`ReduceOp`.
        group: the group (default group if None).
        async_op: return a :class:`Work` whose ``wait()`` completes the write.
    """
    _check_out(output, "output", "reduce_scatter")
    pg = F._group(group)
    out = F.array_of(output, "output")
    if pg is None:
        return warn_not_in_group("reduce_scatter")
    F.check_len(input_list, pg, "input_list")
    xs = F.check_like(input_list, out, "input_list")
    work = F.reduce_scatter_work(xs, op, pg, async_op)
    return _finish(work, async_op, _single(output))


def reduce_scatter_tensor(
    output: Tensor,
    input: Tensor,
    op: ReduceOp = ReduceOp.SUM,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Work | None:
    """:func:`reduce_scatter` with the inputs in one tensor, shape ``(world * n, ...)`` (chunks
    on dim 0) or ``(world, n, ...)``; ``output`` (shape ``(n, ...)``) is overwritten."""
    _check_out(output, "output", "reduce_scatter_tensor")
    pg = F._group(group)
    out = F.array_of(output, "output")
    x = F.array_of(input, "input")
    if pg is None:
        return warn_not_in_group("reduce_scatter_tensor")
    n = pg.size()
    if x.dtype != out.dtype:
        raise ValueError(f"input dtype {x.dtype} differs from output dtype {out.dtype}")
    if F.stacked_or_concat(x, out, n, "input"):
        chunks = [x[i] for i in range(n)]
    else:
        chunks = F.split_rows(x, n, "reduce_scatter_tensor")
    work = F.reduce_scatter_work(chunks, op, pg, async_op)
    return _finish(work, async_op, _single(output))


def all_to_all(
    output_tensor_list: list[Tensor],
    input_tensor_list: Sequence[Tensor],
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Work | None:
    """Rank ``r`` sends ``input_tensor_list[j]`` to rank ``j``; ``output_tensor_list[j]`` is
    overwritten with what rank ``j`` sent (torch ``all_to_all``).

    Args:
        output_tensor_list: one tensor per rank, each shaped like the inputs; filled.
        input_tensor_list: one tensor per rank, all of one shape and dtype (the same on every
            rank).
        group: the group (default group if None).
        async_op: return a :class:`Work` (the list is filled at ``wait()``).
    """
    pg = F._group(group)
    if pg is None:
        return warn_not_in_group("all_to_all")
    F.check_len(input_tensor_list, pg, "input_tensor_list")
    first = F.array_of(input_tensor_list[0], "input_tensor_list[0]")
    xs = F.check_like(input_tensor_list, first, "input_tensor_list")
    if not isinstance(output_tensor_list, list):
        raise TypeError(
            f"all_to_all: output_tensor_list must be a list of tensors to fill, got "
            f"{type(output_tensor_list).__name__}"
        )
    F.check_len(output_tensor_list, pg, "output_tensor_list")
    F.check_like(output_tensor_list, first, "output_tensor_list")
    work = pg.backend.all_to_all(xs, async_op)
    return _finish(work, async_op, lambda outs: _fill_list(output_tensor_list, outs))


def all_to_all_single(
    output: Tensor,
    input: Tensor,
    output_split_sizes: Sequence[int] | None = None,
    input_split_sizes: Sequence[int] | None = None,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Work | None:
    """:func:`all_to_all` on dim 0 of one tensor (torch ``all_to_all_single``).

    ``input``'s rows are cut into one chunk per rank — equal chunks, or ``input_split_sizes``
    rows each — and chunk ``j`` goes to rank ``j``; ``output`` is overwritten with the chunks
    received from ranks ``0..world-1`` (equal chunks, or ``output_split_sizes`` rows each).

    Uneven splits cost one object exchange first (every rank's sizes, checked to agree: rank
    ``i``'s ``input_split_sizes[j]`` must be rank ``j``'s ``output_split_sizes[i]``), then one
    all-to-all of chunks padded to the largest.

    Example:
        >>> # 2 ranks; rank r sends r + 1 rows to rank 0 and 1 row to rank 1:
        >>> inp = spx.full((r + 2, 3), float(r))  # doctest: +SKIP
        >>> out = spx.empty(3 if r == 0 else 2, 3)  # doctest: +SKIP
        >>> gets = [1, 2] if r == 0 else [1, 1]  # rows from rank 0, rows from rank 1
        >>> dist.all_to_all_single(out, inp, gets, [r + 1, 1])  # doctest: +SKIP
    """
    _check_out(output, "output", "all_to_all_single")
    pg = F._group(group)
    x = F.array_of(input, "input")
    if pg is None:
        return warn_not_in_group("all_to_all_single")
    n = pg.size()
    if input_split_sizes is None and output_split_sizes is None:
        chunks = F.split_rows(x, n, "all_to_all_single")
        if tuple(output.shape) != tuple(x.shape):
            raise ValueError(
                f"all_to_all_single: output has shape {tuple(output.shape)}, expected "
                f"{tuple(x.shape)} (the shape of input)"
            )
        work = pg.backend.all_to_all(chunks, async_op)
        return _finish(work, async_op, lambda outs: _single(output)(jnp.concatenate(outs)))
    sends = _split_sizes(input_split_sizes, x.shape, n, "input")
    gets = _split_sizes(output_split_sizes, tuple(output.shape), n, "output")
    if tuple(output.shape[1:]) != tuple(x.shape[1:]):
        raise ValueError(
            f"all_to_all_single: output rows have shape {tuple(output.shape[1:])}, input rows "
            f"{tuple(x.shape[1:])}; they must match"
        )
    every = pg.backend.all_gather_object((sends, gets))
    me = pg.rank()
    for i, (their_sends, _) in enumerate(every):
        for j, (_, their_gets) in enumerate(every):
            if their_sends[j] != their_gets[i]:
                raise ValueError(
                    f"all_to_all_single: group rank {i} sends {their_sends[j]} rows to group "
                    f"rank {j} (input_split_sizes), which expects {their_gets[i]} from it "
                    "(output_split_sizes); make each rank's output_split_sizes[i] equal rank "
                    "i's input_split_sizes for it"
                )
    rows = max(max(sizes) for sizes, _ in every)
    starts = np.concatenate([[0], np.cumsum(sends)])
    pad = [(0, 0)] * (x.ndim - 1)
    chunks = [jnp.pad(x[starts[j] : starts[j + 1]], [(0, rows - sends[j]), *pad]) for j in range(n)]
    work = pg.backend.all_to_all(chunks, async_op)

    def fill(outs: list[Any]) -> list[Any]:
        got = [o[: every[i][0][me]] for i, o in enumerate(outs)]
        return _single(output)(jnp.concatenate(got))

    return _finish(work, async_op, fill)


def _split_sizes(sizes: Sequence[int] | None, shape: tuple, n: int, what: str) -> list[int]:
    """Each rank's rows of a tensor of ``shape``: ``sizes``, or equal chunks if None."""
    rows = shape[0] if shape else 0
    if sizes is None:
        if not shape or rows % n:
            raise ValueError(
                f"all_to_all_single: {what} has shape {shape}; without {what}_split_sizes its "
                f"dim 0 must split into {n} equal chunks (one per rank)"
            )
        return [rows // n] * n
    sizes = [as_int(s, f"{what}_split_sizes entry", "all_to_all_single", minimum=0) for s in sizes]
    if len(sizes) != n or sum(sizes) != rows:
        raise ValueError(
            f"all_to_all_single: {what}_split_sizes={sizes} must have one entry per rank ({n}) "
            f"summing to {what}'s dim 0 ({rows})"
        )
    return sizes


def gather(
    tensor: Tensor,
    gather_list: list[Tensor] | None = None,
    dst: int | None = None,
    group: ProcessGroup | None = None,
    async_op: bool = False,
    group_dst: int | None = None,
) -> Work | None:
    """Collect every rank's ``tensor`` into ``gather_list`` on ``dst`` (global rank 0 if unset);
    torch ``gather``. ``gather_list`` (one tensor per rank, filled) is given on ``dst`` only."""
    pg = F._group(group)
    x = F.array_of(tensor, "tensor")
    if pg is None:
        return warn_not_in_group("gather")
    p = F.peer(pg, 0 if dst is None and group_dst is None else dst, group_dst, "dst")
    if pg.rank() != p and gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    if pg.rank() == p:
        if not isinstance(gather_list, list):
            raise ValueError(
                "Argument ``gather_list`` must be specified on destination rank (a list of one "
                "tensor per rank to fill)"
            )
        F.check_len(gather_list, pg, "gather_list")
        F.check_like(gather_list, x, "gather_list")

    def fill(outs: list[Any] | None) -> list[Any] | None:
        return None if outs is None else _fill_list(gather_list, outs)

    return _finish(pg.backend.gather(x, p, async_op), async_op, fill)


def scatter(
    tensor: Tensor,
    scatter_list: Sequence[Tensor] | None = None,
    src: int | None = None,
    group: ProcessGroup | None = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Work | None:
    """Rank ``r``'s ``tensor`` is overwritten with ``scatter_list[r]`` from ``src`` (global rank 0
    if unset); torch ``scatter``. ``scatter_list`` is given on ``src`` only."""
    _check_out(tensor, "tensor", "scatter")
    pg = F._group(group)
    x = F.array_of(tensor, "tensor")
    if pg is None:
        return warn_not_in_group("scatter")
    p = F.peer(pg, 0 if src is None and group_src is None else src, group_src, "src")
    if pg.rank() == p:
        F.check_len(scatter_list, pg, "scatter_list")
        items = F.check_like(scatter_list, x, "scatter_list")
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    else:
        items = None
    return _finish(pg.backend.scatter(x, items, p, async_op), async_op, _single(tensor))


def barrier(
    group: ProcessGroup | None = None,
    async_op: bool = False,
    device_ids: Sequence[int] | None = None,
    timeout: Any = None,
) -> Work | None:
    """Return once every rank of the group has called ``barrier`` (torch ``barrier``)."""
    pg = F._group(group)
    if pg is None:
        return warn_not_in_group("barrier")
    work = pg.backend.barrier(async_op)
    return work if async_op else work.wait()


# --- point to point ------------------------------------------------------------------------------
# Hot path of user-level p2p: keep the checks to a few attribute reads and dict lookups. (The
# pipeline runtime moves arrays through its own transport, not through these.)


def isend(
    tensor: Tensor,
    dst: int | None = None,
    group: ProcessGroup | None = None,
    tag: int = 0,
    group_dst: int | None = None,
) -> Work | None:
    """Send ``tensor`` to ``dst`` without waiting (torch ``isend``); sending to oneself is allowed.

    Messages from one rank to another with one tag arrive in the order sent. The value is
    taken here (later in-place changes of ``tensor`` do not affect the message); the returned
    :class:`Work` is already complete.

    Args:
        tensor: the tensor to send.
        dst: global rank of the receiver.
        group: the group (default group if None).
        tag: matches the receiver's ``tag``.
        group_dst: ``dst`` as a rank of ``group`` (instead of ``dst``).

    Example:
        >>> work = dist.isend(x, dst=1)  # doctest: +SKIP
    """
    pg = resolve_group(group)
    x = F.array_of(tensor, "tensor")
    if pg is None:
        return warn_not_in_group("isend")
    return _ThenWork(pg.backend.send(x, F.peer(pg, dst, group_dst, "dst"), tag), lambda _: [tensor])


def send(
    tensor: Tensor,
    dst: int | None = None,
    group: ProcessGroup | None = None,
    tag: int = 0,
    group_dst: int | None = None,
) -> None:
    """Send ``tensor`` to ``dst`` (torch ``send``); see :func:`isend`. ``dst`` may not be self."""
    pg = resolve_group(group)
    x = F.array_of(tensor, "tensor")
    if pg is None:
        return warn_not_in_group("send")
    p = F.peer(pg, dst, group_dst, "dst")
    if p == pg.backend.rank:
        raise ValueError(
            "Invalid destination rank: destination rank should not be the same as the rank of "
            "the current process (use isend/irecv to send to oneself)."
        )
    pg.backend.send(x, p, tag).wait()
    return None


def irecv(
    tensor: Tensor,
    src: int | None = None,
    group: ProcessGroup | None = None,
    tag: int = 0,
    group_src: int | None = None,
) -> Work | None:
    """Post a receive into ``tensor`` (torch ``irecv``); ``work.wait()`` fills it.

    Receives posted for the same (src, tag) complete in the order they were posted, whatever the
    order of the ``wait`` calls.

    Args:
        tensor: the buffer: an ``spx.Tensor`` (or writable numpy array) of the shape and dtype
            sent; overwritten at ``wait``. A mismatch raises ValueError at ``wait``.
        src: global rank of the sender, or None for any sender (matched at ``wait``; the
            sender's global rank is then ``work.source_rank``).
        group: the group (default group if None).
        tag: matches the sender's ``tag``.
        group_src: ``src`` as a rank of ``group`` (instead of ``src``).

    Example:
        >>> buf = spx.zeros(8, 128)  # doctest: +SKIP
        >>> dist.irecv(buf, src=0).wait()  # doctest: +SKIP
    """
    _check_out(tensor, "tensor", "irecv")
    pg = resolve_group(group)
    template = jax.ShapeDtypeStruct(tuple(tensor.shape), np.dtype(tensor.dtype))
    if pg is None:
        return warn_not_in_group("irecv")
    p = None if src is None and group_src is None else F.peer(pg, src, group_src, "src")
    return _ThenWork(pg.backend.recv(template, p, tag), _single(tensor))


def recv(
    tensor: Tensor,
    src: int | None = None,
    group: ProcessGroup | None = None,
    tag: int = 0,
    group_src: int | None = None,
) -> int | None:
    """Receive into ``tensor`` (torch ``recv``); see :func:`irecv` for the arguments.

    Returns:
        The sender's global rank (as torch), or -1 on a rank outside ``group``.

    Example:
        >>> buf = spx.zeros(8, 128)  # doctest: +SKIP
        >>> dist.recv(buf, src=0)  # doctest: +SKIP
        0
    """
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    if src is not None:
        return src
    if group_src is not None:
        return resolve_group(group).global_rank(group_src)
    return work._inner.source_rank


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
