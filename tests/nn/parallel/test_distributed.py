"""DistributedDataParallel on thread ranks and on process ranks, against single-process training.

Every rank function runs on both backends (``tests/distributed/_ranks.py``): threads of this
process (``spx.distributed.spawn``) and real processes under a torchrun-style environment. The
reference is the same model trained in this process on the global batch (the concatenation of
every rank's batch): with a mean loss, the average of the ranks' gradients is the global
batch's gradient, so the parameters must agree after every step.
"""

from __future__ import annotations

import numpy as np
import pytest

import spx
import spx.distributed as dist
from spx import nn
from spx.distributed import process_group
from spx.nn.parallel import DistributedDataParallel as DDP
from tests.distributed._ranks import BACKENDS, run_ranks

B, D_IN, D_OUT, STEPS = 4, 6, 3, 10
RTOL, ATOL = 1e-5, 1e-6


def make_model(seed: int) -> nn.Module:
    spx.manual_seed(seed)
    return nn.Sequential(nn.Linear(D_IN, 16), nn.Tanh(), nn.Linear(16, D_OUT))


def data(world: int, steps: int = STEPS) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(world)
    x = rng.standard_normal((steps, world * B, D_IN)).astype(np.float32)
    y = rng.standard_normal((steps, world * B, D_OUT)).astype(np.float32)
    return x, y


def mse(out: spx.Tensor, y: spx.Tensor) -> spx.Tensor:
    return ((out - y) ** 2).mean()


def reference(world: int, steps: int = STEPS) -> list[np.ndarray]:
    """Parameters after ``steps`` SGD steps on the global batch, in one process."""
    x, y = data(world, steps)
    model = make_model(0)
    opt = spx.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for s in range(steps):
        opt.zero_grad()
        mse(model(spx.as_tensor(x[s])), spx.as_tensor(y[s])).backward()
        opt.step()
    return [np.asarray(p.detach()) for p in model.parameters()]


def shard(a: np.ndarray, rank: int) -> spx.Tensor:
    return spx.as_tensor(a[rank * B : (rank + 1) * B])


def assert_params(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=f"parameter {i}")


# -- training equals the global batch -----------------------------------------------------------
def _train(rank, out, mode):
    dist.init_process_group()
    world = dist.get_world_size()
    x, y = data(world)
    model = make_model(rank)  # different on every rank: DDP broadcasts rank 0's
    ddp = DDP(model, bucket_cap_mb=0.0005)  # several buckets for this small model
    opt = spx.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)

    def step(ddp, opt, xb, yb):
        opt.zero_grad()
        loss = mse(ddp(xb), yb)
        loss.backward()
        opt.step()
        return loss

    if mode == "compiled":
        step = spx.compile(step)
    for s in range(STEPS):
        if mode == "functional":  # spx.backward, the explicit form
            opt.zero_grad()
            xb, yb = shard(x[s], rank), shard(y[s], rank)
            spx.backward(lambda m, xb=xb, yb=yb: mse(m(xb), yb), ddp)
            opt.step()
        else:
            loss = step(ddp, opt, shard(x[s], rank), shard(y[s], rank))
            # An eager collective right after the (asynchronously dispatched) compiled step:
            # it must queue behind the step's all-reduces on every rank, not between them.
            dist.all_reduce(loss, op=dist.ReduceOp.AVG)
    out[rank] = [np.asarray(p.detach()) for p in model.parameters()]


@pytest.mark.parametrize("mode", ["eager", "compiled", "functional"])
@pytest.mark.parametrize(
    ("backend", "world"), [("thread", 2), ("thread", 4), ("process", 2), ("process", 4)]
)
def test_ddp_matches_single_process_training_on_the_global_batch(backend, world, mode):
    out = run_ranks(_train, world, mode, backend=backend)
    want = reference(world)
    for r in range(world):
        assert_params(out[r], want)


# -- no_sync -------------------------------------------------------------------------------------
def _accumulate(rank, out):
    dist.init_process_group()
    world = dist.get_world_size()
    x, y = data(world, steps=2)
    ddp = DDP(make_model(rank))
    reducer = ddp._reducer
    with ddp.no_sync():
        mse(ddp(shard(x[0], rank)), shard(y[0], rank)).backward()
    assert reducer.collectives == 0  # accumulated locally
    mse(ddp(shard(x[1], rank)), shard(y[1], rank)).backward()
    out[rank] = [np.asarray(p.grad) for p in ddp.module.parameters()]


