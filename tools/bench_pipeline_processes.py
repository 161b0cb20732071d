"""Benchmark: pipelined training step time with one rank per process, spx vs torch.

The same small model — an MLP language model (embedding, ``--blocks`` residual MLP blocks of
width ``--width`` with 4x hidden, linear head; cross-entropy) — trains with Schedule1F1B over
``--nprocs`` processes (blocks split evenly; the embedding on the first stage, the head on the
last), ``--microbatches`` microbatches of a ``--batch`` x ``--seq`` token batch, SGD after every
step. spx: ``spx.distributed.pipelining`` on the multi-process backend (activations and
gradients over ``jax.experimental.transfer``). torch: ``torch.distributed.pipelining`` with gloo,
one thread per process. Both are launched here with the same torchrun-style environment on
loopback, one after the other.

Reported: median ms/step over ``--steps`` timed steps (after ``--warmup``), measured on rank 0
between barriers, and the spx/torch ratio; also the load average (the dev box is shared).

Usage: ``python tools/bench_pipeline_processes.py [--nprocs 2] [--steps 30]``
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time


def _stages_of(rank: int, nprocs: int, blocks: int) -> range:
    per = blocks // nprocs
    return range(rank * per, (rank + 1) * per)


def worker_spx(a: argparse.Namespace) -> list[float]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import spx
    import spx.distributed as dist
    import spx.nn.functional as F
    from spx import nn
    from spx.distributed.pipelining import PipelineStage, Schedule1F1B

    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.Linear(a.width, 4 * a.width)
            self.down = nn.Linear(4 * a.width, a.width)

        def forward(self, h):
            return h + self.down(jnp.tanh(self.up(h)))

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
        if rank == 0:
            schedule.step(x)
        elif rank == n - 1:
            schedule.step(target=y)
        else:
            schedule.step()
        opt.step()
        jax.block_until_ready([p.data for p in model.parameters()])

    times = []
    for i in range(a.warmup + a.steps):
        dist.barrier()
        start = time.perf_counter()
        step()
        dist.barrier()
        if i >= a.warmup:
            times.append(time.perf_counter() - start)
    dist.destroy_process_group()
    return times


def worker_torch(a: argparse.Namespace) -> list[float]:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch import nn
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B

    torch.set_num_threads(1)
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
    times = []
    for i in range(a.warmup + a.steps):
        dist.barrier()
        start = time.perf_counter()
        opt.zero_grad()
        if rank == 0:
            schedule.step(x)
        elif rank == n - 1:
            schedule.step(target=y)
        else:
            schedule.step()
        opt.step()
        dist.barrier()
        if i >= a.warmup:
            times.append(time.perf_counter() - start)
    dist.destroy_process_group()
    return times


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(kind: str, a: argparse.Namespace) -> list[float]:
    port, out_file = _free_port(), tempfile.mktemp(suffix=".json")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    forwarded = [f"--{k}={v}" for k, v in vars(a).items() if k not in ("worker", "out")]
    procs = []
    try:
        for rank in range(a.nprocs):
            env = dict(
                os.environ,
                RANK=str(rank),
                WORLD_SIZE=str(a.nprocs),
                LOCAL_RANK=str(rank),
                LOCAL_WORLD_SIZE=str(a.nprocs),
                MASTER_ADDR="127.0.0.1",
                MASTER_PORT=str(port),
                JAX_PLATFORMS="cpu",
                JAX_NUM_CPU_DEVICES="1",
                OMP_NUM_THREADS="1",
                PYTHONPATH=root,
            )
            cmd = [sys.executable, __file__, f"--worker={kind}", f"--out={out_file}", *forwarded]
            procs.append(subprocess.Popen(cmd, env=env, stderr=subprocess.DEVNULL))
        for p in procs:
            p.wait(timeout=900)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    with open(out_file) as f:
        return json.load(f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nprocs", type=int, default=2)
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--worker", choices=("spx", "torch"))
    parser.add_argument("--out")
    a = parser.parse_args()
    if a.blocks % a.nprocs:
        parser.error(f"--blocks={a.blocks} must be a multiple of --nprocs={a.nprocs}")
    if a.worker:
        times = (worker_spx if a.worker == "spx" else worker_torch)(a)
        if int(os.environ["RANK"]) == 0:
            with open(a.out, "w") as f:
                json.dump(times, f)
        return
    load = os.getloadavg()[0]
    res = {}
    for kind in ("spx", "torch"):
        times = sorted(launch(kind, a))
        res[kind] = 1000 * times[len(times) // 2]
    print(
        f"Schedule1F1B, {a.nprocs} processes, {a.blocks} blocks of width {a.width}, batch "
        f"{a.batch}x{a.seq}, {a.microbatches} microbatches: spx {res['spx']:.1f} ms/step, "
        f"torch {res['torch']:.1f} ms/step, ratio {res['spx'] / res['torch']:.2f} "
        f"(load {load:.2f} -> {os.getloadavg()[0]:.2f})"
    )


if __name__ == "__main__":
    main()
