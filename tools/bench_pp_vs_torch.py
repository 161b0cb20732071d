"""Benchmark: pipelined training, one rank per process — spx under spx-run vs torch under torchrun.

The same small model — an MLP language model: embedding, ``--blocks`` residual MLP blocks of
width ``--width`` (4x hidden, tanh), linear head, cross-entropy — trains with Schedule1F1B over
2 and over 4 processes (blocks split evenly; the embedding on the first stage, the head on the
last), ``--microbatches`` microbatches of a ``--batch`` x ``--seq`` token batch, SGD after every
step:

- spx: ``spx-run --standalone --nproc-per-node N`` running ``spx.distributed.pipelining`` on the
  multi-process backend (activations and gradients over ``jax.experimental.transfer``);
- torch: ``torchrun --standalone --nproc-per-node N`` running ``torch.distributed.pipelining``
  with gloo (``torch.set_num_threads(1)``, as torchrun's OMP_NUM_THREADS=1).

Step time: median ms/step of ``--steps`` timed steps after ``--warmup``, on rank 0 between
barriers, over ``--rounds`` launches of each job; spx and torch launches alternate so that the
shared machine's load hits both alike. Time to first step (from the moment the launcher is
started until the first step has finished on every rank): spx's first launch of each job runs
with an empty compilation cache (a fresh ``SPX_COMPILATION_CACHE_DIR``), every later launch with
the cache the earlier ones wrote (spx gives every rank its own). The load average is printed
with every launch and in the summary.

The 1-process job (one stage holding the whole model, no transfers; spx's single-process
backend, without the per-rank compilation cache) shows what the compute alone costs.

Runs of 2026-11-26 21:45-22:35 (load 1.6-3.2), after spx's linear started flattening its
leading dims (the stage programs' 3-D dots had a ~1.5x slower weight gradient on XLA's CPU
backend): 1 process spx/torch 0.97 / 1.05 (was 1.27), 2 processes 1.41 / 1.28, 4 processes
1.54 / 1.51; compute floor jax/torch 0.92-0.99. Per-action timings of a 2-process step (spx
42-60 ms): rank 0's backward waits 4-8 ms per microbatch for the gradient and rank 1's forward
as long for the activation: in 1F1B on two ranks, rank 0 runs F(i+2) only after B(i), so each
activation rank 1 needs comes after a gradient transfer, rank 0's B and F, and an activation
transfer (~0.4 ms each way through ``jax.experimental.transfer``, spx's p2p round trip of 64 KiB
0.86 ms). The target (<= 0.5) would need the 2-process step at ~22-24 ms, about the ideal
split of the 40 ms one-process step with no bubble and no transfer cost.

Usage: ``python tools/bench_pp_vs_torch.py [--nprocs 1 2 4] [--rounds 2] [--steps 30]``

Results (``--rounds 2 --steps 20``, 4 blocks of width 128, batch 32x32, vocab 512, 8
microbatches), 2026-11-26, torch set to one thread per process in both places:

    machine                                    processes  spx ms/step  torch ms/step  spx/torch
    2-core CPU box, jax 0.10.2, torch 2.13.0,  1          53.5         41.9           1.27
    load 0.4-3.1                               2          59.5         43.2           1.38
                                               4          78.8         50.2           1.57
    16-core CPU of the GPU machine (CPU only), 2          30.2         26.0           1.16
    jax 0.11.2, torch 2.11.0, load 0.4-2.2     4          22.6         19.3           1.17

    time to first step, 1st / 2nd launch: 2-core box 7.4 / 3.6 s (0.49) on 2 processes,
    10.1 / 5.0 s (0.49) on 4; 16 cores 4.2 / 4.1 s (0.97) and 5.9 / 4.0 s (0.68); torch 4.8-10.1 s

A run of 2026-11-26 13:35 (2-core box, load 1.0-2.5), with the compute floor measured in the same
run (``tools/_compute_floor.py``: the whole model's step over the 8 microbatches alone on one
core, raw ``jax.jit`` 42.0 ms, torch eager 37.4 ms, jax/torch 1.12): 2 processes spx 51.4 vs
torch 42.0 ms/step (1.22), 4 processes 88.1 vs 50.8 (1.74); time to first step of the second
launch 0.45x / 0.48x the first. (Pinning each spx rank to one core, tried the same day, gave
1.60 / 1.48: not a fix.)

**The step-time target (spx/torch <= 0.5) is not met.** On the Intel boxes above spx was
1.16-1.74x torch's step time. 2026-11-27 (stop 23), a 2-core AMD EPYC box (load 1.1-1.8), at
the start of the stop: 1 process 0.45, 2 processes 0.89 (spx 31.9, torch 35.9 ms/step), 4
processes 1.19 (51.0 vs 42.7); compute floor jax/torch 0.46 (raw ``jax.jit`` 21.4 ms, torch
46.9). At its end, with spx-run's ``PJRT_NPROC`` (each worker's share of the cores for XLA's
thread pools) and the faster join (``--rounds 2``, load 1.1-2.0): 1 process 0.46, 2 processes
0.80 (30.8 vs 38.6), 4 processes 0.84 (40.2 vs 47.7); time to first step, first / second
launch: 3.9 / 2.2 s on 2 processes (0.57; torch 2.8 s), 6.4 / 3.3 s on 4 (0.52; torch 4.9 s).
A warm launch is now faster than torch's, but so is the cold one (compiling is fast on this
box and the join lost a second of gRPC backoff), so the <= 0.5 ratio is missed: of a warm
launch's 2.1 s, 0.8 s is spx-run itself (``import spx`` imports jax), 0.7 s the workers'
imports, 0.2 s building the model and 0.3 s the first step. The target asks for the 2-process
step at <= 18 ms. What bounds it there, measured on that box (each program
waited for; ``PipelineStage``'s forward and backward programs, pinned to one core): per
microbatch a block costs 0.25 ms forward and 0.5 ms backward, so each rank of the 2-process
split (2 blocks, plus the embedding or the head) computes ~1.8 ms per microbatch, 14.4 ms per
step; 1F1B on two ranks adds one microbatch of fill and drain (~1.8 ms), and each microbatch's
cycle crosses the link twice (rank 1's gradient, then rank 0's next activation: 0.3 ms one
way for 64 KiB through ``jax.experimental.transfer`` between idle processes, 0.59 ms round
trip). That is >= 16 ms before any transfer and ~19 ms with them (0.53x), with perfect
overlap. Measured, each rank's programs run ~35% slower than pinned alone (F 0.85, B 1.5-1.65
ms for the half model: XLA's pool of one thread per core, in two processes, on two cores), and
the ranks wait 1.5-5 ms per microbatch for each other: a message's one-way latency, sender's
wall clock to receiver's, is 1.0-1.6 ms when both processes keep their cores busy (0.43 ms
into an idle receiver), since transfer's own send and receive threads then wait for a core.
Tried,
no change at 2 processes: ``PJRT_NPROC=1`` (XLA's CPU pools of one thread: 2 processes 32.3
ms, 4 processes 44.7 instead of 51.0, 1 process 25.5 instead of 20.6),
``--xla_cpu_multi_thread_eigen=false`` (32.3), garbage collection off.
(The 0.52-1.07 of an earlier run, 2026-11-24, compared against torch slowed by other jobs on the
box: 97-111 ms/step then, 43 ms/step on a quiet box now.) Why:

- The compute itself is not faster: the same model's forward+backward over 8 microbatches of
  4x32 tokens, raw ``jax.jit`` vs torch eager on one thread, measured 40.0 vs 35.7 ms (XLA's CPU
  matmuls for these small shapes are no faster than torch's oneDNN); over the full 32x32 batch
  in one program JAX is faster (25.7 vs 35.5 ms), which microbatching gives away.
- On one process spx's stage took 53.5 ms/step (torch 41.9 in the same run, load 2.4-2.9), more
  than the raw loop: a forward program that keeps residuals and a separate backward program per
  microbatch instead of one fused gradient.
- Across processes each microbatch's activation and gradient goes through
  ``jax.experimental.transfer`` (~0.8 ms per 64 KiB round trip through spx's p2p, ~0.4 ms raw),
  16 per step on 2 ranks, and on two cores the ranks' compute and transfers contend.

With one core per process (16 cores) the pipeline does split the work (4 processes: 22.6
ms/step against 53.5 on one process) and spx is within 1.16-1.17x of torch. The
time-to-first-step target (second launch <= 0.5x the first) is met on the 2-core box (0.49,
0.49), where compiling is slow; on 16 cores compiling is fast and the cache saves less (0.68,
0.97). What a warm launch still costs: ~1 s of spx-run itself (importing spx imports jax),
~1.5 s of the workers' start-up and imports, then 1.4-2.5 s from ``init_process_group`` to the
end of the first step (JAX traces and lowers every program again before it finds the cached
executable; only XLA's compilation is skipped).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _stages_of(rank: int, nprocs: int, blocks: int) -> range:
    per = blocks // nprocs
    return range(rank * per, (rank + 1) * per)


# -- the workers (one per rank, started by spx-run / torchrun) ----------------------------------
def worker_spx(a: argparse.Namespace) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import spx
    import spx.distributed as dist
    import spx.nn.functional as F
    from spx import nn
    from spx.distributed.pipelining import PipelineStage, Schedule1F1B

    t_init = time.time()
    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.Linear(a.width, 4 * a.width)
            self.down = nn.Linear(4 * a.width, a.width)

        def forward(self, h):
            return h + self.down(self.up(h).tanh())

    class Stage(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(a.vocab, a.width) if rank == 0 else None
            self.blocks = nn.ModuleList([Block() for _ in _stages_of(rank, n, a.blocks)])
            self.head = nn.Linear(a.width, a.vocab) if rank == n - 1 else None

        def forward(self, x):
            h = self.embed(x) if self.embed is not None else x
            for b in self.blocks:
                h = b(h)
            return self.head(h) if self.head is not None else h

    def loss_fn(logits, y):
        return F.cross_entropy(logits.reshape(-1, a.vocab), y.reshape(-1))

    spx.manual_seed(rank)
    model = Stage()
    stage = PipelineStage(model, rank, n, spx.device("cpu"))
    schedule = Schedule1F1B(stage, a.microbatches, loss_fn=loss_fn)
    opt = spx.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.integers(0, a.vocab, (a.batch, a.seq)), jnp.int32)
    y = jnp.asarray(rng.integers(0, a.vocab, (a.batch, a.seq)), jnp.int32)

    def step() -> None:
        opt.zero_grad()
        schedule.step(*((x,) if rank == 0 else ()), **({"target": y} if rank == n - 1 else {}))
        opt.step()
        # Parameters require grad, so JAX functions refuse them; their detached views do not.
        jax.block_until_ready([p.detach() for p in model.parameters()])

    return _timed(step, dist.barrier, a, t_init, dist.destroy_process_group)


def worker_torch(a: argparse.Namespace) -> dict:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch import nn
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B

    torch.set_num_threads(1)
    t_init = time.time()
    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.Linear(a.width, 4 * a.width)
            self.down = nn.Linear(4 * a.width, a.width)

        def forward(self, h):
            return h + self.down(torch.tanh(self.up(h)))

    class Stage(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(a.vocab, a.width) if rank == 0 else None
            self.blocks = nn.ModuleList([Block() for _ in _stages_of(rank, n, a.blocks)])
            self.head = nn.Linear(a.width, a.vocab) if rank == n - 1 else None

        def forward(self, x):
            h = self.embed(x) if self.embed is not None else x
            for b in self.blocks:
                h = b(h)
            return self.head(h) if self.head is not None else h

    def loss_fn(logits, y):
        return F.cross_entropy(logits.reshape(-1, a.vocab), y.reshape(-1))

    torch.manual_seed(rank)
    model = Stage()
    stage = PipelineStage(model, rank, n, torch.device("cpu"))
    schedule = Schedule1F1B(stage, a.microbatches, loss_fn=loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g)
    y = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g)

    def step() -> None:
        opt.zero_grad()
        schedule.step(*((x,) if rank == 0 else ()), **({"target": y} if rank == n - 1 else {}))
        opt.step()

    return _timed(step, dist.barrier, a, t_init, dist.destroy_process_group)


def _timed(step, barrier, a: argparse.Namespace, t_init: float, destroy) -> dict:
    """Run warmup + timed steps between barriers; the first step's end, seen by every rank."""
    times = []
    first = None
    for i in range(a.warmup + a.steps):
        barrier()
        start = time.perf_counter()
        step()
        barrier()
        if first is None:
            first = time.time()
        if i >= a.warmup:
            times.append(time.perf_counter() - start)
    t0 = float(os.environ["BENCH_LAUNCH_T0"])
    report = {"times": times, "first_step": first - t0, "init_to_first_step": first - t_init}
    if int(os.environ.get("RANK", "0")) == 0:  # before the teardown, which gloo can abort in
        with open(a.out, "w") as f:
            json.dump(report, f)
    destroy()
    return report


