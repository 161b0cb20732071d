"""A small GPT in spx, written the way it is written in torch (nanoGPT's layout and names).

Used by ``examples/train_gpt.py``, ``examples/pipeline_gpt.py`` and ``tools/bench_step.py``.
Parameter names and shapes equal those of the same model written with ``torch.nn``, so a torch
checkpoint of it loads as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import spx
from spx import nn
from spx.nn import functional as F


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 256
    block_size: int = 32
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    dropout: float = 0.0


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        if cfg.n_embd % cfg.n_head:
            raise ValueError(f"n_embd={cfg.n_embd} must be divisible by n_head={cfg.n_head}")
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.resid_dropout = nn.Dropout(cfg.dropout)
        self.n_head = cfg.n_head

    def forward(self, x: spx.Tensor) -> spx.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        # (B, T, C) -> (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: spx.Tensor) -> spx.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = MLP(cfg)

    def forward(self, x: spx.Tensor) -> spx.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Embed(nn.Module):
    """Token + position embeddings (the first pipeline stage's front)."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, idx: spx.Tensor) -> spx.Tensor:
        T = idx.size(1)
        return self.drop(self.wte(idx) + self.wpe(spx.arange(T)))


class Head(nn.Module):
    """Final LayerNorm and the vocabulary projection (the last pipeline stage's back)."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)

    def forward(self, x: spx.Tensor) -> spx.Tensor:
        return self.lm_head(self.ln_f(x))


class GPT(nn.Module):
    """``idx (B, T) int -> logits (B, T, vocab_size)``.

    Example:
        >>> GPT(GPTConfig())(spx.zeros(2, 8, dtype=spx.long)).shape
        spx.Size([2, 8, 256])
    """

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = Embed(cfg)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.head = Head(cfg)

    def forward(self, idx: spx.Tensor) -> spx.Tensor:
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def lm_loss(logits: spx.Tensor, targets: spx.Tensor) -> spx.Tensor:
    """Mean next-token cross entropy: logits (B, T, V), targets (B, T)."""
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def make_data(n_seq: int, cfg: GPTConfig, seed: int = 0) -> tuple[spx.Tensor, spx.Tensor]:
    """A learnable synthetic corpus: noisy repeating ramps ``x[t+1] = x[t] + stride (mod V)``."""
    rng = np.random.default_rng(seed)
    T = cfg.block_size + 1
    stride = rng.integers(1, 4, (n_seq, 1))
    offset = rng.integers(0, cfg.vocab_size, (n_seq, 1))
    seq = (offset + stride * np.arange(T)) % cfg.vocab_size
    noise = rng.random(seq.shape) < 0.05
    seq = np.where(noise, (seq + 7) % cfg.vocab_size, seq).astype(np.int32)
    return spx.from_numpy(seq[:, :-1]), spx.from_numpy(seq[:, 1:])
