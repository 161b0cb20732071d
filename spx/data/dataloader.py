"""``DataLoader``: batches of ``jax.Array`` from a dataset, with torch's arguments and rules.

Mirrors ``torch.utils.data.DataLoader``. Samples are fetched and collated in numpy (see
``collate.py``), then each batch leaf is moved to the device in one transfer, so what comes
out is ready for jitted code. ``num_workers > 0`` runs loading in threads (see ``_workers.py``
for why threads and not processes).
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from spx import _validate
from spx._tensor import program
from spx.data._fetch import IterableFetcher, MapFetcher
from spx.data._transfer import DeviceLike, resolve_target, to_jax
from spx.data._workers import ThreadedLoaderIter, WorkerPool
from spx.data.collate import collate_numpy, convert_numpy, default_collate, default_convert
from spx.data.dataset import Dataset, IterableDataset
from spx.data.sampler import (
    BatchSampler,
    GeneratorLike,
    RandomSampler,
    Sampler,
    SequentialSampler,
    as_generator,
    fresh_seed,
)


class _InfiniteConstantSampler(Sampler[None]):
    """Yields None forever: the 'indices' of an iterable dataset (each means 'next item')."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


def _check_worker_args(
    num_workers: int, timeout: float, prefetch_factor: int | None, persistent_workers: bool
) -> int | None:
    """Validate the worker arguments as torch does; return the effective prefetch_factor."""
    num_workers = _validate.as_int(
        num_workers, "num_workers", "DataLoader", minimum=0, wrong_type=ValueError,
        hint="use num_workers=0 to load in the iterating thread",
    )  # fmt: skip
    timeout = _validate.as_float(timeout, "timeout", "DataLoader", minimum=0)
    if timeout > 0 and num_workers == 0:
        raise ValueError(
            f"DataLoader: timeout={timeout} only applies to worker threads; set "
            "num_workers > 0 or leave timeout=0"
        )
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            f"DataLoader: prefetch_factor={prefetch_factor} needs num_workers > 0; set "
            "num_workers > 0 or leave prefetch_factor=None"
        )
    if num_workers > 0 and prefetch_factor is None:
        prefetch_factor = 2
    if prefetch_factor is not None:
        prefetch_factor = _validate.as_int(
            prefetch_factor, "prefetch_factor", "DataLoader", minimum=1, wrong_type=ValueError
        )
    if persistent_workers and num_workers == 0:
        raise ValueError("DataLoader: persistent_workers=True needs num_workers > 0")
    return prefetch_factor


def _check_iterable_args(shuffle: bool | None, sampler: Any, batch_sampler: Any) -> None:
    """An IterableDataset defines its own order: no shuffle, sampler or batch_sampler."""
    if shuffle not in (False, None):
        raise ValueError(
            f"DataLoader with an IterableDataset: shuffle={shuffle!r} is not supported "
            "(the stream defines its own order); shuffle inside the dataset instead"
        )
    if sampler is not None:
        raise ValueError(
            "DataLoader with an IterableDataset: expected sampler=None, got "
            f"{sampler!r}; the stream defines its own order"
        )
    if batch_sampler is not None:
        raise ValueError(
            "DataLoader with an IterableDataset: expected batch_sampler=None, got "
            f"{batch_sampler!r}; use batch_size"
        )


# Attributes that torch forbids changing after construction (the iterators depend on them).
_FROZEN = frozenset(
    {"batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers"}
)


