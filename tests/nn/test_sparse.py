"""Embedding against torch.nn.Embedding: lookups, weight grads, padding, init, from_pretrained."""

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.nn import functional as F
from tests.nn._parity import check_module, copy_weights

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-5, 1e-6
IDX = np.array([[1, 2, 4, 2], [0, 9, 2, 7]], dtype=np.int32)  # repeats on purpose


def _check_parity(t_layer, s_layer, idx=IDX):
    """Output and weight gradient match torch (both autograd forms)."""
    copy_weights(t_layer, s_layer)
    assert [(k, tuple(v.shape)) for k, v in s_layer.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in t_layer.state_dict().items()
    ]
    check_module(_LongInput(t_layer), s_layer, [idx], rtol=RTOL, atol=ATOL, param_atol=ATOL)


class _LongInput(torch.nn.Module):
    """torch's Embedding wants int64 indices; spx takes the int32 ones as they are."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, idx):
        return self.layer(idx.long())

    def named_parameters(self, *args, **kwargs):
        return self.layer.named_parameters(*args, **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"padding_idx": 2},
        {"padding_idx": -1},
        {"scale_grad_by_freq": True},
        {"scale_grad_by_freq": True, "padding_idx": 0},
        {"sparse": True},
    ],
    ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "default",
)
def test_embedding_matches_torch(kwargs):
    torch.manual_seed(0)
    t_layer, s_layer = torch.nn.Embedding(10, 3, **kwargs), nn.Embedding(10, 3, **kwargs)
    assert repr(s_layer) == repr(t_layer)
    assert s_layer.padding_idx == t_layer.padding_idx
    _check_parity(t_layer, s_layer)
    if s_layer.padding_idx is not None:
        assert not s_layer.weight.grad.numpy()[s_layer.padding_idx].any()


def test_max_norm_output_and_grad_match_torch():
    torch.manual_seed(0)
    kwargs = {"max_norm": 1.0, "norm_type": 2.0}
    t_layer, s_layer = torch.nn.Embedding(10, 3, **kwargs), nn.Embedding(10, 3, **kwargs)
    with torch.no_grad():
        t_layer.weight.mul_(3)  # most rows above max_norm
    _check_parity(t_layer, s_layer)
    assert repr(s_layer) == repr(t_layer)


@pytest.mark.parametrize("form", ["backward", "spx.backward", "compiled"])
def test_max_norm_renormalises_the_table_in_place_as_torch(form):
    # torch rescales the looked-up rows of weight itself, so each step starts from them: the
    # table and the losses of a few SGD steps must follow torch's.
    torch.manual_seed(0)
    kwargs = {"max_norm": 1.5, "norm_type": 2.0}
    t_layer, s_layer = torch.nn.Embedding(10, 3, **kwargs), nn.Embedding(10, 3, **kwargs)
    with torch.no_grad():
        t_layer.weight.mul_(2)
    copy_weights(t_layer, s_layer)
    t_opt = torch.optim.SGD(t_layer.parameters(), lr=0.1)
    s_opt = spx.optim.SGD(s_layer.parameters(), lr=0.1)

    def loss_of(layer, idx):
        return (layer(idx) ** 3).sum()

    def s_step(idx):
        s_opt.zero_grad()
        if form == "spx.backward":
            loss = spx.backward(loss_of, s_layer, idx)
        else:
            loss = loss_of(s_layer, idx)
            loss.backward()
        s_opt.step()
        return loss

    s_run = spx.compile(s_step) if form == "compiled" else s_step
    for step in range(3):
        idx = IDX[:, step : step + 2]
        t_opt.zero_grad()
        t_loss = loss_of(t_layer, torch.tensor(idx, dtype=torch.long))
        t_loss.backward()
        t_opt.step()
        s_loss = s_run(spx.tensor(idx))
        np.testing.assert_allclose(float(s_loss), t_loss.item(), rtol=RTOL)
        np.testing.assert_allclose(
            s_layer.weight.detach().numpy(), t_layer.weight.detach().numpy(), rtol=RTOL, atol=ATOL
        )


def test_functional_max_norm_writes_a_tensor_weight_not_an_array():
    w = np.full((4, 2), 3.0, np.float32)
    table = spx.tensor(w)
    out = F.embedding(spx.tensor([1]), table, max_norm=1.0)
    t_table = torch.tensor(w)
    t_out = torch.nn.functional.embedding(torch.tensor([1]), t_table, max_norm=1.0)
    np.testing.assert_allclose(out.numpy(), t_out.numpy(), rtol=RTOL)
    np.testing.assert_allclose(table.numpy(), t_table.numpy(), rtol=RTOL)  # row 1 rescaled
    raw = jnp.asarray(w)  # immutable: the output is scaled, the array stays as it was
    np.testing.assert_allclose(F.embedding(spx.tensor([1]), raw, max_norm=1.0).numpy(), t_out)
    np.testing.assert_array_equal(np.asarray(raw), w)


def test_default_init_is_standard_normal_with_zero_padding_row():
    spx.manual_seed(0)
    layer = nn.Embedding(2000, 16, padding_idx=3)
    w = layer.weight.detach().numpy()
    assert w.shape == (2000, 16) and w.dtype == np.float32
    assert not w[3].any()
    rest = np.delete(w, 3, axis=0)
    assert abs(rest.mean()) < 0.02 and abs(rest.std() - 1.0) < 0.02
    spx.manual_seed(0)
    again = nn.Embedding(2000, 16, padding_idx=3)
    np.testing.assert_array_equal(again.weight.detach().numpy(), w)
    assert layer.weight.requires_grad


def test_from_pretrained_like_torch():
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    t_layer = torch.nn.Embedding.from_pretrained(torch.tensor(table), padding_idx=1)
    s_layer = nn.Embedding.from_pretrained(jnp.asarray(table), padding_idx=1)
    assert repr(s_layer) == repr(t_layer)
    assert s_layer.weight.requires_grad is t_layer.weight.requires_grad is False
    np.testing.assert_array_equal(np.asarray(s_layer.weight), table)  # padding row not zeroed
    idx = np.array([3, 1, 0], np.int32)
    np.testing.assert_array_equal(
        np.asarray(s_layer(jnp.asarray(idx))), t_layer(torch.tensor(idx, dtype=torch.long)).numpy()
    )
    trainable = nn.Embedding.from_pretrained(table, freeze=False)  # numpy accepted too
    assert trainable.weight.requires_grad and trainable.num_embeddings == 4
    with pytest.raises(ValueError, match="2-dimensional"):
        nn.Embedding.from_pretrained(jnp.ones(3))


def test_weight_argument_and_validation():
    table = jnp.ones((5, 2))
    layer = nn.Embedding(5, 2, _weight=table)
    np.testing.assert_array_equal(layer.weight.detach().numpy(), 1.0)
    with pytest.raises(ValueError, match=r"\(4, 2\)"):
        nn.Embedding(4, 2, _weight=table)
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(5, 2, padding_idx=5)
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(5, 2, padding_idx=-6)
    with pytest.raises(ValueError, match="num_embeddings"):
        nn.Embedding(-1, 2)
    with pytest.raises(TypeError, match="integer"):
        layer(jnp.ones((2,)))


def test_embedding_in_jit_and_a_model():
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)
            self.head = nn.Linear(4, 10, bias=False)

        def forward(self, idx):
            return self.head(self.emb(idx))

    model = LM()
    assert list(model.state_dict()) == ["emb.weight", "head.weight"]
    out = jax.jit(lambda m, i: m(i))(model, jnp.asarray(IDX))
    assert out.shape == (2, 4, 10)
    with spx.no_grad():
        eager = model(jnp.asarray(IDX)).numpy()
    np.testing.assert_allclose(np.asarray(out), eager, rtol=1e-6)
    # torch flow through both layers.
    model(spx.tensor(IDX)).sum().backward()
    assert model.emb.weight.grad.shape == (10, 4) and model.head.weight.grad.shape == (10, 4)
    assert model.emb.weight.grad.numpy()[3].sum() == 0  # index 3 is not looked up


@pytest.mark.parametrize("bad", [7, 5, -1])
def test_out_of_range_index_raises_eagerly_like_torch(bad):
    # Before: a row of NaN came back without a word.
    t_emb = torch.nn.Embedding(5, 2)
    with pytest.raises(IndexError):
        t_emb(torch.tensor([1, bad]))
    emb = nn.Embedding(5, 2)
    with pytest.raises(IndexError, match=rf"index {bad} \(at position \(1,\).*num_embeddings=5"):
        emb(jnp.array([1, bad]))
    with pytest.raises(IndexError, match=rf"index {bad} "):
        F.embedding(jnp.array([[0, bad]]), emb.weight)


def test_out_of_range_index_inside_compiled_code_reads_nan_as_documented():
    emb = nn.Embedding(5, 2)
    out = jax.jit(lambda m, i: m(i))(emb, jnp.array([1, 7]))
    assert np.isnan(np.asarray(out[1])).all()
    np.testing.assert_array_equal(np.asarray(out[0]), np.asarray(emb.weight.data[1]))
    documented = sys.modules[F.embedding.__module__].__doc__
    assert "inside compiled code" in documented.lower() and "NaN" in documented
