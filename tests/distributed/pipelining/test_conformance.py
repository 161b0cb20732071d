"""Conformance of every pipeline schedule with a single-device reference, as torch tests it.

For each schedule, rank count and microbatch count: the mean of the per-microbatch losses, the
merged output and every ``param.grad`` equal the same stages chained on one device over the
full batch (``spx.backward``). Also: the microbatch counts torch rejects, 20 training steps
with an optimizer between them, kwargs, ``eval()``, ``return_outputs=False``, sum/mean losses
with ``scale_grads``, gradient accumulation across steps, input errors, custom CSV schedules.
"""

from __future__ import annotations

import io
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

import spx
import spx.distributed as dist
from spx import nn
from spx.distributed.pipelining import PipelineStage, get_schedule_class
from spx.distributed.pipelining.tables.csv_io import _dump_csv
from spx.distributed.pipelining.tables.lowering import _lower_schedule
from tests.distributed.pipelining._harness import (
    MB,
    assert_tree_close,
    batch,
    block,
    by_rank,
    chain,
    check_against_reference,
    in_group,
    make_schedule,
    mse,
    mse_sum,
    params_of,
    placement,
    reference,
    run_ranks,
    run_step,
    shared_stages,
)

MULTI_STAGE = (
    "Interleaved1F1B",
    "LoopedBFS",
    "InterleavedZeroBubble",
    "ZBVZeroBubble",
    "DualPipeV",
)


def _grid() -> list[Any]:
    """(schedule, ranks, stages per rank, microbatches): microbatches equal to the number of
    stages and above it, 1/2/4 ranks."""
    cases = []
    for name in ("GPipe", "1F1B", "ForwardOnly"):
        for pp in (1, 2, 4):
            cases += [(name, pp, 1, pp), (name, pp, 1, pp + 2)]
    for name in MULTI_STAGE:
        for pp in (1, 2, 4):
            cases += [(name, pp, 2, 2 * pp), (name, pp, 2, 2 * pp + 2)]
    return [pytest.param(*c, id=f"{c[0]}-pp{c[1]}-x{c[2]}-mb{c[3]}") for c in cases]


@pytest.mark.parametrize(("name", "pp", "per_rank", "n_mb"), _grid())
def test_schedule_matches_single_device_reference(name, pp, per_rank, n_mb):
    loss_fn = None if name == "ForwardOnly" else mse
    results, x, t = run_step(name, pp, per_rank, n_mb, loss_fn)
    check_against_reference(results, pp * per_rank, n_mb, x, t, loss_fn)


# -- configurations torch 2.13 rejects -------------------------------------------------------
def _reject_rank(rank: int, out: dict, name: str, modules: list, n_mb: int) -> None:
    n_stages = len(modules)
    stage_to_rank = placement(name, dist.get_world_size(), n_stages)
    stages = [
        PipelineStage(modules[s], s, n_stages, spx.device("cpu"))
        for s, r in stage_to_rank.items()
        if r == rank
    ]
    with pytest.raises(ValueError) as err:
        make_schedule(name, stages, n_mb, loss_fn=mse)
    out[rank] = str(err.value)


@pytest.mark.parametrize(
    ("name", "pp", "n_stages", "n_mb", "match"),
    [
        ("1F1B", 2, 2, 1, "microbatches"),
        ("1F1B", 4, 4, 3, "microbatches"),
        ("Interleaved1F1B", 2, 4, 5, "multiple of the number of rounds"),
        ("InterleavedZeroBubble", 2, 4, 7, "multiple of the number of rounds"),
        ("DualPipeV", 2, 4, 3, "at least as many microbatches"),
        ("ZBVZeroBubble", 2, 6, 6, "exactly 2 stage"),
        ("Interleaved1F1B", 2, 3, 4, "divisible"),
    ],
)
def test_schedule_rejects_what_torch_rejects(name, pp, n_stages, n_mb, match):
    modules = [nn.Linear(4, 4) for _ in range(n_stages)]
    out = run_ranks(in_group(_reject_rank), pp, name, modules, n_mb)
    for rank in range(pp):
        assert match in out[rank], out[rank]


# -- training: 20 steps with an optimizer between them ---------------------------------------
STEPS, LR = 20, 0.2