def _accumulate_compiled(rank, out):
    """no_sync() around a compiled backward is read when the program runs, not when traced."""
    dist.init_process_group()
    world = dist.get_world_size()
    x, y = data(world, steps=2)
    ddp = DDP(make_model(rank))

    @spx.compile
    def backward(ddp, xb, yb):
        loss = mse(ddp(xb), yb)
        loss.backward()
        return loss

    with ddp.no_sync():
        backward(ddp, shard(x[0], rank), shard(y[0], rank))  # traced here, under no_sync
    assert ddp._reducer.collectives == 0
    backward(ddp, shard(x[1], rank), shard(y[1], rank))  # the same program, now averaging
    grads = [np.asarray(p.grad) for p in ddp.module.parameters()]  # waits for the program
    assert ddp._reducer.collectives == len(ddp.bucket_indices)

    @spx.compile
    def wrong(ddp, xb, yb):
        with ddp.no_sync():
            mse(ddp(xb), yb).backward()

    with pytest.raises(RuntimeError, match=r"no_sync\(\) was entered inside a compiled"):
        wrong(ddp, shard(x[0], rank), shard(y[0], rank))
    out[rank] = grads


@pytest.mark.parametrize(
    ("backend", "world", "fn"),
    [("thread", 2, _accumulate), ("process", 2, _accumulate), ("thread", 2, _accumulate_compiled)],
)
def test_no_sync_accumulation_equals_one_large_batch(backend, world, fn):
    out = run_ranks(fn, world, backend=backend)
    # Reference: the sum over both micro-steps of the global-batch mean gradients.
    x, y = data(world, steps=2)
    model = make_model(0)
    for s in range(2):
        mse(model(spx.as_tensor(x[s])), spx.as_tensor(y[s])).backward()
    want = [np.asarray(p.grad) for p in model.parameters()]
    for r in range(world):
        assert_params(out[r], want)


# -- buckets -------------------------------------------------------------------------------------
def _count_collectives(rank, out, cap_mb):
    dist.init_process_group()
    backend = process_group.default_group().backend
    ddp = DDP(make_model(0), bucket_cap_mb=cap_mb)
    calls = []
    real = backend.all_reduce

    def counting(x, op, async_op=False):
        calls.append(tuple(x.shape))
        return real(x, op, async_op)

    backend.all_reduce = counting
    try:
        mse(ddp(spx.ones(B, D_IN)), spx.zeros(B, D_OUT)).backward()
    finally:
        backend.all_reduce = real
    out[rank] = (ddp.bucket_indices, calls)


# Parameter bytes, in order: W1 16x6x4 = 384, b1 64, W2 3x16x4 = 192, b2 12.
@pytest.mark.parametrize(
    ("cap_mb", "buckets"),
    [
        (None, [[3, 2, 1, 0]]),  # torch's default: 25 MiB (1 MiB first bucket)
        (300 / 2**20, [[3, 2, 1], [0]]),  # b2+W2+b1 = 268 bytes fit, W1 does not
        (210 / 2**20, [[3, 2], [1], [0]]),  # b2+W2 = 204 bytes
        (1 / 2**20, [[3], [2], [1], [0]]),  # smaller than every tensor: one bucket each
    ],
)
def test_one_collective_per_bucket_in_reverse_parameter_order(cap_mb, buckets):
    out = run_ranks(_count_collectives, 2, cap_mb)
    for r in range(2):
        got_buckets, calls = out[r]
        assert got_buckets == buckets
        sizes = [16 * 6, 16, 3 * 16, 3]  # elements
        assert calls == [(sum(sizes[i] for i in b),) for b in buckets]


