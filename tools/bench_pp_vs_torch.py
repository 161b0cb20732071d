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
the cache the earlier ones wrote (spx gives every rank its own). The 1-process job (one stage
holding the whole model, no transfers) shows what the compute alone costs; the compute floor
is the whole model's step over the microbatches alone on one core (``tools/_compute_floor.py``).

Usage: ``python tools/bench_pp_vs_torch.py [--nprocs 1 2 4] [--rounds 2] [--steps 30]``

Results (4 blocks of width 128, batch 32x32, vocab 512, 8 microbatches; ratio = spx/torch;
time to first step: first / second launch; floor: spx's forward/backward programs alone on the
busiest rank, or all ranks' programs shared over the cores, over torch's step):

    2026-11-28, stop 29, 2-core AMD EPYC, jax 0.10.2, torch 2.13 (--rounds 2, load 0.2-2.3; the
    box ran ~15% slower than in stop 28 for both)
    processes  spx ms/step  torch ms/step  ratio  floor  time to first step
    1          23.2         53.2           0.44   0.39
    2          26.0         40.3           0.65   0.37   3.1 / 1.2 s (0.40; torch 2.9 s)
    4          43.9         52.1           0.84   0.36   5.8 / 2.7 s (0.47; torch 4.8 s)
    compute floor: raw jax.jit 22.6 ms, torch eager 51.3 ms (0.44)

    2026-11-28, stop 28, 2-core AMD EPYC, jax 0.10.2, torch 2.13 (--rounds 2, load 0.9-1.9)
    processes  spx ms/step  torch ms/step  ratio  floor  time to first step
    1          22.2         47.3           0.47   0.41
    2          22.6         35.4           0.64   0.38   2.8 / 1.0 s (0.38; torch 2.6 s)
    4          35.4         43.7           0.81   0.35   4.8 / 2.0 s (0.42; torch 4.2 s)
    compute floor: raw jax.jit 21.8 ms, torch eager 46.6 ms (0.47)

    2026-11-27, stop 25, 2-core AMD EPYC, jax 0.10.2, torch 2.13 (--rounds 2, load 0.2-2.1)
    processes  spx ms/step  torch ms/step  ratio  floor  time to first step
    1          20.3         44.6           0.46   0.41
    2          22.4         31.5           0.71   0.43   2.6 / 1.0 s (0.40; torch 2.6 s)
    4          36.4         43.6           0.83   0.37   4.6 / 2.0 s (0.43; torch 4.2 s)
    compute floor: raw jax.jit 21.2 ms, torch eager 44.7 ms (0.48)

    stop 24 on the same box: 2 processes 0.71 / 0.64, 4 processes 0.84 / 0.92, time to first
    step 0.43 / 0.40 and 0.43 / 0.46; the 16-core CPU of the H200 machine (jax 0.11.2, torch
    2.11): 2 processes 0.78, 4 processes 0.74; before stop 24: 0.80 / 0.84; earlier Intel
    boxes: 1.22-1.74

**Time to first step: met** (second launch <= 0.5x the first). **Step time: not met** (target
<= 0.5), and out of reach on this box for this model. The floor column is what the busiest
rank's programs alone take, each call timed on its own (thread CPU time: the programs run
inline in one-thread workers): on 2 processes the last stage's 8 forwards and backwards take
13.5-13.9 ms, 0.43 of torch's 31.5 ms step. 1F1B adds at least the fill and the drain on top
of that rank's work, rank 0's first forward (~0.5 ms) and last backward (~1.2 ms) plus two
messages (~0.2 ms each): ~0.5 of torch's step with no host work and no other wait at all. The
programs are XLA's own: the same stage split written as raw ``jax.jit`` functions (forward
with ``jax.vjp`` residuals, then backward) costs the same or more per microbatch, and the
dots of a microbatch run near the core's peak. Where the rest of the step goes (2 processes,
per-thread ``/proc/<tid>/schedstat``, ``py-spy``, and timelines of every action):

- **The critical loop of 1F1B on two ranks.** Rank 1 needs F(i+2) right after its B(i+1);
  rank 0 sends it after receiving rank 1's gradient of microbatch i and running B(i) and
  F(i+2). Rank 0's work per microbatch (~1.75 ms) leaves ~0.35 ms of slack against rank 1's
  (~2.1 ms), less than two message latencies plus the host work between them, so rank 1 waits
  ~0.3-0.8 ms per microbatch.
- **Message latency** is ~0.2 ms (median) through ``jax.experimental.transfer`` (pull request,
  the sender's copy, bulk send, receive: five thread hand-offs), with a tail of ~1-2 ms: a
  sender that starts its next program right after ``await_pull`` delays the copy until that
  program ends. Yielding or sleeping 0.1-0.4 ms after each send shortened the tail in a
  microbenchmark but gave no reliable step-time gain (alternated launches within noise).
- **Host work**: rank 0's main thread spends ~15% of a step in transfer calls and ~20% in
  other Python; stop 24 removed XLA's pool-thread hand-off (inline programs, ~32.5 -> ~25.5
  ms), the barrier's collective (2.5 -> 0.26 ms) and late receive posts.