def _train_rank(rank: int, out: dict, name: str, mine: dict, n_mb: int, x: Any, t: Any) -> None:
    stages = mine[rank]
    schedule = make_schedule(name, stages, n_mb, loss_fn=mse)
    opt = spx.optim.SGD([p for s in stages for p in s.submod.parameters()], lr=LR)
    first = any(s.is_first for s in stages)
    last = any(s.is_last for s in stages)
    curve = []
    for _ in range(STEPS):
        opt.zero_grad()
        losses: list = []
        schedule.step(*((x,) if first else ()), **({"target": t, "losses": losses} if last else {}))
        opt.step()
        curve.append(float(np.mean([float(v) for v in losses])) if last else None)
    out[rank] = {
        "curve": curve,
        "params": {s.stage_index: params_of([s.submod])[0] for s in stages},
    }


@pytest.mark.parametrize(("name", "pp", "per_rank"), [("1F1B", 2, 1), ("ZBVZeroBubble", 2, 2)])
def test_training_steps_follow_the_reference_trajectory(name, pp, per_rank):
    n_stages, n_mb = pp * per_rank, 4
    stage_to_rank = placement(name, pp, n_stages)
    stages = shared_stages(stage_to_rank)
    mine = {r: [stages[s] for s in ss] for r, ss in by_rank(stage_to_rank).items()}
    x, t = batch(n_mb * MB, seed=7)
    try:
        results = run_ranks(in_group(_train_rank), pp, name, mine, n_mb, x, t)
    finally:
        shared_stages(stage_to_rank)  # put the initial parameters back for other tests

    modules = [block(s) for s in range(n_stages)]
    opt = spx.optim.SGD([p for m in modules for p in m.parameters()], lr=LR)
    want = []
    for _ in range(STEPS):
        opt.zero_grad()
        want.append(float(spx.backward(lambda *ms: mse(chain(ms, x), t), *modules)))
        opt.step()
    curve = next(r["curve"] for r in results.values() if r["curve"][0] is not None)
    # The loss must actually move, or "equal trajectories" would prove nothing.
    assert want[-1] < 0.9 * want[0]
    np.testing.assert_allclose(curve, want, rtol=2e-5, atol=1e-6)
    got = {s: p for r in results.values() for s, p in r["params"].items()}
    for s, m in enumerate(modules):
        assert_tree_close(got[s], params_of([m])[0], f"stage {s} params", rtol=2e-5, atol=2e-6)


# -- step() options ---------------------------------------------------------------------------
def _options_rank(rank: int, out: dict, mine: dict, x: Any, t: Any) -> None:
    """eval(), return_outputs=False and accumulation without zero_grad, on one schedule."""
    (stage,) = mine[rank]
    schedule = make_schedule("1F1B", [stage], 2, loss_fn=mse)
    args = (x,) if stage.is_first else ()
    res: dict[str, Any] = {}
    if stage.is_last:
        losses: list = []
        res["eval_out"] = np.asarray(schedule.eval(*args, target=t, losses=losses))
        res["eval_losses"] = [float(v) for v in losses]
        res["eval_out_no_target"] = np.asarray(schedule.eval(*args))
    else:
        assert schedule.eval(*args) is None
        schedule.eval(*args)
    res["grads_after_eval"] = [p.grad for p in stage.submod.parameters()]
    losses = []
    kwargs = {"target": t, "losses": losses, "return_outputs": False} if stage.is_last else {}
    res["step_result"] = schedule.step(*args, **kwargs)
    res["losses"] = [float(v) for v in losses]
    res["grads1"] = [np.asarray(p.grad) for p in stage.submod.parameters()]
    schedule.step(*args, **kwargs)  # no zero_grad: grads accumulate, as in torch
    res["grads2"] = [np.asarray(p.grad) for p in stage.submod.parameters()]
    out[rank] = res


def test_eval_return_outputs_and_gradient_accumulation():
    stage_to_rank = placement("1F1B", 2, 2)
    stages = shared_stages(stage_to_rank)
    mine = {r: [stages[s] for s in ss] for r, ss in by_rank(stage_to_rank).items()}
    x, t = batch(2 * MB, seed=3)
    results = run_ranks(in_group(_options_rank), 2, mine, x, t)
    ref = reference([block(0), block(1)], x, t, mse, n_mb=2)

    last = results[1]
    assert_tree_close(last["eval_out"], ref["output"], "eval output")
    assert_tree_close(last["eval_out_no_target"], ref["output"], "eval output without target")
    np.testing.assert_allclose(last["eval_losses"], ref["losses"], rtol=1e-5)
    for r in results.values():
        assert all(g is None for g in r["grads_after_eval"]), "eval() wrote gradients"
        assert r["step_result"] is None  # return_outputs=False (and not the last rank)
    np.testing.assert_allclose(last["losses"], ref["losses"], rtol=1e-5)
    for s, r in results.items():
        assert_tree_close(r["grads1"], ref["grads"][s], f"stage {s} grads")
        assert_tree_close(
            r["grads2"], [2 * g for g in ref["grads"][s]], f"stage {s} grads after two steps"
        )


