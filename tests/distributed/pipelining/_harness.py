"""Shared pieces of the pipelining conformance tests: models, references, rank runners.

Every pipeline result is compared with a *single-device reference*: the same stage modules
(built from the same seeds) chained on one device over the full batch, differentiated with
``spx.backward``. Nothing here calls the runtime under test to compute an expectation.

Compiling each stage's programs dominates the cost of a pipeline test, and a stage's programs
depend only on its module and microbatch shape, not on the schedule. So the grid tests share
stage objects (:func:`shared_stages`) across schedules and microbatch counts of one placement,
as a user may hand the same stages to several schedules; each use puts back the initial
parameters and clears the gradients.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import spx
import spx.distributed as dist
from spx import nn
from spx.distributed.pipelining import PipelineStage, get_schedule_class

D = 16  # width of the grid's stages
MB = 2  # rows per microbatch in the grid: fixed, so programs compile once per stage
RTOL, ATOL = 1e-5, 1e-6
V_SCHEDULES = frozenset({"ZBVZeroBubble", "DualPipeV"})
SINGLE_STAGE = frozenset({"GPipe", "1F1B", "ForwardOnly"})


def block(index: int, d_in: int = D, d_out: int = D) -> nn.Module:
    """Stage ``index`` of the grid: Linear + Tanh, seeded by its index."""
    spx.manual_seed(100 + index)
    return nn.Sequential(nn.Linear(d_in, d_out), nn.Tanh())


def mse(out: jax.Array, target: jax.Array) -> jax.Array:
    return ((out - target) ** 2).mean()


def mse_sum(out: jax.Array, target: jax.Array) -> jax.Array:
    return ((out - target) ** 2).sum()


def batch(rows: int, d_in: int = D, d_out: int = D, seed: int = 0) -> tuple[jax.Array, jax.Array]:
    """A deterministic (input, target) pair of ``rows`` rows."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, d_in)).astype(np.float32)
    t = rng.standard_normal((rows, d_out)).astype(np.float32)
    return jnp.asarray(x), jnp.asarray(t)


def placement(name: str, pp: int, n_stages: int) -> dict[int, int]:
    """stage -> rank, written out from torch's rules (not read from the runtime):
    V schedules put stages r and 2·pp−1−r on rank r, the others stage s on rank s % pp
    (as do invalid V configurations, so that a test can hand them to the schedule)."""
    if name in V_SCHEDULES and n_stages == 2 * pp:
        return {s: (s if s < pp else 2 * pp - 1 - s) for s in range(n_stages)}
    return {s: s % pp for s in range(n_stages)}


def by_rank(stage_to_rank: dict[int, int]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for s in sorted(stage_to_rank):
        out.setdefault(stage_to_rank[s], []).append(s)
    return out


# -- shared stage objects -------------------------------------------------------------------
_SHARED: dict[tuple, tuple[dict[int, PipelineStage], dict[int, list[jax.Array]]]] = {}


def shared_stages(stage_to_rank: dict[int, int], tag: str = "") -> dict[int, PipelineStage]:
    """Grid stages (``block(i)``) for this placement, built once per session and reset.

    Rank ``r`` of a spawn runs on ``jax.local_devices()[r]``, so a stage built here for rank
    ``r`` sits on the device its rank thread uses. ``tag`` separates stage sets whose programs
    differ (a forward-only schedule has no loss_fn).
    """
    key = (tuple(sorted(stage_to_rank.items())), tag)
    if key not in _SHARED:
        n = len(stage_to_rank)
        devices = jax.local_devices()
        stages = {s: PipelineStage(block(s), s, n, devices[r]) for s, r in stage_to_rank.items()}
        # Host copies: restoring them leaves each stage to place its parameters on its device.
        initial = {
            s: [np.asarray(p.detach()) for p in st.submod.parameters()] for s, st in stages.items()
        }
        _SHARED[key] = (stages, initial)
    stages, initial = _SHARED[key]
    for s, st in stages.items():
        for p, v in zip(st.submod.parameters(), initial[s], strict=True):
            p.data = spx.as_tensor(v)
            p.grad = None
    return stages


# -- references -----------------------------------------------------------------------------
def chain(modules: Sequence[nn.Module], *args: Any, **kwargs: Any) -> Any:
    """Run modules in sequence with the pipeline's hand-over rule: a tuple output becomes the
    next module's positional arguments, anything else its single argument."""
    out = modules[0](*args, **kwargs)
    for m in modules[1:]:
        out = m(*out) if isinstance(out, tuple) else m(out)
    return out


def reference(
    modules: Sequence[nn.Module],
    x: Any,
    t: Any,
    loss_fn: Callable[[Any, Any], jax.Array] | None = mse,
    n_mb: int = 1,
    **kwargs: Any,
) -> dict[str, Any]:
    """Single-device reference: full-batch output, per-microbatch losses and ``p.grad`` of
    the full-batch loss (the mean loss over the batch, for ``mse``)."""
    with spx.no_grad():
        out = chain(modules, x, **kwargs)
    result: dict[str, Any] = {"output": np.asarray(out)}
    if loss_fn is None:
        return result
    # The stages here treat rows independently, so microbatch i's loss is the loss on rows
    # of the full-batch output (no second, per-microbatch run of the chain).
    result["losses"] = [
        float(loss_fn(o, y)) for o, y in zip(jnp.split(out, n_mb), jnp.split(t, n_mb), strict=True)
    ]
    result["loss"] = float(spx.backward(lambda *ms: loss_fn(chain(ms, x, **kwargs), t), *modules))
    result["grads"] = grads_of(modules)
    return result


def grads_of(modules: Sequence[nn.Module]) -> list[list[np.ndarray | None]]:
    return [
        [None if p.grad is None else np.asarray(p.grad) for p in m.parameters()] for m in modules
    ]


def params_of(modules: Sequence[nn.Module]) -> list[list[np.ndarray]]:
    return [[np.asarray(p.data) for p in m.parameters()] for m in modules]


def assert_tree_close(
    got: Any, want: Any, what: str, rtol: float = RTOL, atol: float = ATOL
) -> None:
    got_leaves, got_tree = jax.tree_util.tree_flatten(got, is_leaf=lambda v: v is None)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want, is_leaf=lambda v: v is None)
    assert got_tree == want_tree, f"{what}: structure {got_tree} != reference {want_tree}"
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        if w is None:
            assert g is None, f"{what}[{i}]: got a value, the reference has None"
            continue
        assert g is not None, f"{what}[{i}]: got None, the reference has a value"
        np.testing.assert_allclose(
            np.asarray(g, np.float32),
            np.asarray(w, np.float32),
            rtol=rtol,
            atol=atol,
            err_msg=f"{what}[{i}]",
        )