- **Many cores.** On 16 cores spx-run gives each of 2 workers 8 XLA threads and they dispatch
  asynchronously (0.78); forcing ``PJRT_NPROC=1`` there gave 1.05 / 1.14.

Stop 28 made the last stage's programs cheaper: 1F1B runs its F and B of a microbatch back to
back, and the runtime now runs the two as one program (no residuals, the loss fused into its
gradient): 1.70 -> 1.56 ms per microbatch alone; the busiest rank's programs per step went from
14.2-14.7 ms (this stop's runs before the change; stop 25 measured 13.5-13.9) to 13.2-13.4.
The step did not follow (22.4 -> 22.6 ms, within the box's noise of about 1 ms), because the
messages bound it, not the programs. What delays them, measured with ``perf sched`` over one
second of 2-process steps: the transfer server's threads (event loop, send and receive
threads of both processes) were runnable but not running ~300 times a second for more than
0.3 ms each, ~250-310 ms of waiting per second; a per-action timeline shows half the messages
arriving 1.2-2 ms after their send, right when the sender's next program ends. In the traces
the woken thread waits on the core that runs a program while the other core is idle (rank 0's
receive thread waited 1.7 ms behind rank 1's program while core 0 was idle for 1.6 ms): the
kernel placed it on the busy core and did not move it. None of these was faster beyond the
noise: the compute thread at nice +10 or +19; at SCHED_IDLE (slower: 24.7-25.6 ms); a 0.1 ms
EEVDF slice for every thread (``sched_setattr``); ``sched_yield`` after each send;
``PJRT_NPROC=2`` (the programs slower, 16 vs 12 ms); 0, 1 or 4 receives posted ahead instead
of 2 (2 is best); glibc's malloc kept from returning freed buffers (``GLIBC_TUNABLES``
mmap/trim thresholds: page faults per step 300-500 -> ~15, the step <= 1 ms faster). Rank 0
running one forward ahead of 1F1B's order was faster (22.4-22.7 ms against 23.5-25.9 ms in
alternating runs) but breaks 1F1B's memory bound (the tests hold it), so it is not used. With
every message at the ~0.3 ms a 2-process microbenchmark of this stop measures (stop 25: ~0.2
ms median), the timeline's critical path (rank 1's 8 fused programs, rank 0's first forward
and last backward, rank 0's backward + forward between two of rank 1's programs) gives ~15-17
ms (0.43-0.48 of torch's 35 ms): the rest is the kernel's thread placement, on a machine with
as many busy processes as cores.

Stop 29 tried pinning each worker to its own core (``os.sched_setaffinity`` before JAX
starts: 25.6 ms/step against 22.6 unpinned) and pinning only the compute thread, leaving the
transfer threads free (23.3 ms): slower or equal, so neither is used.
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

    def programs_ms() -> dict:
        # The busiest rank's forward and backward programs alone bound the step from below,
        # whatever the schedule and the transfers do: time them (each call waited on) over a
        # few more steps, then take every rank's median. A worker with one XLA thread runs
        # its programs inline (spx-run's PJRT_NPROC=1): count the thread's CPU time, which
        # leaves out the time another rank on the same core takes (4 processes on 2 cores).
        programs = stage._programs
        clock = time.thread_time if os.environ.get("PJRT_NPROC") == "1" else time.perf_counter
        spent = [0.0]

        def timed(fn):
            def call(*args, **kwargs):
                start = clock()
                out = jax.block_until_ready(fn(*args, **kwargs))
                spent[0] += clock() - start
                return out

            return call

        programs.forward, programs.backward = timed(programs.forward), timed(programs.backward)
        programs.forward_backward = timed(programs.forward_backward)
        per_step = []
        for _ in range(10):
            dist.barrier()
            spent[0] = 0.0
            step()
            per_step.append(1000 * spent[0])
        ranks: list = [None] * n
        dist.all_gather_object(ranks, statistics.median(per_step))
        return {"programs_ms": ranks}

    return _timed(step, dist.barrier, a, t_init, dist.destroy_process_group, programs_ms)


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


def _timed(step, barrier, a: argparse.Namespace, t_init: float, destroy, extra=None) -> dict:
    """Run warmup + timed steps between barriers; the first step's end, seen by every rank;
    then ``extra()`` (more figures for the report), if given."""
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
    if extra is not None:
        report.update(extra())
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
                        + (
                            "programs alone per rank "
                            + "/".join(f"{ms:.1f}" for ms in rep["programs_ms"])
                            + " ms; "
                            if "programs_ms" in rep
                            else ""
                        )
                        + f"load {before:.2f} -> {seen[-1]:.2f}",
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
    # A step is no shorter than its busiest rank's programs, nor than all ranks' programs
    # shared over the cores (4 processes on 2 cores): the larger of the two, median of launches.
    cores = min(n, os.cpu_count() or 1)
    floor = statistics.median(
        max(max(rep["programs_ms"]), sum(rep["programs_ms"]) / cores) for rep in runs["spx"]
    )
    line += (
        f"; spx's forward/backward programs alone: {floor:.1f} ms/step on the busiest rank "
        f"or core ({floor / med['torch']:.2f} of torch's step, a floor for the ratio)"
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
