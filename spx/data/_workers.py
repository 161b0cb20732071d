"""Loading workers for ``DataLoader(num_workers > 0)``: a pool of threads, not processes.

Why threads. JAX runs its own threads from the moment it starts, and forking a process that
has them (torch's default on Linux) can deadlock the child; spawn-started processes avoid that
but cost seconds to start, re-import JAX, and need a picklable dataset and collate_fn. The
work a worker does here is numpy indexing, stacking and a host-to-device copy, all of which
release the GIL, so threads overlap it with the training step at no start-up cost. A dataset
whose ``__getitem__`` is pure-Python heavy work will not scale with threads; do that work in
numpy, or ahead of time.

The protocol copies torch's ``_MultiProcessingDataLoaderIter``: tasks are handed to workers
round-robin with at most ``prefetch_factor * num_workers`` in flight, every task gets exactly
one reply, and replies are put back in sampler order.

Each worker loads from its own shallow copy of the dataset (``copy.copy``, made when the
worker starts, as torch's worker processes each get their own copy): torch's recipe of
sharding an ``IterableDataset`` by rewriting ``get_worker_info().dataset.start``/``end`` in
``worker_init_fn``, an iterator position kept in ``self``, or a counter in ``__getitem__``
stay per worker and never reach the loader's dataset. Being shallow, the copies share what
the attributes point to (arrays, lists): a worker that changes one of those in place changes
it for all. Differences from torch worth knowing: Python's ``random``/``numpy.random``
global states are shared by the threads, so per-worker randomness should come from
``get_worker_info().seed`` (spx's own generator is seeded per worker, as torch seeds its
generator in each worker).
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import queue
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from spx import _context
from spx._tensor import program
from spx._tensor.tensor import Tensor
from spx.data._fetch import IterableFetcher
from spx.data._transfer import to_jax

# How long shutdown waits for a worker to finish the item it is loading, and how often a
# waiting consumer checks that its workers are alive.
_JOIN_TIMEOUT_S = 5.0
_POLL_S = 5.0


@dataclass(frozen=True)
class WorkerInfo:
    """What a loading worker knows about itself (mirrors torch's ``WorkerInfo``).

    Attributes:
        id: this worker's index, ``0 <= id < num_workers``.
        num_workers: how many workers the loader runs.
        seed: this worker's seed (the loader's base seed + id); spx's global generator in the
            worker thread is seeded with it.
        dataset: this worker's shallow copy of the loader's dataset (torch: the worker
            process's copy).
    """

    id: int
    num_workers: int
    seed: int
    dataset: Any


_LOCAL = threading.local()


def get_worker_info() -> WorkerInfo | None:
    """The calling worker's :class:`WorkerInfo`, or None outside a worker.

    Mirrors ``torch.utils.data.get_worker_info``; use it in ``IterableDataset.__iter__`` to
    shard a stream across workers.

    Example:
        >>> import spx.data
        >>> class Range(spx.data.IterableDataset):
        ...     def __iter__(self):
        ...         info = spx.data.get_worker_info()
        ...         if info is None:
        ...             return iter(range(8))
        ...         return iter(range(info.id, 8, info.num_workers))
        >>> sorted(int(b[0]) for b in spx.data.DataLoader(Range(), num_workers=2))
        [0, 1, 2, 3, 4, 5, 6, 7]
    """
    return getattr(_LOCAL, "info", None)


@dataclass
class _Failure:
    error: BaseException
    worker_id: int


@dataclass
class _Exhausted:
    worker_id: int


def _worker_loop(
    info: WorkerInfo,
    ctx: _context.RankContext,
    init_fn: Callable[[int], None] | None,
    make_fetcher: Callable[[Any], Any],
    pool_state: _PoolState,
    tasks: queue.SimpleQueue,
    results: queue.SimpleQueue,
) -> None:
    # Module-level function, not a method: the thread must not keep the iterator or the loader
    # alive, or an abandoned loop would never be collected and its workers never stopped.
    _LOCAL.info = info
    _context.set_current(ctx)
    init_error: BaseException | None = None
    if init_fn is not None:
        try:
            init_fn(info.id)
        except BaseException as e:  # reported with the first task, as torch reports a dead worker
            e.add_note(f"(raised by worker_init_fn in DataLoader worker {info.id})")
            init_error = e
    fetcher, fetcher_gen = None, -1
    while (task := tasks.get()) is not None:
        gen, idx, index, target = task
        if pool_state.done or gen != pool_state.generation:
            continue  # shutting down, or a task of an abandoned epoch: nobody wants the reply
        if init_error is not None:
            results.put((gen, idx, _Failure(init_error, info.id)))
            continue
        try:
            if gen != fetcher_gen:  # a new epoch: iterable datasets restart their stream
                fetcher, fetcher_gen = make_fetcher(info.dataset), gen
            payload = to_jax(fetcher.fetch(index), target)
        except StopIteration as e:
            if isinstance(fetcher, IterableFetcher):
                payload = _Exhausted(info.id)
            else:
                payload = _Failure(e, info.id)
        except BaseException as e:
            e.add_note(f"(raised in DataLoader worker {info.id})")
            payload = _Failure(e, info.id)
        results.put((gen, idx, payload))


def _own(dataset: Any) -> Any:
    """A worker's shallow copy of ``dataset``: of an object with attributes (a Dataset
    class's instance); an array, tensor or container is shared (copying would duplicate its
    data, and a worker has no attribute of it to rebind), as is an object refusing copies."""
    if not hasattr(dataset, "__dict__") or isinstance(dataset, Tensor | jax.Array | np.ndarray):
        return dataset
    try:
        return copy.copy(dataset)
    except Exception:  # an object that refuses copying: share it, as before
        return dataset


class _PoolState:
    """Fields workers read without locks (single attribute reads are atomic in CPython)."""

    def __init__(self) -> None:
        self.generation = 0
        self.done = False


class WorkerPool:
    """``num_workers`` threads, each with its own task queue, sharing one result queue.

    Args:
        num_workers: number of threads.
        dataset: the loader's dataset (for :class:`WorkerInfo`).
        make_fetcher: builds a fetcher over a dataset; called in the worker at the start of
            each epoch with the worker's copy.
        worker_init_fn: called once per worker with its id, in the worker.
        base_seed: worker ``i`` gets seed ``base_seed + i``.
    """

    def __init__(
        self,
        num_workers: int,
        dataset: Any,
        make_fetcher: Callable[[Any], Any],
        worker_init_fn: Callable[[int], None] | None,
        base_seed: int,
    ) -> None:
        self.num_workers = num_workers
        self.state = _PoolState()
        self.results: queue.SimpleQueue = queue.SimpleQueue()
        self.task_queues = [queue.SimpleQueue() for _ in range(num_workers)]
        parent = _context.current()
        self.threads = []
        for i in range(num_workers):
            seed = (base_seed + i) % 2**64
            info = WorkerInfo(id=i, num_workers=num_workers, seed=seed, dataset=_own(dataset))
            # Workers belong to the rank that iterates the loader: same device, group and
            # per-rank storage; their own RNG seed.
            ctx = _context.RankContext(
                seed=seed, device=parent.device, group=parent.group, extras=parent.extras
            )
            t = threading.Thread(
                target=_worker_loop,
                args=(
                    info,
                    ctx,
                    worker_init_fn,
                    make_fetcher,
                    self.state,
                    self.task_queues[i],
                    self.results,
                ),
                name=f"spx-DataLoader-worker-{i}",
                daemon=True,  # never keeps the interpreter alive
            )
            t.start()
            self.threads.append(t)

    def new_generation(self) -> int:
        """Start a new epoch; replies to older tasks are no longer produced."""
        self.state.generation += 1
        return self.state.generation

    def put(self, worker_id: int, task: tuple) -> None:
        self.task_queues[worker_id].put(task)

    def get(self, timeout: float) -> tuple:
        """Next ``(generation, task_index, payload)``; ``timeout`` 0 waits forever."""
        deadline = time.monotonic() + timeout if timeout > 0 else None
        while True:
            wait = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
            try:
                return self.results.get(timeout=max(wait, 0.0))
            except queue.Empty:
                dead = [t.name for t in self.threads if not t.is_alive()]
                if dead:
                    raise RuntimeError(
                        f"DataLoader worker thread(s) {', '.join(dead)} exited unexpectedly"
                    ) from None
                if deadline is not None and time.monotonic() >= deadline:
                    raise RuntimeError(
                        f"DataLoader timed out after {timeout} seconds waiting for a batch; "
                        "raise timeout= or make loading faster"
                    ) from None

    def __del__(self) -> None:
        # Threads hold only the queues and state, never the pool: a pool nobody references any
        # more (an iterator that failed to start, say) can still stop its threads.
        with contextlib.suppress(Exception):
            self.shutdown()

    def shutdown(self, wait: bool = True) -> None:
        """Stop every worker after the item it is loading; idempotent.

        Args:
            wait: wait (up to a few seconds) for busy workers to finish their item. An error
                path passes False: a ``timeout=0.5`` must raise after 0.5 s, not after the
                slow item it gave up on (the threads are daemons and exit when it is done).
        """
        if self.state.done:
            return
        self.state.done = True
        for q in self.task_queues:
            q.put(None)
        if not wait:
            return
        deadline = time.monotonic() + _JOIN_TIMEOUT_S
        current = threading.current_thread()
        for t in self.threads:
            if t is not current:
                t.join(timeout=max(deadline - time.monotonic(), 0.0))
        busy = [t.name for t in self.threads if t.is_alive() and t is not current]
        if busy:
            warnings.warn(
                f"DataLoader: {', '.join(busy)} still loading after {_JOIN_TIMEOUT_S} s; "
                "they will exit when their current item finishes",
                RuntimeWarning,
                stacklevel=2,
            )


class ThreadedLoaderIter:
    """One epoch over a :class:`WorkerPool`, yielding batches in sampler order.

    Args:
        pool: the workers.
        owns_pool: shut the pool down when the epoch ends (False for persistent workers).
        index_iter: iterator over the batch sampler's entries.
        target: where batches go (see ``_transfer.resolve_target``).
        prefetch_factor: batches in flight per worker.
        timeout: seconds to wait for one batch, 0 for no limit.
        owner: kept alive while this epoch runs (the loader of a persistent pool, whose
            ``__del__`` would otherwise stop the workers under a running loop).
    """

    def __init__(
        self,
        pool: WorkerPool,
        owns_pool: bool,
        index_iter: Any,
        target: Any,
        prefetch_factor: int,
        timeout: float,
        owner: Any = None,
    ) -> None:
        self._owner = owner
        self._pool = pool
        self._owns_pool = owns_pool
        self._gen = pool.new_generation()
        self._index_iter = index_iter
        self._target = target
        self._timeout = timeout
        self._max_tasks = prefetch_factor * pool.num_workers
        self._send = 0  # index of the next task to hand out
        self._rcvd = 0  # index of the next batch to return
        self._pending: dict[int, int] = {}  # task index -> worker, awaiting a reply
        self._ready: dict[int, Any] = {}  # task index -> reply that arrived out of order
        self._active = [True] * pool.num_workers  # False once an iterable stream ran dry
        self._cycle = itertools.cycle(range(pool.num_workers))
        self._sampler_done = False
        self._finished = False
        try:
            for _ in range(self._max_tasks):
                self._try_put()
        except BaseException:
            self.close()  # e.g. a sampler that raises: do not leave the threads waiting
            raise

    def _try_put(self) -> None:
        if self._sampler_done or len(self._pending) >= self._max_tasks:
            return
        for _ in range(self._pool.num_workers):
            worker = next(self._cycle)
            if self._active[worker]:
                break
        else:
            return  # every worker's stream is exhausted
        try:
            index = next(self._index_iter)
        except StopIteration:
            self._sampler_done = True
            return
        self._pool.put(worker, (self._gen, self._send, index, self._target))
        self._pending[self._send] = worker
        self._send += 1

    def __iter__(self) -> ThreadedLoaderIter:
        return self

    def __next__(self) -> Any:
        if self._finished or self._gen != self._pool.state.generation:
            raise StopIteration
        # A step boundary for the consumer's recorded values (see spx._tensor.program.flush).
        program.flush()
        try:
            return self._next_batch()
        except StopIteration:
            raise
        except BaseException:
            # An error (a worker's, a timeout, Ctrl-C) ends the epoch: stop the workers now
            # rather than when the traceback that references this iterator is freed, without
            # waiting for an item still loading (that wait is what the error interrupts).
            self.close(wait=False)
            raise

    def _next_batch(self) -> Any:
        while True:
            # Skip tasks that will never produce a batch (their worker's stream ended).
            while self._rcvd < self._send and not (
                self._rcvd in self._ready or self._rcvd in self._pending
            ):
                self._rcvd += 1
            if self._rcvd >= self._send:
                self.close()
                raise StopIteration
            if self._rcvd in self._ready:
                payload = self._ready.pop(self._rcvd)
                self._rcvd += 1
                self._try_put()
                if isinstance(payload, _Failure):
                    raise payload.error
                return payload
            gen, idx, payload = self._pool.get(self._timeout)
            if gen != self._gen or idx not in self._pending:
                continue  # a late reply from an abandoned epoch
            worker = self._pending.pop(idx)
            if isinstance(payload, _Exhausted):
                self._active[worker] = False
                self._try_put()
                continue
            self._ready[idx] = payload

    def close(self, wait: bool = True) -> None:
        """End the epoch early; stops the workers unless they are persistent.

        Args:
            wait: let busy workers finish their current item before returning.
        """
        if self._finished:
            return
        self._finished = True
        if self._owns_pool:
            self._pool.shutdown(wait=wait)

    def __del__(self) -> None:
        # A `for` loop that breaks drops its iterator right away: stop the threads then.
        with contextlib.suppress(Exception):
            self.close()
