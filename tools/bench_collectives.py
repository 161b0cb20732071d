"""Benchmark: per-collective latency across processes, spx (multi-process backend) vs torch gloo.

What is measured: the wall time of one blocking call on rank 0 (median over ``--iters`` calls,
best of ``--reps`` repetitions), for a (8, 128) and a (256, 1024) = 1 MiB float32 array:
all_reduce (SUM), broadcast, all_gather, reduce_scatter, all_to_all, barrier, and a send/recv
round trip between ranks 0 and 1 (p2p). spx runs each collective as one cached compiled
program over the group's devices (gloo underneath on CPU; p2p over jax.experimental.transfer),
torch runs ``torch.distributed`` with the gloo backend, one thread per process. Both run in the
*same* processes (torch's group on a second port), and each repetition times spx and torch
back to back, so that the shared machine's load hits both alike.

Usage: ``python tools/bench_collectives.py [--nprocs 2] [--iters 100] [--reps 3]``

Results, 2026-11-26, 2-core CPU box at load 0.1-0.2, 2 processes, ``--iters 50 --reps 2``,
jax 0.10.2, torch 2.13.0 (µs, spx / torch)::

    (8,128):  all_reduce 401/445   broadcast 311/90   all_gather 407/150   reduce_scatter 1016/534
              all_to_all 1081/144  barrier 235/95     p2p 777/151
    1 MiB:    all_reduce 1878/1514 broadcast 2600/427 all_gather 2568/1293 reduce_scatter 4614/3760
              all_to_all 4100/1563 barrier 249/117    p2p 1897/557

all_reduce, what DDP uses, is on par with gloo's (0.90x / 1.24x); the others cost 1.2-7.5x
torch's. p2p (what pipelining uses between processes: jax.experimental.transfer plus spx's
header and channel bookkeeping) is 3.4-5.1x torch's round trip, the first thing to make faster
for tools/bench_pp_vs_torch.py.
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

SHAPES = {"(8,128)": (8, 128), "1MiB": (256, 1024)}
OPS = ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all", "barrier", "p2p")


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2]


def _time(fn, iters: int, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        times = []
        for _ in range(iters):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        best = min(best, _median(times))
    return best * 1e6


def spx_ops(shape: tuple[int, ...]) -> dict:
    """The same calls as :func:`torch_ops`, in torch's in-place form, on spx Tensors."""
    import jax

    import spx
    import spx.distributed as dist

    rank, n = dist.get_rank(), dist.get_world_size()
    x = spx.ones(shape)
    outs = [spx.empty(shape) for _ in range(n)]
    stacked = spx.ones((n * shape[0], *shape[1:]))
    parts_in = [spx.ones(shape) for _ in range(n)]
    parts_out = [spx.empty(shape) for _ in range(n)]
    buf = spx.empty(shape)

    def done(call, *written):
        # Each call returns once the collective ran; blocking on what it wrote makes sure.
        return lambda: (call(), jax.block_until_ready(written))

    def p2p() -> None:
        if rank == 0:
            dist.send(x, 1)
            dist.recv(buf, 1)
        elif rank == 1:
            dist.recv(buf, 0)
            dist.send(buf, 0)
        jax.block_until_ready(buf)

    return {
        "all_reduce": done(lambda: dist.all_reduce(x), x),
        "broadcast": done(lambda: dist.broadcast(x, src=0), x),
        "all_gather": done(lambda: dist.all_gather(outs, x), *outs),
        "reduce_scatter": done(lambda: dist.reduce_scatter_tensor(buf, stacked), buf),
        "all_to_all": done(lambda: dist.all_to_all(parts_out, parts_in), *parts_out),
        "barrier": lambda: dist.barrier(),
        "p2p": p2p,
    }