# -- the driver ---------------------------------------------------------------------------------
def launch(kind: str, nprocs: int, a: argparse.Namespace, cache: str) -> dict:
    """One launch of the ``kind`` job on ``nprocs`` processes; rank 0's report."""
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    forwarded = [
        f"--{k.replace('_', '-')}={getattr(a, k)}"
        for k in ("blocks", "width", "vocab", "batch", "seq", "microbatches", "steps", "warmup")
    ]
    if kind == "spx":
        launcher = [sys.executable, "-m", "spx.distributed.run"]
    else:
        launcher = [str(Path(sys.executable).with_name("torchrun"))]
    cmd = [
        *launcher,
        "--standalone",
        f"--nproc-per-node={nprocs}",
        __file__,
        f"--worker={kind}",
        f"--out={out}",
        *forwarded,
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PET_", "TORCHELASTIC_"))}
    env.update(
        JAX_PLATFORMS="cpu",
        SPX_COMPILATION_CACHE_DIR=cache,
        TF_CPP_MIN_LOG_LEVEL="2",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        BENCH_LAUNCH_T0=repr(time.time()),
    )
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        _, err = proc.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()
        raise SystemExit(f"{kind} on {nprocs} processes did not finish in 900 s") from None
    try:
        with open(out) as f:
            text = f.read()
        if not text:  # rank 0 writes its report after the timed steps
            raise SystemExit(
                f"{kind} on {nprocs} processes failed (exit {proc.returncode}):\n{err.decode()}"
            )
        if proc.returncode != 0:
            print(f"  ({kind} exited {proc.returncode} in teardown, after its report)", flush=True)
        return json.loads(text)
    finally:
        os.remove(out)


def load() -> float:
    return os.getloadavg()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nprocs", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--rounds", type=int, default=2, help="launches of each job")
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--worker", choices=("spx", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.worker:
        (worker_spx if a.worker == "spx" else worker_torch)(a)  # rank 0 writes a.out
        return
    for n in a.nprocs:
        if a.blocks % n:
            parser.error(f"--blocks={a.blocks} must be a multiple of every --nprocs (got {n})")

    print(
        f"Schedule1F1B, {a.blocks} blocks of width {a.width}, batch {a.batch}x{a.seq}, vocab "
        f"{a.vocab}, {a.microbatches} microbatches; {a.steps} timed steps after {a.warmup}; "
        f"{a.rounds} launches per job; {os.cpu_count()} CPUs",
        flush=True,
    )
    import _compute_floor

    floor = _compute_floor.measure(a.blocks, a.width, a.vocab, a.batch, a.seq, a.microbatches)
    print(_compute_floor.describe(floor), flush=True)
    loads = [load()]
    summary = []
    with tempfile.TemporaryDirectory(prefix="bench-pp-cache-") as caches:
        for n in a.nprocs:
            cache = os.path.join(caches, f"np{n}")  # empty for this job's first spx launch
            runs: dict[str, list[dict]] = {"spx": [], "torch": []}
            seen = [load()]
            for r in range(a.rounds):
                for kind in ("spx", "torch"):
                    before = load()
                    rep = launch(kind, n, a, cache)
                    seen.append(load())
                    runs[kind].append(rep)
                    print(
                        f"  {n} process(es), {kind:5} launch {r + 1}: "
                        f"{1000 * statistics.median(rep['times']):6.1f} ms/step; first step "
                        f"{rep['first_step']:5.1f} s after the launch "
                        f"({rep['init_to_first_step']:4.1f} s after init_process_group); "
                        f"load {before:.2f} -> {seen[-1]:.2f}",
                        flush=True,
                    )
            summary.append(_summary(n, runs, min(seen), max(seen)))
            loads += seen
    print("\n".join(summary))
    print(_compute_floor.describe(floor))
    print(f"load average over the whole run: {min(loads):.2f} .. {max(loads):.2f}")


def _summary(n: int, runs: dict[str, list[dict]], lo: float, hi: float) -> str:
    med = {
        k: 1000 * statistics.median(t for rep in v for t in rep["times"]) for k, v in runs.items()
    }
    what = "1 process (one stage, no transfers)" if n == 1 else f"{n} processes"
    line = (
        f"{what}: spx {med['spx']:.1f} ms/step, torch {med['torch']:.1f} ms/step, "
        f"ratio {med['spx'] / med['torch']:.2f}"
    )
    first = [rep["first_step"] for rep in runs["spx"]]
    if len(first) > 1 and n > 1:  # one process runs spx's single-process backend: no cache
        line += (
            f"; spx time to first step: first launch {first[0]:.1f} s, second {first[1]:.1f} s "
            f"(ratio {first[1] / first[0]:.2f}; torch {runs['torch'][0]['first_step']:.1f} s)"
        )
    return line + f" [load {lo:.2f} .. {hi:.2f}]"


if __name__ == "__main__":
    main()
