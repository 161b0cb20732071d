"""Train a small GPT pipelined over 4 ranks (Schedule1F1B), checkpoint it, match one device.

A torchrun job: one pipeline rank per process (or per thread), each holding one stage of
``examples/gpt.py``'s GPT::

    spx-run --nproc-per-node 4 examples/pipeline_gpt.py             # one process per rank
    spx-run --threads --nproc-per-node 4 examples/pipeline_gpt.py   # ranks as threads
    python examples/pipeline_gpt.py                                 # 4 thread ranks (spawn)

    rank 0: Embed + block 0     rank 1: block 1     rank 2: block 2     rank 3: block 3 + Head

Every rank calls ``init_process_group()`` (from the launcher's environment), builds the same
seeded GPT, keeps its stage's modules, wraps them in a ``PipelineStage`` and runs the torch loop
``opt.zero_grad(); schedule.step(...); opt.step()`` with AdamW over its own parameters. The
last rank's loss per step is the mean of its microbatch losses, which equals the full-batch mean
loss; with ``scale_grads`` the accumulated gradients are those of that mean.

**Checkpoints.** Every ``--ckpt-every`` steps each rank writes its stage's parameters and its
optimizer state (safetensors, each file written atomically: temp file + rename) to
``<ckpt-dir>/rank<R>/step-<N>.safetensors`` and ``step-<N>.optim.safetensors``; the last rank's
file also holds the loss curve so far. A checkpoint is complete when every rank has both files.
When the job is restarted (``spx-run --max-restarts``: ``TORCHELASTIC_RESTART_COUNT`` > 0) or
given ``--resume``, the ranks agree on the last complete checkpoint and continue from it; a
fresh start removes the checkpoints of an earlier job from ``<ckpt-dir>``.

**The check.** At the end rank 0 trains the whole model on one device (``zero_grad``,
``loss.backward()`` of the full-batch mean loss, AdamW ``step``) on the same batches, prints both
curves side by side and exits non-zero if they differ by more than ``--rtol``. A run that was
killed and resumed must follow the same curve as one that was not.

``--crash-at RANK:STEP`` simulates a crash for trying out restarts: in the first attempt, rank
RANK dies when it reaches step STEP (SIGKILL when it is a process, an exception when it is a
thread).

Usage: ``spx-run --nproc-per-node 4 examples/pipeline_gpt.py [--steps 20] [--ckpt-every 5]``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import sys
import threading
from collections.abc import Sequence

from tqdm import tqdm

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gpt import GPT, GPTConfig, lm_loss, make_data

import spx
import spx.distributed as dist
from spx import nn
from spx.distributed.pipelining import PipelineStage, Schedule1F1B
from spx.serialization import load_optimizer, open_checkpoint, save_optimizer

SEED = 0
N_RANKS = 4  # when started without a launcher
CKPT_META = "pipeline_gpt"


def log(rank: int, msg: str) -> None:
    print(f"[rank{rank}] {msg}", flush=True)


def batches(cfg: GPTConfig, steps: int, batch_size: int) -> list[tuple[spx.Tensor, spx.Tensor]]:
    """The fixed batches of every run: consecutive slices of one generated corpus."""
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


# -- checkpoints -------------------------------------------------------------------------------
class Checkpoints:
    """One rank's checkpoints: ``<root>/rank<R>/step-<N>.safetensors`` (+ ``.optim``)."""

    def __init__(self, root: str, rank: int, world: int) -> None:
        self.dir = os.path.join(root, f"rank{rank}")
        self.world = world
        os.makedirs(self.dir, exist_ok=True)

    def _paths(self, step: int) -> tuple[str, str]:
        base = os.path.join(self.dir, f"step-{step:06d}")
        return f"{base}.safetensors", f"{base}.optim.safetensors"

    def steps(self) -> list[int]:
        """Steps for which this rank holds both files."""
        found = []
        for name in os.listdir(self.dir):
            m = re.fullmatch(r"step-(\d+)\.safetensors", name)
            if m and all(os.path.exists(p) for p in self._paths(int(m.group(1)))):
                found.append(int(m.group(1)))
        return sorted(found)

    def save(self, step: int, module: nn.Module, opt: spx.optim.Optimizer, losses: list) -> None:
        """Write step ``step`` (the optimizer file first: the model file completes it), then
        drop this rank's checkpoints older than the previous one, which every rank has
        finished writing by now (each finished the step after it)."""
        model_path, optim_path = self._paths(step)
        save_optimizer(opt, optim_path)
        meta = {CKPT_META: json.dumps({"step": step, "world": self.world, "losses": losses})}
        spx.save(module.state_dict(), model_path, metadata=meta)
        older = [s for s in self.steps() if s < step]
        for old in older[:-1]:
            for path in self._paths(old):
                os.remove(path)

    def load(self, step: int, module: nn.Module, opt: spx.optim.Optimizer) -> list[float]:
        """Restore step ``step`` into ``module`` and ``opt``; return the saved loss curve."""
        model_path, optim_path = self._paths(step)
        with open_checkpoint(model_path) as ckpt:
            info = json.loads(ckpt.metadata[CKPT_META])
        if info["world"] != self.world:
            raise ValueError(
                f"{model_path} was written by a {info['world']}-rank job, this job has "
                f"{self.world} ranks; resume with the same number of ranks"
            )
        module.load_state_dict(spx.load(model_path))
        opt.load_state_dict(load_optimizer(optim_path))
        return info["losses"]

    def clear(self) -> None:
        """Remove this rank's checkpoints (of an earlier job)."""
        shutil.rmtree(self.dir)
        os.makedirs(self.dir)