@pytest.mark.parametrize(
    ("loss_fn", "scale_grads"),
    [(mse, True), (mse_sum, False), (mse_sum, True)],
    ids=["mean-scaled", "sum-unscaled", "sum-scaled"],
)
def test_loss_reduction_and_scale_grads(loss_fn, scale_grads):
    n_mb = 4
    results, x, t = run_step("Interleaved1F1B", 2, 2, n_mb, loss_fn, scale_grads=scale_grads)
    modules = [block(s) for s in range(4)]
    ref = reference(modules, x, t, loss_fn, n_mb)
    # mean + scale_grads ⇒ the full-batch mean gradient; sum without scaling ⇒ the full-batch
    # sum gradient; sum with scaling ⇒ the sum gradient divided by n_microbatches.
    factor = 1 / n_mb if loss_fn is mse_sum and scale_grads else 1.0
    last = results[1]
    np.testing.assert_allclose(last["losses"], ref["losses"], rtol=1e-5)
    if loss_fn is mse_sum:
        np.testing.assert_allclose(np.sum(last["losses"]), ref["loss"], rtol=1e-5)
    grads = {s: g for r in results.values() for s, g in r["grads"].items()}
    for s in range(4):
        assert_tree_close(
            grads[s], [factor * g for g in ref["grads"][s]], f"stage {s} grads", atol=1e-5
        )


class _Masked(nn.Module):
    """Stage 0 with a keyword input (and a Python flag, which must stay a Python value)."""

    def __init__(self) -> None:
        super().__init__()
        spx.manual_seed(7)
        self.lin = nn.Linear(8, 8)

    def forward(self, x, mask=None, double=False):
        h = self.lin(x)
        if double:  # control flow on a non-array kwarg: torch passes it through unchanged
            h = 2 * h
        return spx.tanh(h * mask)


def _masked_pair() -> list[nn.Module]:
    first = _Masked()
    spx.manual_seed(8)
    return [first, nn.Linear(8, 8)]


def _kwargs_rank(rank: int, out: dict, modules: list, x: Any, mask: Any, t: Any) -> None:
    module = modules[rank]
    stage = PipelineStage(module, rank, 2, spx.device("cpu"))
    schedule = make_schedule("GPipe", [stage], 2, loss_fn=mse)
    losses: list = []
    if rank == 0:
        schedule.step(x, mask=mask, double=True)
    else:
        out["output"] = np.asarray(schedule.step(target=t, losses=losses))
        out["losses"] = [float(v) for v in losses]
    out[rank] = [np.asarray(p.grad) for p in module.parameters()]


def test_kwargs_reach_stage_zero_split_per_microbatch():
    x, t = batch(4, 8, 8, seed=5)
    mask = jnp.asarray(np.random.default_rng(1).integers(0, 2, (4, 8)), jnp.float32)
    out = run_ranks(in_group(_kwargs_rank), 2, _masked_pair(), x, mask, t)
    ref = reference(_masked_pair(), x, t, mse, 2, mask=mask, double=True)
    # The reference splits mask with the batch; a wrongly replicated or unsplit mask differs.
    assert_tree_close(out["output"], ref["output"], "output")
    np.testing.assert_allclose(out["losses"], ref["losses"], rtol=1e-5)
    assert_tree_close(out[0], ref["grads"][0], "stage 0 grads")
    assert_tree_close(out[1], ref["grads"][1], "stage 1 grads")


def scaled_loss(out, target, scale=1.0, reduction="mean"):
    err = scale * (out - target) ** 2
    return err.mean() if reduction == "mean" else err.sum()


def test_loss_kwargs_reach_the_loss_function():
    """torch's ``step(loss_kwargs=...)``: ``loss_fn(output, target, **loss_kwargs)``; a float
    is traced, a string is a Python value (it picks the reduction here)."""
    x, t = batch(4 * MB, seed=9)
    stage = PipelineStage(block(0), 0, 1, "cpu")
    schedule = get_schedule_class("GPipe")(stage, 4, loss_fn=scaled_loss, scale_grads=False)
    losses: list = []
    loss_kwargs = {"scale": 0.5, "reduction": "sum"}
    schedule.step(x, target=t, losses=losses, loss_kwargs=loss_kwargs)
    ref = reference([block(0)], x, t, lambda o, y: scaled_loss(o, y, **loss_kwargs), 4)
    np.testing.assert_allclose([float(v) for v in losses], ref["losses"], rtol=1e-5)
    assert_tree_close(
        [np.asarray(p.grad) for p in stage.submod.parameters()], ref["grads"][0], "grads", atol=1e-5
    )


