"""Collectives that return their result instead of writing into their argument.

:mod:`spx.distributed`'s collectives mirror torch's and update their tensor arguments in place
(``dist.all_reduce(t)`` changes ``t``). A ``jax.Array`` cannot be changed in place, so code
that holds raw arrays (or wants a value, not a side effect) uses these forms, as torch code uses
``torch.distributed.nn.functional``: each takes Tensors, jax arrays or numpy arrays and returns
new Tensors on the calling rank's device. They run eagerly between compiled steps (not inside
``jax.jit``), like the in-place forms.

The ``*_work`` helpers are the shared core: argument checks plus the backend call, returning the
backend's :class:`~spx.distributed.backend.Work` of raw arrays (or None on a rank outside
``group``). :mod:`spx.distributed.collectives` builds the in-place forms on them.

Example:
    >>> import spx, spx.distributed as dist  # doctest: +SKIP
    >>> total = spx.distributed.functional.all_reduce(jnp.ones(3))  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx import _context
from spx._tensor.tensor import Tensor
from spx.distributed.backend import Work
from spx.distributed.process_group import ProcessGroup, resolve_group, warn_not_in_group
from spx.distributed.reduce_op import ReduceOp, check_op

Array = jax.Array


# -- arguments ----------------------------------------------------------------------------------
def array_of(x: Any, name: str) -> Any:
    """The array behind a collective's input (a Tensor's value, a jax or numpy array)."""
    if isinstance(x, Tensor):
        x = x._data
    if isinstance(x, jax.core.Tracer):
        raise TypeError(
            f"{name} is a traced value: spx.distributed collectives run eagerly and cannot be "
            "called inside jax.jit/grad or spx.compile; call them on concrete tensors between "
            "compiled steps"
        )
    if isinstance(x, np.ndarray):
        # A copy: on CPU a jax array may alias numpy's memory, which the in-place forms
        # overwrite while other ranks may still read this rank's contribution.
        return jnp.array(x, copy=True)
    if not isinstance(x, jax.Array):
        raise TypeError(
            f"{name} must be an spx.Tensor (or a jax/numpy array), got {type(x).__name__}"
        )
    return x


def check_like(xs: Sequence[Any], like: Any, name: str) -> list[Any]:
    """The arrays of ``xs``, each checked to have ``like``'s shape and dtype."""
    out = []
    for i, x in enumerate(xs):
        a = array_of(x, f"{name}[{i}]")
        if tuple(a.shape) != tuple(like.shape) or a.dtype != like.dtype:
            raise ValueError(
                f"{name}[{i}] has shape {tuple(a.shape)} {a.dtype}, expected "
                f"{tuple(like.shape)} {like.dtype} (the shape and dtype of the input tensor)"
            )
        out.append(a)
    return out


def check_len(xs: Sequence[Any] | None, pg: ProcessGroup, name: str) -> None:
    if xs is None or len(xs) != pg.size():
        got = "None" if xs is None else f"{len(xs)} entries"
        raise ValueError(f"{name} must hold one tensor per rank ({pg.size()}), got {got}")


def peer(pg: ProcessGroup, rank: int | None, group_rank: int | None, what: str) -> int:
    """torch's ``_canonicalize_group_rank``: a group rank from a global or a group rank."""
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"Can't specify both {what} and group_{what}")
        pg.global_rank(group_rank)  # range check
        return group_rank
    if rank is None:
        raise ValueError(f"Must specify {what} (global rank) or group_{what} (rank in the group)")
    return pg.group_rank(rank)


def stacked_or_concat(big: Any, small: Any, n: int, name: str) -> bool:
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


# -- work a compiled program may still issue on a group -------------------------------------------
# A compiled step with DistributedDataParallel runs its all-reduces in host callbacks when the
# program executes, possibly after the call returned (JAX dispatches asynchronously). A
# collective issued from Python meanwhile would take its place in the group's order before
# them on one rank and after them on another. So whoever may leave such callbacks behind
# registers a "settle" function for the group, and every collective here calls it first.
_SETTLE: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()


def register_settle(pg: ProcessGroup, fn: Any) -> None:
    """Call ``fn()`` (held weakly: a bound method) before each collective issued on ``pg``."""
    refs = _SETTLE.setdefault(pg, [])
    if not any(r() == fn for r in refs):
        refs.append(weakref.WeakMethod(fn) if hasattr(fn, "__self__") else weakref.ref(fn))


def settle(pg: ProcessGroup | None) -> None:
    """Wait for the work registered with :func:`register_settle` for ``pg``."""
    refs = _SETTLE.get(pg) if pg is not None else None
    if refs:
        for ref in list(refs):
            fn = ref()
            if fn is None:
                refs.remove(ref)
            else:
                fn()


def _group(group: Any) -> ProcessGroup | None:
    pg = resolve_group(group)
    settle(pg)
    return pg


