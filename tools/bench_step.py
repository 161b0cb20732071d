"""Benchmark: one training step (forward + backward + AdamW) of a small GPT, four ways.

* spx      — ``examples/gpt.py`` + ``spx.optim.AdamW`` in a torch-style step under ``spx.compile``
             (``zero_grad(); backward; step()``: as in torch, ``p.grad`` holds the step's
             gradients afterwards)
* spx -grad — the same step ending with ``opt.zero_grad()``: it keeps no gradients, like the
             raw JAX and flax.nnx steps, which return only parameters, optimizer state and loss
* spx bwd() — the first step spelled ``loss = lm_loss(model(x), y); loss.backward()`` inside
             ``spx.compile`` (the recorded ops and their backward become part of the one program)
* raw JAX  — the same network as a pure function over a dict of arrays, ``jax.jit`` with donated
             parameters and ``optax.adamw`` (the floor for dispatch overhead)
* raw +grads / raw +packd — raw JAX also returning the gradients, one array per parameter (what
             keeping ``p.grad`` costs JAX itself) or packed into one flat buffer
* flax.nnx — the same network with ``nnx`` modules and ``nnx.jit`` (needs ``flax``)
* torch    — the same network with ``torch.nn`` in eager mode, one intra-op thread (needs ``torch``)

Each step is timed to completion (``block_until_ready`` on the loss / ``loss.item()``), the
implementations in alternating blocks of calls (so that the shared machine's load hits all of
them alike); the table shows medians and the ratio to raw JAX. Target: spx <= 1.10x raw JAX.
Keeping the gradients costs the tiny model ~0.1 ms on CPU: 29 more arrays per step, each a few
microseconds of jax runtime bookkeeping (no extra kernels: the compiled programs have the same
fusions). On GPUs they cost raw JAX itself as much as its whole step ("raw +grads": 2.0x on an
H100 and on an H200, jax 0.11.2), and one packed buffer 0.03-0.06 ms ("raw +packd"), so
spx.compile returns fresh gradients packed (``spx/_compile/packing.py``). H100, same run each:
spx 1.62 ms before packing (2.42x raw JAX), 1.16 ms after (1.84x); H200, the final code: raw
JAX 0.49, +grads 0.99, +packd 0.52, spx 0.76 (1.55x; 0.77x raw JAX returning its gradients),
spx -grad 0.54 (1.11x), spx bwd() 0.76. What spx adds there keeping gradients is host Python:
a new ``p.grad`` tensor per parameter per step (torch's ``zero_grad()`` semantics) and the lazy
slices' bookkeeping, ~80 us.

Results, 2026-11-26, 2-core CPU box (load 0.9-1.6), three runs of ``--only tiny``, x raw JAX:
spx 1.17 / 1.18 / 1.13, spx -grad 1.07 / 1.09 / 1.10, spx bwd() 1.15 / 1.12 / 1.17, torch
2.55 / 2.47 / 2.55; ``--only medium --steps 80``: spx 1.03, spx -grad 1.04, spx bwd() 1.02,
torch 1.01. Three runs of 2026-11-26 13:40 (after the positional fast path in
spx.compile, load 0.6-1.7): spx 1.14 / 1.09 / 1.13, spx -grad 1.09 / 1.12 / 1.16, spx bwd()
1.12 / 1.14 / 1.14; medium spx 1.08, -grad 1.10, bwd() 1.00. The fast path cut the call's own
Python from ~41 to ~32-37 us (measured with the program replaced by its cached outputs); on
two cores that Python runs ~3x slower right after a step, while XLA's worker threads still
spin, so it is ~0.1 ms of the step. The target (<= 1.10x) is met on some runs only, with or
without kept gradients. 2026-11-27 (load ~1), alternating runs of this code and the code before
packing: new spx 1.22 / 1.28, -grad 1.16 / 1.28, bwd() 1.23 / 1.26; old spx 1.23 / 1.27, -grad
1.21 / 1.20, bwd() 1.25 / 1.26 (the same within noise; the box is slower than the day before).
(torch's ratio in these alternating runs is pessimistic: XLA's worker threads keep spinning on
the second core after a JAX block.) 2026-11-27 later, after the placeholder change: CPU spx
1.17, -grad 1.16, bwd() 1.20; ``--pipelined`` (one wait per round of 10 steps) spx 1.07, -grad
1.04, bwd() 1.02. H200: raw 0.47 ms, +grads 2.00x, +packd 1.12x, spx 1.59x, -grad 1.17x, bwd()
1.48x; on a second H200 (slower host) 1.57 / 1.25 / 1.59 per step and ``--pipelined`` spx
1.11, -grad 0.86, bwd() 1.04, +packd 0.99. Pipelined, the kept gradients cost nothing there:
0.466 ms per step with them, 0.467 without (tools/gpu_check.sh's profile step); what they
cost is the latency of a step that is waited for.

2026-11-27 (stop 23), a 2-core AMD EPYC box, quiet (load 0.8-1.5), eight runs of ``--only
tiny`` (four with stop 22's code, four at the end of stop 23; the compiled path did not
change): spx 1.10 / 1.02 / 1.05 / 1.02 / 1.10 / 1.00 / 1.09 / 1.11 (median 1.07), -grad 1.07 /
1.01 / 1.03 / 1.03 / 1.10 / 1.00 / 1.07 / 1.10, bwd() 1.09 / 1.02 / 1.05 / 1.04 / 1.11 / 1.02 /
1.09 / 1.11, torch 2.90-3.06. spx's own step is steady at 0.68-0.70 ms; raw JAX's alternates
between 0.633 and 0.681 ms from run to run, which is most of the spread. ``--pipelined`` spx
1.04, -grad 1.00, bwd() 1.07; ``--only medium --steps 80`` (raw 105 ms) spx 1.03, -grad 1.01,
bwd() 1.04. The target (<= 1.10x raw JAX) is met in 7 of 8 runs on this box (1.11 in one); on
the Intel boxes of earlier days the same code measured 1.13-1.17.

Usage: ``python tools/bench_step.py [--steps 200] [--only tiny|medium] [--pipelined]``
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

from gpt import GPT, GPTConfig, lm_loss

import spx

CONFIGS = {
    "tiny": (GPTConfig(vocab_size=256, block_size=32, n_layer=2, n_head=4, n_embd=64), 2),
    "medium": (GPTConfig(vocab_size=256, block_size=128, n_layer=4, n_head=4, n_embd=256), 8),
}
LR, WD = 1e-3, 0.01


def _interleaved_ms(
    steps: dict[str, Callable[[], Any]],
    n: int,
    rounds: int = 10,
    warmup: int = 5,
    pipelined: bool = False,
) -> dict[str, float]:
    """Median ms per call of each step function (which returns what to wait for), timed in
    alternating blocks.

    Every implementation runs ``n / rounds`` calls per round, one after the other, round after
    round: a change of the shared machine's load during the run hits them all alike (timing
    each for all of its calls in turn made the ratios swing between 0.8 and 1.5 here). Each
    call is waited for, or with ``pipelined`` only a round's last one (a training loop that
    reads its loss now and then: the host dispatches the next step while the device runs).
    """
    for step in steps.values():
        for _ in range(warmup):
            jax.block_until_ready(step())
    times: dict[str, list[float]] = {name: [] for name in steps}
    per_round = max(1, n // rounds)
    for _ in range(rounds):
        for name, step in steps.items():
            if pipelined:
                t0 = time.perf_counter()
                for _ in range(per_round):
                    out = step()
                jax.block_until_ready(out)
                times[name].append((time.perf_counter() - t0) / per_round)
                continue
            for _ in range(per_round):
                t0 = time.perf_counter()
                jax.block_until_ready(step())
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) * 1e3 for name, ts in times.items()}


def _batch(cfg: GPTConfig, batch: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    seq = rng.integers(0, cfg.vocab_size, (batch, cfg.block_size + 1)).astype(np.int32)
    return seq[:, :-1], seq[:, 1:]


# -- spx ---------------------------------------------------------------------------------------
def bench_spx(
    cfg: GPTConfig, batch: int, keep_grads: bool = True, tape: bool = False
) -> Callable[[], Any]:
    spx.manual_seed(0)
    model = GPT(cfg)
    opt = spx.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)

    @spx.compile
    def train_step(model, opt, x, y):
        opt.zero_grad()
        if tape:  # torch's spelling: the recorded forward and loss.backward()
            loss = lm_loss(model(x), y)
            loss.backward()
        else:
            loss = spx.backward(lambda m: lm_loss(m(x), y), model)
        opt.step()
        if not keep_grads:
            opt.zero_grad()
        return loss

    x, y = (spx.as_tensor(a) for a in _batch(cfg, batch))
    return lambda: train_step(model, opt, x, y)


# -- raw JAX -----------------------------------------------------------------------------------
def _init_raw(cfg: GPTConfig) -> dict[str, jax.Array]:
    keys = iter(jax.random.split(jax.random.key(0), 64))
    d = cfg.n_embd

    def lin(n_in: int, n_out: int, bias: bool = True) -> dict[str, jax.Array]:
        bound = 1 / math.sqrt(n_in)
        p = {"weight": jax.random.uniform(next(keys), (n_out, n_in), minval=-bound, maxval=bound)}
        if bias:
            p["bias"] = jnp.zeros((n_out,))
        return p

    def ln() -> dict[str, jax.Array]:
        return {"weight": jnp.ones((d,)), "bias": jnp.zeros((d,))}

    return {
        "wte": jax.random.normal(next(keys), (cfg.vocab_size, d)),
        "wpe": jax.random.normal(next(keys), (cfg.block_size, d)),
        "blocks": [
            {
                "ln_1": ln(),
                "c_attn": lin(d, 3 * d),
                "c_proj": lin(d, d),
                "ln_2": ln(),
                "c_fc": lin(d, 4 * d),
                "mlp_proj": lin(4 * d, d),
            }
            for _ in range(cfg.n_layer)
        ],
        "ln_f": ln(),
        "lm_head": lin(d, cfg.vocab_size, bias=False),
    }


def _raw_forward(params: dict, idx: jax.Array, cfg: GPTConfig) -> jax.Array:
    def linear(p, x):
        # One 2-D GEMM over the flattened leading dims, as spx's and torch's linear: XLA's CPU
        # gradient of the 3-D form is much slower (see spx.nn.functional.linear).
        y = (x.reshape(-1, x.shape[-1]) @ p["weight"].T).reshape(*x.shape[:-1], -1)
        return y + p["bias"] if "bias" in p else y

    def layer_norm(p, x):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5) * p["weight"] + p["bias"]

    B, T = idx.shape
    C, H = cfg.n_embd, cfg.n_head
    x = params["wte"][idx] + params["wpe"][:T]
    mask = jnp.tril(jnp.ones((T, T), bool))
    for blk in params["blocks"]:
        h = layer_norm(blk["ln_1"], x)
        q, k, v = jnp.split(linear(blk["c_attn"], h), 3, axis=-1)
        q, k, v = (t.reshape(B, T, H, C // H).transpose(0, 2, 1, 3) for t in (q, k, v))
        att = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(C // H)
        att = jax.nn.softmax(jnp.where(mask, att, -jnp.inf), axis=-1)
        y = (att @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
        x = x + linear(blk["c_proj"], y)
        h = layer_norm(blk["ln_2"], x)
        x = x + linear(blk["mlp_proj"], jax.nn.gelu(linear(blk["c_fc"], h), approximate=True))
    return linear(params["lm_head"], layer_norm(params["ln_f"], x))


def bench_raw(cfg: GPTConfig, batch: int, grads_out: str | None = None) -> Callable[[], Any]:
    """The raw JAX step; ``grads_out`` also returns the gradients, as ``"arrays"`` (one output
    per parameter, what torch's ``p.grad`` keeps) or ``"packed"`` (one flat buffer)."""
    params = _init_raw(cfg)
    tx = optax.adamw(LR, weight_decay=WD)
    opt_state = tx.init(params)

    def loss_fn(params, x, y):
        logits = _raw_forward(params, x, cfg)
        logp = jax.nn.log_softmax(logits.reshape(-1, cfg.vocab_size))
        return -jnp.take_along_axis(logp, y.reshape(-1, 1), axis=1).mean()

    @jax.jit
    def _step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        new = optax.apply_updates(params, updates)
        if grads_out == "arrays":
            return new, opt_state, loss, grads
        if grads_out == "packed":
            return (
                new,
                opt_state,
                loss,
                jnp.concatenate([g.ravel() for g in jax.tree.leaves(grads)]),
            )
        return new, opt_state, loss

    train_step = jax.jit(_step, donate_argnums=(0, 1))
    x, y = (jnp.asarray(a) for a in _batch(cfg, batch))
    state = {"p": params, "o": opt_state}

    def step() -> jax.Array:
        state["p"], state["o"], loss, *state["g"] = train_step(state["p"], state["o"], x, y)
        return loss

    return step


# -- flax.nnx ----------------------------------------------------------------------------------
def bench_nnx(cfg: GPTConfig, batch: int) -> Callable[[], Any] | None:
    try:
        from flax import nnx
    except ImportError:
        return None
    d, H = cfg.n_embd, cfg.n_head

    class Block(nnx.Module):
        def __init__(self, rngs: nnx.Rngs) -> None:
            self.ln_1 = nnx.LayerNorm(d, rngs=rngs)
            self.c_attn = nnx.Linear(d, 3 * d, rngs=rngs)
            self.c_proj = nnx.Linear(d, d, rngs=rngs)
            self.ln_2 = nnx.LayerNorm(d, rngs=rngs)
            self.c_fc = nnx.Linear(d, 4 * d, rngs=rngs)
            self.mlp_proj = nnx.Linear(4 * d, d, rngs=rngs)

        def __call__(self, x: jax.Array) -> jax.Array:
            B, T, C = x.shape
            q, k, v = jnp.split(self.c_attn(self.ln_1(x)), 3, axis=-1)
            q, k, v = (t.reshape(B, T, H, C // H).transpose(0, 2, 1, 3) for t in (q, k, v))
            att = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(C // H)
            mask = jnp.tril(jnp.ones((T, T), bool))
            att = jax.nn.softmax(jnp.where(mask, att, -jnp.inf), axis=-1)
            y = (att @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
            x = x + self.c_proj(y)
            return x + self.mlp_proj(jax.nn.gelu(self.c_fc(self.ln_2(x)), approximate=True))

    class Model(nnx.Module):
        def __init__(self, rngs: nnx.Rngs) -> None:
            self.wte = nnx.Embed(cfg.vocab_size, d, rngs=rngs)
            self.wpe = nnx.Embed(cfg.block_size, d, rngs=rngs)
            self.blocks = nnx.List([Block(rngs) for _ in range(cfg.n_layer)])
            self.ln_f = nnx.LayerNorm(d, rngs=rngs)
            self.lm_head = nnx.Linear(d, cfg.vocab_size, use_bias=False, rngs=rngs)

        def __call__(self, idx: jax.Array) -> jax.Array:
            x = self.wte(idx) + self.wpe(jnp.arange(idx.shape[1]))
            for blk in self.blocks:
                x = blk(x)
            return self.lm_head(self.ln_f(x))

    model = Model(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(LR, weight_decay=WD), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, x, y):
        def loss_fn(model):
            logits = model(x)
            logp = jax.nn.log_softmax(logits.reshape(-1, cfg.vocab_size))
            return -jnp.take_along_axis(logp, y.reshape(-1, 1), axis=1).mean()

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    x, y = (jnp.asarray(a) for a in _batch(cfg, batch))
    return lambda: train_step(model, optimizer, x, y)


# -- torch eager -------------------------------------------------------------------------------
def bench_torch(cfg: GPTConfig, batch: int) -> Callable[[], Any] | None:
    try:
        import torch
    except ImportError:
        return None
    # One intra-op thread: torch's default pool oversubscribes this 2-core machine (while JAX's
    # threads exist) and runs ~8x slower than single-threaded.
    torch.set_num_threads(1)
    tnn = torch.nn
    d, H = cfg.n_embd, cfg.n_head
    torch.manual_seed(0)

    class Block(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1, self.ln_2 = tnn.LayerNorm(d), tnn.LayerNorm(d)
            self.c_attn, self.c_proj = tnn.Linear(d, 3 * d), tnn.Linear(d, d)
            self.c_fc, self.mlp_proj = tnn.Linear(d, 4 * d), tnn.Linear(4 * d, d)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(y.transpose(1, 2).reshape(B, T, C))
            gelu = torch.nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")
            return x + self.mlp_proj(gelu)

    class Model(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte, self.wpe = tnn.Embedding(cfg.vocab_size, d), tnn.Embedding(cfg.block_size, d)
            self.blocks = tnn.ModuleList([Block() for _ in range(cfg.n_layer)])
            self.ln_f, self.lm_head = tnn.LayerNorm(d), tnn.Linear(d, cfg.vocab_size, bias=False)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
            for blk in self.blocks:
                x = blk(x)
            return self.lm_head(self.ln_f(x))

    model = Model()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)
    x, y = (torch.from_numpy(a).long() for a in _batch(cfg, batch))

    def step() -> None:
        opt.zero_grad()
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, cfg.vocab_size), y.view(-1))
        loss.backward()
        opt.step()
        loss.item()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--only", choices=sorted(CONFIGS))
    parser.add_argument(
        "--pipelined", action="store_true", help="wait for each round's last step only"
    )
    args = parser.parse_args()
    how = "pipelined rounds" if args.pipelined else "steps"
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; medians of {args.steps} {how}")
    print(f"{'config':<8} {'impl':<10} {'ms/step':>9} {'x raw JAX':>10}")
    for name, (cfg, batch) in CONFIGS.items():
        if args.only and name != args.only:
            continue
        steps = args.steps if name == "tiny" else max(20, args.steps // 4)
        makers: dict[str, Callable[[], Callable[[], Any] | None]] = {
            "raw JAX": functools.partial(bench_raw, cfg, batch),
            "raw +grads": functools.partial(bench_raw, cfg, batch, "arrays"),
            "raw +packd": functools.partial(bench_raw, cfg, batch, "packed"),
            "spx": functools.partial(bench_spx, cfg, batch),
            "spx -grad": functools.partial(bench_spx, cfg, batch, keep_grads=False),
            "spx bwd()": functools.partial(bench_spx, cfg, batch, tape=True),
            "flax.nnx": functools.partial(bench_nnx, cfg, batch),
            "torch": functools.partial(bench_torch, cfg, batch),
        }
        built = {impl: make() for impl, make in makers.items()}
        results = _interleaved_ms(
            {k: v for k, v in built.items() if v is not None}, steps, pipelined=args.pipelined
        )
        raw = results["raw JAX"]
        for impl in makers:
            if impl not in results:
                print(f"{name:<8} {impl:<10} {'n/a':>9} {'(not installed)':>10}")
            else:
                ms = results[impl]
                print(f"{name:<8} {impl:<10} {ms:9.3f} {ms / raw:10.2f}")


if __name__ == "__main__":
    main()