# -- input errors ----------------------------------------------------------------------------
def test_batch_not_divisible_by_microbatches_raises():
    stage = PipelineStage(nn.Linear(4, 4), 0, 1, "cpu")
    schedule = get_schedule_class("GPipe")(stage, 4, loss_fn=mse)
    x = jnp.ones((6, 4))
    with pytest.raises(ValueError, match=r"size 6.*n_microbatches=4"):
        schedule.step(x, target=jnp.ones((8, 4)))
    with pytest.raises(ValueError, match="target"):
        schedule.step(jnp.ones((8, 4)), target=x)


def test_missing_target_on_last_rank_raises():
    stage = PipelineStage(nn.Linear(4, 4), 0, 1, "cpu")
    schedule = get_schedule_class("1F1B")(stage, 2, loss_fn=mse)
    with pytest.raises(ValueError, match="target="):
        schedule.step(jnp.ones((4, 4)))
    # Without a loss_fn there is nothing to compare with: forward only, no target needed.
    out = get_schedule_class("GPipe")(stage, 2).step(jnp.ones((4, 4)))
    assert out.shape == (4, 4)


def test_forward_only_schedule_refuses_losses_like_torch():
    stage = PipelineStage(nn.Linear(4, 4), 0, 1, "cpu")
    schedule = get_schedule_class("ForwardOnly")(stage, 2, loss_fn=mse)
    with pytest.raises(RuntimeError, match="does not compute losses"):
        schedule.step(jnp.ones((4, 4)), target=jnp.ones((4, 4)))
    # A loss_fn given anyway does not turn it into a training step.
    assert schedule.step(jnp.ones((4, 4))).shape == (4, 4)
    assert all(p.grad is None for p in stage.submod.parameters())


# -- custom schedules from CSV ---------------------------------------------------------------
# 2 ranks, one stage each, 2 microbatches, backward split into I and W on both stages.
HAND_WRITTEN = "0F0,0F1,,,0I0,0W0,0I1,0W1\n,1F0,1F1,1I0,1I1,1W1,1W0\n"


def _csv_rank(rank: int, out: dict, mine: dict, x: Any, t: Any, how: str) -> None:
    stages = mine[rank]
    first = any(s.is_first for s in stages)
    last = any(s.is_last for s in stages)
    if how == "hand":
        schedule = make_schedule("1F1B", stages, 2, loss_fn=mse)
        schedule._load_csv(io.StringIO(HAND_WRITTEN))
    else:
        source = make_schedule("Interleaved1F1B", stages, 4, loss_fn=mse)
        buf = io.StringIO()
        if how == "comms":  # torch's lowered form: explicit SEND/RECV actions
            lowered = _lower_schedule(source.pipeline_order, 4, 4, unshard_reshard=False)
            _dump_csv(lowered, buf)
        else:
            source._dump_csv(buf)
        buf.seek(0)
        schedule = make_schedule("LoopedBFS", stages, 4, loss_fn=mse)
        schedule._load_csv(buf, format="compute_comms" if how == "comms" else "compute_only")
        assert (
            schedule.pipeline_order
            != make_schedule("LoopedBFS", stages, 4, loss_fn=mse).pipeline_order
        )
    losses: list = []
    result = schedule.step(
        *((x,) if first else ()), **({"target": t, "losses": losses} if last else {})
    )
    out[rank] = {
        "output": None if result is None else np.asarray(result),
        "losses": [float(v) for v in losses],
        "grads": {
            s.stage_index: [np.asarray(p.grad) for p in s.submod.parameters()] for s in stages
        },
    }


@pytest.mark.parametrize("how", ["hand", "dump", "comms"])
def test_custom_schedule_from_csv_matches_reference(how):
    n_stages, n_mb = (2, 2) if how == "hand" else (4, 4)
    stage_to_rank = placement("1F1B", 2, n_stages)
    stages = shared_stages(stage_to_rank)
    mine = {r: [stages[s] for s in ss] for r, ss in by_rank(stage_to_rank).items()}
    x, t = batch(n_mb * MB, seed=n_mb)
    results = run_ranks(in_group(_csv_rank), 2, mine, x, t, how)
    check_against_reference(results, n_stages, n_mb, x, t)
