"""Benchmark: a pipeline schedule's ``step()`` against a hand-written loop over the same programs.

What is measured: the wall time of one training step (all microbatches' forwards and backwards,
gradients in ``param.grad``) of a pipeline of small MLP stages (``--layers`` x Linear(``--width``)
+ Tanh each, MSE loss) on thread ranks, two ways, in the same rank threads and interleaved step
by step so that machine noise hits both alike:

* ``schedule`` — ``schedule.step(...)``: the spx runtime (``RankRunner.run`` driving
  ``PipelineStage.forward_one_chunk`` / ``backward_one_chunk`` / ...), microbatch splitting,
  shape checks, parameter reads, gradient hand-off into ``param.grad``.
* ``hand``     — the floor for this design: a loop that iterates the rank's own action list
  (``schedule.pipeline_order[rank]``) and calls the stage's compiled programs
  (``stage._programs._forward`` / ``_backward`` / ``_backward_input`` / ``_backward_weight``,
  the very ``jax.jit`` objects the runtime calls) and ``backend.send_tree`` / ``recv_tree`` in
  the same order, on microbatches split once up front, with no checks and no bookkeeping beyond
  a list of residuals per stage and a dict for stage-to-stage hand-offs inside one rank. It
  leaves the same gradients in ``param.grad`` (scaled by 1/n_microbatches in one jitted call
  per stage); they are checked against the schedule's before timing.

Each step starts after a barrier and ends when this rank's gradients (and, on the last stage,
its losses) are ready; the step time is the slowest rank's. Reported: median ms/step of both,
their ratio (target <= 1.2) and the implied framework overhead per action in µs, three ways:
the wall-time difference divided by the actions of one rank (an upper bound, as if no rank's
overhead overlapped another's), by the actions of all ranks (the ranks are threads of one
interpreter, so their Python work serialises on the GIL), and the difference of the step's
CPU time summed over the rank threads (``time.thread_time``) divided by all actions — the
least noisy figure on a loaded machine, since it ignores time spent waiting for a core.

``--profile`` additionally prints, per rank, wall and CPU time per call of the runtime's
sections (step, action loop, stage methods, the program wrappers, the jit calls inside them,
transfers), measured by wrappers installed on this run's objects only; on the one-rank
configuration (``1f1b-1rank``: no threads, no transfers) it also re-runs each bookkeeping line
of the runtime in isolation next to a leaner way of doing the same job; and it prints a
cProfile summary of rank 0's ``step()``.

Usage: ``python tools/bench_pipeline.py [--steps 30] [--warmup 5] [--schedules 1f1b,gpipe,...]
[--profile]``
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax

jax.config.update("jax_num_cpu_devices", 8)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import spx  # noqa: E402
import spx.distributed as dist  # noqa: E402
from spx import nn  # noqa: E402
from spx import random as spx_random  # noqa: E402
from spx.distributed.pipelining import PipelineStage, get_schedule_class  # noqa: E402
from spx.distributed.pipelining.microbatch import (  # noqa: E402
    split_args_kwargs_into_chunks,
    split_target,
)
from spx.distributed.pipelining.tables.ir import (  # noqa: E402
    BACKWARD_INPUT,
    BACKWARD_WEIGHT,
    FORWARD,
    FULL_BACKWARD,
)
from spx.distributed.pipelining.tables.orders import get_schedule_spec  # noqa: E402

# (schedule name, ranks, stages per rank)
CONFIGS: dict[str, tuple[str, int, int]] = {
    "1f1b-1rank": ("1F1B", 1, 1),  # no threads, no transfers: the runtime's own cost, unmixed
    "1f1b": ("1F1B", 4, 1),
    "gpipe": ("GPipe", 4, 1),
    "interleaved1f1b": ("Interleaved1F1B", 2, 2),
    "zbvzerobubble": ("ZBVZeroBubble", 2, 2),
}
RATIO_TARGET = 1.2
OVERHEAD_TARGET_US = 30.0


@dataclass(frozen=True)
class Options:
    schedule: str
    ranks: int
    stages_per_rank: int
    n_microbatches: int
    batch: int
    width: int
    layers: int
    steps: int
    warmup: int
    profile: bool


def log(rank: int, msg: str) -> None:
    print(f"[rank{rank}] {msg}", flush=True)


def mse(out: jax.Array, target: jax.Array) -> jax.Array:
    return jnp.mean((out - target) ** 2)


def make_stage_module(width: int, layers: int) -> nn.Module:
    mods: list[nn.Module] = []
    for _ in range(layers):
        mods += [nn.Linear(width, width), nn.Tanh()]
    return nn.Sequential(*mods)


# -- the floor -------------------------------------------------------------------------------
class HandLoop:
    """One rank's step with nothing between the compiled programs and the transfers.

    Args:
        schedule: the schedule whose action list, stages and programs are reused (built and run
            once, so the programs are compiled and the I/W splits exist).
        x_mb, y_mb: the microbatches of stage 0's input and the last stage's target, split once.
    """

    def __init__(self, schedule: Any, x_mb: list[tuple], y_mb: list[Any]) -> None:
        self.rank = schedule.rank
        self.stages: dict[int, PipelineStage] = schedule._stages
        self.last = schedule._num_stages - 1
        self.n = schedule._n_microbatches
        self.scale = 1.0 / self.n
        self.backend = schedule._group.backend
        self.stage_to_rank = schedule.stage_to_rank
        self.actions = [
            (a.stage_index, a.computation_type, a.microbatch_index)
            for act in schedule.pipeline_order[self.rank]
            if act is not None
            for a in act.leaves()
        ]
        if any(
            k not in (FORWARD, FULL_BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT)
            for _, k, _ in self.actions
        ):
            raise ValueError("the hand loop runs compute-only tables (implicit transfers)")
        self.x_mb, self.y_mb = x_mb, y_mb
        self.programs = {s: st._programs for s, st in self.stages.items()}
        self.diff_mask = {
            s: tuple(s != 0 for _ in jax.tree_util.tree_leaves(x_mb[0])) for s in self.stages
        }
        self.losses: list[Any] = [None] * self.n

    def step(self) -> None:
        rank, last, be, s2r = self.rank, self.last, self.backend, self.stage_to_rank
        programs = self.programs
        params = {s: p.read_params() for s, p in programs.items()}
        buffers = {s: p.read_buffers() for s, p in programs.items()}
        res: dict[int, list[Any]] = {s: [None] * self.n for s in programs}
        saved: dict[int, list[Any]] = {s: [None] * self.n for s in programs}
        # The same work as the runtime: committed zero accumulators, then the same programs.
        acc = {
            s: jax.device_put(p.zero_accumulators(), self.stages[s].device)
            for s, p in programs.items()
        }
        local: dict[tuple, Any] = {}
        key = jax.device_put(spx_random.get_key(), next(iter(self.stages.values())).device)
        for s, kind, mb in self.actions:
            p = programs[s]
            train, frozen = params[s]
            if kind is FORWARD:
                if s == 0:
                    args = self.x_mb[mb]
                else:
                    t = ("F", s, mb)
                    v = local.pop(t) if t in local else be.recv_tree(s2r[s - 1], t)
                    args = v if isinstance(v, tuple) else (v,)
                out, loss, r, _, key = p._forward(
                    train,
                    frozen,
                    buffers[s],
                    key,
                    args,
                    ({}, self.y_mb[mb] if s == last else None),
                    self.diff_mask[s],
                )
                res[s][mb] = (r, jax.tree_util.tree_leaves(args) if r.layout[2] else None)
                if s == last:
                    self.losses[mb] = loss
                else:
                    t = ("F", s + 1, mb)
                    if s2r[s + 1] == rank:
                        local[t] = out
                    else:
                        be.send_tree(out, s2r[s + 1], t)
                continue
            if kind is BACKWARD_WEIGHT:
                r, inputs, g, bridge = saved[s][mb]
                acc[s] = p._backward_weight(r, train, frozen, inputs, buffers[s], g, bridge, acc[s])
                continue
            if s == last:
                g = None
            else:
                t = ("B", s, mb)
                g = local.pop(t) if t in local else be.recv_tree(s2r[s + 1], t)
            r, inputs = res[s][mb]
            if kind is FULL_BACKWARD:
                g_in, acc[s] = p._backward(r, train, frozen, inputs, buffers[s], g, acc[s])
            else:
                g_in, bridge = p._backward_input(r, train, frozen, inputs, buffers[s], g)
                saved[s][mb] = (r, inputs, g, bridge)
            res[s][mb] = None
            if s != 0:
                t = ("B", s - 1, mb)
                if s2r[s - 1] == rank:
                    local[t] = g_in
                else:
                    be.send_tree(g_in, s2r[s - 1], t)
        spx_random.set_key(key)
        for s, p in programs.items():
            p.finish(p.train_params, acc[s], self.scale)


# -- one rank ----------------------------------------------------------------------------------
def _grads(stages: dict[int, PipelineStage]) -> list[jax.Array]:
    return [p.grad for st in stages.values() for p in st.submod.parameters()]


def _zero(stages: dict[int, PipelineStage]) -> None:
    for st in stages.values():
        st.submod.zero_grad()


class _Timer:
    """Wall (perf_counter) and CPU (this thread's thread_time) totals per label, one rank."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.count: dict[str, int] = defaultdict(int)

    def wrap(self, obj: Any, name: str, label: str) -> None:
        fn = getattr(obj, name)
        wall, cpu, count = self.wall, self.cpu, self.count
        wall[label], cpu[label], count[label] = wall[label], cpu[label], count[label]

        def timed(*a: Any, **k: Any) -> Any:
            c0, t0 = time.thread_time(), time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                wall[label] += time.perf_counter() - t0
                cpu[label] += time.thread_time() - c0
                count[label] += 1

        setattr(obj, name, timed)


def _instrument(schedule: Any) -> _Timer:
    """Wrap this run's runtime objects (instance attributes only; no runtime file changes)."""
    timer = _Timer()
    timer.wrap(schedule, "_run", "schedule._run (whole step)")
    for st in schedule._stages.values():
        timer.wrap(st, "_begin_step", "  stage._begin_step")
        timer.wrap(st, "_finish_step", "  stage._finish_step")
    timer.wrap(schedule._runner, "run", "  RankRunner.run (action loop)")
    timer.wrap(schedule._transport, "send", "    transport.send (send_tree)")
    timer.wrap(schedule._transport, "post_recv", "    transport.post_recv (irecv_tree)")
    for st in schedule._stages.values():
        for m in (
            "forward_one_chunk",
            "backward_one_chunk",
            "forward_backward_one_chunk",
            "backward_input_one_chunk",
            "backward_weight_one_chunk",
        ):
            timer.wrap(st, m, f"    stage.{m}")
        for m in ("forward", "backward", "forward_backward", "backward_input", "backward_weight"):
            timer.wrap(st._programs, m, f"      programs.{m} (wrapper)")
        for m in (
            "_forward",
            "_backward",
            "_forward_backward",
            "_backward_input",
            "_backward_weight",
        ):
            timer.wrap(st._programs, m, f"        programs.{m} (jit call)")
        timer.wrap(st, "_check_inputs", "      stage._check_inputs")
        timer.wrap(st, "_check_output", "      stage._check_output")
    return timer


def _per_call_us(fn: Callable[[], Any], number: int = 200, repeat: int = 7) -> float:
    """Min over ``repeat`` runs of the mean µs per call (the min filters the machine's noise)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best * 1e6


def _dispatch_us(fn: Callable[[], Any], repeat: int = 50) -> float:
    """Min µs for ``fn()`` to return (async dispatch), waiting for its result between calls."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = fn()
        best = min(best, time.perf_counter() - t0)
        jax.block_until_ready(r)
    return best * 1e6


def line_costs(schedule: Any, x: jax.Array, y: jax.Array) -> list[tuple[str, str, float]]:
    """Per-call cost of the runtime's bookkeeping lines, each run on its own (rank 0)."""
    from spx.distributed.pipelining.stage import _meta

    stage = next(iter(schedule._stages.values()))
    programs = stage._programs
    n = schedule._n_microbatches
    args = split_args_kwargs_into_chunks((x,), {}, n)[0][0]
    stage._begin_step()
    out = stage.forward_one_chunk(
        0, args, {}, split_target(y, n)[0] if stage.is_last else None, train=False
    )

    def state_rw() -> None:
        b = programs.read_buffers()
        k = spx_random.get_key()
        programs.write_buffers(b)
        spx_random.set_key(k)

    rows = [
        (
            "stage.py forward_one_chunk",
            "self._check_inputs(args, mb)",
            _per_call_us(lambda: stage._check_inputs(args, 0)),
        ),
        (
            "stage.py forward_one_chunk",
            "self._check_output(out, mb)",
            _per_call_us(lambda: stage._check_output(out, 0)),
        ),
        ("stage.py _meta (inside both)", "_meta(args)", _per_call_us(lambda: _meta(args))),
        (
            "stage.py forward_one_chunk",
            "read_buffers/get_key/write_buffers/set_key",
            _per_call_us(state_rw),
        ),
        (
            "stage.py _begin_step",
            "placement check, read_params",
            _per_call_us(stage._begin_step, number=50),
        ),
        (
            "stage.py _accumulators",
            "one jitted zeros + device_put, once a step",
            _dispatch_us(lambda: (setattr(stage, "_acc", None), stage._accumulators())),
        ),
        (
            "schedules.py _run",
            "split_args_kwargs_into_chunks((x,), {}, n)",
            _dispatch_us(lambda: split_args_kwargs_into_chunks((x,), {}, n)),
        ),
    ]
    stage._reset_step()
    stage._begin_step()
    return rows


def rank_main(rank: int, opts: Options, results: dict) -> None:
    dist.init_process_group()
    cls = get_schedule_class(opts.schedule)
    n_stages = opts.ranks * opts.stages_per_rank
    placement = get_schedule_spec(opts.schedule).stage_to_rank(opts.ranks, n_stages)
    mine = sorted(s for s, r in placement.items() if r == rank)
    dev = spx.device("cpu")
    stages = []
    for s in mine:
        spx.manual_seed(1000 + s)  # the same stage weights whatever the placement
        stages.append(PipelineStage(make_stage_module(opts.width, opts.layers), s, n_stages, dev))
    schedule = cls(
        stages[0] if opts.stages_per_rank == 1 else stages, opts.n_microbatches, loss_fn=mse
    )
    holds_first, holds_last = 0 in mine, n_stages - 1 in mine
    rng = np.random.default_rng(0)
    x = jax.device_put(rng.standard_normal((opts.batch, opts.width), np.float32), dev)
    y = jax.device_put(rng.standard_normal((opts.batch, opts.width), np.float32), dev)
    st = schedule._stages

    def sched_step() -> None:
        losses: list[Any] = []
        if holds_first and holds_last:
            schedule.step(x, target=y, losses=losses, return_outputs=False)
        elif holds_first:
            schedule.step(x)
        elif holds_last:
            schedule.step(target=y, losses=losses, return_outputs=False)
        else:
            schedule.step()
        jax.block_until_ready((_grads(st), losses))

    sched_step()  # compiles the programs (and the I/W splits) before the hand loop reads them
    x_mb = split_args_kwargs_into_chunks((x,), {}, opts.n_microbatches)[0]
    y_mb = split_target(y, opts.n_microbatches)
    hand = HandLoop(schedule, x_mb, y_mb)

    def hand_step() -> None:
        hand.step()
        jax.block_until_ready((_grads(st), hand.losses if holds_last else None))

    # Same gradients both ways: the floor does the runtime's work, no more and no less.
    _zero(st)
    sched_step()
    ref = [np.asarray(g) for g in _grads(st)]
    _zero(st)
    hand_step()
    got = [np.asarray(g) for g in _grads(st)]
    worst = max(float(np.max(np.abs(a - b))) for a, b in zip(ref, got, strict=True))
    if worst > 1e-6:
        raise RuntimeError(f"hand loop gradients differ from the schedule's by {worst:g}")

    def timed(fn: Callable[[], None]) -> tuple[float, float]:
        _zero(st)
        dist.barrier()
        c0, t0 = time.thread_time(), time.perf_counter()
        fn()
        return time.perf_counter() - t0, time.thread_time() - c0

    for _ in range(opts.warmup):
        timed(sched_step)
        timed(hand_step)
    times: dict[str, list[tuple[float, float]]] = {"schedule": [], "hand": []}
    bar = tqdm(total=opts.steps, desc=opts.schedule, unit="step", disable=rank != 0, leave=False)
    for i in range(opts.steps):
        # Alternate which goes first, so neither always runs right after a barrier.
        order = (("schedule", sched_step), ("hand", hand_step))
        for name, fn in order if i % 2 == 0 else order[::-1]:
            times[name].append(timed(fn))
        bar.update()
    bar.close()

    timer = None
    if opts.profile:
        if opts.ranks == 1:  # before the wrappers go in, so they count only real steps
            results["lines"] = line_costs(schedule, x, y)
        timer = _instrument(schedule)
        prof = cProfile.Profile() if rank == 0 else None
        for _ in range(opts.steps):
            _zero(st)
            dist.barrier()
            if prof is not None:
                prof.enable()
            sched_step()
            if prof is not None:
                prof.disable()
        if prof is not None:
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(18)
            results["cprofile"] = buf.getvalue()
    results[rank] = {
        "times": times,
        "actions": len(hand.actions),
        "timer": None if timer is None else (dict(timer.wall), dict(timer.cpu), dict(timer.count)),
    }
    dist.barrier()


# -- report ------------------------------------------------------------------------------------
def run_config(opts: Options) -> dict[str, Any]:
    results: dict = {}
    dist.spawn(rank_main, (opts, results), nprocs=opts.ranks)
    per_rank = [results[r] for r in range(opts.ranks)]
    # wall: the slowest rank's step; cpu: this step's CPU time summed over the rank threads
    step = {
        name: [max(r["times"][name][i][0] for r in per_rank) for i in range(opts.steps)]
        for name in ("schedule", "hand")
    }
    cpu = {
        name: [sum(r["times"][name][i][1] for r in per_rank) for i in range(opts.steps)]
        for name in ("schedule", "hand")
    }
    sched_ms = statistics.median(step["schedule"]) * 1e3
    hand_ms = statistics.median(step["hand"]) * 1e3
    per_rank_actions = max(r["actions"] for r in per_rank)
    all_actions = sum(r["actions"] for r in per_rank)
    diff_us = (sched_ms - hand_ms) * 1e3
    cpu_diff_us = (statistics.median(cpu["schedule"]) - statistics.median(cpu["hand"])) * 1e6
    out = {
        "schedule": opts.schedule,
        "ranks": opts.ranks,
        "stages": opts.ranks * opts.stages_per_rank,
        "sched_ms": sched_ms,
        "hand_ms": hand_ms,
        "ratio": sched_ms / hand_ms,
        "us_per_action_rank": diff_us / per_rank_actions,
        "us_per_action_all": diff_us / all_actions,
        "cpu_us_per_action": cpu_diff_us / all_actions,
        "cpu_ms": (statistics.median(cpu["schedule"]) * 1e3, statistics.median(cpu["hand"]) * 1e3),
        "actions": (per_rank_actions, all_actions),
    }
    if opts.profile:
        out["timers"] = [r["timer"] for r in per_rank]
        out["cprofile"] = results.get("cprofile", "")
        out["lines"] = results.get("lines")
    return out


def print_profile(row: dict[str, Any], steps: int) -> None:
    print(
        f"\n[rank0] sections of {row['schedule']} step(): wall (perf_counter) and this "
        "thread's CPU (thread_time), µs per call; nested labels are inside the one above"
    )
    for rank, (wall, cpu, count) in enumerate(row["timers"]):
        print(f"[rank0]   rank {rank}: {'':<46}{'wall/call':>10}{'cpu/call':>10}{'calls/step':>11}")
        for label in wall:
            n = max(count[label], 1)
            print(
                f"[rank0]     {label:<52}{wall[label] / n * 1e6:>10.1f}"
                f"{cpu[label] / n * 1e6:>10.1f}{count[label] / steps:>11.0f}"
            )
    if row.get("lines"):
        print("[rank0] runtime lines re-run in isolation (one rank), µs per call, min of 7:")
        for where, what, us in row["lines"]:
            print(f"[rank0]   {where:<30} {what:<48} {us:8.1f}")
    print("[rank0] cProfile of rank 0's step() (tottime):")
    for line in row["cprofile"].splitlines():
        print(f"[rank0]   {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument(
        "--schedules", default=",".join(CONFIGS), help=f"comma-separated, from {sorted(CONFIGS)}"
    )
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--batch", type=int, default=64, help="full batch (all microbatches)")
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--layers", type=int, default=3, help="Linear+Tanh pairs per stage")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also time the runtime's sections and cProfile rank 0",
    )
    args = parser.parse_args()

    names = [s.strip().lower() for s in args.schedules.split(",") if s.strip()]
    unknown = [s for s in names if s not in CONFIGS]
    if unknown:
        parser.error(f"unknown schedule(s) {unknown}; choose from {sorted(CONFIGS)}")
    log(
        0,
        f"load before: {os.getloadavg()[0]:.2f} (1-min avg), {os.cpu_count()} cores; "
        f"stage = {args.layers} x Linear({args.width})+Tanh, batch {args.batch}, "
        f"{args.microbatches} microbatches, {args.steps} steps after {args.warmup} warm-up",
    )
    rows = []
    for name in names:
        schedule, ranks, per_rank = CONFIGS[name]
        opts = Options(
            schedule,
            ranks,
            per_rank,
            args.microbatches,
            args.batch,
            args.width,
            args.layers,
            args.steps,
            args.warmup,
            args.profile,
        )
        row = run_config(opts)
        rows.append(row)
        log(0, f"{schedule}: schedule {row['sched_ms']:.2f} ms, hand {row['hand_ms']:.2f} ms")
        if args.profile:
            print_profile(row, args.steps)
    load = os.getloadavg()[0]

    print()
    print(
        f"[rank0] {'schedule':<16}{'ranks':>6}{'stages':>7}{'actions':>10}"
        f"{'step ms':>10}{'hand ms':>10}{'ratio':>8}{'µs/action':>11}{'(all ranks)':>13}"
        f"{'cpu step/hand ms':>18}{'cpu µs/action':>15}"
    )
    for r in rows:
        acts = f"{r['actions'][0]}/{r['actions'][1]}"
        print(
            f"[rank0] {r['schedule']:<16}{r['ranks']:>6}{r['stages']:>7}{acts:>10}"
            f"{r['sched_ms']:>10.2f}{r['hand_ms']:>10.2f}{r['ratio']:>8.2f}"
            f"{r['us_per_action_rank']:>11.1f}{r['us_per_action_all']:>13.1f}"
            f"{r['cpu_ms'][0]:>10.2f}/{r['cpu_ms'][1]:<7.2f}{r['cpu_us_per_action']:>15.1f}"
        )
    print(
        f"[rank0] load after: {load:.2f} (1-min avg). actions = per rank / all ranks; "
        "µs/action = (step - hand) / actions of one rank, and / actions of all ranks; cpu = "
        "thread CPU time summed over ranks. Targets: ratio <= "
        f"{RATIO_TARGET}, overhead well under {OVERHEAD_TARGET_US:g} µs/action."
    )


if __name__ == "__main__":
    main()
