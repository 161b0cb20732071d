"""DataLoader (num_workers=0) against torch.utils.data.DataLoader."""

import collections
import threading

import jax
import numpy as np
import pytest

import spx
from spx import _context
from spx.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    TensorDataset,
    default_collate,
    random_split,
)

torch = pytest.importorskip("torch")
import torch.utils.data as tdata  # noqa: E402

N = 23


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, 4, 2), dtype=np.float32)
    y = rng.integers(0, 100, size=N)
    return x, y


def _pair():
    x, y = _data()
    return TensorDataset(x, y), tdata.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))


def _assert_batches_equal(ours, ref):
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref, strict=True):
        assert isinstance(a, list) and len(a) == len(b)
        for u, v in zip(a, b, strict=True):
            assert isinstance(u, spx.Tensor)
            assert u.shape == tuple(v.shape)
            np.testing.assert_array_equal(np.asarray(u), v.numpy())


@pytest.mark.parametrize("batch_size", [1, 4, 5, 23, 30])
@pytest.mark.parametrize("drop_last", [False, True])
def test_tensor_dataset_batches_equal_torch(batch_size, drop_last):
    ours_ds, ref_ds = _pair()
    ours = DataLoader(ours_ds, batch_size=batch_size, drop_last=drop_last)
    ref = tdata.DataLoader(ref_ds, batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(ref)
    _assert_batches_equal(list(ours), list(ref))


def test_labels_arrive_with_jax_default_int():
    ours_ds, _ = _pair()
    x, y = next(iter(DataLoader(ours_ds, batch_size=4)))
    assert x.dtype == np.float32 and y.dtype == jax.numpy.asarray(np.int64(1)).dtype


def test_fast_path_matches_per_sample_path():
    ours_ds, _ = _pair()
    train, _ = random_split(ours_ds, [15, 8], generator=0)
    # A collate_fn that is not default_collate forces per-sample loading + collation.
    slow = DataLoader(train, batch_size=4, collate_fn=lambda b: default_collate(b))
    fast = DataLoader(train, batch_size=4)
    for a, b in zip(fast, slow, strict=True):
        for u, v in zip(a, b, strict=True):
            assert u.dtype == v.dtype
            np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


def test_subclass_getitem_is_not_bypassed():
    class Doubled(TensorDataset):
        def __getitem__(self, i):
            x, y = super().__getitem__(i)
            return x * 2, y

    x, y = _data()
    bx, _ = next(iter(DataLoader(Doubled(x, y), batch_size=3)))
    np.testing.assert_array_equal(np.asarray(bx), x[:3] * 2)


def test_sampler_and_batch_sampler_equal_torch():
    ours_ds, ref_ds = _pair()
    order = [5, 3, 22, 0, 9, 9, 1]
    _assert_batches_equal(
        list(DataLoader(ours_ds, batch_size=3, sampler=order)),
        list(tdata.DataLoader(ref_ds, batch_size=3, sampler=order)),
    )
    ours = DataLoader(ours_ds, batch_sampler=BatchSampler(SequentialSampler(ours_ds), 6, True))
    ref = tdata.DataLoader(
        ref_ds, batch_sampler=tdata.BatchSampler(tdata.SequentialSampler(ref_ds), 6, True)
    )
    assert len(ours) == len(ref) == 3
    _assert_batches_equal(list(ours), list(ref))


def test_no_batching_equals_torch():
    ours_ds, ref_ds = _pair()
    ours = list(DataLoader(ours_ds, batch_size=None))
    ref = list(tdata.DataLoader(ref_ds, batch_size=None))
    assert len(ours) == len(ref) == N
    for a, b in zip(ours, ref, strict=True):
        assert type(a) is type(b) is list  # default_convert turns a tuple into a list
        for u, v in zip(a, b, strict=True):
            np.testing.assert_array_equal(np.asarray(u), v.numpy())


class _Dicts(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": np.full(3, i, np.float32), "id": i, "tag": f"t{i}"}


def test_dict_samples_become_dict_batches():
    ours = list(DataLoader(_Dicts(), batch_size=2))
    ref = list(tdata.DataLoader(_Dicts(), batch_size=2))
    assert len(ours) == len(ref) == 3
    for a, b in zip(ours, ref, strict=True):
        assert isinstance(a["x"], spx.Tensor) and isinstance(a["id"], spx.Tensor)
        np.testing.assert_array_equal(np.asarray(a["x"]), b["x"].numpy())
        np.testing.assert_array_equal(np.asarray(a["id"]), b["id"].numpy())
        assert a["tag"] == b["tag"]


def test_shuffle_reproducible_from_seed_and_differs_across_epochs():
    ours_ds, _ = _pair()

    def epoch(loader):
        return np.concatenate([np.asarray(y) for _, y in loader]).tolist()

    a = DataLoader(ours_ds, batch_size=5, shuffle=True, generator=3)
    b = DataLoader(ours_ds, batch_size=5, shuffle=True, generator=np.random.default_rng(3))
    a1, a2 = epoch(a), epoch(a)
    assert [epoch(b), epoch(b)] == [a1, a2]
    assert a1 != a2
    _, y = _data()
    assert sorted(a1) == sorted(y.tolist())
    assert epoch(DataLoader(ours_ds, batch_size=5, shuffle=True, generator=4)) != a1
    spx.manual_seed(2)
    c1 = epoch(DataLoader(ours_ds, batch_size=5, shuffle=True))
    spx.manual_seed(2)
    assert epoch(DataLoader(ours_ds, batch_size=5, shuffle=True)) == c1


class _Stream(IterableDataset):
    def __init__(self, n, with_len=True):
        self.n, self.with_len = n, with_len

    def __iter__(self):
        for i in range(self.n):
            yield np.array([i, i * i], np.int32), float(i)

    def __len__(self):
        if not self.with_len:
            raise TypeError("_Stream has no length")
        return self.n


class _TorchStream(tdata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        for i in range(self.n):
            yield np.array([i, i * i], np.int32), float(i)

    def __len__(self):
        return self.n


@pytest.mark.parametrize("batch_size", [1, 3, 10, None])
@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_dataset_equals_torch(batch_size, drop_last):
    if batch_size is None and drop_last:
        return  # an invalid combination, checked in test_errors_like_torch
    ours = DataLoader(_Stream(10), batch_size=batch_size, drop_last=drop_last)
    ref = tdata.DataLoader(_TorchStream(10), batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(ref)
    got, want = list(ours), list(ref)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        for u, v in zip(a, b, strict=True):
            np.testing.assert_allclose(np.asarray(u), np.asarray(v))


def test_iterable_without_len():
    loader = DataLoader(_Stream(7, with_len=False), batch_size=2)
    assert sum(1 for _ in loader) == 4
    with pytest.raises(TypeError):
        len(loader)


def _both(kwargs, dataset_pair=None):
    ours_ds, ref_ds = dataset_pair or _pair()
    with pytest.raises(ValueError):
        tdata.DataLoader(ref_ds, **kwargs)
    with pytest.raises(ValueError) as info:
        DataLoader(ours_ds, **kwargs)
    return str(info.value)


def test_errors_like_torch():
    assert "shuffle" in _both({"sampler": [0, 1], "shuffle": True})
    bs = BatchSampler(range(N), 2, False)
    for extra in ({"batch_size": 4}, {"shuffle": True}, {"sampler": [0]}, {"drop_last": True}):
        assert "mutually exclusive" in _both({"batch_sampler": bs, **extra})
    for bad in (0, -3):
        assert f"batch_size must be a positive int, got {bad}" in _both({"batch_size": bad})
    assert "drop_last" in _both({"batch_size": None, "drop_last": True})
    assert "num_workers > 0" in _both({"prefetch_factor": 2})
    assert "num_workers > 0" in _both({"persistent_workers": True})
    assert "num_workers" in _both({"num_workers": -1})
    streams = (_Stream(4), _TorchStream(4))
    assert "shuffle" in _both({"shuffle": True}, streams)
    assert "sampler" in _both({"sampler": [0, 1]}, streams)
    assert "batch_sampler" in _both({"batch_sampler": [[0, 1]]}, streams)


def test_frozen_attributes_like_torch():
    ours_ds, ref_ds = _pair()
    with pytest.raises(ValueError):
        tdata.DataLoader(ref_ds).batch_size = 3
    loader = DataLoader(ours_ds)
    with pytest.raises(ValueError, match="new DataLoader"):
        loader.batch_size = 3
    loader.collate_fn = default_collate  # not frozen in torch either


def test_device_argument_places_batches():
    ours_ds, _ = _pair()
    dev = jax.devices()[-1]
    x, _ = next(iter(DataLoader(ours_ds, batch_size=2, device=dev)))
    assert x.device == dev
    x, _ = next(iter(DataLoader(ours_ds, batch_size=2, device="cpu")))
    assert x.device == spx.device("cpu")
    with pytest.raises(TypeError, match=r"jax\.Device"):
        next(iter(DataLoader(ours_ds, device=3)))


def test_batches_go_to_the_iterating_rank_device():
    ours_ds, _ = _pair()
    dev = jax.devices()[-1]
    seen = {}

    def rank_thread():
        _context.set_current(_context.RankContext(device=dev))
        x, _ = next(iter(DataLoader(ours_ds, batch_size=2)))
        seen["devices"] = {x.device}

    t = threading.Thread(target=rank_thread)
    t.start()
    t.join()
    assert seen["devices"] == {dev}


def test_custom_collate_output_is_moved_to_jax():
    Pair = collections.namedtuple("Pair", ["a", "b"])
    loader = DataLoader(
        range(6), batch_size=3, collate_fn=lambda b: Pair(np.asarray(b), [str(i) for i in b])
    )
    first = next(iter(loader))
    assert isinstance(first, Pair) and isinstance(first.a, spx.Tensor)
    assert first.a.tolist() == [0, 1, 2] and first.b == ["0", "1", "2"]
