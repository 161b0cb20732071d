"""``DistributedDataParallel``: data parallelism over a process group (mirrors torch's).

Every rank holds a replica of the module and feeds it its own part of the batch. At
construction the replicas are made equal (parameters and buffers broadcast from the group's
rank 0, in place). When the first backward after a forward through the wrapper finishes —
``loss.backward()``, ``spx.backward(...)``, or a ``loss.backward()`` inside an ``spx.compile``d
step — the gradients of the module's parameters are averaged over the group, bucketed as
torch does (one all-reduce per bucket of at most ``bucket_cap_mb``, parameters taken in
reverse order) and written back in place into each ``p.grad``. The optimizer then steps every
replica identically. As torch's reducer, only a forward through the wrapper (with gradients
enabled, outside ``no_sync()``) arms the averaging: a backward through ``ddp.module`` alone,
or a second backward of the same graph, stays local.

Differences from torch, none of which change results: the reduction runs when backward has
finished (torch overlaps it with the backward pass), so torch's small first bucket exists only
for bucket-count parity; ``gradient_as_bucket_view`` and ``static_graph`` are accepted and have
no effect (gradients are separate arrays either way; spx's backward is one compiled program).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx._tensor import graph
from spx._tensor.autograd import register_post_backward_callback
from spx._tensor.grad_mode import is_grad_enabled
from spx._tensor.tensor import Tensor
from spx.nn.module import Module
from spx.nn.parallel import _reducer

_NO_SYNC_IN_COMPILE = (
    "no_sync() was entered inside a compiled function (spx.compile). The compiled program is "
    "reused by later calls, so a skip decided while tracing would apply to every call. Enter "
    "it around the call instead:\n"
    "    with ddp.no_sync():\n"
    "        step(ddp, opt, x, y)   # compiled; accumulates without averaging\n"
    "    step(ddp, opt, x2, y2)     # averages the accumulated gradients"
)


class _Reducer:
    """The per-DDP state the backward callback needs (compared by identity as pytree aux)."""

    def __init__(self, ddp: DistributedDataParallel, params: list[Tensor], pg: Any) -> None:
        self.params = params
        self.ids = {id(p): i for i, p in enumerate(params)}
        self.pg = pg
        self.ddp = ddp
        self.buckets: list[list[int]] = []
        self.collectives = 0  # all-reduces issued by the last synced backward (for tests)

    def average(self, arrays: list[Any], buckets: list[list[int]]) -> list[Any]:
        """:meth:`average_now`, unless the compiled step calling it runs under ``no_sync()``
        (a traced step's averaging reads the flag when it executes)."""
        if not self.ddp.require_backward_grad_sync:
            return arrays
        return self.average_now(arrays, buckets)

    def average_now(self, arrays: list[Any], buckets: list[list[int]]) -> list[Any]:
        """``arrays`` averaged over the group, one SUM all-reduce per bucket (eager)."""
        self.collectives += len(buckets)
        return self.pg.backend.all_reduce_buckets(arrays, buckets, 1.0 / self.pg.size()).wait()

    def broadcast0(self, flat: Any) -> tuple[Any, float]:
        return self.pg.backend.broadcast(flat, 0).wait(), 1.0


class DistributedDataParallel(Module):
    """Data parallelism: averages gradients over the ranks of a process group (mirrors
    ``torch.nn.parallel.DistributedDataParallel``).

    Args:
        module: the module to replicate; every rank passes an identically-shaped one.
        device_ids: None, or a one-element list with this rank's device (torch's form for
            single-device modules).
        output_device: accepted for torch compatibility (outputs stay where forward puts
            them).
        dim: torch's scatter dimension for multi-device modules; unused here.
        broadcast_buffers: deprecated torch spelling of ``forward_sync_buffers`` (False also
            skips the buffer sync at construction).
        init_sync: broadcast parameters and buffers from the group's rank 0 now.
        process_group: the group to average over (default: the default group).
        bucket_cap_mb: bucket size limit in MiB (torch's default 25, with a 1 MiB first
            bucket when not given).
        find_unused_parameters: allow parameters that get no gradient in a backward (they are
            averaged as zeros; a parameter no rank used keeps ``grad`` None).
        check_reduction: deprecated in torch; ignored.
        gradient_as_bucket_view: accepted; no effect.
        static_graph: accepted; no effect.
        delay_all_reduce_named_params: not supported (raises if given).
        param_to_hook_all_reduce: not supported (raises if given).
        mixed_precision: not supported (raises if given).
        device_mesh: a 1-D :class:`~spx.distributed.device_mesh.DeviceMesh` whose group to use
            (instead of ``process_group``).
        skip_all_reduce_unused_params: accepted; no effect.
        bucket_cap_mb_list: per-bucket caps in MiB (the last one repeats).
        batched_grad_copy: accepted; no effect.
        forward_sync_buffers: broadcast the module's buffers from rank 0 before each forward
            (default True).

    Example:
        >>> # on every rank of `spx-run --nproc-per-node 2 train.py`:  # doctest: +SKIP
        >>> dist.init_process_group()  # doctest: +SKIP
        >>> ddp = DistributedDataParallel(nn.Linear(4, 2))  # doctest: +SKIP
        >>> ddp(x).pow(2).mean().backward()  # grads are now averaged over ranks  # doctest: +SKIP
    """

    def __init__(
        self,
        module: Module,
        device_ids: Any = None,
        output_device: Any = None,
        dim: int = 0,
        broadcast_buffers: bool | None = None,
        init_sync: bool = True,
        process_group: Any = None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        delay_all_reduce_named_params: Any = None,
        param_to_hook_all_reduce: Any = None,
        mixed_precision: Any = None,
        device_mesh: Any = None,
        skip_all_reduce_unused_params: bool = False,
        bucket_cap_mb_list: list[float] | None = None,
        batched_grad_copy: bool = False,
        forward_sync_buffers: bool | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(
                f"DistributedDataParallel wraps an spx.nn.Module, got {type(module).__name__}"
            )
        for name, value in (
            ("delay_all_reduce_named_params", delay_all_reduce_named_params),
            ("param_to_hook_all_reduce", param_to_hook_all_reduce),
            ("mixed_precision", mixed_precision),
        ):
            if value is not None:
                raise NotImplementedError(
                    f"DistributedDataParallel({name}=...) is not supported by spx; drop it "
                    "(cast the module yourself for mixed precision: module.bfloat16())"
                )
        if device_ids is not None and (
            not isinstance(device_ids, list | tuple) or len(device_ids) != 1
        ):
            raise ValueError(
                f"device_ids={device_ids!r}: spx replicates single-device modules; pass None "
                "or a one-element list with this rank's device (device_ids=[local_rank])"
            )
        pg = _resolve_group(process_group, device_mesh)
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any "
                "parameter that requires a gradient."
            )
        caps = _bucket_caps(bucket_cap_mb, bucket_cap_mb_list)
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else None
        self.output_device = output_device
        self.dim = dim
        self.process_group = pg
        self.find_unused_parameters = bool(find_unused_parameters)
        self.gradient_as_bucket_view = bool(gradient_as_bucket_view)
        self.static_graph = bool(static_graph)
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        # torch's prepare_for_backward: set by a forward that will be averaged, cleared by the
        # backward that averages it.
        self._armed = False
        if broadcast_buffers is not None and forward_sync_buffers is None:
            warnings.warn(
                "`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead.",
                FutureWarning,
                stacklevel=2,
            )
        if forward_sync_buffers is not None:
            self.forward_sync_buffers, init_buffers = bool(forward_sync_buffers), True
        else:
            self.forward_sync_buffers = broadcast_buffers is not False
            init_buffers = self.forward_sync_buffers
        reducer = _Reducer(self, params, pg)
        reducer.buckets = _reducer.assign_buckets(
            [(p.numel() * np.dtype(p.dtype).itemsize, np.dtype(p.dtype)) for p in params], caps
        )
        self._reducer = reducer
        if init_sync:
            _verify_shapes(module, pg)
            self._broadcast([p for p in module.parameters()])
            if init_buffers:
                self._broadcast(list(module.buffers()))
        # Held weakly by the autograd engine: it goes away with this object.
        self._hook = register_post_backward_callback(self._after_backward)

    # -- torch's API -------------------------------------------------------------------------
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self.forward_sync_buffers and self.process_group.size() > 1:
            self._broadcast([b for b in self.module.buffers() if b is not None])
        # Traced (spx.compile): the program averages or not by the flag when it runs.
        if is_grad_enabled() and (self.require_backward_grad_sync or graph.STATE.binding):
            self._prepare_for_backward()
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Skip the gradient averaging of backwards run inside (gradient accumulation).

        The first backward after the context averages the accumulated gradients.

        Example:
            >>> with ddp.no_sync():  # doctest: +SKIP
            ...     ddp(x1).sum().backward()  # local accumulation only
            >>> ddp(x2).sum().backward()  # averages the sum of both  # doctest: +SKIP
        """
        if graph.STATE.binding:
            raise RuntimeError(_NO_SYNC_IN_COMPILE)
        old = self.require_backward_grad_sync
        self._settle()
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self._settle()
            self.require_backward_grad_sync = old

    def _settle(self) -> None:
        """Wait for compiled steps already dispatched to finish.

        Inside a compiled step the averaging runs in a host callback that reads
        ``require_backward_grad_sync`` when the program *executes*, which with JAX's
        asynchronous dispatch may be after the call returned. Waiting on the parameters and
        gradients (outputs of such a step, computed from the callbacks' results) when the flag
        changes makes every step see the flag of the moment it was called.
        """
        arrays = []
        for p in self._reducer.params:
            arrays.append(p._data)
            if p._grad is not None:
                arrays.append(p._grad._data)
        jax.block_until_ready([a for a in arrays if not isinstance(a, jax.core.Tracer)])

    def _prepare_for_backward(self) -> None:
        """Arm the averaging for the next backward that reaches the module, as a forward
        through the wrapper does (torch's ``reducer.prepare_for_backward``; the pipeline
        stage calls it, whose programs run the module's own forward)."""
        self._armed = True

    @property
    def bucket_indices(self) -> list[list[int]]:
        """The buckets, as indices into the module's trainable parameters (in reduce order)."""
        return [list(b) for b in self._reducer.buckets]

    # -- internals ---------------------------------------------------------------------------
    def _broadcast(self, tensors: list[Tensor]) -> None:
        """Rank 0's values of ``tensors``, written into them in place (bucketed by dtype)."""
        if not tensors or self.process_group.size() == 1:
            return
        arrays = [t._data for t in tensors]
        self._before_collectives(arrays)
        buckets = _reducer.assign_buckets(
            [(a.size * a.dtype.itemsize, a.dtype) for a in arrays], [250 * _reducer.MB]
        )
        out = _reducer.reduce_buckets(arrays, buckets, self._reducer.broadcast0)
        for t, a in zip(tensors, out, strict=True):
            t._data = a

    def _after_backward(self, leaves: list[Any]) -> None:
        reducer = self._reducer
        ids = reducer.ids
        if not any(id(leaf) in ids for leaf in leaves):
            return  # a backward that did not reach this module
        if not self._armed:
            return  # no forward through the wrapper since the last averaging: torch's too
        self._armed = False
        traced = graph.STATE.binding > 0 or any(
            isinstance(p._grad._data if p._grad is not None else None, jax.core.Tracer)
            for p in reducer.params
        )
        # Eagerly the arming decided (a forward outside no_sync() is averaged even when its
        # backward runs inside, as torch's); a traced step reads the flag when it runs.
        self._reduce(traced)

    def _reduce(self, traced: bool) -> None:
        reducer = self._reducer
        params = reducer.params
        grads = [None if p._grad is None else p._grad._data for p in params]
        self._before_collectives([g for g in grads if g is not None])
        missing = [i for i, g in enumerate(grads) if g is None]
        used = None
        if missing or (self.find_unused_parameters and not traced):
            names = _names(self.module, [params[i] for i in missing])
            if not self.find_unused_parameters:
                raise RuntimeError(
                    f"DistributedDataParallel: parameters {names} received no gradient in this "
                    "backward, so the ranks' gradient buckets would not line up. Pass "
                    "find_unused_parameters=True to DistributedDataParallel if the forward "
                    "does not use every parameter, or set requires_grad=False on the unused "
                    "ones."
                )
            if traced:
                raise NotImplementedError(
                    f"DistributedDataParallel(find_unused_parameters=True) inside spx.compile: "
                    f"parameters {names} got no gradient in the traced step, and whether "
                    "another rank used them is only known at run time. Run this step eagerly, "
                    "or set requires_grad=False on the unused parameters."
                )
            for i in missing:
                grads[i] = jnp.zeros(params[i].shape, params[i].dtype)
            # Every rank, also one that used every parameter: the collectives must line up.
            used = self._globally_used(grads, missing)
        # Eagerly the arming decided; a traced step's averaging checks no_sync() when it runs.
        average = reducer.average if traced else reducer.average_now
        out = _reducer.average_buckets(grads, reducer.buckets, average)
        for i, (p, g) in enumerate(zip(params, out, strict=True)):
            if p._grad is not None:
                p._grad._data = g
            elif used is not None and used[i]:
                p.grad = Tensor._of(g)

    def _before_collectives(self, arrays: list[Any]) -> None:
        from spx.distributed import functional

        if any(isinstance(a, jax.core.Tracer) for a in arrays):
            # A compiled step: its collectives run when it executes. Eager collectives on the
            # group wait for it first (see spx.distributed.functional.settle).
            functional.register_settle(self.process_group, self._settle)
        else:
            functional.settle(self.process_group)

    def _globally_used(self, grads: list[Any], missing: list[int]) -> np.ndarray:
        # torch's local_used_map: a parameter no rank used keeps grad None.
        from spx.distributed.reduce_op import ReduceOp

        local = np.ones(len(grads), np.int32)
        local[missing] = 0
        pg = self.process_group
        total = pg.backend.all_reduce(jnp.asarray(local), ReduceOp.SUM).wait()
        return np.asarray(total) > 0


def _resolve_group(process_group: Any, device_mesh: Any) -> Any:
    from spx.distributed.process_group import ProcessGroup, resolve_group

    if device_mesh is not None:
        if process_group is not None:
            raise RuntimeError("Cannot specify both process_group and device_mesh arguments.")
        if getattr(device_mesh, "ndim", None) != 1:
            raise RuntimeError(
                f"Only 1D device mesh is supported, but got {device_mesh!r}; pass a sub-mesh "
                'such as mesh["dp"]'
            )
        process_group = device_mesh.get_group(0)
    if process_group is not None and not isinstance(process_group, ProcessGroup):
        raise TypeError(
            f"process_group must be an spx.distributed ProcessGroup or None, got "
            f"{type(process_group).__name__}"
        )
    pg = resolve_group(process_group)
    if pg is None:
        raise ValueError(
            "DistributedDataParallel: this rank is not a member of process_group; build the "
            "wrapper only on the group's ranks (new_group returns NON_GROUP_MEMBER elsewhere)"
        )
    return pg


def _bucket_caps(bucket_cap_mb: float | None, caps_mb: list[float] | None) -> list[int]:
    for value in [bucket_cap_mb, *(caps_mb or [])]:
        if value is not None and (isinstance(value, bool) or not value > 0):
            raise ValueError(f"bucket_cap_mb must be a positive number of MiB, got {value!r}")
    if caps_mb:
        return [int(c * _reducer.MB) for c in caps_mb]
    if bucket_cap_mb is None:
        return [_reducer.DEFAULT_FIRST_BUCKET_BYTES, _reducer.DEFAULT_BUCKET_CAP_MB * _reducer.MB]
    return [int(bucket_cap_mb * _reducer.MB)]


def _verify_shapes(module: Module, pg: Any) -> None:
    """torch's _verify_param_shape_across_processes: every replica must match rank 0's."""
    if pg.size() == 1:
        return
    mine = [(n, tuple(p.shape), str(p.dtype)) for n, p in module.named_parameters()]
    every = pg.backend.all_gather_object(mine)
    for rank, theirs in enumerate(every):
        if theirs != every[0]:
            diff = next(
                ((a, b) for a, b in zip(every[0], theirs, strict=False) if a != b),
                (f"{len(every[0])} parameters", f"{len(theirs)} parameters"),
            )
            raise RuntimeError(
                f"DistributedDataParallel: the module on group rank {rank} differs from rank "
                f"0's: {diff[1]} vs {diff[0]}. Every rank must wrap an identically-shaped "
                "module."
            )


def _names(module: Module, params: list[Tensor]) -> list[str]:
    by_id = {id(p): n for n, p in module.named_parameters()}
    return [by_id.get(id(p), "?") for p in params]
