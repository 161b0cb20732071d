"""nn.SyncBatchNorm: torch's layer without a process group, and the global batch's statistics on
thread and process ranks.

References: torch.nn.SyncBatchNorm on CPU without a process group (torch's is BatchNorm there:
on CPU torch refuses to synchronize), and single-device BatchNorm on the concatenation of every
rank's batch (DDP + SyncBatchNorm over n ranks must train as one device on the global batch).
"""

from __future__ import annotations

import numpy as np
import pytest

import spx
import spx.distributed as dist
from spx import nn
from spx.nn.parallel import DistributedDataParallel as DDP
from tests.distributed._ranks import run_ranks


def _torch():
    # Imported by the tests, not at module level: the process ranks import this module too.
    return pytest.importorskip("torch")


B, C, HW, STEPS = 3, 4, 5, 4


def _net(bn: type) -> nn.Module:
    spx.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(2, C, 3, padding=1), bn(C), nn.ReLU(), nn.Flatten(), nn.Linear(C * HW * HW, 3)
    )


def _batches(world: int, steps: int = STEPS) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(world)
    x = rng.standard_normal((steps, world * B, 2, HW, HW)).astype(np.float32) * 2 + 1
    y = rng.standard_normal((steps, world * B, 3)).astype(np.float32)
    return x, y


def _state(model: nn.Module) -> dict[str, np.ndarray]:
    return {k: np.asarray(v.detach()) for k, v in model.state_dict().items()}


def _mse(out: spx.Tensor, y: np.ndarray) -> spx.Tensor:
    return ((out - spx.as_tensor(y)) ** 2).mean()


def _reference(world: int, momentum: float | None) -> dict[str, np.ndarray]:
    """BatchNorm2d on the global batch, in this process."""
    model = _net(lambda c: nn.BatchNorm2d(c, momentum=momentum))
    opt = spx.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = _batches(world)
    for s in range(STEPS):
        opt.zero_grad()
        _mse(model(spx.as_tensor(x[s])), y[s]).backward()
        opt.step()
    return _state(model)


def _train(rank, out, momentum):
    dist.init_process_group()
    world = dist.get_world_size()
    model = _net(lambda c: nn.BatchNorm2d(c, momentum=momentum))
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    ddp = DDP(model)
    opt = spx.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    x, y = _batches(world)
    rows = slice(rank * B, (rank + 1) * B)
    for s in range(STEPS):
        opt.zero_grad()
        _mse(ddp(spx.as_tensor(x[s, rows])), y[s, rows]).backward()
        opt.step()
    out[rank] = _state(model)


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize(("backend", "world"), [("thread", 2), ("thread", 4), ("process", 2)])
def test_ddp_with_sync_batchnorm_trains_as_one_device_on_the_global_batch(backend, world, momentum):
    out = run_ranks(_train, world, momentum, backend=backend)
    want = _reference(world, momentum)
    for r in range(world):
        assert out[r].keys() == want.keys()
        for k, w in want.items():
            np.testing.assert_allclose(out[r][k], w, rtol=2e-5, atol=2e-6, err_msg=f"{r} {k}")


def _uneven(rank, out):
    """Ranks with 2 and 5 rows: the count each rank adds decides the global mean."""
    dist.init_process_group()
    spx.manual_seed(0)
    bn = nn.SyncBatchNorm(3)
    x = np.random.default_rng(1).standard_normal((7, 3, 4)).astype(np.float32) * 3 + 2
    mine = spx.tensor(x[:2] if rank == 0 else x[2:], requires_grad=True)
    y = bn(mine)
    (y * spx.arange(y.numel()).reshape(y.shape).float().sin()).sum().backward()
    out[rank] = (np.asarray(y.detach()), np.asarray(mine.grad), _state(bn))


