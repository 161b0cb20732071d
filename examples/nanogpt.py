"""Train a small GPT written exactly as one writes it in PyTorch, with ``torch`` renamed ``spx``.

This is nanoGPT's model and training loop in plain torch idioms — tensor methods (``view``,
``transpose(1, 2)``, ``masked_fill``, ``split``), a registered causal-mask buffer, tied
embedding weights, ``nn.init`` in ``_init_weights``, AdamW with decay/no-decay parameter groups,
a warmup + cosine learning rate written into ``param_groups``, gradient accumulation with
``loss.backward()``, ``clip_grad_norm_``, evaluation under ``@spx.no_grad()`` and sampling with
``topk`` + ``multinomial``. Nothing in it is spx-specific: ``tests/examples/test_nanogpt.py``
runs it, then runs the same text with every ``spx`` replaced by ``torch``, and compares the
losses step by step.

The data is a generated corpus (noisy arithmetic ramps over a vocabulary of 64 tokens), so the
job needs no download. Batches come from a numpy generator, so both frameworks see the same
ones; ``--init`` loads initial weights from a safetensors file so both start from the same point.

Usage: ``python examples/nanogpt.py [--iters 60] [--log losses.json] [--init w.safetensors]``
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass

import numpy as np
from safetensors.numpy import load_file

import spx
import spx.nn as nn
from spx.nn import functional as F


@dataclass
class GPTConfig:
    block_size: int = 32
    vocab_size: int = 64
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    dropout: float = 0.0
    bias: bool = True


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if config.n_embd % config.n_head:
            raise ValueError(f"n_embd={config.n_embd} must be divisible by n_head={config.n_head}")
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        # causal mask to ensure that attention is only applied to the left in the input sequence
        mask = spx.tril(spx.ones(config.block_size, config.block_size))
        self.register_buffer("bias", mask.view(1, 1, config.block_size, config.block_size))

    def forward(self, x):
        B, T, C = x.size()  # batch size, sequence length, embedding dimensionality (n_embd)
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
            )
        )
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):  # scaled init of the residual projections
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        _, t = idx.size()
        if t > self.config.block_size:
            raise ValueError(f"sequence of length {t} > block size {self.config.block_size}")
        pos = spx.arange(0, t, dtype=spx.long)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        else:
            logits = self.lm_head(x[:, [-1], :])  # only the last position at inference
            loss = None
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        params = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay = [p for p in params.values() if p.dim() >= 2]
        nodecay = [p for p in params.values() if p.dim() < 2]
        groups = [
            {"params": decay, "weight_decay": weight_decay},
            {"params": nodecay, "weight_decay": 0.0},
        ]
        return spx.optim.AdamW(groups, lr=learning_rate, betas=betas)

    @spx.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            bs = self.config.block_size
            idx_cond = idx if idx.size(1) <= bs else idx[:, -bs:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = spx.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = spx.multinomial(probs, num_samples=1)
            idx = spx.cat((idx, idx_next), dim=1)
        return idx


def make_corpus(n_tokens, vocab_size, seed):
    """Noisy arithmetic ramps: the next token is the last plus a stride (mod vocab_size)."""
    rng = np.random.default_rng(seed)
    out, tok = [], 0
    while len(out) < n_tokens:
        stride, length = rng.integers(1, 4), rng.integers(8, 40)
        tok = int(rng.integers(0, vocab_size))
        for _ in range(length):
            out.append(tok if rng.random() > 0.05 else int(rng.integers(0, vocab_size)))
            tok = (tok + stride) % vocab_size
    return np.asarray(out[:n_tokens], dtype=np.int64)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iters", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--grad-accum", type=int, default=2)
    parser.add_argument("--eval-interval", type=int, default=20)
    parser.add_argument("--eval-iters", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--init", default=None, help="initial weights (safetensors)")
    parser.add_argument("--log", default=None, help="write the per-iteration losses here (json)")
    args = parser.parse_args()

    spx.manual_seed(1337)
    config = GPTConfig(dropout=args.dropout)
    model = GPT(config)
    if args.init:
        state = {k: spx.from_numpy(v) for k, v in load_file(args.init).items()}
        model.load_state_dict(state)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"[rank0] number of parameters: {n_params / 1e3:.1f}K")

    data = make_corpus(20000, config.vocab_size, seed=0)
    n = int(0.9 * len(data))
    splits = {"train": data[:n], "val": data[n:]}
    batch_rng = np.random.default_rng(1)

    def get_batch(split):
        d = splits[split]
        ix = batch_rng.integers(0, len(d) - config.block_size, size=args.batch_size)
        x = spx.stack([spx.from_numpy(d[i : i + config.block_size]) for i in ix]).long()
        y = spx.stack([spx.from_numpy(d[i + 1 : i + 1 + config.block_size]) for i in ix]).long()
        return x, y

    @spx.no_grad()
    def estimate_loss():
        out = {}
        model.eval()
        for split in ("train", "val"):
            losses = spx.zeros(args.eval_iters)
            for k in range(args.eval_iters):
                X, Y = get_batch(split)
                _, loss = model(X, Y)
                losses[k] = loss.item()
            out[split] = losses.mean().item()
        model.train()
        return out

    warmup, min_lr = max(1, args.iters // 10), args.lr / 10

    def get_lr(it):
        if it < warmup:
            return args.lr * (it + 1) / (warmup + 1)
        ratio = (it - warmup) / max(1, args.iters - warmup)
        return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (args.lr - min_lr)

    optimizer = model.configure_optimizers(0.1, args.lr, (0.9, 0.95))
    log = {"train": [], "eval": []}
    t0 = time.time()
    for it in range(args.iters):
        lr = get_lr(it)
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        if it % args.eval_interval == 0 or it == args.iters - 1:
            losses = estimate_loss()
            log["eval"].append([it, losses["train"], losses["val"]])
            print(f"[rank0] step {it}: train loss {losses['train']:.4f}, val {losses['val']:.4f}")
        for _ in range(args.grad_accum):
            X, Y = get_batch("train")
            _, loss = model(X, Y)
            loss = loss / args.grad_accum  # scale the loss to account for gradient accumulation
            loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        lossf = loss.item() * args.grad_accum
        log["train"].append(lossf)
        if it % 10 == 0:
            dt = (time.time() - t0) * 1000 / (it + 1)
            print(f"[rank0] iter {it}: loss {lossf:.4f}, {dt:.1f} ms/iter")

    model.eval()
    prompt = spx.tensor([[1, 2, 3, 4]], dtype=spx.long)
    sample = model.generate(prompt, max_new_tokens=16, top_k=8)
    print("[rank0] sample:", sample[0].tolist())
    if args.log:
        with open(args.log, "w") as f:
            json.dump(log, f)


if __name__ == "__main__":
    main()