# -- the shared core: checks + backend call -> Work of arrays -------------------------------------
def _not_member(op_name: str) -> None:
    # warn_not_in_group's warning, attributed to the user's line: user code -> public
    # function -> *_work -> here.
    pg = _context.current().group
    rank = -1 if pg is None else pg.rank()
    warnings.warn(
        f"Running {op_name} on global rank {rank} which does not belong to the given group.",
        stacklevel=4,
    )


def all_reduce_work(tensor: Any, op: ReduceOp, group: Any, async_op: bool) -> Work | None:
    pg = _group(group)
    x = array_of(tensor, "tensor")
    if pg is None:
        return _not_member("all_reduce")
    return pg.backend.all_reduce(x, check_op(op, x.dtype), async_op)


def reduce_work(tensor, dst, op, group, async_op, group_dst) -> Work | None:
    pg = _group(group)
    x = array_of(tensor, "tensor")
    if pg is None:
        return _not_member("reduce")
    p = peer(pg, dst, group_dst, "dst")
    return pg.backend.reduce(x, p, check_op(op, x.dtype), async_op)


def broadcast_work(tensor, src, group, async_op, group_src) -> Work | None:
    pg = _group(group)
    x = array_of(tensor, "tensor")
    if pg is None:
        return _not_member("broadcast")
    return pg.backend.broadcast(x, peer(pg, src, group_src, "src"), async_op)


def all_gather_work(tensor: Any, group: Any, async_op: bool, what: str) -> Work | None:
    pg = _group(group)
    x = array_of(tensor, "tensor" if what == "all_gather" else "input_tensor")
    if pg is None:
        return _not_member(what)
    return pg.backend.all_gather(x, async_op)


def reduce_scatter_work(chunks: list[Any], op: ReduceOp, pg: ProcessGroup, async_op: bool):
    return pg.backend.reduce_scatter(chunks, check_op(op, chunks[0].dtype), async_op)


def split_rows(x: Any, n: int, what: str) -> list[Any]:
    """``x`` cut on dim 0 into ``n`` equal chunks (one per rank)."""
    if x.ndim == 0 or x.shape[0] % n:
        raise ValueError(
            f"{what}: input has shape {tuple(x.shape)}; dim 0 must split into {n} equal chunks "
            "(one per rank)"
        )
    k = x.shape[0] // n
    return [x[i * k : (i + 1) * k] for i in range(n)]


# -- the functional forms -----------------------------------------------------------------------
def _wait(work: Work | None) -> Any:
    return None if work is None else work.wait()


def all_reduce(tensor: Any, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None):
    """The reduction of every rank's ``tensor`` (any shape, same on every rank), as a new Tensor.

    Example:
        >>> total = spx.distributed.functional.all_reduce(jnp.ones(3))  # doctest: +SKIP
    """
    out = _wait(all_reduce_work(tensor, op, group, False))
    return None if out is None else Tensor._of(out)


def broadcast(tensor: Any, src: int = 0, group: ProcessGroup | None = None):
    """``src``'s ``tensor`` (a same-shaped template on other ranks), as a new Tensor."""
    out = _wait(broadcast_work(tensor, src, group, False, None))
    return None if out is None else Tensor._of(out)


def all_gather(tensor: Any, group: ProcessGroup | None = None) -> tuple[Tensor, ...] | None:
    """Every rank's ``tensor`` in rank order (torch.distributed.nn.functional's form)."""
    out = _wait(all_gather_work(tensor, group, False, "all_gather"))
    return None if out is None else tuple(Tensor._of(a) for a in out)


def all_gather_into_tensor(input_tensor: Any, group: ProcessGroup | None = None):
    """Every rank's ``input_tensor`` (shape ``(n, ...)``) concatenated on dim 0 (0-d inputs
    stacked): shape ``(world * n, ...)``."""
    x = array_of(input_tensor, "input_tensor")
    out = _wait(all_gather_work(x, group, False, "all_gather_into_tensor"))
    if out is None:
        return None
    return Tensor._of(jnp.stack(out) if x.ndim == 0 else jnp.concatenate(out))


def reduce_scatter_tensor(
    input: Any, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None
) -> Tensor | None:
    """Rank ``r``'s chunk ``r`` (dim 0 cut into world chunks) reduced over ranks."""
    pg = _group(group)
    x = array_of(input, "input")
    if pg is None:
        return warn_not_in_group("reduce_scatter_tensor")
    chunks = split_rows(x, pg.size(), "reduce_scatter_tensor")
    return Tensor._of(reduce_scatter_work(chunks, op, pg, False).wait())


def all_to_all_single(input: Any, group: ProcessGroup | None = None) -> Tensor | None:
    """Chunk ``j`` of ``input`` (dim 0, equal chunks) goes to rank ``j``; returns the chunks
    received from ranks ``0..world-1`` concatenated."""
    pg = _group(group)
    x = array_of(input, "input")
    if pg is None:
        return warn_not_in_group("all_to_all_single")
    chunks = split_rows(x, pg.size(), "all_to_all_single")
    return Tensor._of(jnp.concatenate(pg.backend.all_to_all(chunks, False).wait()))
