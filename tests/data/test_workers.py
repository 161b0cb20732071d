"""DataLoader with worker threads: same batches as num_workers=0, clean shutdown, torch's rules."""

import math
import threading
import time

import numpy as np
import pytest

import spx
from spx.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info


def _tensor_ds(n=50):
    rng = np.random.default_rng(1)
    return TensorDataset(rng.standard_normal((n, 3), dtype=np.float32), np.arange(n))


class _Jittery(Dataset):
    """Per-sample loading with random delays, so worker replies arrive out of order."""

    def __init__(self, n=40):
        self.n = n
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(float(self.rng.uniform(0, 0.002)))
        return {"x": np.full(2, i, np.float32), "i": i}


def _as_lists(loader):
    out = []
    for batch in loader:
        if isinstance(batch, dict):
            out.append({k: np.asarray(v).tolist() for k, v in batch.items()})
        else:
            out.append([np.asarray(v).tolist() for v in batch])
    return out


@pytest.fixture
def no_leaked_threads():
    before = threading.active_count()
    yield
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == before, [t.name for t in threading.enumerate()]


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
def test_two_workers_same_batches_as_zero(shuffle, drop_last, no_leaked_threads):
    kw = {"batch_size": 7, "shuffle": shuffle, "drop_last": drop_last}
    for ds in (_tensor_ds(), _Jittery()):
        ref = _as_lists(DataLoader(ds, generator=5, **kw))
        got = _as_lists(DataLoader(ds, generator=5, num_workers=2, **kw))
        assert got == ref


class _Sharded(IterableDataset):
    def __init__(self, n, shard=True):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


@pytest.mark.parametrize(
    "n, shard, drop_last, expected",
    [
        # torch's order: batches round-robin over workers, a worker drops out when it runs dry.
        (10, True, False, [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]),
        (7, True, False, [[0, 2], [1, 3], [4, 6], [5]]),
        (7, True, True, [[0, 2], [1, 3], [4, 6]]),
        # Without sharding every worker replays the whole stream, as in torch.
        (3, False, False, [[0, 1], [0, 1], [2], [2]]),
    ],
)
def test_iterable_dataset_worker_order(n, shard, drop_last, expected, no_leaked_threads):
    loader = DataLoader(_Sharded(n, shard), batch_size=2, num_workers=2, drop_last=drop_last)
    assert [np.asarray(b).tolist() for b in loader] == expected
    # Each epoch restarts every worker's stream.
    assert [np.asarray(b).tolist() for b in loader] == expected


def test_worker_init_fn_and_worker_info(no_leaked_threads):
    calls = []
    infos = {}
    ds = _tensor_ds(20)

    class Probe(Dataset):
        def __len__(self):
            return 20

        def __getitem__(self, i):
            info = get_worker_info()
            infos[info.id] = (info, spx.initial_seed(), threading.current_thread())
            return ds[i]

    def init(worker_id):
        calls.append((worker_id, threading.current_thread()))

    assert get_worker_info() is None
    probe = Probe()
    list(DataLoader(probe, batch_size=2, num_workers=2, worker_init_fn=init, generator=0))
    assert sorted(w for w, _ in calls) == [0, 1]
    assert all(t is not threading.main_thread() for _, t in calls)
    assert set(infos) == {0, 1}
    seeds = set()
    for wid, (info, spx_seed, _) in infos.items():
        # the worker's own copy, as torch's worker process has its own
        assert info.id == wid and info.num_workers == 2 and type(info.dataset) is Probe
        assert info.dataset is not probe
        assert spx_seed == info.seed  # spx's generator in the worker is seeded per worker
        seeds.add(info.seed)
    assert len(seeds) == 2
    assert get_worker_info() is None


class _Slow(Dataset):
    def __init__(self, n=1000, delay=0.01):
        self.n, self.delay = n, delay
        self.fetched = []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.delay)
        self.fetched.append(i)
        return np.float32(i)


