"""Train a small GPT on generated data, torch-style, as one compiled step; checkpoint; reload.

The loop is the torch loop — ``zero_grad``, ``loss.backward()``, ``clip_grad_norm_``, ``step``,
scheduler — with the step wrapped in ``spx.compile`` so forward, backward and AdamW run as one
XLA program. The checkpoint is
safetensors (no pickle), and a fresh model reloaded from it gives the same validation loss.

Usage: ``python examples/train_gpt.py [--steps 300] [--out runs/gpt]``
"""

from __future__ import annotations

import argparse
import os
import sys

from tqdm import tqdm

sys.path.insert(0, os.path.dirname(__file__))

from gpt import GPT, GPTConfig, lm_loss, make_data

import spx
from spx.data import DataLoader, TensorDataset


def log(msg: str) -> None:
    print(f"[rank0] {msg}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--out", default="runs/gpt")
    args = parser.parse_args()

    spx.manual_seed(0)
    cfg = GPTConfig(vocab_size=64, block_size=32, n_layer=2, n_head=4, n_embd=64)
    x, y = make_data(2048, cfg, seed=0)
    val_x, val_y = make_data(256, cfg, seed=1)
    loader = DataLoader(
        TensorDataset(x, y), batch_size=args.batch_size, shuffle=True, drop_last=True, generator=0
    )

    model = GPT(cfg)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"GPT with {n_params:,} parameters; {len(loader)} batches per epoch")
    opt = spx.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = spx.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)

    @spx.compile
    def train_step(model, opt, xb, yb):
        opt.zero_grad()
        loss = lm_loss(model(xb), yb)
        loss.backward()
        spx.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    @spx.compile
    def evaluate(model, xb, yb):
        return lm_loss(model(xb), yb)

    model.eval()
    first_val = evaluate(model, val_x, val_y).item()
    model.train()
    step, bar = 0, tqdm(total=args.steps, desc="train", unit="step")
    while step < args.steps:
        for xb, yb in loader:
            loss = train_step(model, opt, xb, yb)
            sched.step()
            step += 1
            if step % 25 == 0:
                bar.set_postfix(loss=f"{loss.item():.3f}", lr=f"{sched.get_last_lr()[0]:.2e}")
            bar.update()
            if step == args.steps:
                break
    bar.close()

    model.eval()
    val = evaluate(model, val_x, val_y).item()
    log(f"validation loss {first_val:.3f} -> {val:.3f}")
    if not val < first_val:
        raise SystemExit("training did not reduce the validation loss")

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "model.safetensors")
    spx.save(model.state_dict(), path)
    spx.serialization.save_optimizer(opt, os.path.join(args.out, "optimizer.safetensors"))
    log(f"saved {path}")

    spx.manual_seed(123)  # a different init, so the reload has to restore every weight
    fresh = GPT(cfg)
    fresh.load_state_dict(spx.load(path))
    fresh.eval()
    reloaded = evaluate(fresh, val_x, val_y).item()
    log(f"reloaded checkpoint: validation loss {reloaded:.3f}")
    if abs(reloaded - val) > 1e-5:
        raise SystemExit(f"reloaded model disagrees: {reloaded} vs {val}")


if __name__ == "__main__":
    main()