# -- running ranks --------------------------------------------------------------------------
def run_ranks(
    fn: Callable[..., None], nprocs: int, *args: Any, timeout: float = 120.0
) -> dict[int, Any]:
    """Spawn ``fn(rank, out, *args)`` on ``nprocs`` thread ranks and return ``out``.

    Bounded: a hang fails the test after ``timeout`` seconds instead of stalling the suite
    (daemon threads, so a stuck rank does not keep the interpreter alive either).
    """
    out: dict[int, Any] = {}
    ctx = dist.spawn(fn, args=(out, *args), nprocs=nprocs, join=False, daemon=True)
    assert ctx.join(timeout=timeout, grace_period=5), f"ranks did not finish in {timeout} s"
    return out


def in_group(fn: Callable[..., None]) -> Callable[..., None]:
    """Wrap a rank function so it joins the default group first and always leaves it."""

    def rank_main(rank: int, *args: Any) -> None:
        dist.init_process_group("gloo")
        try:
            fn(rank, *args)
        finally:
            dist.destroy_process_group()

    rank_main.__name__ = fn.__name__
    return rank_main


# -- one step of a grid configuration -------------------------------------------------------
def make_schedule(name: str, stages: list[PipelineStage], n_mb: int, **kwargs: Any) -> Any:
    cls = get_schedule_class(name)
    return cls(stages[0] if name in SINGLE_STAGE else stages, n_mb, **kwargs)


def step_rank(
    rank: int,
    out: dict,
    name: str,
    mine: dict,
    n_mb: int,
    x: Any,
    t: Any,
    loss_fn: Any,
    options: dict,
) -> None:
    """One ``step`` of schedule ``name`` on this rank's stages; report what the rank saw."""
    stages = mine[rank]
    schedule = make_schedule(name, stages, n_mb, loss_fn=loss_fn, **options)
    first = any(s.is_first for s in stages)
    last = any(s.is_last for s in stages)
    losses: list = []
    kwargs = {"target": t, "losses": losses} if last and loss_fn is not None else {}
    result = schedule.step(*((x,) if first else ()), **kwargs)
    out[rank] = {
        "output": None if result is None else np.asarray(result),
        "losses": [float(v) for v in losses],
        "grads": {
            s.stage_index: [
                None if p.grad is None else np.asarray(p.grad) for p in s.submod.parameters()
            ]
            for s in stages
        },
        "peak": {s.stage_index: s.peak_stored for s in stages},
    }


def run_step(
    name: str, pp: int, per_rank: int, n_mb: int, loss_fn: Any = mse, **options: Any
) -> tuple[dict, Any, Any]:
    """One step of a grid configuration on the shared stages: (per-rank results, x, t)."""
    n_stages = pp * per_rank
    stage_to_rank = placement(name, pp, n_stages)
    tag = "fwd" if loss_fn is None else ("sum" if loss_fn is mse_sum else "")
    stages = shared_stages(stage_to_rank, tag)
    mine = {r: [stages[s] for s in ss] for r, ss in by_rank(stage_to_rank).items()}
    x, t = batch(n_mb * MB, seed=n_mb)
    results = run_ranks(in_group(step_rank), pp, name, mine, n_mb, x, t, loss_fn, options)
    return results, x, t


def check_against_reference(
    results: dict, n_stages: int, n_mb: int, x: Any, t: Any, loss_fn: Any = mse
) -> dict:
    ref = reference([block(s) for s in range(n_stages)], x, t, loss_fn, n_mb)
    last = next(r for r in results.values() if r["output"] is not None)
    assert_tree_close(last["output"], ref["output"], "merged output")
    grads = {s: g for r in results.values() for s, g in r["grads"].items()}
    assert sorted(grads) == list(range(n_stages))
    if loss_fn is None:
        assert all(g is None for gs in grads.values() for g in gs), "forward-only wrote grads"
        return ref
    np.testing.assert_allclose(last["losses"], ref["losses"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.mean(last["losses"]), ref["loss"], rtol=1e-5)
    for s in range(n_stages):
        assert_tree_close(grads[s], ref["grads"][s], f"stage {s} grads")
    return ref
