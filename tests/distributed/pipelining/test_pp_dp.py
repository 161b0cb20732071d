"""Pipeline x data parallelism: 2 pipeline stages x 2 data-parallel replicas on 4 ranks.

The ranks form a ("pp", "dp") device mesh. Each rank holds one stage of one replica; its stage
module is wrapped in DistributedDataParallel over its dp group, so when the schedule's step has
accumulated the stage's gradients they are averaged over the replicas before
``optimizer.step()``. DistributedSampler (defaulting to the dp dimension) gives each replica its
half of the global batch. After several steps every rank's stage must equal the same stage of
one model trained on one device on the global batch.
"""

from __future__ import annotations

import numpy as np
import pytest

import spx
import spx.distributed as dist
from spx import nn
from spx.data import DistributedSampler
from spx.distributed.pipelining import PipelineStage, Schedule1F1B
from spx.nn.parallel import DistributedDataParallel as DDP
from tests.distributed._ranks import run_ranks

D, GLOBAL_BATCH, N_MB, STEPS = 8, 16, 2, 5


def stage(i: int) -> nn.Module:
    spx.manual_seed(10 + i)
    return nn.Sequential(nn.Linear(D, D), nn.Tanh(), nn.Linear(D, D))


def batches() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((STEPS, GLOBAL_BATCH, D)).astype(np.float32)
    y = rng.standard_normal((STEPS, GLOBAL_BATCH, D)).astype(np.float32)
    return x, y


def mse(out: spx.Tensor, y: spx.Tensor) -> spx.Tensor:
    return ((out - y) ** 2).mean()


def _pp_dp(rank, out):
    dist.init_process_group()
    mesh = dist.init_device_mesh("cpu", (2, 2), mesh_dim_names=("pp", "dp"))
    pp = mesh.get_local_rank("pp")
    # Replicas start from different weights: DDP broadcasts the dp group's rank 0's.
    module = stage(pp)
    if mesh.get_local_rank("dp") == 1:
        with spx.no_grad():
            for p in module.parameters():
                p.mul_(0.5)
    ddp = DDP(module, device_mesh=mesh["dp"])
    pipe = PipelineStage(ddp, pp, 2, spx.device("cpu"), group=mesh.get_group("pp"))
    schedule = Schedule1F1B(pipe, N_MB, loss_fn=mse)
    opt = spx.optim.SGD(ddp.parameters(), lr=0.05)
    sampler = DistributedSampler(range(GLOBAL_BATCH), shuffle=False)  # the dp dimension's
    rows = np.array(list(sampler))
    x, y = batches()
    losses_seen = []
    for s in range(STEPS):
        opt.zero_grad()
        if pp == 0:
            schedule.step(spx.as_tensor(x[s][rows]))
        else:
            losses: list = []
            schedule.step(target=spx.as_tensor(y[s][rows]), losses=losses)
            losses_seen.append([loss.item() for loss in losses])
        opt.step()
    out[rank] = {
        "stage": pp,
        "rows": rows.tolist(),
        "params": [np.asarray(p.detach()) for p in module.parameters()],
        "losses": losses_seen,
    }


def reference() -> list[list[np.ndarray]]:
    modules = [stage(0), stage(1)]
    opt = spx.optim.SGD([p for m in modules for p in m.parameters()], lr=0.05)
    x, y = batches()
    for s in range(STEPS):
        opt.zero_grad()
        mse(modules[1](modules[0](spx.as_tensor(x[s]))), spx.as_tensor(y[s])).backward()
        opt.step()
    return [[np.asarray(p.detach()) for p in m.parameters()] for m in modules]


@pytest.mark.parametrize("backend", ["thread", "process"])
def test_2x2_pipeline_times_data_parallel_equals_the_single_device_reference(backend):
    out = run_ranks(_pp_dp, 4, backend=backend)
    want = reference()
    for r in range(4):
        got = out[r]
        assert got["stage"] == r // 2
        assert got["rows"] == list(range(r % 2, GLOBAL_BATCH, 2))  # the replica's half
        for i, (g, w) in enumerate(zip(got["params"], want[got["stage"]], strict=True)):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"rank {r} param {i}")


PROCESS_CASES = [(_pp_dp, 4)]
