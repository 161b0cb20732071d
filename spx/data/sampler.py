"""Samplers: which dataset indices a DataLoader visits, and in what order.

Mirrors ``torch.utils.data.sampler``. The one difference is the random source: torch samplers
take a ``torch.Generator``; spx samplers take either an ``int`` seed or a
``numpy.random.Generator`` (see :func:`as_generator`). Orders are reproducible from the seed,
but they are not torch's permutations (those need torch's own generator).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any, Generic, TypeVar

import numpy as np

from spx import _validate

T_co = TypeVar("T_co", covariant=True)

GeneratorLike = Any  # int | np.random.Generator | spx.Generator


def as_generator(generator: GeneratorLike | None, *, what: str) -> np.random.Generator | None:
    """Normalize a sampler's ``generator`` argument to a ``numpy.random.Generator``.

    An int seed becomes a fresh generator that the caller then keeps, so successive epochs draw
    successive (different, reproducible) orders - the way a seeded ``torch.Generator`` behaves.
    A ``numpy.random.Generator`` is used as is and its state is shared with the caller.

    Args:
        generator: None, an int seed (>= 0), a ``numpy.random.Generator`` or an
            :class:`spx.Generator` (its numpy stream, shared with it).
        what: the caller's name, for error messages.

    Returns:
        The generator, or None when ``generator`` is None.
    """
    if generator is None or isinstance(generator, np.random.Generator):
        return generator
    # Here: importing spx.data does not import JAX.
    from spx.generator import Generator, default_generator

    if generator is default_generator:  # the global stream: what None draws
        return None
    if isinstance(generator, Generator):
        return generator.numpy()
    if _validate.is_int(generator):
        seed = _validate.as_int(generator, "generator seed", what, minimum=0)
        return np.random.default_rng(seed)
    raise TypeError(
        f"{what}: generator must be an spx.Generator, an int seed or a numpy.random.Generator, "
        f"got {type(generator).__name__}; pass e.g. generator=spx.Generator().manual_seed(0)."
    )


def fresh_seed() -> int:
    """A 64-bit seed drawn from spx's global generator (the one ``spx.manual_seed`` sets).

    This is spx's counterpart of torch drawing from its default generator when no generator is
    given, so ``spx.manual_seed(n)`` makes unseeded shuffles reproducible too.
    """
    # Imported here: samplers must not start the JAX backend just by being imported.
    import jax

    from spx import random as spx_random

    # The fresh subkey's own bits are the seed: no random op to compile and run.
    words = np.asarray(jax.random.key_data(spx_random.next_key())).ravel()
    return (int(words[0]) << 32) | int(words[-1])


def _rng_for_epoch(generator: np.random.Generator | None) -> np.random.Generator:
    return generator if generator is not None else np.random.default_rng(fresh_seed())


class Sampler(Generic[T_co]):
    """Base class of all samplers (mirrors ``torch.utils.data.Sampler``).

    Subclasses implement ``__iter__`` over dataset indices (or lists of indices for batch
    samplers) and usually ``__len__``.
    """

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler[int]):
    """Yields ``0, 1, ..., len(data_source) - 1`` (mirrors ``torch.utils.data.SequentialSampler``).

    Args:
        data_source: anything with ``__len__``.

    Example:
        >>> list(SequentialSampler(range(3)))
        [0, 1, 2]
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """Yields indices in random order (mirrors ``torch.utils.data.RandomSampler``).

    Without replacement each epoch is a permutation (``num_samples > len`` chains several
    permutations, as torch does); with replacement indices are drawn uniformly.

    Args:
        data_source: anything with ``__len__``.
        replacement: draw with replacement.
        num_samples: how many indices per epoch; default ``len(data_source)``.
        generator: an int seed or a ``numpy.random.Generator``. A seed gives a reproducible
            sequence of epochs (each epoch differs from the last); a Generator is shared with
            the caller. None draws each epoch's seed from spx's global generator, so
            ``spx.manual_seed`` makes it reproducible.

    Example:
        >>> sampler = RandomSampler(range(5), generator=0)
        >>> sorted(sampler)
        [0, 1, 2, 3, 4]
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: GeneratorLike | None = None,
    ) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(
                f"RandomSampler: replacement should be a bool, got replacement={replacement!r}"
            )
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = as_generator(generator, what="RandomSampler")
        _validate.as_int(
            self.num_samples, "num_samples", "RandomSampler", minimum=1, wrong_type=ValueError,
            hint="the dataset is empty" if num_samples is None else "",
        )  # fmt: skip

    @property
    def num_samples(self) -> int:
        # Read the length lazily: the dataset may grow between epochs, as torch allows.
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        rng = _rng_for_epoch(self.generator)
        if self.replacement:
            yield from rng.integers(0, n, size=self.num_samples).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        # Draw the partial permutation only when needed (torch always draws it), so an epoch
        # consumes the generator the same way whether or not the loop ran to the end.
        if self.num_samples % n:
            yield from rng.permutation(n)[: self.num_samples % n].tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """Yields the given indices in random order (mirrors torch's ``SubsetRandomSampler``).

    Args:
        indices: the dataset indices to draw from.
        generator: an int seed or a ``numpy.random.Generator`` (see :class:`RandomSampler`).

    Example:
        >>> sorted(SubsetRandomSampler([3, 5, 7], generator=0))
        [3, 5, 7]
    """

    def __init__(self, indices: Sequence[int], generator: GeneratorLike | None = None) -> None:
        self.indices = indices
        self.generator = as_generator(generator, what="SubsetRandomSampler")

    def __iter__(self) -> Iterator[int]:
        rng = _rng_for_epoch(self.generator)
        for i in rng.permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """Draws indices ``0..len(weights)-1`` with the given (unnormalized) probabilities.

    Mirrors torch's ``WeightedRandomSampler`` (``torch.multinomial`` semantics).

    Args:
        weights: 1-D sequence of non-negative weights, shape ``(N,)``.
        num_samples: how many indices per epoch.
        replacement: draw with replacement; without it ``num_samples`` may not exceed the
            number of non-zero weights.
        generator: an int seed or a ``numpy.random.Generator`` (see :class:`RandomSampler`).

    Example:
        >>> list(WeightedRandomSampler([0.0, 1.0], 3, generator=0))
        [1, 1, 1]
    """

    def __init__(
        self,
        weights: Sequence[float],
        num_samples: int,
        replacement: bool = True,
        generator: GeneratorLike | None = None,
    ) -> None:
        num_samples = _validate.as_int(
            num_samples, "num_samples", "WeightedRandomSampler", minimum=1, wrong_type=ValueError
        )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"WeightedRandomSampler: replacement should be a bool, got {replacement!r}"
            )
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(
                f"WeightedRandomSampler: weights should be a 1-D sequence, got shape {w.shape}"
            )
        if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise ValueError(
                "WeightedRandomSampler: weights must be finite, non-negative and not all zero"
            )
        if not replacement and num_samples > np.count_nonzero(w):
            raise ValueError(
                f"WeightedRandomSampler: cannot draw num_samples={num_samples} without "
                f"replacement from {np.count_nonzero(w)} non-zero weights; lower num_samples "
                "or set replacement=True"
            )
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = as_generator(generator, what="WeightedRandomSampler")

    def __iter__(self) -> Iterator[int]:
        rng = _rng_for_epoch(self.generator)
        p = self.weights / self.weights.sum()
        draw = rng.choice(len(p), size=self.num_samples, replace=self.replacement, p=p)
        yield from draw.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Groups another sampler's indices into lists of ``batch_size``.

    Mirrors ``torch.utils.data.BatchSampler``.

    Args:
        sampler: a sampler or any iterable of indices.
        batch_size: positive batch size.
        drop_last: drop the last batch when it is shorter than ``batch_size``.

    Example:
        >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
        [[0, 1], [2, 3], [4]]
    """

    def __init__(
        self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool
    ) -> None:
        batch_size = _validate.as_int(
            batch_size, "batch_size", "BatchSampler", minimum=1, wrong_type=ValueError,
            hint="use batch_size=None in the DataLoader to disable batching",
        )  # fmt: skip
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a bool, got drop_last={drop_last!r}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        it = iter(self.sampler)
        while batch := list(itertools.islice(it, self.batch_size)):
            if self.drop_last and len(batch) < self.batch_size:
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size
