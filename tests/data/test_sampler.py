"""Samplers, checked against torch.utils.data (orders of random samplers: by seed, not by value)."""

from collections import Counter

import numpy as np
import pytest

import spx
from spx.data import (
    BatchSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

torch = pytest.importorskip("torch")
import torch.utils.data as tdata  # noqa: E402


def test_sequential_equals_torch():
    assert list(SequentialSampler(range(5))) == list(tdata.SequentialSampler(range(5)))
    assert len(SequentialSampler(range(5))) == 5


@pytest.mark.parametrize("n", [0, 1, 9, 10, 11])
@pytest.mark.parametrize("batch_size", [1, 3, 10])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_equals_torch(n, batch_size, drop_last):
    ours = BatchSampler(SequentialSampler(range(n)), batch_size, drop_last)
    ref = tdata.BatchSampler(tdata.SequentialSampler(range(n)), batch_size, drop_last)
    assert list(ours) == list(ref)
    assert len(ours) == len(ref)


@pytest.mark.parametrize("batch_size", [0, -2, True, 2.0])
def test_batch_sampler_bad_batch_size_raises_value_error_like_torch(batch_size):
    with pytest.raises(ValueError):
        tdata.BatchSampler(range(4), batch_size, False)
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(range(4), batch_size, False)


def test_batch_sampler_bad_drop_last():
    with pytest.raises(ValueError):
        tdata.BatchSampler(range(4), 2, 1)
    with pytest.raises(ValueError, match="drop_last"):
        BatchSampler(range(4), 2, 1)


def test_random_sampler_seed_reproducible_and_epochs_differ():
    a = RandomSampler(range(50), generator=7)
    b = RandomSampler(range(50), generator=7)
    a1, a2 = list(a), list(a)
    assert sorted(a1) == sorted(a2) == list(range(50))
    assert a1 != a2  # the generator advances between epochs, as a torch.Generator does
    assert [list(b), list(b)] == [a1, a2]
    assert list(RandomSampler(range(50), generator=8)) != a1


def test_random_sampler_numpy_generator_is_shared_state():
    rng = np.random.default_rng(3)
    s = RandomSampler(range(10), generator=rng)
    assert s.generator is rng
    assert list(s) == np.random.default_rng(3).permutation(10).tolist()


def test_random_sampler_without_generator_follows_spx_manual_seed():
    spx.manual_seed(5)
    first = list(RandomSampler(range(30)))
    spx.manual_seed(5)
    assert list(RandomSampler(range(30))) == first


def test_random_sampler_num_samples_and_replacement():
    s = RandomSampler(range(4), num_samples=10, generator=0)
    order = list(s)
    assert len(order) == len(s) == 10
    # Like torch: whole permutations first, then part of one.
    assert sorted(order[:4]) == sorted(order[4:8]) == [0, 1, 2, 3]
    assert len(set(order[8:])) == 2
    r = RandomSampler(range(3), replacement=True, num_samples=200, generator=0)
    drawn = list(r)
    assert len(drawn) == 200 and set(drawn) == {0, 1, 2}


def test_random_sampler_errors_match_torch_kinds():
    with pytest.raises(TypeError):
        tdata.RandomSampler(range(3), replacement=1)
    with pytest.raises(TypeError, match="replacement"):
        RandomSampler(range(3), replacement=1)
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError):
            tdata.RandomSampler(range(3), num_samples=bad)
        with pytest.raises(ValueError, match="num_samples"):
            RandomSampler(range(3), num_samples=bad)
    with pytest.raises(ValueError, match="empty"):
        RandomSampler(range(0))
    with pytest.raises(TypeError, match=r"spx\.Generator"):  # torch's own generator is not spx's
        RandomSampler(range(3), generator=torch.Generator())
    with pytest.raises(ValueError, match="generator seed must be a non-negative int, got -1"):
        RandomSampler(range(3), generator=-1)


def test_subset_random_sampler():
    s = SubsetRandomSampler([5, 7, 9, 11], generator=1)
    a, b = list(s), list(s)
    assert sorted(a) == sorted(b) == [5, 7, 9, 11] and len(s) == 4
    assert list(SubsetRandomSampler([5, 7, 9, 11], generator=1)) == a


def test_weighted_random_sampler():
    s = WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=0)
    counts = Counter(s)
    assert counts[0] == 0 and len(s) == 4000
    assert 2.5 < counts[2] / counts[1] < 3.5
    unique = list(WeightedRandomSampler([1, 1, 1, 0], 3, replacement=False, generator=0))
    assert sorted(unique) == [0, 1, 2]
    with pytest.raises(ValueError):
        tdata.WeightedRandomSampler([1.0, 2.0], 0)
    with pytest.raises(ValueError, match="num_samples"):
        WeightedRandomSampler([1.0, 2.0], 0)
    with pytest.raises(ValueError, match="1-D"):
        WeightedRandomSampler([[1.0, 2.0]], 2)
    with pytest.raises(ValueError, match="replacement=True"):
        WeightedRandomSampler([1.0, 0.0], 2, replacement=False)