class DataLoader:
    """Iterate a dataset in batches of ``jax.Array`` (mirrors ``torch.utils.data.DataLoader``).

    Args:
        dataset: a map-style :class:`Dataset` (anything with ``__getitem__``/``__len__``) or an
            :class:`IterableDataset`.
        batch_size: samples per batch; None disables batching (each sample is converted alone).
        shuffle: reshuffle every epoch (map-style only); builds a :class:`RandomSampler`.
        sampler: the order of sample indices; excludes ``shuffle``.
        batch_sampler: yields lists of indices; excludes batch_size, shuffle, sampler and
            drop_last.
        num_workers: loading threads; 0 loads in the iterating thread.
        collate_fn: list of samples -> batch; default :func:`default_collate` (run in numpy).
        pin_memory: accepted for compatibility; JAX manages host staging, so it has no effect.
        drop_last: drop the last incomplete batch.
        timeout: seconds to wait for a batch from the workers (needs ``num_workers > 0``).
        worker_init_fn: called once in each worker with its id.
        generator: an int seed or ``numpy.random.Generator`` for shuffling and for worker
            seeds; None draws from spx's global generator (``spx.manual_seed``).
        prefetch_factor: batches in flight per worker; default 2 with workers, and it must be
            None without them.
        persistent_workers: keep the worker threads between epochs.
        multiprocessing_context: accepted so that torch code runs unchanged; workers are
            threads, so no process is started and any start method is safe.
        device: where batches go: None (the iterating rank's device, else JAX's default), a
            string such as ``"cpu"``/``"cuda:0"``, a ``jax.Device`` or a
            ``jax.sharding.Sharding``.

    Batches: each numeric leaf is a ``jax.Array`` of shape ``(batch_size, *sample_shape)``;
    int64/float64 data arrive as int32/float32 unless JAX x64 is enabled.

    Example:
        >>> import numpy as np
        >>> from spx.data import DataLoader, TensorDataset
        >>> ds = TensorDataset(np.ones((10, 3), np.float32), np.arange(10))
        >>> x, y = next(iter(DataLoader(ds, batch_size=4, shuffle=True, generator=0)))
        >>> x.shape, y.dtype
        ((4, 3), dtype('int32'))
    """

    def __init__(
        self,
        dataset: Dataset | Any,
        batch_size: int | None = 1,
        shuffle: bool | None = False,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler | Iterable | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[Any], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        *,
        generator: GeneratorLike | None = None,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        multiprocessing_context: Any = None,
        device: DeviceLike | None = None,
    ) -> None:
        prefetch_factor = _check_worker_args(
            num_workers, timeout, prefetch_factor, persistent_workers
        )

        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            _check_iterable_args(shuffle, sampler, batch_sampler)
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError(
                "DataLoader: sampler is mutually exclusive with shuffle=True (the sampler "
                "decides the order); drop shuffle=True, or use a shuffling sampler such as "
                "RandomSampler or DistributedSampler(shuffle=True)"
            )
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "DataLoader: batch_sampler is mutually exclusive with batch_size, shuffle, "
                    f"sampler and drop_last (got batch_size={batch_size}, shuffle={shuffle}, "
                    f"sampler={sampler!r}, drop_last={drop_last}); configure them on the "
                    "batch sampler instead"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError(
                "DataLoader: batch_size=None disables batching and excludes drop_last=True"
            )

        rng = as_generator(generator, what="DataLoader")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=rng)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = rng
        self.persistent_workers = persistent_workers
        self.multiprocessing_context = multiprocessing_context
        self.device = device
        if collate_fn is None:
            collate_fn = collate_numpy if self._auto_collation else convert_numpy
        elif collate_fn is default_collate or collate_fn is default_convert:
            # torch's own functions, named explicitly: their numpy halves give the same batch
            # with one transfer per leaf (the loader moves every leaf to the device).
            collate_fn = collate_numpy if collate_fn is default_collate else convert_numpy
        self.collate_fn = collate_fn
        self._pool: WorkerPool | None = None
        self._initialized = True

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_initialized", False) and name in _FROZEN:
            raise ValueError(
                f"DataLoader: {name} cannot be changed after construction; build a new DataLoader"
            )
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    def _make_fetcher(self) -> Callable[[Any], Any]:
        """A fetcher factory, called with the dataset (a worker passes its own copy)."""
        # A partial over plain values: worker threads must not hold the loader itself.
        if self._iterable:
            return functools.partial(
                IterableFetcher,
                auto_collation=self._auto_collation,
                collate_fn=self.collate_fn,
                drop_last=self.drop_last,
            )
        return functools.partial(
            MapFetcher, auto_collation=self._auto_collation, collate_fn=self.collate_fn
        )

    def _base_seed(self) -> int:
        if self.generator is None:
            return fresh_seed()
        # Draw worker seeds from a child stream: the shuffle order then does not depend on
        # num_workers (drawing from the generator itself would shift the permutation).
        try:
            child = self.generator.spawn(1)[0]
        except TypeError:  # a bit generator without a SeedSequence cannot spawn
            return fresh_seed()
        return int(child.integers(0, 2**63))

    def _new_pool(self) -> WorkerPool:
        return WorkerPool(
            self.num_workers,
            self.dataset,
            self._make_fetcher(),
            self.worker_init_fn,
            self._base_seed(),
        )

    def __iter__(self) -> Iterator[Any]:
        target = resolve_target(self.device)
        index_iter = iter(self._index_sampler)
        if self.num_workers == 0:
            return _single_thread_iter(self._make_fetcher()(self.dataset), index_iter, target)
        if self.persistent_workers:
            if self._pool is None:
                self._pool = self._new_pool()
            pool, owns, owner = self._pool, False, self
        else:
            pool, owns, owner = self._new_pool(), True, None
        return ThreadedLoaderIter(
            pool, owns, index_iter, target, self.prefetch_factor, self.timeout, owner
        )

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)  # TypeError when the stream has no length, as in torch
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
        return len(self._index_sampler)

    def __del__(self) -> None:
        pool = self.__dict__.get("_pool")
        if pool is not None:
            # At interpreter exit modules may already be torn down.
            with contextlib.suppress(Exception):
                pool.shutdown()


def _single_thread_iter(fetcher: Any, index_iter: Iterator[Any], target: Any) -> Iterator[Any]:
    for index in index_iter:
        try:
            batch = fetcher.fetch(index)
        except StopIteration:
            if isinstance(fetcher, IterableFetcher):
                return
            raise
        program.flush()
        yield to_jax(batch, target)
