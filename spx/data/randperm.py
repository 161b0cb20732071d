"""torch's CPU ``randperm`` for a seeded generator, without torch.

``torch.randperm(n, generator=torch.Generator().manual_seed(seed))`` is a Fisher-Yates shuffle
(position ``i`` swaps with ``i + r % (n - i)``) drawing ``r`` from torch's CPU generator: an
mt19937 seeded with the seed's low 32 bits, one 32-bit output per step. numpy's legacy
``RandomState`` is the same mt19937 with the same seeding, so its raw outputs reproduce torch's
permutation exactly: a sampler seeded as torch's gives torch's order (``DistributedSampler``).

Example:
    >>> torch_randperm(10, 0).tolist()  # torch.randperm(10, generator=g.manual_seed(0))
    [4, 1, 7, 5, 3, 9, 0, 8, 6, 2]
"""

from __future__ import annotations

import numpy as np

__all__ = ["torch_randperm"]

_LOW_32 = 0xFFFFFFFF


def torch_randperm(n: int, seed: int) -> np.ndarray:
    """The permutation ``torch.randperm(n)`` gives for a generator seeded with ``seed``.

    Args:
        n: the number of indices (``0 .. n - 1``).
        seed: the generator's seed (torch keeps its low 32 bits, two's complement for a
            negative one).

    Returns:
        int64 array of shape ``(n,)``. About 0.5 s for a million indices (a Python loop: the
        shuffle is sequential).
    """
    draws = np.random.RandomState(seed & _LOW_32).randint(0, 2**32, max(n - 1, 0), np.uint64)
    order = list(range(n))
    for i, r in enumerate(draws.tolist()):
        j = i + r % (n - i)
        order[i], order[j] = order[j], order[i]
    return np.asarray(order, dtype=np.int64)
