"""Train a small GPT with DistributedDataParallel under spx-run, with snapshots to resume from.

The shape of PyTorch's DDP tutorial script (``multigpu_torchrun.py``), renamed to spx::

    spx-run --nproc-per-node 2 examples/ddp_gpt.py                    # one process per rank
    spx-run --threads --nproc-per-node 2 examples/ddp_gpt.py          # ranks as threads
    spx-run --nproc-per-node 2 --max-restarts 1 examples/ddp_gpt.py --crash-at 1:3

Every rank calls ``init_process_group()``, reads its share of the data through a
``DistributedSampler``, wraps the GPT of ``examples/gpt.py`` in ``DistributedDataParallel`` and
runs the torch loop ``zero_grad(); loss.backward(); step()`` — the gradients are averaged over
the ranks when ``backward()`` finishes.

**Snapshots.** Every ``--save-every`` epochs rank 0 writes ``<snapshot-dir>/epoch-<N>.safetensors``
(the model's ``state_dict`` without DDP's ``module.`` prefix, the epoch and the loss curve in
the metadata) and ``epoch-<N>.optim.safetensors`` (the optimizer state), each atomically (temp
file + rename); a snapshot is complete when both exist, and only the last two are kept. At
start every rank loads the newest complete snapshot (unless ``--fresh``) and continues from the
epoch after it: a job restarted by ``spx-run --max-restarts`` picks up where the last snapshot
left off and ends with the same final loss as a run that was never interrupted.

``--crash-at RANK:EPOCH``: in the first attempt (``TORCHELASTIC_RESTART_COUNT`` 0), rank RANK
SIGKILLs itself when it starts epoch EPOCH (an exception for a thread rank).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gpt import GPT, GPTConfig, lm_loss, make_data

import spx
import spx.distributed as dist
from spx.data import DataLoader, DistributedSampler, TensorDataset
from spx.nn.parallel import DistributedDataParallel as DDP
from spx.serialization import load_optimizer, open_checkpoint, save_optimizer

META = "ddp_gpt"


def log(msg: str) -> None:
    print(f"[rank{dist.get_rank()}] {msg}", flush=True)


class Trainer:
    """torch's tutorial Trainer: one rank's model, data, optimizer and snapshots."""

    def __init__(self, model: spx.nn.Module, data: DataLoader, opt: spx.optim.Optimizer,
                 args: argparse.Namespace) -> None:  # fmt: skip
        self.rank = dist.get_rank()
        self.data = data
        self.opt = opt
        self.args = args
        self.epochs_run = 0
        self.curve: list[float] = []
        if not args.fresh:
            self._load_snapshot(model)
        self.model = DDP(model)  # after loading: every rank now holds the snapshot anyway

    # -- snapshots ---------------------------------------------------------------------------
    def _paths(self, epoch: int) -> tuple[str, str]:
        base = os.path.join(self.args.snapshot_dir, f"epoch-{epoch:04d}")
        return f"{base}.safetensors", f"{base}.optim.safetensors"

    def _complete(self) -> list[int]:
        found = []
        for name in os.listdir(self.args.snapshot_dir):
            m = re.fullmatch(r"epoch-(\d+)\.safetensors", name)
            if m and all(os.path.exists(p) for p in self._paths(int(m.group(1)))):
                found.append(int(m.group(1)))
        return sorted(found)

    def _load_snapshot(self, model: spx.nn.Module) -> None:
        done = self._complete()
        if not done:
            return
        model_path, optim_path = self._paths(done[-1])
        with open_checkpoint(model_path) as ckpt:
            info = json.loads(ckpt.metadata[META])
        model.load_state_dict(spx.load(model_path))
        self.opt.load_state_dict(load_optimizer(optim_path))
        self.epochs_run, self.curve = info["epochs_run"], info["curve"]
        log(f"resuming training from snapshot at epoch {self.epochs_run}")

    def _save_snapshot(self, epoch: int) -> None:
        model_path, optim_path = self._paths(epoch + 1)
        save_optimizer(self.opt, optim_path)  # first: the model file completes the snapshot
        info = {"epochs_run": epoch + 1, "curve": self.curve}
        spx.save(self.model.module.state_dict(), model_path, metadata={META: json.dumps(info)})
        for old in self._complete()[:-2]:
            for path in self._paths(old):
                os.remove(path)
        log(f"epoch {epoch} | training snapshot saved at {model_path}")

    # -- training ----------------------------------------------------------------------------
    def _run_batch(self, source: spx.Tensor, targets: spx.Tensor) -> spx.Tensor:
        self.opt.zero_grad()
        loss = lm_loss(self.model(source), targets)
        loss.backward()  # DDP averages the gradients over the ranks here
        self.opt.step()
        return loss.detach()

    def _run_epoch(self, epoch: int) -> None:
        self.data.sampler.set_epoch(epoch)
        total = spx.zeros(())
        for source, targets in self.data:
            total += self._run_batch(source, targets)
        mean = total / len(self.data)
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)  # in place: the mean over the ranks
        self.curve.append(mean.item())
        if self.rank == 0:
            log(f"epoch {epoch} | {len(self.data)} steps | loss {self.curve[-1]:.6f}")

    def train(self, max_epochs: int) -> None:
        attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
        crash_rank, crash_epoch = self.args.crash_at or (-1, -1)
        for epoch in range(self.epochs_run, max_epochs):
            if attempt == 0 and (self.rank, epoch) == (crash_rank, crash_epoch):
                crash(self.rank, epoch)
            self._run_epoch(epoch)
            if self.rank == 0 and (epoch + 1) % self.args.save_every == 0:
                self._save_snapshot(epoch)
            dist.barrier()  # the snapshot is on disk before any rank can fail in the next epoch


def crash(rank: int, epoch: int) -> None:
    log(f"crashing at epoch {epoch} (--crash-at)")
    if threading.current_thread() is threading.main_thread():
        os.kill(os.getpid(), signal.SIGKILL)
    raise RuntimeError(f"rank {rank}: injected crash at epoch {epoch} (--crash-at)")


def main(args: argparse.Namespace) -> None:
    dist.init_process_group()
    os.makedirs(args.snapshot_dir, exist_ok=True)
    spx.manual_seed(0)
    cfg = GPTConfig(vocab_size=64, block_size=16, n_layer=2, n_head=4, n_embd=32)
    x, y = make_data(args.samples, cfg, seed=0)
    data = DataLoader(
        TensorDataset(x, y),
        batch_size=args.batch_size,
        sampler=DistributedSampler(TensorDataset(x, y)),  # this rank's share, reshuffled per epoch
        drop_last=True,
    )
    model = GPT(cfg)
    opt = spx.optim.AdamW(model.parameters(), lr=args.lr)
    trainer = Trainer(model, data, opt, args)
    trainer.train(args.epochs)
    if dist.get_rank() == 0:
        log(f"final loss {trainer.curve[-1]!r} after {args.epochs} epochs")
    dist.destroy_process_group()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--save-every", type=int, default=2, help="snapshot every N epochs")
    parser.add_argument("--batch-size", type=int, default=8, help="per rank")
    parser.add_argument("--samples", type=int, default=64, help="sequences in the dataset")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--snapshot-dir", default="runs/ddp_gpt")
    parser.add_argument("--fresh", action="store_true", help="ignore existing snapshots")
    parser.add_argument("--crash-at", metavar="RANK:EPOCH", help="first attempt only")
    args = parser.parse_args(argv)
    for name in ("epochs", "save_every", "batch_size", "samples"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.crash_at is not None:
        m = re.fullmatch(r"(\d+):(\d+)", args.crash_at)
        if m is None:
            parser.error(f"--crash-at takes RANK:EPOCH, e.g. 1:3; got {args.crash_at!r}")
        args.crash_at = (int(m.group(1)), int(m.group(2)))
    return args


if __name__ == "__main__":
    main(parse_args())
