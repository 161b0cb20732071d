"""The compute floor of the distributed benchmarks: one rank's step on one core, raw JAX vs torch.

``tools/bench_ddp_vs_torch.py`` and ``tools/bench_pp_vs_torch.py`` run one rank per process; on
a machine with as many cores as processes each rank gets about one core. Whatever spx does
around the compute, its step can't be faster than XLA's kernels for that step on one core, and
torch's can't be faster than torch's. This measures both on the benchmarks' model (embedding,
residual tanh MLP blocks, linear head, cross-entropy, SGD), each in a child process pinned to
one core: ``jax.jit`` of value_and_grad + SGD with donated parameters (no spx), and torch eager
with one intra-op thread. The ratio of the two is the best spx/torch ratio one can expect there
from a framework that runs XLA's CPU kernels.

Usage: ``python tools/_compute_floor.py [--width 128] [--batch 32] [--microbatches 1]``
(the benchmarks call :func:`measure`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def _jax_step(a: argparse.Namespace):
    import jax
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(0)

    def lin(n_in: int, n_out: int) -> tuple:
        w = rng.uniform(-1, 1, (n_in, n_out)).astype(np.float32) / np.sqrt(n_in)
        return jnp.asarray(w), jnp.zeros(n_out, jnp.float32)

    params = {
        "embed": jnp.asarray(rng.normal(size=(a.vocab, a.width)).astype(np.float32)),
        "blocks": [(lin(a.width, 4 * a.width), lin(4 * a.width, a.width)) for _ in range(a.blocks)],
        "head": lin(a.width, a.vocab),
    }
    mb = a.batch // a.microbatches
    x = jnp.asarray(rng.integers(0, a.vocab, (a.microbatches, mb, a.seq)))
    y = jnp.asarray(rng.integers(0, a.vocab, (a.microbatches, mb, a.seq)))

    def loss_fn(p, x, y):
        # Tokens flattened to (batch * seq,): XLA's CPU gradient of a dot over (batch, seq, width)
        # is ~1.5x slower than the same GEMM in 2-D (34 vs 44 ms for this step); torch's linear
        # and spx's flatten too.
        x, y = x.reshape(-1), y.reshape(-1)
        h = p["embed"][x]
        for (w1, b1), (w2, b2) in p["blocks"]:
            h = h + jnp.tanh(h @ w1 + b1) @ w2 + b2
        logits = h @ p["head"][0] + p["head"][1]
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.take_along_axis(logp, y[..., None], axis=-1).mean()

    def step(p, x, y):
        # Microbatches one after another (as a pipeline stage runs them), gradients summed.
        grads = jax.tree.map(jnp.zeros_like, p)
        for i in range(a.microbatches):
            g = jax.grad(loss_fn)(p, x[i], y[i])
            grads = jax.tree.map(jnp.add, grads, g)
        return jax.tree.map(lambda w, g: w - 0.01 * g / a.microbatches, p, grads)

    jitted = jax.jit(step, donate_argnums=0)
    state = [params]

    def run() -> None:
        state[0] = jitted(state[0], x, y)
        jax.block_until_ready(state[0])

    return run


def _torch_step(a: argparse.Namespace):
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.set_num_threads(1)
    torch.manual_seed(0)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.Linear(a.width, 4 * a.width)
            self.down = nn.Linear(4 * a.width, a.width)

        def forward(self, h):
            return h + self.down(torch.tanh(self.up(h)))

    model = nn.Sequential(
        nn.Embedding(a.vocab, a.width),
        *[Block() for _ in range(a.blocks)],
        nn.Linear(a.width, a.vocab),
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    mb = a.batch // a.microbatches
    x = torch.randint(0, a.vocab, (a.microbatches, mb, a.seq))
    y = torch.randint(0, a.vocab, (a.microbatches, mb, a.seq))

    def run() -> None:
        opt.zero_grad()
        for i in range(a.microbatches):
            loss = F.cross_entropy(model(x[i]).view(-1, a.vocab), y[i].view(-1))
            (loss / a.microbatches).backward()
        opt.step()
        loss.item()

    return run


def _child(a: argparse.Namespace) -> None:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    run = _jax_step(a) if a.child == "jax" else _torch_step(a)
    for _ in range(3):
        run()
    times = []
    for _ in range(a.steps):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    print(json.dumps({"ms": 1000 * statistics.median(times)}))


def measure(
    blocks: int, width: int, vocab: int, batch: int, seq: int, microbatches: int, steps: int = 20
) -> dict[str, float]:
    """Median ms per step on one core: ``{"jax": ..., "torch": ...}`` (a child process each)."""
    out = {}
    for kind in ("jax", "torch"):
        cmd = [
            sys.executable, __file__, "--child", kind, "--blocks", str(blocks),
            "--width", str(width), "--vocab", str(vocab), "--batch", str(batch),
            "--seq", str(seq), "--microbatches", str(microbatches), "--steps", str(steps),
        ]  # fmt: skip
        env = dict(os.environ, OMP_NUM_THREADS="1")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        if proc.returncode:
            raise RuntimeError(f"compute floor ({kind}) failed:\n{proc.stderr[-2000:]}")
        out[kind] = json.loads(proc.stdout.strip().splitlines()[-1])["ms"]
    return out


def describe(floor: dict[str, float]) -> str:
    return (
        f"compute floor, one rank's step alone on one core: raw jax.jit {floor['jax']:.1f} ms, "
        f"torch eager {floor['torch']:.1f} ms (jax/torch {floor['jax'] / floor['torch']:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--microbatches", type=int, default=1)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--child", choices=("jax", "torch"), help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.child:
        _child(a)
        return
    floor = measure(a.blocks, a.width, a.vocab, a.batch, a.seq, a.microbatches, a.steps)
    print(describe(floor))


if __name__ == "__main__":
    main()