def agree_on_checkpoint(ckpts: Checkpoints) -> int | None:
    """The last step every rank holds a complete checkpoint of (None: none). Each rank reports
    its own steps, so ranks on different hosts need no shared file system."""
    mine = ckpts.steps()
    every: list[list[int] | None] = [None] * dist.get_world_size()
    dist.all_gather_object(every, mine)
    common = set(mine).intersection(*[set(s or ()) for s in every])
    return max(common) if common else None


# -- single device -----------------------------------------------------------------------------
def reference(cfg: GPTConfig, data: list[tuple[spx.Tensor, spx.Tensor]], lr: float) -> list[float]:
    """Loss per step of the whole model trained on one device."""
    spx.manual_seed(SEED)
    model = GPT(cfg)
    opt = make_optimizer(model.parameters(), lr)

    @spx.compile
    def train_step(model, opt, xb, yb):
        opt.zero_grad()
        loss = lm_loss(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    return [float(train_step(model, opt, xb, yb)) for xb, yb in data]


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


def restore(
    ckpts: Checkpoints, module: nn.Module, opt: spx.optim.Optimizer, resume: bool
) -> tuple[int, list[float]]:
    """Where this rank starts: the last complete checkpoint when resuming, else step 0 (after
    removing an earlier job's checkpoints). Returns the first step and the loss curve so far."""
    if not resume:
        ckpts.clear()
        return 0, []
    rank = dist.get_rank()
    found = agree_on_checkpoint(ckpts)
    if found is None:
        log(rank, f"no complete checkpoint in {ckpts.dir}: starting from step 0")
        return 0, []
    curve = ckpts.load(found, module, opt)
    log(rank, f"resumed from the checkpoint of step {found} in {ckpts.dir}")
    return found, curve


def check(
    cfg: GPTConfig,
    data: list[tuple[spx.Tensor, spx.Tensor]],
    lr: float,
    pipe: list[float],
    rtol: float,
) -> None:
    """Rank 0: train on one device, compare, exit non-zero when the curves differ."""
    ref = reference(cfg, data, lr)
    worst = compare(ref, pipe, rtol)
    log(0, f"final loss {pipe[-1]!r} after {len(pipe)} steps")
    log(
        0,
        f"loss {ref[0]:.4f} -> {ref[-1]:.4f}; largest relative difference {worst:.2e} "
        f"(tolerance {rtol:g})",
    )
    if worst > rtol:
        raise SystemExit(
            f"[rank0] the pipeline's loss curve differs from the single-device one by "
            f"{worst:.2e} relative (> {rtol:g})"
        )
    log(0, "pipeline matches the single-device loss curve")


# -- one pipeline rank -------------------------------------------------------------------------
def crash(rank: int, step: int) -> None:
    log(rank, f"crashing at step {step} (--crash-at)")
    if threading.current_thread() is threading.main_thread():
        os.kill(os.getpid(), signal.SIGKILL)  # a process rank dies alone, without a word
    raise RuntimeError(f"rank {rank}: injected crash at step {step} (--crash-at)")


def train(args: argparse.Namespace) -> None:
    """One pipeline rank of the job (the whole script under a launcher)."""
    dist.init_process_group()  # before any JAX computation: a process joins the job first
    rank, world = dist.get_rank(), dist.get_world_size()
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if args.n_layer % world:
        raise SystemExit(f"--n-layer {args.n_layer} must be a multiple of the {world} ranks")
    cfg = GPTConfig(
        vocab_size=64,
        block_size=args.block_size,
        n_layer=args.n_layer,
        n_head=4,
        n_embd=args.n_embd,
    )
    data = batches(cfg, args.steps, args.batch_size)
    spx.manual_seed(SEED)  # every rank builds the same GPT, then keeps only its stage's modules
    module = stage_module(GPT(cfg), rank, world)
    dev = spx.device("cpu")
    stage = PipelineStage(module, rank, world, dev)
    schedule = Schedule1F1B(stage, n_microbatches=args.microbatches, loss_fn=lm_loss)
    opt = make_optimizer(module.parameters(), args.lr)
    if rank == 0:
        log(
            rank,
            f"GPT {cfg.n_layer} layers, n_embd {cfg.n_embd}; {args.steps} steps of batch "
            f"{args.batch_size}; pipeline: {world} ranks, Schedule1F1B, "
            f"{args.microbatches} microbatches; attempt {attempt}",
        )
    n_params = sum(p.numel() for p in module.parameters())
    log(rank, f"stage {rank}/{world}: {n_params:,} parameters on {dev}")

    ckpts = Checkpoints(args.ckpt_dir, rank, world)
    start, curve = restore(ckpts, module, opt, resume=attempt > 0 or args.resume)
    crash_rank, crash_step = args.crash_at if args.crash_at else (-1, -1)

    with tqdm(
        total=args.steps, initial=start, desc="pipeline", unit="step", disable=rank != 0
    ) as bar:
        for step in range(start, args.steps):
            if attempt == 0 and (rank, step) == (crash_rank, crash_step):
                crash(rank, step)
            xb, yb = data[step]
            opt.zero_grad()
            if stage.is_first:
                schedule.step(xb.to(dev))
            elif stage.is_last:
                losses: list[spx.Tensor] = []
                schedule.step(target=yb.to(dev), losses=losses, return_outputs=False)
                curve.append(sum(loss.item() for loss in losses) / len(losses))
            else:
                schedule.step()
            opt.step()
            bar.update()
            done = step + 1
            if done % args.ckpt_every == 0 or done == args.steps:
                ckpts.save(done, module, opt, curve if stage.is_last else [])

    # The last rank holds the losses; rank 0 checks them against one device.
    curves: list[list[float] | None] = [None] * world
    dist.all_gather_object(curves, curve if stage.is_last else None)
    if rank == 0:
        check(cfg, data, args.lr, curves[world - 1], args.rtol)
    dist.destroy_process_group()


# -- main --------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--microbatches", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--n-layer", type=int, default=4, help="a multiple of the ranks")
    parser.add_argument("--n-embd", type=int, default=64, help="model width (a multiple of 4)")
    parser.add_argument("--block-size", type=int, default=32, help="sequence length")
    parser.add_argument("--ckpt-dir", default="runs/pipeline_gpt")
    parser.add_argument("--ckpt-every", type=int, default=5, help="checkpoint every N steps")
    parser.add_argument(
        "--resume", action="store_true", help="continue from the last complete checkpoint"
    )
    parser.add_argument(
        "--crash-at",
        metavar="RANK:STEP",
        help="first attempt only: rank RANK dies when it reaches step STEP (to try restarts)",
    )
    parser.add_argument(
        "--rtol",
        type=float,
        default=1e-4,
        help="largest allowed relative difference of the two loss curves",
    )
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps must be >= 1, got {args.steps}")
    if args.ckpt_every < 1:
        parser.error(f"--ckpt-every must be >= 1, got {args.ckpt_every}")
    if args.batch_size % args.microbatches:
        parser.error(
            f"--batch-size {args.batch_size} must be a multiple of --microbatches "
            f"{args.microbatches} (equal microbatches make their mean loss the batch's)"
        )
    if args.crash_at is not None:
        m = re.fullmatch(r"(\d+):(\d+)", args.crash_at)
        if m is None:
            parser.error(f"--crash-at takes RANK:STEP, e.g. 2:7; got {args.crash_at!r}")
        args.crash_at = (int(m.group(1)), int(m.group(2)))
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if "WORLD_SIZE" in os.environ:  # a rank of spx-run/torchrun (a process or a thread)
        train(args)
    else:  # no launcher: run the ranks as threads of this process
        dist.spawn(lambda rank: train(args), nprocs=N_RANKS)


if __name__ == "__main__":
    main()
