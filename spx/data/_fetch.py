"""Fetchers: turn one entry of the batch sampler into one collated batch.

The same fetch runs in the loading thread (``num_workers=0``) and in worker threads, as torch's
``_utils/fetch.py`` does for its worker processes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from spx.data.collate import collate_numpy


class MapFetcher:
    """Fetch from a map-style dataset: ``collate_fn([dataset[i] for i in batch_indices])``.

    When the collate function is :func:`collate_numpy` (the default) and the dataset can answer
    a whole batch (``_spx_fetch_batch``, e.g. :class:`TensorDataset`), the batch is one
    fancy-index per array instead of a Python loop plus a stack; the result is the same arrays.

    Args:
        dataset: a map-style dataset.
        auto_collation: True when each index is a list of sample indices (batching on).
        collate_fn: called on the list of samples (or on the single sample without batching).
    """

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self._batch_fast_path = (
            auto_collation
            and collate_fn is collate_numpy
            and callable(getattr(dataset, "_spx_fetch_batch", None))
        )
        getitems = getattr(dataset, "__getitems__", None)
        self._getitems = getitems if callable(getitems) else None

    def fetch(self, index: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self._batch_fast_path and len(index) > 0:
            idx = np.asarray(index)
            if idx.ndim == 1 and idx.dtype.kind in "iu":
                batch = self.dataset._spx_fetch_batch(idx)
                if batch is not None:
                    return batch
        if self._getitems is not None:
            data = self._getitems(index)
        else:
            data = [self.dataset[i] for i in index]
        return self.collate_fn(data)


class IterableFetcher:
    """Fetch from an iterable dataset: the next ``len(index)`` items of one iterator.

    ``iter(dataset)`` is called lazily on the first fetch, so that a worker thread creates its
    own iterator (and ``get_worker_info()`` inside ``__iter__`` sees that worker).

    Args:
        dataset: an iterable dataset.
        auto_collation: True when each index is a list (of Nones) whose length is the batch size.
        collate_fn: called on the list of items (or on the single item without batching).
        drop_last: drop a final batch shorter than the batch size.

    Raises:
        StopIteration: from ``fetch`` when the stream is exhausted.
    """

    def __init__(
        self, dataset: Any, auto_collation: bool, collate_fn: Callable, drop_last: bool
    ) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self._it: Any = None
        self._ended = False

    def fetch(self, index: Any) -> Any:
        if self._ended:
            raise StopIteration
        if self._it is None:
            self._it = iter(self.dataset)
        if not self.auto_collation:
            try:
                item = next(self._it)
            except StopIteration:
                self._ended = True
                raise
            return self.collate_fn(item)
        data = []
        for _ in index:
            try:
                data.append(next(self._it))
            except StopIteration:
                self._ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            self._ended = True
            raise StopIteration
        return self.collate_fn(data)
