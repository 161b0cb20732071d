"""``PipelineStage``: heterogeneous stages, pytree hand-overs, validation, rank failures.

Pipelines of stages that differ in class, width and dtype, that hand tuples and dicts to each
other and carry a value past a stage, equal the same modules chained on one device. Bad input
(an out-of-range stage index, a stage on the wrong rank, shapes that change between steps)
raises a clear error; a rank whose forward raises makes ``spawn`` fail fast, naming it.
"""

from __future__ import annotations

import re
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.distributed.pipelining import PipelineStage, get_schedule_class
from spx.distributed.spawn import ProcessRaisedException
from tests.distributed.pipelining._harness import (
    assert_tree_close,
    batch,
    block,
    by_rank,
    in_group,
    mse,
    placement,
    reference,
    run_ranks,
)


# -- a heterogeneous pipeline: 16 -> 32 -> 32 -> 8 -> 8 ---------------------------------------
class Fan(nn.Module):
    """Stage 0: widens to 32 and also returns a narrow projection that skips stage 1."""

    def __init__(self) -> None:
        super().__init__()
        self.wide = nn.Linear(16, 32)
        self.side = nn.Linear(16, 8)

    def forward(self, x):
        return spx.tanh(self.wide(x)), self.side(x)  # a tuple: stage 1's two arguments


class Middle(nn.Module):
    """Stage 1, in ``dtype``: transforms ``h`` and passes ``skip`` through untouched."""

    def __init__(self, dtype: Any) -> None:
        super().__init__()
        self.lin = nn.Linear(32, 32).to(dtype)
        self.dtype = dtype

    def forward(self, h, skip):
        return {"h": spx.tanh(self.lin(h.to(self.dtype))), "skip": skip}


