"""``DistributedSampler``: each rank reads its own slice of the dataset.

Mirrors ``torch.utils.data.distributed.DistributedSampler`` index for index when
``shuffle=False``: the index list is padded by repeating its head (or cut, with
``drop_last``) to a multiple of the number of replicas, and rank ``r`` takes
``indices[r::num_replicas]``; with ``shuffle=True`` too: the permutation is torch's
``randperm(N)`` of a generator seeded with ``seed + epoch``
(:func:`spx.data.randperm.torch_randperm`), identical on every rank, so a job ported from
torch reads its samples in torch's order.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized

import numpy as np

from spx import _validate
from spx.data.randperm import torch_randperm
from spx.data.sampler import Sampler


def _default_group_value(what: str) -> int:
    """The current process group's world size or rank, or a RuntimeError saying what to do."""
    help_text = (
        f"DistributedSampler: {what} was not given and there is no initialized process group to "
        "read it from. Call spx.distributed.init_process_group() first (e.g. under spx-run), or "
        "pass num_replicas= and rank= explicitly."
    )
    try:
        # Imported lazily: spx.data must not need the distributed runtime to be importable.
        from spx import distributed as dist
    except ImportError as e:
        raise RuntimeError(help_text) from e
    if not dist.is_initialized():
        raise RuntimeError(help_text)
    # spx's rule: with a device mesh that has a "dp" dimension, the data-parallel ranks share
    # the dataset (pipeline stages of one replica read the same samples); else, as torch,
    # the default group.
    mesh_module = getattr(dist, "device_mesh", None)  # (absent from test doubles of dist)
    dp = None if mesh_module is None else mesh_module.data_parallel_mesh()
    if dp is not None:
        return dp.size() if what == "num_replicas" else dp.get_local_rank()
    return dist.get_world_size() if what == "num_replicas" else dist.get_rank()


class DistributedSampler(Sampler[int]):
    """Restrict loading to this rank's share of the dataset (mirrors torch's sampler).

    Every rank gets ``num_samples`` indices: ``ceil(N / R)``, or with ``drop_last`` and
    ``N % R != 0`` ``ceil((N - R) / R)``. Call :meth:`set_epoch` before each epoch so that
    shuffling differs between epochs (all ranks must use the same seed and epoch).

    Args:
        dataset: a map-style dataset (anything with ``__len__``).
        num_replicas: number of ranks; default the process group's world size, or the size of
            the data-parallel dimension when this rank created a device mesh with a ``"dp"``
            dimension (``spx.distributed.init_device_mesh(..., mesh_dim_names=(..., "dp"))``).
        rank: this rank, ``0 <= rank < num_replicas``; default the process group's rank, or
            this rank's index along ``"dp"`` in that case.
        shuffle: permute indices each epoch, seeded by ``seed + epoch``.
        seed: shuffle seed, identical on all ranks.
        drop_last: cut the tail to make the dataset divisible by ``num_replicas`` instead of
            padding it with repeated samples.

    Example:
        >>> [list(DistributedSampler(range(10), 4, r, shuffle=False)) for r in range(4)]
        [[0, 4, 8], [1, 5, 9], [2, 6, 0], [3, 7, 1]]
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None:
            num_replicas = _default_group_value("num_replicas")
        if rank is None:
            rank = _default_group_value("rank")
        where = "DistributedSampler"
        num_replicas = _validate.as_int(
            num_replicas, "num_replicas", where, minimum=1, wrong_type=ValueError
        )
        rank = _validate.as_int(
            rank, "rank", where, minimum=0, maximum=num_replicas - 1, wrong_type=ValueError,
            hint=f"invalid rank for num_replicas={num_replicas}",
        )  # fmt: skip
        seed = _validate.as_int(seed, "seed", where, minimum=0, wrong_type=ValueError)
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        self.shuffle = shuffle
        self.seed = seed
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            # Drop the tail so that every rank gets the same amount of real data.
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        indices = torch_randperm(n, self.seed + self.epoch) if self.shuffle else np.arange(n)
        if self.drop_last:
            indices = indices[: self.total_size]
        elif self.total_size > n:
            # Pad by repeating the head (cycling it when padding exceeds the dataset), as torch.
            indices = np.resize(indices, self.total_size)
        own = indices[self.rank : self.total_size : self.num_replicas]
        if len(own) != self.num_samples:
            raise RuntimeError(
                f"DistributedSampler: rank {self.rank} got {len(own)} indices, expected "
                f"{self.num_samples}; did the dataset length change after construction "
                f"(now {n})?"
            )
        return iter(own.tolist())

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch, so that ``shuffle=True`` gives this epoch's permutation.

        Args:
            epoch: epoch number (same on all ranks).
        """
        self.epoch = epoch