def torch_ops(shape: tuple[int, ...], group) -> dict:
    import torch
    import torch.distributed as tdist

    rank, n = tdist.get_rank(group), tdist.get_world_size(group)
    x = torch.ones(shape)
    outs = [torch.empty(shape) for _ in range(n)]
    stacked = torch.ones((n * shape[0], *shape[1:]))
    parts_in = [torch.ones(shape) for _ in range(n)]
    parts_out = [torch.empty(shape) for _ in range(n)]
    buf = torch.empty(shape)

    def p2p() -> None:
        if rank == 0:
            tdist.send(x, 1, group=group)
            tdist.recv(buf, 1, group=group)
        elif rank == 1:
            tdist.recv(buf, 0, group=group)
            tdist.send(buf, 0, group=group)

    return {
        "all_reduce": lambda: tdist.all_reduce(x, group=group),
        "broadcast": lambda: tdist.broadcast(x, src=0, group=group),
        "all_gather": lambda: tdist.all_gather(outs, x, group=group),
        "reduce_scatter": lambda: tdist.reduce_scatter_tensor(buf, stacked, group=group),
        "all_to_all": lambda: tdist.all_to_all(parts_out, parts_in, group=group),
        "barrier": lambda: tdist.barrier(group=group),
        "p2p": p2p,
    }


def worker(iters: int, reps: int, torch_port: int) -> dict:
    import torch
    import torch.distributed as tdist

    import spx.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()
    tdist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{torch_port}", rank=rank, world_size=n
    )
    out = {}
    for label, shape in SHAPES.items():
        ours, theirs = spx_ops(shape), torch_ops(shape, None)
        for name in OPS:
            try:
                theirs[name]()
                torch_ok = True
            except RuntimeError:  # gloo lacks some collectives in some torch builds
                torch_ok = False
            ours[name]()  # compile
            best = {"spx": float("inf"), "torch": float("inf")}
            for _ in range(reps):
                dist.barrier()
                best["spx"] = min(best["spx"], _time(ours[name], iters, 1))
                if torch_ok:
                    tdist.barrier()
                    best["torch"] = min(best["torch"], _time(theirs[name], iters, 1))
            out[f"{name} {label}"] = (best["spx"], best["torch"] if torch_ok else None)
    tdist.destroy_process_group()
    dist.destroy_process_group()
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(nprocs: int, iters: int, reps: int) -> dict:
    port, torch_port, out_file = _free_port(), _free_port(), tempfile.mktemp(suffix=".json")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    procs = []
    try:
        for rank in range(nprocs):
            env = dict(
                os.environ,
                RANK=str(rank),
                WORLD_SIZE=str(nprocs),
                LOCAL_RANK=str(rank),
                LOCAL_WORLD_SIZE=str(nprocs),
                MASTER_ADDR="127.0.0.1",
                MASTER_PORT=str(port),
                JAX_PLATFORMS="cpu",
                JAX_NUM_CPU_DEVICES="1",
                OMP_NUM_THREADS="1",
                PYTHONPATH=root,
            )
            cmd = [sys.executable, __file__, "--worker", "--out", out_file]
            cmd += ["--iters", str(iters), "--reps", str(reps), "--torch-port", str(torch_port)]
            procs.append(subprocess.Popen(cmd, env=env, stderr=subprocess.DEVNULL))
        for p in procs:
            p.wait(timeout=600)
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
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--torch-port", type=int)
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.worker:
        result = worker(args.iters, args.reps, args.torch_port)
        if int(os.environ["RANK"]) == 0:
            with open(args.out, "w") as f:
                json.dump(result, f)
        return
    load_before = os.getloadavg()[0]
    res = launch(args.nprocs, args.iters, args.reps)
    print(f"{args.nprocs} processes, median of {args.iters} calls, best of {args.reps}; rank 0")
    print(f"{'collective':<28}{'spx µs':>10}{'torch µs':>10}{'ratio':>8}")
    for key, (s, t) in res.items():
        if t is None:
            print(f"{key:<28}{s:>10.0f}  torch: not supported by its gloo backend")
        else:
            print(f"{key:<28}{s:>10.0f}{t:>10.0f}{s / t:>8.2f}")
    print(f"load average (1 min): before {load_before:.2f}, after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
