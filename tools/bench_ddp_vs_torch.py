"""Benchmark: DistributedDataParallel training step — spx under spx-run vs torch DDP (gloo) under
torchrun, one rank per process.

The model is the one of ``tools/bench_pp_vs_torch.py``: an MLP language model (embedding,
``--blocks`` residual MLP blocks of width ``--width`` with a 4x tanh hidden layer, linear head,
cross-entropy), wrapped in DDP; every rank trains on its own ``--batch`` x ``--seq`` token batch
with SGD. Each step is torch's loop ``zero_grad(); loss.backward(); step()``:

- spx eager: the loop as written (the backward runs as one cached compiled program; DDP's
  bucketed all-reduce runs when it finishes, over the multi-process backend's gloo collectives);
- spx compiled: the same loop inside ``spx.compile`` (forward, backward, the DDP all-reduces
  through ordered host callbacks, and SGD in one XLA program);
- torch: ``torch.nn.parallel.DistributedDataParallel`` over gloo, ``torch.set_num_threads(1)``
  (torchrun's OMP_NUM_THREADS=1).

Step time: median ms/step of ``--steps`` timed steps after ``--warmup`` on rank 0, between
barriers, over ``--rounds`` launches of each job, the kinds alternating so the shared machine's
load hits them alike. The load average is printed with every launch and in the summary.

2026-11-27, stop 24, 2-core AMD EPYC (load 1.9-3.2), with one-thread workers running their
programs inline (spx-run's ``PJRT_NPROC=1`` on two cores): 2 processes eager 0.57, compiled
0.59; 4 processes 0.56 / 0.57. Alternated with the code before (async dispatch to XLA's pool
thread), 2-process eager steps were 30.3-31.9 ms against 28.4-30.7 (eager recording no longer
overlaps the compute of the same process), compiled 32.6-33.0 against 32.4-35.0.

Runs of 2026-11-26 22:00-22:35 (three launches per job over three runs, load 1.2-4.0), after
spx's linear started flattening its leading dims (one 2-D GEMM; XLA's CPU gradient of the 3-D
dot was ~1.5x slower): the compute floor is now 0.92-1.06 (raw ``jax.jit`` 31-38 ms vs torch
32-39 ms; the 1.27-1.36 below measured the 3-D form). spx/torch: 2 processes eager 1.01 / 1.19 /
1.16, compiled 1.29 / 1.22 / 1.42; 4 processes eager 1.19 / 1.01 / 1.18, compiled 1.20 / 1.08 /
1.00. Per-phase timing of a 2-process eager step (spx 56-59 ms, no-DDP step 38-54 ms): the
gradient reduction takes ~11 ms, of which the two gloo all-reduces 3.6 ms each (waiting for the
peer included; one 2.5 MiB all-reduce alone is 2.8 ms, torch's gloo 3.0 ms) and packing and
unpacking ~0.8 ms per bucket; torch overlaps its all-reduces with the backward, spx's eager
backward is one program and its reduction starts after it.

Runs of 2026-11-27 00:50-02:00, after a backward's reduction became one compiled program between
processes (packing, one collective per bucket, unpacking and the division; it was three
dispatches per bucket) and one host callback inside ``spx.compile`` (one per bucket before):
the reduction alone on 2 processes (both ranks released by a barrier, 2 buckets, 2.5 MiB) took
4.3-5.8 ms against 5.9-6.4 ms for the per-bucket code alternated with it, on 4 processes 16.9-19.9
ms against 20.3-26.6. Whole steps, two runs (spx/torch): 2 processes eager 0.91 / 1.15, compiled
1.10 / 1.23; 4 processes eager 1.26 / 1.04, compiled 1.25 / 1.07 (load 1.3-5.1; the compute
floor 1.06 and 1.17 in those runs, torch's step 58-66 ms on 2 processes, 95-121 on 4). Per-phase
timing of a 2-process eager step: ~40-45 ms until the gradients are ready, ~9-10 ms from there
to the reduced gradients, of which ~4.5 ms the reduction itself and the rest waiting for the
other rank (the ranks' compute drifts apart by that much on this shared 2-core box); torch
overlaps its all-reduces with the backward, spx's eager backward is one program.

Usage: ``python tools/bench_ddp_vs_torch.py [--nprocs 2 4] [--rounds 2] [--steps 30]``

Results, 2026-11-26, 2-core CPU box, jax 0.10.2, torch 2.13.0, 20 timed steps, three runs
minutes apart (spx/torch of the medians; load average during each run)::

    launches per job, load   1, 0.5-3.9          2, 0.5-4.9          3, 2.1-2.5
    processes               eager   compiled    eager   compiled    eager   compiled
    2                       0.97    1.00        1.11    1.11        1.18    1.37
    4                       1.04    0.99        1.11    1.04        -       -

torch took 42-63 ms/step on 2 processes, spx 51-70. **The target (no slower than torch) is not
met: spx's DDP step is 0.97-1.37x torch's.** Why, measured in the same run since 2026-11-26
(``tools/_compute_floor.py``): one rank's step alone on one core (no spx, no collectives) takes
42.9 ms as a raw ``jax.jit`` program and 33.7 ms in torch (jax/torch 1.27; 1.28 and 1.36 in two
more runs): XLA's CPU kernels for this model are that much slower per core than torch's, and
with one core per rank no framework on XLA can be faster than that. The run of 2026-11-26
12:50 (load 0.8-4.4): 2 processes torch 53.5 ms/step, spx eager 59.0 (1.10), compiled 57.7
(1.08); 4 processes torch 93.8, spx 109.9 (1.17) / 105.5 (1.13): below the 1.27 floor, so what
spx's DDP adds around XLA's compute (bucketing, gloo all-reduces, the step's Python) does not show
in the ratio. An earlier run
(2026-11-24) reported 0.55-0.81: other engineers' jobs loaded the box then (load 1.6-6.9) and
torch, one thread per process, lost more to them than spx did (torch 97-164 ms/step there).
Four processes on two cores are compute-bound for both. What spx's DDP adds
per step: two SUM all-reduces (the model's 658k parameters, 2.5 MiB, make a 0.75 MiB first
bucket under torch's 1 MiB first-bucket cap and a 1.76 MiB second one under the default 25 MiB
cap) over the multi-process backend's gloo collectives, plus packing and unpacking (one jitted
dispatch each per bucket).
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
KINDS = ("spx-eager", "spx-compiled", "torch")


# -- the workers (one per rank, started by spx-run / torchrun) ----------------------------------
def worker_spx(a: argparse.Namespace, compiled: bool) -> dict:
    import numpy as np

    import spx
    import spx.distributed as dist
    import spx.nn.functional as F
    from spx import nn
    from spx.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    rank = dist.get_rank()

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.Linear(a.width, 4 * a.width)
            self.down = nn.Linear(4 * a.width, a.width)

        def forward(self, h):
            return h + self.down(self.up(h).tanh())

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(a.vocab, a.width)
            self.blocks = nn.ModuleList([Block() for _ in range(a.blocks)])
            self.head = nn.Linear(a.width, a.vocab)

        def forward(self, x):
            h = self.embed(x)
            for b in self.blocks:
                h = b(h)
            return self.head(h)

    spx.manual_seed(0)
    model = DDP(LM())
    opt = spx.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(rank)
    x = spx.as_tensor(rng.integers(0, a.vocab, (a.batch, a.seq)).astype(np.int32))
    y = spx.as_tensor(rng.integers(0, a.vocab, (a.batch, a.seq)).astype(np.int32))

    def train_step(model, opt, x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x).view(-1, a.vocab), y.view(-1))
        loss.backward()
        opt.step()
        return loss

    run = spx.compile(train_step) if compiled else train_step

    def step() -> None:
        run(model, opt, x, y).item()  # a host read: the step has finished

    return _timed(step, dist.barrier, a, dist.destroy_process_group)


def worker_torch(a: argparse.Namespace) -> dict:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.Linear(a.width, 4 * a.width)
            self.down = nn.Linear(4 * a.width, a.width)

        def forward(self, h):
            return h + self.down(torch.tanh(self.up(h)))

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(a.vocab, a.width)
            self.blocks = nn.ModuleList([Block() for _ in range(a.blocks)])
            self.head = nn.Linear(a.width, a.vocab)

        def forward(self, x):
            h = self.embed(x)
            for b in self.blocks:
                h = b(h)
            return self.head(h)

    torch.manual_seed(0)
    model = DDP(LM())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(rank)
    x = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g)
    y = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g)

    def step() -> None:
        opt.zero_grad()
        loss = F.cross_entropy(model(x).view(-1, a.vocab), y.view(-1))
        loss.backward()
        opt.step()
        loss.item()

    return _timed(step, dist.barrier, a, dist.destroy_process_group)


def _timed(step, barrier, a: argparse.Namespace, destroy) -> dict:
    times = []
    for i in range(a.warmup + a.steps):
        barrier()
        start = time.perf_counter()
        step()
        barrier()
        if i >= a.warmup:
            times.append(time.perf_counter() - start)
    report = {"times": times}
    if int(os.environ["RANK"]) == 0:  # before the teardown, which torch's gloo can abort in
        with open(a.out, "w") as f:
            json.dump(report, f)
    destroy()
    return report


# -- the driver ---------------------------------------------------------------------------------
def launch(kind: str, nprocs: int, a: argparse.Namespace) -> dict:
    """One launch of the ``kind`` job on ``nprocs`` processes; rank 0's report."""
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    forwarded = [
        f"--{k}={getattr(a, k)}" for k in ("blocks", "width", "vocab", "batch", "seq", "steps")
    ] + [f"--warmup={a.warmup}"]
    if kind.startswith("spx"):
        launcher = [sys.executable, "-m", "spx.distributed.run"]
    else:
        launcher = [str(Path(sys.executable).with_name("torchrun"))]
    cmd = [*launcher, "--standalone", f"--nproc-per-node={nprocs}", __file__]
    cmd += [f"--worker={kind}", f"--out={out}", *forwarded]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PET_", "TORCHELASTIC_"))}
    env.update(
        JAX_PLATFORMS="cpu",
        TF_CPP_MIN_LOG_LEVEL="2",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
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
            raise SystemExit(f"{kind} on {nprocs} processes failed:\n{err.decode()[-4000:]}")
        if proc.returncode != 0:
            print(f"  ({kind} exited {proc.returncode} in teardown, after its report)", flush=True)
        return json.loads(text)
    finally:
        os.remove(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nprocs", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--rounds", type=int, default=2, help="launches of each job")
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--batch", type=int, default=32, help="sequences per rank")
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--worker", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.worker:
        if a.worker == "torch":
            worker_torch(a)
        else:
            worker_spx(a, compiled=a.worker == "spx-compiled")
        return
    print(
        f"DDP, {a.blocks} blocks of width {a.width}, batch {a.batch}x{a.seq} per rank, vocab "
        f"{a.vocab}; {a.steps} timed steps after {a.warmup}; {a.rounds} launches per job; "
        f"{os.cpu_count()} CPUs",
        flush=True,
    )
    import _compute_floor

    floor = _compute_floor.measure(a.blocks, a.width, a.vocab, a.batch, a.seq, 1)
    print(_compute_floor.describe(floor), flush=True)
    loads = [os.getloadavg()[0]]
    summary = []
    for n in a.nprocs:
        runs: dict[str, list[float]] = {k: [] for k in KINDS}
        seen = [os.getloadavg()[0]]
        for r in range(a.rounds):
            for kind in KINDS:
                before = os.getloadavg()[0]
                times = launch(kind, n, a)["times"]
                seen.append(os.getloadavg()[0])
                runs[kind] += times
                print(
                    f"  {n} processes, {kind:12} launch {r + 1}: "
                    f"{1000 * statistics.median(times):6.1f} ms/step; "
                    f"load {before:.2f} -> {seen[-1]:.2f}",
                    flush=True,
                )
        med = {k: 1000 * statistics.median(v) for k, v in runs.items()}
        summary.append(
            f"{n} processes: torch {med['torch']:.1f} ms/step; spx eager "
            f"{med['spx-eager']:.1f} (ratio {med['spx-eager'] / med['torch']:.2f}); spx compiled "
            f"{med['spx-compiled']:.1f} (ratio {med['spx-compiled'] / med['torch']:.2f}) "
            f"[load {min(seen):.2f} .. {max(seen):.2f}]"
        )
        loads += seen
    print("\n".join(summary))
    print(_compute_floor.describe(floor))
    print(f"load average over the whole run: {min(loads):.2f} .. {max(loads):.2f}")


if __name__ == "__main__":
    main()