def test_break_ends_cleanly(no_leaked_threads):
    ds = _Slow()
    loader = DataLoader(ds, batch_size=1, num_workers=2)
    start = time.monotonic()
    for i, batch in enumerate(loader):
        assert int(batch[0]) == i
        if i == 3:
            break
    assert time.monotonic() - start < 5  # no hang waiting for 1000 slow samples
    it = iter(DataLoader(_tensor_ds(), batch_size=4, num_workers=2))
    next(it)
    del it  # an abandoned iterator also stops its workers


def test_prefetch_factor_bounds_batches_in_flight(no_leaked_threads):
    ds = _Slow(n=100, delay=0.001)
    it = iter(DataLoader(ds, batch_size=2, num_workers=2, prefetch_factor=3))
    next(it)
    time.sleep(0.3)  # time enough to load all 50 batches if nothing bounded it
    # The batch handed out, plus at most prefetch_factor * num_workers batches in flight.
    assert len(ds.fetched) <= 2 * (1 + 3 * 2)
    del it


def test_worker_error_is_raised_with_its_type(no_leaked_threads):
    class Bad(Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            if i == 5:
                raise KeyError(f"no sample {i}")
            return np.float32(i)

    loader = DataLoader(Bad(), batch_size=2, num_workers=2)
    seen = []
    with pytest.raises(KeyError, match="no sample 5") as info:
        for b in loader:
            seen.append(np.asarray(b).tolist())
    assert seen == [[0, 1], [2, 3]]  # errors surface in sampler order
    assert any("DataLoader worker" in note for note in info.value.__notes__)


def test_worker_init_fn_error_is_raised(no_leaked_threads):
    def init(worker_id):
        raise ValueError(f"init failed in {worker_id}")

    with pytest.raises(ValueError, match="init failed"):
        list(DataLoader(range(8), batch_size=2, num_workers=2, worker_init_fn=init))


def test_timeout_raises_runtime_error(no_leaked_threads):
    with pytest.raises(RuntimeError, match="timed out"):
        list(DataLoader(_Slow(n=4, delay=0.25), batch_size=1, num_workers=1, timeout=0.05))


def test_persistent_workers_keep_threads_and_order(no_leaked_threads):
    ds = _tensor_ds()
    inits = []
    kw = {"batch_size": 6, "shuffle": True}
    ref = DataLoader(ds, generator=9, **kw)
    loader = DataLoader(
        ds, generator=9, num_workers=2, persistent_workers=True, worker_init_fn=inits.append, **kw
    )
    threads_during = []
    for _ in range(2):
        batches = []
        for b in loader:
            batches.append([np.asarray(v).tolist() for v in b])
            threads_during.append(threading.active_count())
        assert batches == _as_lists(ref)
    assert sorted(inits) == [0, 1]  # workers started once
    assert len(set(threads_during)) == 1
    # An epoch abandoned half-way does not disturb the next one.
    for i, _ in enumerate(loader):
        if i == 2:
            break
    _as_lists(ref)  # the reference draws the abandoned epoch's order too
    assert [[np.asarray(v).tolist() for v in b] for b in loader] == _as_lists(ref)
    del loader  # stops the persistent workers


def test_default_device_context_reaches_worker_threads(no_leaked_threads):
    import jax

    dev = jax.devices()[2]
    loader = DataLoader(_tensor_ds(8), batch_size=4, num_workers=2, multiprocessing_context="spawn")
    with jax.default_device(dev):
        batches = list(loader)
    assert all(x.device == dev for x, _ in batches)
    with jax.default_device("cpu"):
        x, _ = next(iter(DataLoader(_tensor_ds(8), batch_size=4)))
    assert x.device == jax.local_devices(backend="cpu")[0]


def test_persistent_loader_used_as_a_temporary(no_leaked_threads):
    # The loader is garbage right after iter(); its workers must live until the loop ends.
    got = [
        np.asarray(y).tolist()
        for _, y in DataLoader(_tensor_ds(20), batch_size=5, num_workers=2, persistent_workers=True)
    ]
    assert got == [list(range(i, i + 5)) for i in range(0, 20, 5)]


class _Blocked(Dataset):
    """Items that wait for ``release`` (at most ``limit`` seconds): a stuck loader."""

    def __init__(self, release: threading.Event, limit: float = 10.0) -> None:
        self.release, self.limit = release, limit

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i):
        self.release.wait(self.limit)
        return np.float32(i)


