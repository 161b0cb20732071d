"""Datasets: map-style and iterable, plus the torch combinators over them.

Mirrors ``torch.utils.data.dataset``: :class:`Dataset`, :class:`IterableDataset`,
:class:`TensorDataset`, :class:`Subset`, :class:`ConcatDataset`, :class:`ChainDataset` and
:func:`random_split`. Samples are numpy or jax arrays; the DataLoader collates them in numpy
and hands out ``jax.Array`` batches.

:class:`TensorDataset` (and a :class:`Subset` of one) also answers whole batches at once
(``_spx_fetch_batch``): one fancy-index per array instead of a Python ``__getitem__`` per sample
plus a stack. The DataLoader uses it only when the result is provably what per-sample loading
and ``default_collate`` would give.
"""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from spx import _validate
from spx._tensor.tensor import Tensor
from spx.data.collate import is_numeric
from spx.data.sampler import GeneratorLike, as_generator, fresh_seed

T_co = TypeVar("T_co", covariant=True)

# Array dtypes default_collate stacks (bool, ints, floats, complex); strings and objects it
# refuses, so the batch fast path must refuse them too.


class Dataset(Generic[T_co]):
    """A map-style dataset: ``__getitem__(index)`` and usually ``__len__``.

    Mirrors ``torch.utils.data.Dataset``; ``a + b`` concatenates.

    Example:
        >>> class Squares(Dataset):
        ...     def __len__(self):
        ...         return 4
        ...     def __getitem__(self, i):
        ...         return i * i
        >>> Squares()[3]
        9
    """

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """A dataset that is a stream: implement ``__iter__`` (mirrors torch's ``IterableDataset``).

    With ``num_workers > 0`` every worker iterates its own ``iter(dataset)``; shard the stream
    inside ``__iter__`` with :func:`spx.data.get_worker_info` or each sample repeats per worker.

    Example:
        >>> class Count(IterableDataset):
        ...     def __iter__(self):
        ...         return iter(range(3))
        >>> list(Count())
        [0, 1, 2]
    """

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other: Dataset[T_co]) -> ChainDataset[T_co]:  # type: ignore[override]
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple[Any, ...]]):
    """Samples are ``tuple(t[i] for t in tensors)`` (mirrors ``torch.utils.data.TensorDataset``).

    Args:
        *tensors: Tensors, numpy or jax arrays sharing their first dimension, ``(N, ...)``.

    Example:
        >>> import numpy as np
        >>> ds = TensorDataset(np.zeros((4, 3)), np.arange(4))
        >>> len(ds), ds[2][1].item()
        (4, 2)
    """

    def __init__(self, *tensors: Any) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one array, got none")
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor | np.ndarray | jax.Array):
                raise TypeError(
                    f"TensorDataset: argument {i} is a {type(t).__name__}; pass Tensors, numpy "
                    "or jax arrays (e.g. spx.tensor(x))"
                )
            if t.ndim == 0:
                raise ValueError(
                    f"TensorDataset: argument {i} is a 0-d array; every array needs a first "
                    "(sample) dimension"
                )
        sizes = [t.shape[0] for t in tensors]
        if len(set(sizes)) != 1:
            shapes = ", ".join(str(tuple(t.shape)) for t in tensors)
            raise ValueError(
                f"TensorDataset: all arrays must have the same first dimension, got shapes "
                f"{shapes}; slice them to a common number of samples"
            )
        self.tensors = tensors
        self._host: tuple[np.ndarray, ...] | None = None

    def __getitem__(self, index: Any) -> tuple[Any, ...]:
        return tuple(_as_tensor(t)[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def _spx_fetch_batch(self, indices: np.ndarray) -> list[np.ndarray] | None:
        """The collated batch for ``indices`` (shape ``(B,)``), or None to fall back."""
        # Only when __getitem__ is ours: a subclass may transform samples.
        if type(self).__getitem__ is not TensorDataset.__getitem__:
            return None
        if self._host is None:
            # Jax arrays are immutable, so one host copy serves every batch; numpy arrays are
            # used as they are (later in-place edits stay visible, as with per-sample reads).
            self._host = tuple(
                np.asarray(t._data if isinstance(t, Tensor) else t) for t in self.tensors
            )
        if any(not is_numeric(h.dtype) for h in self._host):
            return None
        # default_collate turns the per-sample tuple into a list of stacked arrays.
        return [h[indices] for h in self._host]


def _as_tensor(t: Any) -> Tensor:
    return t if isinstance(t, Tensor) else Tensor._of(jnp.asarray(t))


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices`` (mirrors ``torch.utils.data.Subset``).

    Args:
        dataset: the whole dataset.
        indices: indices into ``dataset``, in the order the subset exposes them.

    Example:
        >>> Subset(range(10), [7, 3])[1]
        3
    """

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> T_co:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[T_co]:
        # Forward batched reads so a dataset with its own __getitems__ keeps its fast path.
        mapped = [self.indices[i] for i in indices]
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems(mapped)
        return [self.dataset[i] for i in mapped]

    def __len__(self) -> int:
        return len(self.indices)

    def _spx_fetch_batch(self, indices: np.ndarray) -> list[np.ndarray] | None:
        if type(self).__getitem__ is not Subset.__getitem__:
            return None
        inner = getattr(self.dataset, "_spx_fetch_batch", None)
        if inner is None:
            return None
        return inner(np.asarray([self.indices[i] for i in indices.tolist()], dtype=np.int64))


class ConcatDataset(Dataset[T_co]):
    """Map-style datasets one after another (mirrors ``torch.utils.data.ConcatDataset``).

    Args:
        datasets: non-empty sequence of map-style datasets.

    Example:
        >>> ds = ConcatDataset([range(2), range(10, 13)])
        >>> len(ds), ds[2], ds[-1]
        (5, 10, 12)
    """

    def __init__(self, datasets: Iterable[Dataset[T_co]]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for i, d in enumerate(self.datasets):
            if isinstance(d, IterableDataset):
                raise ValueError(
                    f"ConcatDataset: dataset {i} is an IterableDataset; use ChainDataset "
                    "to concatenate streams"
                )
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        n = len(self)
        if idx < 0:
            if -idx > n:
                raise ValueError(
                    f"ConcatDataset: index {idx} is out of range for a dataset of length {n}"
                )
            idx = n + idx
        if idx >= n:
            raise IndexError(f"ConcatDataset: index {idx} is out of range for length {n}")
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset[T_co]):
    """Iterable datasets one after another (mirrors ``torch.utils.data.ChainDataset``).

    Args:
        datasets: iterable datasets.

    Example:
        >>> class R(IterableDataset):
        ...     def __init__(self, n):
        ...         self.n = n
        ...     def __iter__(self):
        ...         return iter(range(self.n))
        >>> list(ChainDataset([R(2), R(1)]))
        [0, 1, 0]
    """

    def __init__(self, datasets: Iterable[Dataset[T_co]]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator[T_co]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(
                    f"ChainDataset only chains IterableDatasets, got {type(d).__name__}"
                )
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)  # type: ignore[arg-type]


def _lengths_from_fractions(fractions: Sequence[float], n: int) -> list[int]:
    lengths = []
    for i, frac in enumerate(fractions):
        if not 0 <= frac <= 1:
            raise ValueError(f"random_split: fraction at index {i} is {frac}, not in [0, 1]")
        lengths.append(math.floor(n * frac))
    # torch's rule: hand the remainder out one by one, round-robin from the first split.
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(
                f"random_split: split {i} is empty (fraction {fractions[i]} of {n} samples)",
                stacklevel=3,
            )
    return lengths


def random_split(
    dataset: Dataset[T_co],
    lengths: Sequence[int | float],
    generator: GeneratorLike | None = None,
) -> list[Subset[T_co]]:
    """Split ``dataset`` into non-overlapping random subsets (mirrors torch's ``random_split``).

    Args:
        dataset: a map-style dataset with ``__len__``.
        lengths: split sizes summing to ``len(dataset)``, or fractions summing to 1 (each split
            gets ``floor(frac * N)``, then the remainder is handed out one by one round-robin).
        generator: an int seed or a ``numpy.random.Generator``; None draws from spx's global
            generator (``spx.manual_seed``).

    Returns:
        One :class:`Subset` per entry of ``lengths``.

    Example:
        >>> train, val = random_split(range(10), [0.8, 0.2], generator=0)
        >>> len(train), len(val)
        (8, 2)
    """
    n = len(dataset)  # type: ignore[arg-type]
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        lengths = _lengths_from_fractions(lengths, n)
    hint = "give non-negative integer lengths or fractions that sum to 1"
    lengths = [
        _validate.as_int(
            l, f"lengths[{i}]", "random_split", minimum=0, hint=hint, wrong_type=ValueError
        )
        for i, l in enumerate(lengths)
    ]
    if sum(lengths) != n:
        raise ValueError(
            f"random_split: lengths {list(lengths)} sum to {sum(lengths)}, but the dataset has "
            f"{n} samples; make them sum to {n} or pass fractions that sum to 1"
        )
    rng = as_generator(generator, what="random_split")
    if rng is None:
        rng = np.random.default_rng(fresh_seed())
    perm = rng.permutation(n).tolist()
    splits, offset = [], 0
    for length in lengths:
        splits.append(Subset(dataset, perm[offset : offset + length]))
        offset += length
    return splits
