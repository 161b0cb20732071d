"""Pipelining with one rank per process: the conformance grid and training runs.

The schedules run unchanged across processes (``jax.experimental.transfer`` carries the
activations and gradients) and must equal the single-device reference exactly as on thread
ranks: merged output, per-microbatch losses and every ``param.grad`` of one step, and the loss
curve and parameters of a training run with an optimizer between steps.

CI runs a representative subset: every schedule family once on 2 processes, and the
interleaved/V families plus 1F1B on 4. The full grid of ``test_conformance.py`` (every schedule
x 2 and 4 ranks x two microbatch counts: 32 cases) runs with ``SPX_PIPELINE_FULL_GRID=1``::

    SPX_PIPELINE_FULL_GRID=1 python -m pytest tests/distributed/pipelining/test_processes.py

Each rank count is one batch of processes running all of its cases (``_ranks.py``); every rank
builds its own stages (the grid's seeded blocks) on its own device.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import spx
import spx.distributed as dist
from spx.distributed.pipelining import PipelineStage
from tests.distributed._ranks import run_ranks
from tests.distributed.pipelining._harness import (
    MB,
    assert_tree_close,
    batch,
    block,
    by_rank,
    chain,
    check_against_reference,
    make_schedule,
    mse,
    params_of,
    placement,
    step_rank,
)

MULTI_STAGE_NAMES = (
    "Interleaved1F1B",
    "LoopedBFS",
    "InterleavedZeroBubble",
    "ZBVZeroBubble",
    "DualPipeV",
)
FULL_GRID = os.environ.get("SPX_PIPELINE_FULL_GRID") == "1"
PROCESS_TIMEOUT = 1200.0 if FULL_GRID else 400.0


def _grid() -> list[tuple[str, int, int, int]]:
    """(schedule, processes, stages per rank, microbatches)."""
    if FULL_GRID:
        cases = []
        for pp in (2, 4):
            for name in ("GPipe", "1F1B", "ForwardOnly"):
                cases += [(name, pp, 1, pp), (name, pp, 1, pp + 2)]
            for name in MULTI_STAGE_NAMES:
                cases += [(name, pp, 2, 2 * pp), (name, pp, 2, 2 * pp + 2)]
        return cases
    return [
        ("GPipe", 2, 1, 4),
        ("1F1B", 2, 1, 4),
        ("ForwardOnly", 2, 1, 2),
        ("Interleaved1F1B", 2, 2, 4),
        ("LoopedBFS", 2, 2, 4),
        ("InterleavedZeroBubble", 2, 2, 6),
        ("ZBVZeroBubble", 2, 2, 4),
        ("DualPipeV", 2, 2, 4),
        ("1F1B", 4, 1, 6),
        ("Interleaved1F1B", 4, 2, 8),
        ("ZBVZeroBubble", 4, 2, 8),
    ]


GRID = _grid()
_STAGES: dict[tuple, list[PipelineStage]] = {}


def _my_stages(stage_to_rank: dict[int, int], rank: int, tag: str) -> list[PipelineStage]:
    """This rank's grid stages on its own device, built once per process and placement (so
    their programs compile once) and reset to their initial parameters on every use."""
    key = (tuple(sorted(stage_to_rank.items())), tag)
    if key not in _STAGES:
        n = len(stage_to_rank)
        mine = by_rank(stage_to_rank)[rank]
        _STAGES[key] = [PipelineStage(block(s), s, n, spx.device("cpu")) for s in mine]
    stages = _STAGES[key]
    for st in stages:
        fresh = block(st.stage_index)
        for p, v in zip(st.submod.parameters(), fresh.parameters(), strict=True):
            p.data = v.data
            p.grad = None
    return stages


def _grid_rank(rank: int, out: dict, name: str, per_rank: int, n_mb: int) -> None:
    dist.init_process_group()
    pp = dist.get_world_size()
    stage_to_rank = placement(name, pp, pp * per_rank)
    loss_fn = None if name == "ForwardOnly" else mse
    stages = _my_stages(stage_to_rank, rank, "fwd" if loss_fn is None else "")
    x, t = batch(n_mb * MB, seed=n_mb)
    step_rank(rank, out, name, {rank: stages}, n_mb, x, t, loss_fn, {})


@pytest.mark.parametrize(
    ("name", "pp", "per_rank", "n_mb"),
    [pytest.param(*c, id=f"{c[0]}-pp{c[1]}-x{c[2]}-mb{c[3]}") for c in GRID],
)
def test_schedule_matches_single_device_reference(name, pp, per_rank, n_mb):
    results = run_ranks(_grid_rank, pp, name, per_rank, n_mb, backend="process")
    x, t = batch(n_mb * MB, seed=n_mb)
    loss_fn = None if name == "ForwardOnly" else mse
    check_against_reference(results, pp * per_rank, n_mb, x, t, loss_fn)


# -- training runs -----------------------------------------------------------------------------
STEPS, LR = 12, 0.5
TRAINING = [("1F1B", 2, 1), ("Interleaved1F1B", 4, 2)]


def _train_rank(rank: int, out: dict, name: str, per_rank: int) -> None:
    dist.init_process_group()
    pp = dist.get_world_size()
    n_stages, n_mb = pp * per_rank, 2 * pp
    stages = _my_stages(placement(name, pp, n_stages), rank, "")
    schedule = make_schedule(name, stages, n_mb, loss_fn=mse)
    opt = spx.optim.SGD([p for s in stages for p in s.submod.parameters()], lr=LR)
    first = any(s.is_first for s in stages)
    last = any(s.is_last for s in stages)
    x, t = batch(n_mb * MB, seed=7)
    curve = []
    for _ in range(STEPS):
        opt.zero_grad()
        losses: list[Any] = []
        schedule.step(*((x,) if first else ()), **({"target": t, "losses": losses} if last else {}))
        opt.step()
        curve.append(float(np.mean([float(v) for v in losses])) if last else None)
    out[rank] = {
        "curve": curve,
        "params": {s.stage_index: params_of([s.submod])[0] for s in stages},
    }


@pytest.mark.parametrize(("name", "pp", "per_rank"), TRAINING)
def test_training_run_follows_the_single_device_loss_curve(name, pp, per_rank):
    results = run_ranks(_train_rank, pp, name, per_rank, backend="process")
    n_stages, n_mb = pp * per_rank, 2 * pp
    x, t = batch(n_mb * MB, seed=7)
    modules = [block(s) for s in range(n_stages)]
    opt = spx.optim.SGD([p for m in modules for p in m.parameters()], lr=LR)
    want = []
    for _ in range(STEPS):
        opt.zero_grad()
        want.append(float(spx.backward(lambda *ms: mse(chain(ms, x), t), *modules)))
        opt.step()
    curve = next(r["curve"] for r in results.values() if r["curve"][0] is not None)
    assert want[-1] < 0.9 * want[0]  # the loss moves, or equal curves would prove nothing
    np.testing.assert_allclose(curve, want, rtol=2e-5, atol=1e-6)
    got = {s: p for r in results.values() for s, p in r["params"].items()}
    assert sorted(got) == list(range(n_stages))
    for s, m in enumerate(modules):
        assert_tree_close(got[s], params_of([m])[0], f"stage {s} params", rtol=2e-5, atol=2e-6)


PROCESS_CASES = [
    *[(_grid_rank, pp, (name, per_rank, n_mb)) for name, pp, per_rank, n_mb in GRID],
    *[(_train_rank, pp, (name, per_rank)) for name, pp, per_rank in TRAINING],
]