@pytest.mark.parametrize("backend", ["thread", "process"])
def test_uneven_batches_normalize_with_the_global_statistics(backend):
    torch = _torch()
    out = run_ranks(_uneven, 2, backend=backend)
    x = np.random.default_rng(1).standard_normal((7, 3, 4)).astype(np.float32) * 3 + 2
    ref = torch.nn.BatchNorm1d(3)
    tx = torch.tensor(x, requires_grad=True)
    ty = ref(tx)
    # Each rank's loss weights its own output; the global loss is their sum.
    parts = [torch.arange(n * 12, dtype=torch.float32).reshape(n, 3, 4).sin() for n in (2, 5)]
    (ty * torch.cat(parts)).sum().backward()
    got_y = np.concatenate([out[0][0], out[1][0]])
    got_g = np.concatenate([out[0][1], out[1][1]])
    np.testing.assert_allclose(got_y, ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_g, tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    for r in range(2):
        state = out[r][2]
        np.testing.assert_allclose(state["running_mean"], ref.running_mean.numpy(), rtol=1e-5)
        np.testing.assert_allclose(state["running_var"], ref.running_var.numpy(), rtol=1e-5)
        assert int(state["num_batches_tracked"]) == 1


def _refused(rank, out):
    dist.init_process_group()
    bn = nn.SyncBatchNorm(3)
    x = spx.ones(4, 3) + spx.as_tensor(np.arange(12.0, dtype=np.float32).reshape(4, 3))

    @spx.compile
    def step(bn, x):
        bn(x).sum().backward()

    closing_over = spx.compile(lambda: bn(x).sum())  # the input is not an argument here
    errors = []
    runs = (lambda: step(bn, x), lambda: spx.backward(lambda m: m(x).sum(), bn), closing_over)
    for run in runs:
        try:
            run()
        except RuntimeError as e:
            errors.append(str(e))
    bn.eval()  # eval needs no synchronization: it compiles
    step_eval = spx.compile(lambda bn, x: bn(x))
    out[rank] = (errors, np.asarray(step_eval(bn, x).detach()))


def test_compiled_and_functional_steps_that_must_synchronize_raise_with_the_fix():
    out = run_ranks(_refused, 2)
    for r in range(2):
        errors, evaluated = out[r]
        assert len(errors) == 3, errors
        assert "not inside spx.compile" in errors[0] and "nn.BatchNorm" in errors[0]
        assert "loss.backward()" in errors[1]
        assert errors[2] == errors[0]
        assert evaluated.shape == (4, 3)


def _one_value(rank, out):
    dist.init_process_group()
    try:
        nn.SyncBatchNorm(3)(spx.ones(1 - rank, 3))  # one row on rank 0, none on rank 1
    except ValueError as e:
        out[rank] = str(e)


def test_a_global_batch_of_one_value_per_channel_is_refused_as_batchnorm_refuses_it():
    out = run_ranks(_one_value, 2)
    for r in range(2):
        assert "Expected more than 1 value per channel when training, got 1" in out[r]


# -- one process, no process group: torch's layer ---------------------------------------------
@pytest.mark.parametrize("affine", [True, False])
def test_without_a_process_group_it_is_torchs_layer(affine):
    torch = _torch()
    x = np.random.default_rng(0).standard_normal((3, C, 5, 5)).astype(np.float32)
    ours = nn.SyncBatchNorm(C, affine=affine, momentum=None)
    theirs = torch.nn.SyncBatchNorm(C, affine=affine, momentum=None)
    for _ in range(2):
        sx, tx = spx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        (ours(sx) ** 3).sum().backward()
        (theirs(tx) ** 3).sum().backward()
        np.testing.assert_allclose(np.asarray(sx.grad), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    ours_state, theirs_state = _state(ours), theirs.state_dict()
    assert list(ours_state) == list(theirs_state)
    for k, v in theirs_state.items():
        np.testing.assert_allclose(ours_state[k], v.detach().numpy(), rtol=1e-5, atol=1e-6)
    ours.eval(), theirs.eval()
    np.testing.assert_allclose(
        np.asarray(ours(spx.as_tensor(x)).detach()),
        theirs(torch.tensor(x)).detach().numpy(),
        rtol=1e-5,
        atol=1e-5,
    )


def test_convert_sync_batchnorm_replaces_batchnorms_as_torch_does():
    torch = _torch()
    ours = nn.Sequential(nn.Conv2d(2, C, 3), nn.BatchNorm2d(C), nn.InstanceNorm2d(C))
    ours.append(nn.BatchNorm1d(C, affine=False))
    ours.append(nn.BatchNorm2d(C, bias=False))
    ours[1].eval()
    theirs = torch.nn.Sequential(
        torch.nn.Conv2d(2, C, 3), torch.nn.BatchNorm2d(C), torch.nn.InstanceNorm2d(C)
    )
    theirs.append(torch.nn.BatchNorm1d(C, affine=False))
    theirs.append(torch.nn.BatchNorm2d(C, bias=False))
    theirs[1].eval()
    weight = ours[1].weight
    ours_c = nn.SyncBatchNorm.convert_sync_batchnorm(ours, process_group=None)
    theirs_c = torch.nn.SyncBatchNorm.convert_sync_batchnorm(theirs)
    assert ours_c is ours  # a container is changed in place
    assert [type(m).__name__ for m in ours_c] == [type(m).__name__ for m in theirs_c]
    assert ours_c[1].weight is weight  # the same Parameter, as torch's
    assert [m.training for m in ours_c] == [m.training for m in theirs_c]
    assert list(ours_c.state_dict()) == list(theirs_c.state_dict())
    for m, t in zip(ours_c, theirs_c, strict=True):
        if isinstance(t, torch.nn.SyncBatchNorm):
            assert (m.affine, m.bias is None) == (t.affine, t.bias is None)
    single = nn.BatchNorm3d(C)
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(single)
    assert type(converted) is nn.SyncBatchNorm and converted is not single


def test_bad_input_is_refused_as_torch_refuses_it():
    torch = _torch()
    bn, tbn = nn.SyncBatchNorm(3), torch.nn.SyncBatchNorm(3)
    with pytest.raises(ValueError, match="expected at least 2D input"):
        tbn(torch.ones(3))
    with pytest.raises(ValueError, match=r"expected at least 2D input \(N, C, \*\) \(got 1D"):
        bn(spx.ones(3))
    with pytest.raises(ValueError, match="num_features=3"):
        bn(spx.ones(2, 4))
    with pytest.raises(ValueError, match="channels should be non-zero"):
        nn.SyncBatchNorm(3)(spx.ones(2, 0))
    with pytest.raises(ValueError, match="has not seen an input"):
        nn.SyncBatchNorm.convert_sync_batchnorm(nn.LazyBatchNorm1d())


PROCESS_CASES = [
    *[(_train, 2, (m,)) for m in (0.1, None)],
    (_uneven, 2),
]