# -- state_dict, construction, errors ------------------------------------------------------------
def test_state_dict_keys_are_torchs_and_load_into_the_unwrapped_module():
    torch = pytest.importorskip("torch")

    def _keys(rank, out):
        dist.init_process_group()
        model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Linear(3, 2))
        ddp = DDP(model)
        sd = ddp.state_dict()
        fresh = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Linear(3, 2))
        # torch's recipe: strip the prefix, then load into the unwrapped module.
        torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, "module.")
        fresh.load_state_dict(sd)
        out[rank] = (list(ddp.state_dict()), list(sd), fresh, model)

    out = run_ranks(_keys, 1)
    keys, stripped, fresh, model = out[0]
    t = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    want = ["module." + k for k in t.state_dict()]  # what torch's DDP(t).state_dict() gives
    assert keys == want
    assert stripped == list(t.state_dict())
    for a, b in zip(fresh.state_dict().values(), model.state_dict().values(), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _construction(rank, out):
    dist.init_process_group()
    torch_like = make_model(rank)
    m = torch_like
    m[0].weight.requires_grad_(False)
    ddp = DDP(m, forward_sync_buffers=False)
    assert ddp.module is m and len(ddp._reducer.params) == 3  # frozen weight excluded
    # Parameters (trainable or not) now hold rank 0's values, in place.
    out[rank] = [np.asarray(p.detach()) for p in m.parameters()]
    with pytest.raises(RuntimeError, match="doesn't have any parameter that requires a grad"):
        DDP(nn.ReLU())
    with pytest.raises(TypeError, match=r"wraps an spx\.nn\.Module"):
        DDP(lambda x: x)
    with pytest.raises(ValueError, match=r"device_ids=\[0, 1\]"):
        DDP(make_model(0), device_ids=[0, 1])
    with pytest.raises(ValueError, match="positive number of MiB"):
        DDP(make_model(0), bucket_cap_mb=0)
    with pytest.raises(NotImplementedError, match="mixed_precision"):
        DDP(make_model(0), mixed_precision=object())


def test_construction_broadcasts_rank0_and_validates():
    out = run_ranks(_construction, 2)
    for a, b in zip(out[0], out[1], strict=True):
        np.testing.assert_array_equal(a, b)
    want = [np.asarray(p.detach()) for p in make_model(0).parameters()]
    for a, b in zip(out[1], want, strict=True):
        np.testing.assert_array_equal(a, b)


def _deprecated_broadcast_buffers(rank, out):
    dist.init_process_group()
    with pytest.warns(FutureWarning, match="forward_sync_buffers"):
        ddp = DDP(make_model(0), broadcast_buffers=False)
    out[rank] = ddp.forward_sync_buffers


def test_broadcast_buffers_is_torchs_deprecated_spelling():
    assert run_ranks(_deprecated_broadcast_buffers, 1) == {0: False}


def _unused(rank, out, find_unused):
    dist.init_process_group()

    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(3, 2), nn.Linear(3, 2)

        def forward(self, x, use_b):
            return self.b(x) if use_b else self.a(x)

    spx.manual_seed(0)
    ddp = DDP(TwoHeads(), find_unused_parameters=find_unused)
    x = spx.ones(2, 3) * (rank + 1)
    if not find_unused:
        with pytest.raises(RuntimeError, match=r"\['b.weight', 'b.bias'\].*find_unused_parameters"):
            ddp(x, False).sum().backward()
        out[rank] = True
        return
    ddp(x, rank == 1).sum().backward()  # rank 0 uses a, rank 1 uses b
    out[rank] = {
        n: None if p.grad is None else np.asarray(p.grad) for n, p in ddp.named_parameters()
    }


def test_unused_parameters_raise_or_are_averaged_as_zeros():
    assert run_ranks(_unused, 2, False) == {0: True, 1: True}
    out = run_ranks(_unused, 2, True)
    # Each head's gradient is (its rank's gradient + 0) / 2, on both ranks.
    for r in range(2):
        np.testing.assert_allclose(out[r]["module.a.weight"], np.full((2, 3), 1.0 * 2 / 2))
        np.testing.assert_allclose(out[r]["module.b.weight"], np.full((2, 3), 2.0 * 2 / 2))


class _Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(2, 2), nn.Linear(2, 1), nn.Linear(2, 1)

    def forward(self, x, use_c):
        h = self.a(x)
        return self.b(h) + self.c(h) if use_c else self.b(h)


def _branch_grads(x: spx.Tensor, use_c: bool) -> dict[str, np.ndarray]:
    """One rank's local gradients (the reference: no DDP)."""
    model = _Branchy()
    with spx.no_grad():
        for i, p in enumerate(model.parameters()):
            p.fill_(0.1 * (i + 1))
    model(x, use_c).sum().backward()
    return {
        n: np.zeros(p.shape, np.float32) if p.grad is None else np.asarray(p.grad)
        for n, p in model.named_parameters()
    }


def _unused_on_one_rank(rank, out):
    # Only rank 0 uses c: rank 1 has no missing parameter, and must still take part in the
    # used-map all-reduce (it skipped it: the ranks' collectives no longer lined up).
    dist.init_process_group()
    model = _Branchy()
    with spx.no_grad():
        for i, p in enumerate(model.parameters()):
            p.fill_(0.1 * (i + 1))
    ddp = DDP(model, find_unused_parameters=True)
    for _ in range(2):  # a second step reuses the buckets
        model.zero_grad()
        ddp(spx.ones(3, 2) * (rank + 1), rank == 0).sum().backward()
    out[rank] = {n: np.asarray(p.grad) for n, p in model.named_parameters()}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_parameter_unused_on_one_rank_only_is_averaged_with_zeros(backend):
    local = [_branch_grads(spx.ones(3, 2) * (r + 1), r == 0) for r in range(2)]
    out = run_ranks(_unused_on_one_rank, 2, backend=backend)
    for r in range(2):
        for name, g0 in local[0].items():
            want = (g0 + local[1][name]) / 2
            np.testing.assert_allclose(out[r][name], want, rtol=1e-6, err_msg=name)


def _sync_after_ddp_forward_only(rank, out):
    dist.init_process_group()
    model = nn.Linear(2, 1)
    with spx.no_grad():
        model.weight.fill_(1.0)
        model.bias.fill_(0.0)
    ddp = DDP(model)
    x = spx.ones(1, 2) * (rank + 1)
    model(x).sum().backward()  # through the inner module: no forward through ddp, local
    local = np.asarray(model.weight.grad)
    model.zero_grad(set_to_none=True)
    y = ddp(x).sum()
    y.backward(retain_graph=True)  # averaged
    y.backward()  # a second backward of the same forward: local, added
    twice = np.asarray(model.weight.grad)
    model.zero_grad(set_to_none=True)
    loss = ddp(x).sum()  # armed outside no_sync(): averaged although backward runs inside
    with ddp.no_sync():
        loss.backward()
    armed_outside = np.asarray(model.weight.grad)
    model.zero_grad(set_to_none=True)
    with ddp.no_sync():
        loss = ddp(x).sum()  # not armed: local although backward runs outside
    loss.backward()
    out[rank] = (local, twice, armed_outside, np.asarray(model.weight.grad))


@pytest.mark.parametrize("backend", BACKENDS)
def test_only_the_first_backward_after_a_ddp_forward_is_averaged(backend):
    # torch's reducer: prepare_for_backward in DDP.forward arms one averaging.
    out = run_ranks(_sync_after_ddp_forward_only, 2, backend=backend)
    for r in range(2):
        local, twice, armed_outside, armed_inside = out[r]
        np.testing.assert_allclose(local, np.full((1, 2), r + 1.0))
        np.testing.assert_allclose(twice, np.full((1, 2), 1.5 + (r + 1.0)))
        np.testing.assert_allclose(armed_outside, np.full((1, 2), 1.5))  # torch: decided at forward
        np.testing.assert_allclose(armed_inside, np.full((1, 2), r + 1.0))


def _buffers_follow_rank0(rank, out):
    dist.init_process_group()
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    ddp = DDP(model)
    ddp(spx.ones(4, 3) * (rank + 1) + spx.arange(4.0).view(4, 1))  # updates running stats
    ddp(spx.ones(4, 3))  # broadcasts rank 0's buffers first, as torch does
    out[rank] = np.asarray(model[1].running_mean)


def test_forward_broadcasts_rank0_buffers():
    out = run_ranks(_buffers_follow_rank0, 2)
    np.testing.assert_array_equal(out[0], out[1])


PROCESS_CASES = [
    *[(_train, n, (mode,)) for n in (2, 4) for mode in ("eager", "compiled", "functional")],
    (_accumulate, 2),
    (_unused_on_one_rank, 2),
    (_sync_after_ddp_forward_only, 2),
]
