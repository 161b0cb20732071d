"""Train a small GPT split over 4 pipeline ranks (Schedule1F1B) and match the single-device run.

The model is ``examples/gpt.py``'s GPT with one transformer block per pipeline stage:

    rank 0: Embed + block 0     rank 1: block 1     rank 2: block 2     rank 3: block 3 + Head

First the whole model trains on one device (``zero_grad``, ``spx.backward`` of the full-batch
mean loss, AdamW ``step``), which gives the reference loss curve. Then four thread ranks
(``spx.distributed.spawn``) each build the same seeded GPT, keep their stage's modules, wrap them
in a ``PipelineStage`` and run the torch loop ``opt.zero_grad(); schedule.step(...); opt.step()``
with an optimizer over their own stage's parameters, on the same batches. The last rank's loss
per step is the mean of its microbatch losses, which equals the full-batch mean loss; with
``scale_grads`` the accumulated gradients are those of that mean, so both runs should follow the
same curve up to float rounding. The script prints both curves side by side and exits non-zero
if they differ by more than ``--rtol``.

Usage: ``python examples/pipeline_gpt.py [--steps 20] [--microbatches 4] [--rtol 1e-4]``
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

import jax

# One CPU device per rank; must happen before JAX starts its backend (a RuntimeError means it
# already started, e.g. when imported by a test session that configured its own devices).
with contextlib.suppress(RuntimeError):
    jax.config.update("jax_num_cpu_devices", 8)

from tqdm import tqdm

sys.path.insert(0, os.path.dirname(__file__))

from gpt import GPT, GPTConfig, lm_loss, make_data

import spx
import spx.distributed as dist
from spx import nn
from spx.distributed.pipelining import PipelineStage, Schedule1F1B

N_RANKS = 4
SEED = 0


def log(rank: int, msg: str) -> None:
    print(f"[rank{rank}] {msg}", flush=True)


def batches(cfg: GPTConfig, steps: int, batch_size: int) -> list[tuple[jax.Array, jax.Array]]:
    """The same fixed batches for both runs: consecutive slices of one generated corpus."""
    x, y = make_data(steps * batch_size, cfg, seed=SEED)
    return [
        (x[i * batch_size : (i + 1) * batch_size], y[i * batch_size : (i + 1) * batch_size])
        for i in range(steps)
    ]


def make_optimizer(params: Sequence[nn.Parameter], lr: float) -> spx.optim.Optimizer:
    return spx.optim.AdamW(params, lr=lr, weight_decay=0.01)


def stage_module(model: GPT, stage: int, num_stages: int) -> nn.Module:
    """Stage ``stage``'s part of ``model``: its blocks, plus Embed in front of the first and
    Head behind the last (the modules themselves, so the weights are the seeded ones)."""
    per = model.cfg.n_layer // num_stages
    parts: list[nn.Module] = list(model.blocks[stage * per : (stage + 1) * per])
    if stage == 0:
        parts.insert(0, model.embed)
    if stage == num_stages - 1:
        parts.append(model.head)
    return nn.Sequential(*parts)


# -- single device -----------------------------------------------------------------------------
def reference(cfg: GPTConfig, data: list[tuple[jax.Array, jax.Array]], lr: float) -> list[float]:
    """Loss per step of the whole model trained on one device."""
    spx.manual_seed(SEED)
    model = GPT(cfg)
    opt = make_optimizer(model.parameters(), lr)

    @spx.compile
    def train_step(model, opt, xb, yb):
        opt.zero_grad()
        loss = spx.backward(lambda m: lm_loss(m(xb), yb), model)
        opt.step()
        return loss

    curve = []
    for xb, yb in tqdm(data, desc="single device", unit="step"):
        curve.append(float(train_step(model, opt, xb, yb)))
    return curve


# -- pipeline ----------------------------------------------------------------------------------
def pipeline_rank(
    rank: int,
    cfg: GPTConfig,
    data: list[tuple[jax.Array, jax.Array]],
    lr: float,
    n_microbatches: int,
    out: dict,
) -> None:
    """One pipeline rank: build its stage from the seeded GPT, train, report the curve."""
    dist.init_process_group()
    world = dist.get_world_size()
    spx.manual_seed(SEED)  # every rank builds the same GPT, then keeps only its stage's modules
    module = stage_module(GPT(cfg), rank, world)
    dev = spx.device("cpu")
    stage = PipelineStage(module, rank, world, dev)
    schedule = Schedule1F1B(stage, n_microbatches=n_microbatches, loss_fn=lm_loss)
    opt = make_optimizer(module.parameters(), lr)
    n_params = sum(p.numel() for p in module.parameters())
    log(rank, f"stage {rank}/{world}: {n_params:,} parameters on {dev}")

    curve: list[float] = []
    bar = tqdm(data, desc="pipeline", unit="step", disable=rank != 0)
    for xb, yb in bar:
        opt.zero_grad()
        if stage.is_first:
            schedule.step(jax.device_put(xb, dev))
        elif stage.is_last:
            losses: list[jax.Array] = []
            schedule.step(target=jax.device_put(yb, dev), losses=losses, return_outputs=False)
            curve.append(float(sum(float(v) for v in losses) / len(losses)))
        else:
            schedule.step()
        opt.step()
    bar.close()
    # The last rank holds the losses; everyone learns them (rank 0 reports).
    curves: list[list[float] | None] = [None] * world
    dist.all_gather_object(curves, curve if stage.is_last else None)
    if rank == 0:
        out["pipeline"] = curves[world - 1]
    dist.barrier()


# -- main --------------------------------------------------------------------------------------
def compare(ref: list[float], pipe: list[float], rtol: float) -> float:
    """Print both curves side by side; return the largest relative difference."""
    log(0, f"{'step':>4} {'single device':>14} {'pipeline':>14} {'rel diff':>10}")
    worst = 0.0
    for i, (a, b) in enumerate(zip(ref, pipe, strict=True)):
        rel = abs(a - b) / max(abs(a), 1e-12)
        worst = max(worst, rel)
        flag = "" if rel <= rtol else "  <-- differs"
        log(0, f"{i:>4} {a:>14.6f} {b:>14.6f} {rel:>10.2e}{flag}")
    return worst


def main(argv: Sequence[str] | None = None) -> tuple[list[float], list[float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--microbatches", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--n-embd", type=int, default=64, help="model width (a multiple of 4)")
    parser.add_argument("--block-size", type=int, default=32, help="sequence length")
    parser.add_argument(
        "--rtol",
        type=float,
        default=1e-4,
        help="largest allowed relative difference of the two loss curves",
    )
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps must be >= 1, got {args.steps}")
    if args.batch_size % args.microbatches:
        parser.error(
            f"--batch-size {args.batch_size} must be a multiple of --microbatches "
            f"{args.microbatches} (equal microbatches make their mean loss the batch's)"
        )

    cfg = GPTConfig(
        vocab_size=64, block_size=args.block_size, n_layer=N_RANKS, n_head=4, n_embd=args.n_embd
    )
    data = batches(cfg, args.steps, args.batch_size)
    log(
        0,
        f"GPT {cfg.n_layer} layers, n_embd {cfg.n_embd}; {args.steps} steps of batch "
        f"{args.batch_size}; pipeline: {N_RANKS} ranks, Schedule1F1B, "
        f"{args.microbatches} microbatches",
    )
    ref = reference(cfg, data, args.lr)
    out: dict = {}
    dist.spawn(pipeline_rank, (cfg, data, args.lr, args.microbatches, out), nprocs=N_RANKS)
    pipe = out["pipeline"]
    worst = compare(ref, pipe, args.rtol)
    log(
        0,
        f"loss {ref[0]:.4f} -> {ref[-1]:.4f}; largest relative difference {worst:.2e} "
        f"(tolerance {args.rtol:g})",
    )
    if worst > args.rtol:
        raise SystemExit(
            f"[rank0] the pipeline's loss curve differs from the single-device one "
            f"by {worst:.2e} relative (> {args.rtol:g})"
        )
    log(0, "pipeline matches the single-device loss curve")
    return ref, pipe


if __name__ == "__main__":
    main()
