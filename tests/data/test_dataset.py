"""Datasets and random_split, checked against torch.utils.data."""

import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx.data import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)

torch = pytest.importorskip("torch")
import torch.utils.data as tdata  # noqa: E402


def _arrays(n=6):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int64) * 10
    return x, y


@pytest.mark.parametrize("index", [0, 3, -1, slice(1, 4)])
def test_tensor_dataset_items_equal_torch(index):
    x, y = _arrays()
    ours = TensorDataset(x, jnp.asarray(y))
    ref = tdata.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    assert len(ours) == len(ref) == 6
    for a, b in zip(ours[index], ref[index], strict=True):
        np.testing.assert_array_equal(np.asarray(a), b.numpy())


def test_tensor_dataset_rejects_bad_arrays():
    x, y = _arrays()
    with pytest.raises(ValueError, match=r"\(6, 3\), \(5,\)"):
        TensorDataset(x, y[:5])
    with pytest.raises(ValueError, match="at least one"):
        TensorDataset()
    with pytest.raises(ValueError, match="0-d"):
        TensorDataset(np.array(1.0))
    with pytest.raises(TypeError, match=r"spx\.tensor"):
        TensorDataset([1, 2, 3])


def test_subset_equals_torch():
    x, y = _arrays()
    ours = Subset(TensorDataset(x, y), [4, 0, 2])
    ref = tdata.Subset(tdata.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), [4, 0, 2])
    assert len(ours) == len(ref) == 3
    for i in range(3):
        for a, b in zip(ours[i], ref[i], strict=True):
            np.testing.assert_array_equal(a, b.numpy())
    got = ours.__getitems__([2, 1])
    assert [int(s[1]) for s in got] == [20, 0]


class _Range(Dataset):
    def __init__(self, start, n):
        self.start, self.n = start, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.start + i


def test_concat_dataset_equals_torch():
    parts = [_Range(0, 3), _Range(100, 0), _Range(10, 4)]
    ours = ConcatDataset(parts)
    ref = tdata.ConcatDataset(parts)
    assert len(ours) == len(ref) == 7
    assert ours.cumulative_sizes == ref.cumulative_sizes
    for i in range(-7, 7):
        assert ours[i] == ref[i]
    with pytest.raises(ValueError):
        ours[-8]
    with pytest.raises(IndexError):
        ours[7]
    plus = _Range(0, 2) + _Range(5, 1)
    assert isinstance(plus, ConcatDataset) and [plus[i] for i in range(3)] == [0, 1, 5]


def test_concat_dataset_rejects_empty_and_iterable():
    with pytest.raises(ValueError, match="empty"):
        ConcatDataset([])
    with pytest.raises(ValueError, match="ChainDataset"):
        ConcatDataset([_Stream(3)])


class _Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


class _TorchStream(tdata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))


def test_chain_dataset_equals_torch():
    ours = ChainDataset([_Stream(2), _Stream(3)])
    ref = tdata.ChainDataset([_TorchStream(2), _TorchStream(3)])
    assert list(ours) == list(ref) == [0, 1, 0, 1, 2]
    assert len(ours) == 5
    assert list(_Stream(1) + _Stream(2)) == [0, 0, 1]


@pytest.mark.parametrize(
    "n, fractions",
    [(10, [0.8, 0.2]), (10, [0.3, 0.3, 0.4]), (7, [0.5, 0.5]), (11, [1 / 3] * 3), (30, [0.1] * 10)],
)
def test_random_split_fraction_lengths_equal_torch(n, fractions):
    ours = random_split(range(n), fractions, generator=0)
    ref = tdata.random_split(range(n), fractions, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in ours] == [len(s) for s in ref]
    flat = [i for s in ours for i in s]
    assert sorted(flat) == list(range(n))


def test_random_split_lengths_reproducible_and_seeded():
    a = [list(s) for s in random_split(range(20), [5, 15], generator=3)]
    b = [list(s) for s in random_split(range(20), [5, 15], generator=np.random.default_rng(3))]
    c = [list(s) for s in random_split(range(20), [5, 15], generator=4)]
    assert a == b and a != c
    assert sorted(a[0] + a[1]) == list(range(20))
    spx.manual_seed(11)
    d = [list(s) for s in random_split(range(20), [5, 15])]
    spx.manual_seed(11)
    assert d == [list(s) for s in random_split(range(20), [5, 15])]


def test_random_split_bad_lengths_raise_value_error_like_torch():
    with pytest.raises(ValueError):
        tdata.random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match=r"sum to 6.*10 samples"):
        random_split(range(10), [3, 3], generator=0)
    with pytest.raises(ValueError, match="fraction"):
        random_split(range(10), [1.5, -0.5], generator=0)
    with pytest.raises(TypeError, match=r"numpy\.random\.Generator"):
        random_split(range(10), [5, 5], generator=torch.Generator())


def test_random_split_warns_on_empty_split_like_torch():
    with pytest.warns(UserWarning):
        ref = tdata.random_split(range(2), [0.0, 1.0])
    with pytest.warns(UserWarning, match="empty"):
        ours = random_split(range(2), [0.0, 1.0], generator=0)
    assert [len(s) for s in ours] == [len(s) for s in ref] == [0, 2]
