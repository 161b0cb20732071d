"""Lines as they appear in real torch training scripts, run with spx and with torch."""

import math

import numpy as np
import pytest

import spx
from tests.tensor._parity import assert_same, data

torch = pytest.importorskip("torch")


def _both(fn):
    got, want = fn(spx), fn(torch)
    assert_same(got, want, rtol=1e-5, atol=1e-5)


def test_sampling_step_of_a_gpt():
    def step(m):
        logits = m.tensor(data((2, 3, 5)))
        logits = logits[:, -1, :] / 0.8
        v, _ = m.topk(logits, 2)
        logits[logits < v[:, [-1]]] = -float("Inf")
        probs = m.softmax(logits, dim=-1)
        idx = m.zeros(2, 4, dtype=m.long)
        idx_next = probs.argmax(dim=-1, keepdim=True)
        idx = m.cat((idx, idx_next), dim=1)
        return probs, idx[:, -3:]

    _both(step)


def test_causal_self_attention_shapes():
    def attn(m):
        B, T, C, nh = 2, 4, 6, 2
        x = m.tensor(data((B, T, 3 * C)), requires_grad=True)
        q, k, v = x.split(C, dim=2)
        k = k.view(B, T, nh, C // nh).transpose(1, 2)
        q = q.view(B, T, nh, C // nh).transpose(1, 2)
        v = v.view(B, T, nh, C // nh).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        bias = m.tril(m.ones(T, T)).view(1, 1, T, T)
        att = att.masked_fill(bias[:, :, :T, :T] == 0, float("-inf"))
        att = att.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        pos = m.arange(0, T, dtype=m.long)
        (y.pow(2).sum() + y[:, pos].mean()).backward()
        return y, x.grad

    _both(attn)


def test_metrics_bookkeeping():
    def metrics(m):
        logits = m.tensor(data((8, 3)))
        y = m.tensor([0, 1, 2, 0, 1, 2, 0, 1])
        correct = 0
        running = 0.0
        losses = m.zeros(2)
        for k in range(2):
            pred = logits.argmax(1)
            correct += (pred == y).sum().item()
            loss = logits.logsumexp(1).mean() * (k + 1)
            running += loss.item()
            losses[k] = loss.item()
        return correct, running, losses, (logits.argmax(-1) == y).float().mean().item()

    _both(metrics)


def test_parameter_updates_by_hand():
    def train(m):
        w = m.tensor(data((3, 2)), requires_grad=True)
        ema = w.detach().clone()
        x = m.tensor(data((4, 3), 1))
        for _ in range(3):
            loss = (x @ w).tanh().pow(2).mean()
            loss.backward()
            with m.no_grad():
                w.grad.data.clamp_(-0.1, 0.1)
                norm = m.norm(m.stack([w.grad.norm(2)]), 2)
                w.add_(w.grad, alpha=-0.5)
                ema.mul_(0.9).add_(w, alpha=0.1)
            w.grad = None
        return w, ema, norm, sum([w.detach(), ema]).sum()

    _both(train)


def test_numpy_round_trip():
    def trip(m):
        w = m.tensor(data((2, 2)), requires_grad=True)
        arr = (w * 2).detach().cpu().numpy()
        assert isinstance(arr, np.ndarray)
        back = m.from_numpy(arr * 3)
        return back, m.as_tensor(arr).sum()

    _both(trip)
