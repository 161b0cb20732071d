"""End to end: a residual MLP language model trained 5 steps in spx equals torch, step by step.

AdamW + CosineAnnealingLR + clip_grad_norm_, with gradients from ``loss.backward()`` (torch's
flow, the script renamed) and from ``spx.backward(fn, model)``, each eager and compiled
(spx.compile), against the same loop in torch from the same initial weights and batches.
"""

import numpy as np
import pytest

import spx
from spx import nn
from spx.nn import functional as F
from tests._torch_utils import assert_params_match, copy_torch_weights

torch = pytest.importorskip("torch")

VOCAB, D, T, B = 32, 24, 8, 4


class SpxResMLPLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.blocks = nn.ModuleList(
            [
                nn.Sequential(nn.LayerNorm(D), nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))
                for _ in range(2)
            ]
        )
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, idx):
        x = self.embed(idx)
        for block in self.blocks:
            x = x + block(x)
        return self.head(self.norm(x))


class TorchResMLPLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        tnn = torch.nn
        self.embed = tnn.Embedding(VOCAB, D)
        self.blocks = tnn.ModuleList(
            [
                tnn.Sequential(
                    tnn.LayerNorm(D), tnn.Linear(D, 2 * D), tnn.GELU(), tnn.Linear(2 * D, D)
                )
                for _ in range(2)
            ]
        )
        self.norm = tnn.LayerNorm(D)
        self.head = tnn.Linear(D, VOCAB)

    def forward(self, idx):
        x = self.embed(idx)
        for block in self.blocks:
            x = x + block(x)
        return self.head(self.norm(x))


def _batches():
    rng = np.random.default_rng(0)
    seqs = rng.integers(0, VOCAB, (5, B, T + 1))
    return [(s[:, :-1].astype(np.int32), s[:, 1:].astype(np.int32)) for s in seqs]


def _torch_run():
    torch.manual_seed(0)
    model = TorchResMLPLM()
    init = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5)
    losses = []
    for x, y in _batches():
        opt.zero_grad()
        logits = model(torch.from_numpy(x).long())
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, VOCAB), torch.from_numpy(y).long().reshape(-1)
        )
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        sched.step()
        losses.append(loss.item())
    return model, init, losses


def _loss(model, x, y):
    return F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))


def _step_spx_backward(model, opt, x, y):
    opt.zero_grad()
    loss = spx.backward(lambda m: _loss(m, x, y), model)
    nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt.step()
    return loss


def _step_loss_backward(model, opt, x, y):
    # torch's loop with the import renamed.
    opt.zero_grad()
    loss = _loss(model, x, y)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt.step()
    return loss


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize(
    "train_step",
    [
        pytest.param(_step_loss_backward, id="loss.backward"),
        pytest.param(_step_spx_backward, id="spx.backward"),
    ],
)
def test_five_steps_match_torch(train_step, compiled):
    tmodel, init, tlosses = _torch_run()
    model = SpxResMLPLM()
    model.load_state_dict(init)
    opt = spx.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    sched = spx.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5)
    step = spx.compile(train_step) if compiled else train_step
    losses = []
    for (x, y), tloss in zip(_batches(), tlosses, strict=True):
        losses.append(float(step(model, opt, spx.from_numpy(x), spx.from_numpy(y))))
        sched.step()
        np.testing.assert_allclose(losses[-1], tloss, rtol=1e-5)  # per step, as it trains
    np.testing.assert_allclose(losses, tlosses, rtol=1e-5)
    assert_params_match(tmodel, model, rtol=1e-5, atol=1e-5)
    assert sched.get_last_lr() == pytest.approx([g["lr"] for g in opt.param_groups])


def test_state_dict_keys_and_shapes_equal_torch():
    t = TorchResMLPLM()
    s = SpxResMLPLM()
    assert list(s.state_dict()) == list(t.state_dict())
    for k, v in t.state_dict().items():
        assert tuple(s.state_dict()[k].shape) == tuple(v.shape), k
    copy_torch_weights(t, s)
