"""DistributedSampler: torch's index arithmetic, seeded shuffling, and process-group defaults."""

import sys
import types

import pytest

import spx
from spx.data import DistributedSampler
from spx.data import distributed as spx_distributed

torch = pytest.importorskip("torch")
from torch.utils.data.distributed import DistributedSampler as TorchDistributedSampler  # noqa: E402


def test_reexported_from_spx_data():
    assert DistributedSampler is spx_distributed.DistributedSampler


def test_issue_example():
    got = [list(DistributedSampler(range(10), 4, r, shuffle=False)) for r in range(4)]
    assert got == [[0, 4, 8], [1, 5, 9], [2, 6, 0], [3, 7, 1]]


@pytest.mark.parametrize("n", [1, 2, 3, 7, 10, 16, 17])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("drop_last", [False, True])
def test_indices_equal_torch_without_shuffle(n, replicas, drop_last):
    data = range(n)
    for rank in range(replicas):
        ours = DistributedSampler(data, replicas, rank, shuffle=False, drop_last=drop_last)
        ref = TorchDistributedSampler(data, replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(ref), (n, replicas, rank, drop_last)
        assert len(ours) == len(ref) == ours.num_samples == ref.num_samples
        assert ours.total_size == ref.total_size


@pytest.mark.parametrize("drop_last", [False, True])
def test_shuffle_reproducible_differs_per_epoch_and_partitions(drop_last):
    n, replicas = 23, 4
    samplers = [
        DistributedSampler(range(n), replicas, r, seed=5, drop_last=drop_last)
        for r in range(replicas)
    ]
    epoch0 = [list(s) for s in samplers]
    again = [
        list(DistributedSampler(range(n), replicas, r, seed=5, drop_last=drop_last))
        for r in range(replicas)
    ]
    assert epoch0 == again
    for s in samplers:
        s.set_epoch(1)
    epoch1 = [list(s) for s in samplers]
    assert epoch1 != epoch0
    for s in samplers:
        s.set_epoch(0)
    assert [list(s) for s in samplers] == epoch0
    # The ranks together cover the (permuted) dataset exactly as the unshuffled sampler does.
    for epoch in (epoch0, epoch1):
        flat = sorted(i for part in epoch for i in part)
        ref = sorted(
            i
            for r in range(replicas)
            for i in TorchDistributedSampler(
                range(n), replicas, r, shuffle=False, drop_last=drop_last
            )
        )
        if drop_last:
            assert len(flat) == len(ref) and len(set(flat)) == len(flat)
        else:
            assert set(flat) == set(range(n)) and len(flat) == len(ref)
    # Different seeds give different orders.
    other = list(DistributedSampler(range(n), replicas, 0, seed=6, drop_last=drop_last))
    assert other != epoch0[0]


@pytest.mark.parametrize("n, replicas", [(8, 2), (10, 3), (7, 4), (1000, 3), (1, 2)])
@pytest.mark.parametrize("drop_last", [False, True])
def test_shuffled_indices_equal_torch(n, replicas, drop_last):
    for seed, epoch in ((0, 0), (3, 4), (2**32 + 5, 1)):
        for rank in range(replicas):
            ours = DistributedSampler(range(n), replicas, rank, seed=seed, drop_last=drop_last)
            ref = TorchDistributedSampler(range(n), replicas, rank, seed=seed, drop_last=drop_last)
            ours.set_epoch(epoch)
            ref.set_epoch(epoch)
            assert list(ours) == list(ref), (n, replicas, rank, seed, epoch)


def test_torch_randperm_is_torchs_for_a_seeded_generator():
    from spx.data.randperm import torch_randperm

    for n, seed in ((0, 1), (1, 1), (10, 0), (100, 42), (5000, 2**40 + 1), (3, -1)):
        g = torch.Generator()
        g.manual_seed(seed)
        assert torch_randperm(n, seed).tolist() == torch.randperm(n, generator=g).tolist()


@pytest.mark.parametrize("rank", [-1, 4, 5])
def test_bad_rank_raises_value_error_like_torch(rank):
    with pytest.raises(ValueError):
        TorchDistributedSampler(range(10), 4, rank)
    with pytest.raises(ValueError, match=r"rank .*\[0, 3\]"):
        DistributedSampler(range(10), 4, rank)


def _fake_dist(monkeypatch, initialized, world=3, rank=2):
    fake = types.ModuleType("spx.distributed")
    fake.is_initialized = lambda: initialized
    fake.get_world_size = lambda group=None: world
    fake.get_rank = lambda group=None: rank
    monkeypatch.setitem(sys.modules, "spx.distributed", fake)
    monkeypatch.setattr(spx, "distributed", fake, raising=False)


def test_defaults_come_from_process_group(monkeypatch):
    _fake_dist(monkeypatch, initialized=True, world=3, rank=2)
    s = DistributedSampler(range(7), shuffle=False)
    assert (s.num_replicas, s.rank) == (3, 2)
    assert list(s) == list(TorchDistributedSampler(range(7), 3, 2, shuffle=False))


def test_defaults_without_process_group_raise_runtime_error(monkeypatch):
    _fake_dist(monkeypatch, initialized=False)
    with pytest.raises(RuntimeError, match="init_process_group"):
        DistributedSampler(range(7))
    # Explicit values need no process group.
    assert len(DistributedSampler(range(7), num_replicas=2, rank=0)) == 4


def test_missing_distributed_module_raises_runtime_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "spx.distributed", None)  # makes the import fail
    monkeypatch.delattr(spx, "distributed", raising=False)
    with pytest.raises(RuntimeError, match="num_replicas= and rank="):
        DistributedSampler(range(7), rank=0)