class Merge(nn.Module):
    """Stage 2: takes the dict and uses both the transformed and the skipped value."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(32)
        self.proj = nn.Linear(32, 8)

    def forward(self, d):
        return self.proj(self.norm(d["h"].to(spx.float32))) * d["skip"]


def hetero_module(index: int, dtype: Any) -> nn.Module:
    spx.manual_seed(200 + index)
    if index == 0:
        return Fan()
    if index == 1:
        return Middle(dtype)
    if index == 2:
        return Merge()
    return nn.Sequential(nn.GELU(), nn.Linear(8, 8))


def _hetero_rank(
    rank: int, out: dict, name: str, modules: dict, stage_to_rank: dict, x: Any, t: Any, n_mb: int
) -> None:
    mine = by_rank(stage_to_rank)[rank]
    stages = [PipelineStage(modules[s], s, 4, spx.device("cpu")) for s in mine]
    cls = get_schedule_class(name)
    schedule = cls(stages[0] if len(stages) == 1 else stages, n_mb, loss_fn=mse)
    losses: list = []
    last = any(s.is_last for s in stages)
    res = schedule.step(
        *((x,) if 0 in mine else ()), **({"target": t, "losses": losses} if last else {})
    )
    out[rank] = {
        "output": None if res is None else np.asarray(res),
        "losses": [float(v) for v in losses],
        "grads": {
            s.stage_index: [np.asarray(p.grad, np.float32) for p in s.submod.parameters()]
            for s in stages
        },
        "dtypes": {
            s.stage_index: {str(p.grad.dtype) for p in s.submod.parameters()} for s in stages
        },
    }


@pytest.mark.parametrize(
    ("name", "pp", "dtype"),
    [
        ("InterleavedZeroBubble", 2, jnp.float32),
        ("InterleavedZeroBubble", 2, jnp.bfloat16),
        ("1F1B", 4, jnp.float32),
    ],
    ids=["zb-f32", "zb-bf16", "1f1b-f32"],
)
def test_heterogeneous_stages_with_pytrees_and_a_skip(name, pp, dtype):
    n_mb = 4
    x, t = batch(8, 16, 8, seed=11)
    # Modules are built here, not in the rank threads: initializing them there would compile
    # the initializers once per rank device, for nothing.
    modules = {s: hetero_module(s, dtype) for s in range(4)}
    results = run_ranks(
        in_group(_hetero_rank), pp, name, modules, placement(name, pp, 4), x, t, n_mb
    )
    # The reference runs the same modules, so it makes the same bf16 casts; bf16 rounding can
    # still differ with how XLA fuses the ops (per microbatch or full batch, jit or eager),
    # hence a tolerance of two bf16 steps (2^-7) instead of float32's.
    ref = reference([hetero_module(s, dtype) for s in range(4)], x, t, mse, n_mb)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == jnp.float32 else {"rtol": 2**-7, "atol": 2**-8}
    last = next(r for r in results.values() if r["output"] is not None)
    assert_tree_close(last["output"], ref["output"], "output", **tol)
    np.testing.assert_allclose(last["losses"], ref["losses"], **tol)
    grads = {s: g for r in results.values() for s, g in r["grads"].items()}
    for s in range(4):
        assert_tree_close(grads[s], ref["grads"][s], f"stage {s} grads", **tol)
    # Every gradient keeps its parameter's dtype: bf16 on the bf16 stage, f32 elsewhere.
    dtypes = {s: d for r in results.values() for s, d in r["dtypes"].items()}
    want = jnp.dtype(dtype).name
    assert dtypes == {0: {"float32"}, 1: {want}, 2: {"float32"}, 3: {"float32"}}


# -- validation ------------------------------------------------------------------------------
@pytest.mark.parametrize(("index", "n"), [(2, 2), (5, 4), (-1, 4)])
def test_stage_index_out_of_range_raises(index, n):
    with pytest.raises(ValueError, match=f"Stage index {index} is out of range of {n}"):
        PipelineStage(nn.Linear(4, 4), index, n, "cpu")


def _wrong_rank(rank: int, out: dict, name: str, wrong: list[int], modules: list) -> None:
    stages = [PipelineStage(modules[s], s, len(modules), spx.device("cpu")) for s in wrong[rank]]
    cls = get_schedule_class(name)
    with pytest.raises(ValueError, match="places stage") as err:
        cls(stages[0] if len(stages) == 1 else stages, 4, loss_fn=mse)
    out[rank] = str(err.value)


@pytest.mark.parametrize(
    ("name", "wrong", "n_stages"),
    [
        ("1F1B", [[1], [0]], 2),  # swapped
        ("ZBVZeroBubble", [[0, 2], [1, 3]], 4),  # looped placement where V is expected
        ("Interleaved1F1B", [[0, 1], [2, 3]], 4),  # contiguous where looped is expected
    ],
)
def test_stage_on_the_wrong_rank_raises(name, wrong, n_stages):
    modules = [nn.Linear(4, 4) for _ in range(n_stages)]
    out = run_ranks(in_group(_wrong_rank), 2, name, wrong, modules)
    # The message names what this rank should hold under the schedule's placement.
    want = by_rank(placement(name, 2, n_stages))
    for rank in range(2):
        assert f"expects rank r to hold stages {want[rank]}" in out[rank]


def test_shapes_changing_between_steps_raise_naming_both():
    stage = PipelineStage(nn.Linear(4, 4), 0, 1, "cpu")
    schedule = get_schedule_class("1F1B")(stage, 2, loss_fn=mse)
    schedule.step(jnp.ones((4, 4)), target=jnp.ones((4, 4)))
    with pytest.raises(ValueError, match=r"\(4, 4\).*\(2, 4\)"):
        schedule.step(jnp.ones((8, 4)), target=jnp.ones((8, 4)))
    # Shapes given up front are checked from the first step on.
    fixed = PipelineStage(
        nn.Linear(4, 4), 0, 1, "cpu", input_args=jax.ShapeDtypeStruct((2, 4), jnp.float32)
    )
    schedule = get_schedule_class("GPipe")(fixed, 2, loss_fn=mse)
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(2, 4\).*input_args"):
        schedule.step(jnp.ones((6, 4)), target=jnp.ones((6, 4)))


# -- a failing rank --------------------------------------------------------------------------
class Boom(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        raise RuntimeError("boom in the forward of stage 1")


def _failing_rank(rank: int, out: dict, modules: list) -> None:
    stage = PipelineStage(modules[rank], rank, 2, spx.device("cpu"))
    schedule = get_schedule_class("1F1B")(stage, 2, loss_fn=mse)
    if rank == 0:
        schedule.step(jnp.ones((4, 4)))  # waits for gradients that never come
    else:
        schedule.step(target=jnp.ones((4, 4)))


def test_exception_in_one_rank_fails_spawn_naming_it():
    start = time.monotonic()
    with pytest.raises(ProcessRaisedException) as err:
        run_ranks(in_group(_failing_rank), 2, [nn.Linear(4, 4), Boom()], timeout=60)
    elapsed = time.monotonic() - start
    assert err.value.error_index == 1
    msg = str(err.value)
    assert "Process 1" in msg and "boom in the forward of stage 1" in msg
    # The report names the rank, the step and the action, and marks that step in the grid of
    # the table the rank executed (rank 1 first posts the receive of its input, then runs F).
    assert "[Rank 1] pipeline schedule Schedule1F1B failed at step 1 running action 1F0" in msg
    assert re.search(r"Step 1: 0SEND_F0 +1F0 +<-- ERROR HERE", msg), msg
    # Rank 0 is blocked in a receive; the failure must wake it, not a timeout.
    assert elapsed < 15, f"spawn took {elapsed:.1f} s to report the failure"


# -- compilation ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["1F1B", "InterleavedZeroBubble"])
def test_each_program_compiles_once(name):
    """Two steps of several microbatches trace each of a stage's programs once: the first
    microbatch must not differ from the others in what jit sees (a fresh RNG key, gradient
    accumulators that do not exist yet), nor the first step from the second."""
    n_stages = 1 if name == "1F1B" else 2
    stages = [PipelineStage(block(s), s, n_stages, "cpu") for s in range(n_stages)]
    schedule = get_schedule_class(name)(stages[0] if n_stages == 1 else stages, 4, loss_fn=mse)
    x, t = batch(8)
    for _ in range(2):
        schedule.step(x, target=t)
    # 1F1B's last stage runs each microbatch's F and B back to back: one fused program.
    kinds = (
        ["_forward_backward"]
        if name == "1F1B"
        else ["_forward", "_backward_input", "_backward_weight"]
    )
    for stage in stages:
        for kind in kinds:
            assert getattr(stage._programs, kind)._cache_size() == 1, (stage.stage_index, kind)
    if name == "1F1B":
        assert stages[0]._programs._forward._cache_size() == 0
        assert stages[0]._programs._backward._cache_size() == 0


# -- the last stage's F and B as one program ----------------------------------------------------
class NormHead(nn.Module):
    """A last stage with buffers (BatchNorm's running statistics) and, optionally, dropout."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.norm = nn.BatchNorm1d(8)
        self.drop = nn.Dropout(p)
        self.out = nn.Linear(8, 4)

    def forward(self, x):
        return self.out(self.drop(spx.tanh(self.norm(self.lin(x)))))


def _pipelined_step(name: str, p: float, x, t) -> tuple[NormHead, Any, list, Any]:
    spx.manual_seed(0)
    model = NormHead(p)
    stage = PipelineStage(model, 0, 1, "cpu")
    schedule = get_schedule_class(name)(stage, 4, loss_fn=mse)
    spx.manual_seed(1)
    losses: list = []
    out = schedule.step(x, target=t, losses=losses)
    fused = stage._programs._forward_backward._cache_size()
    assert fused == (1 if name == "1F1B" else 0), (name, fused)  # 1F1B fuses, GPipe cannot
    return model, out, losses, spx.random.get_key()


def _state(model: NormHead) -> dict[str, np.ndarray]:
    grads = {f"grad {n}": np.asarray(q.grad) for n, q in model.named_parameters()}
    return {**grads, **{n: np.asarray(b) for n, b in model.named_buffers()}}


def test_fused_forward_backward_equals_separate_programs_with_buffers_and_dropout():
    """1F1B runs the last stage's F and B of a microbatch as one program, GPipe as two: the
    outputs, losses, gradients, BatchNorm statistics and the RNG key after the step (what the
    dropout masks drew) agree."""
    x, t = batch(16, 8, 4)
    fused = _pipelined_step("1F1B", 0.3, x, t)
    apart = _pipelined_step("GPipe", 0.3, x, t)
    np.testing.assert_allclose(np.asarray(fused[1]), np.asarray(apart[1]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        [float(v) for v in fused[2]], [float(v) for v in apart[2]], rtol=1e-5
    )
    for (name, got), want in zip(_state(fused[0]).items(), _state(apart[0]).values(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
    np.testing.assert_array_equal(jax.random.key_data(fused[3]), jax.random.key_data(apart[3]))
    assert not np.allclose(np.asarray(fused[1]), 0)  # dropout kept some units


def test_fused_forward_backward_equals_an_eager_microbatch_loop():
    """Without dropout, the fused step equals running each microbatch eagerly: forward,
    ``loss.backward()``, gradients summed and scaled by 1/4, BatchNorm updated per microbatch."""
    x, t = batch(16, 8, 4)
    model, out, losses, _ = _pipelined_step("1F1B", 0.0, x, t)
    spx.manual_seed(0)
    ref = NormHead(0.0)
    ref_losses, ref_out = [], []
    for xm, tm in zip(jnp.split(x, 4), jnp.split(t, 4), strict=True):
        o = ref(spx.tensor(xm))
        loss = mse(o, spx.tensor(tm)) / 4
        loss.backward()
        ref_losses.append(float(loss) * 4)
        ref_out.append(np.asarray(o.detach()))
    np.testing.assert_allclose(np.asarray(out), np.concatenate(ref_out), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose([float(v) for v in losses], ref_losses, rtol=1e-5)
    for (name, got), want in zip(_state(model).items(), _state(ref).values(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_a_table_edited_in_place_gets_a_new_fusion_plan():
    """The runner caches which F/B pairs it fuses; the cache follows the table's contents, so
    a table edited in place runs as written (GPipe's order, then the same gradients)."""
    from spx.distributed.pipelining.tables.ir import _Action

    x, t = batch(8)
    spx.manual_seed(0)
    model = block(0)
    schedule = get_schedule_class("1F1B")(PipelineStage(model, 0, 1, "cpu"), 2, loss_fn=mse)
    schedule.step(x, target=t)
    table = schedule.pipeline_order_with_comms[0]
    table[:] = [_Action.from_str(a) for a in ["0F0", "0F1", "0B0", "0B1"]]
    model.zero_grad()
    losses: list = []
    schedule.step(x, target=t, losses=losses)
    ref = reference([block(0)], x, t, mse, n_mb=2)
    assert len(losses) == 2
    assert_tree_close([[np.asarray(p.grad) for p in model.parameters()]], ref["grads"], "grads")


class _BackwardBoom(spx.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("boom in the backward")


class _Boom(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(spx.ones(16))  # a gradient to compute: the backward runs

    def forward(self, x):
        return _BackwardBoom.apply(x * self.w)


@pytest.mark.parametrize("name", ["1F1B", "GPipe"])
def test_a_failing_backward_is_reported_at_its_backward_action(name):
    """1F1B's last stage runs F and B as one program; when it fails, the runner runs them
    apart, so the report names the backward action, as it does for GPipe (two programs)."""
    x, t = batch(8)
    schedule = get_schedule_class(name)(PipelineStage(_Boom(), 0, 1, "cpu"), 2, loss_fn=mse)
    with pytest.raises(ValueError, match="boom in the backward") as info:
        schedule.step(x, target=t)
    report = "\n".join(info.value.__notes__)
    step = 1 if name == "1F1B" else 2  # the table's first B
    assert f"failed at step {step} running action 0B0" in report, report


@pytest.mark.parametrize("name", ["1F1B", "GPipe"])
def test_low_precision_and_one_element_losses_train_and_others_raise_torchs_error(name):
    x, t = batch(8)
    results = {}
    for what, loss_fn in {
        "float32": mse,
        "bfloat16": lambda o, y: mse(o, y).to(spx.bfloat16),
        "shape (1,)": lambda o, y: mse(o, y).reshape(1),
    }.items():
        spx.manual_seed(0)
        model = block(0)
        schedule = get_schedule_class(name)(PipelineStage(model, 0, 1, "cpu"), 2, loss_fn=loss_fn)
        losses: list = []
        schedule.step(x, target=t, losses=losses)
        results[what] = [np.asarray(p.grad) for p in model.parameters()]
        assert {str(v.dtype) for v in losses} == {"bfloat16" if what == "bfloat16" else "float32"}
    for what in ("bfloat16", "shape (1,)"):
        assert_tree_close(results[what], results["float32"], what)
    schedule = get_schedule_class(name)(
        PipelineStage(block(0), 0, 1, "cpu"), 2, loss_fn=lambda o, y: ((o - y) ** 2).mean(1)
    )
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        schedule.step(x, target=t)