def test_timeout_is_honoured_even_while_a_worker_is_stuck(no_leaked_threads):
    # Before: "timed out after 0.5 seconds" came after ~5.5 s (the shutdown waited for the
    # stuck item). torch raises after the timeout too.
    release = threading.Event()
    loader = DataLoader(_Blocked(release), batch_size=1, num_workers=1, timeout=0.5)
    start = time.monotonic()
    try:
        with pytest.raises(RuntimeError, match=r"timed out after 0\.5 seconds"):
            next(iter(loader))
        elapsed = time.monotonic() - start
    finally:
        release.set()  # let the worker finish its item and exit (no thread is left behind)
    assert 0.45 <= elapsed < 3.0, elapsed  # the old code took ~5.5 s; slack for a loaded machine


class _Range(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        return iter(range(self.start, self.end))


def _shard(worker_id):
    # torch's documented recipe: worker_init_fn rewrites its worker's dataset's bounds.
    info = get_worker_info()
    d = info.dataset
    per = math.ceil((d.end - d.start) / info.num_workers)
    d.start = d.start + info.id * per
    d.end = min(d.start + per, d.end)


class _Positioned(IterableDataset):  # keeps its position in self
    def __init__(self):
        self.i = 0

    def __iter__(self):
        self.i = 0
        while self.i < 4:
            yield self.i
            self.i += 1


class _Counting(Dataset):
    def __init__(self):
        self.calls = 0

    def __len__(self):
        return 6

    def __getitem__(self, i):
        self.calls += 1
        return i


# torch 2.13's results (each worker process has its own copy of the dataset): every element
# once, the loader's dataset untouched (a later single-process pass reads all of it, and the
# counter stays 0).
@pytest.mark.parametrize(
    "dataset, kw, batches, calls",
    [
        (_Range(3, 7), {"worker_init_fn": _shard}, [[3], [4], [5], [6]], None),
        (_Positioned(), {}, [[0], [0], [1], [1], [2], [2], [3], [3]], None),
        (_Counting(), {"batch_size": 2}, [[0, 1], [2, 3], [4, 5]], 0),
    ],
)
def test_each_worker_loads_from_its_own_copy_of_the_dataset_as_torch(
    dataset, kw, batches, calls, no_leaked_threads
):
    got = sorted(b.tolist() for b in DataLoader(dataset, num_workers=2, **kw))
    assert got == batches
    assert getattr(dataset, "calls", None) == calls
    if isinstance(dataset, _Range):
        assert (dataset.start, dataset.end) == (3, 7)
        assert sorted(b.tolist() for b in DataLoader(dataset)) == [[3], [4], [5], [6]]


def test_a_tensor_or_array_dataset_is_shared_not_copied(no_leaked_threads):
    # Copying would duplicate the data per worker and epoch; nothing of it is rebound.
    from spx.data._workers import _own

    for data in (spx.arange(6.0), np.arange(6.0), spx.arange(6.0)._data):
        assert _own(data) is data
    got = sorted(b.tolist() for b in DataLoader(spx.arange(6.0), batch_size=2, num_workers=2))
    assert got == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]


class _Forwarding(IterableDataset):
    """Forwards unknown attributes to the array it holds (so it answers __array__)."""

    def __init__(self, data):
        self.data, self.start, self.end = data, 0, len(data)

    def __iter__(self):
        return iter(self.data[self.start : self.end].tolist())

    def __getattr__(self, name):
        if name == "data":
            raise AttributeError(name)
        return getattr(self.data, name)


def test_a_dataset_forwarding_to_an_array_is_still_copied_per_worker(no_leaked_threads):
    got = DataLoader(_Forwarding(np.arange(8)), num_workers=2, worker_init_fn=_shard)
    assert sorted(b.tolist() for b in got) == [[i] for i in range(8)]  # torch's result
