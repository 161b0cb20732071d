"""The Transformer family against torch.nn's (dropout 0): state_dict names, outputs, grads."""

import numpy as np
import pytest

import spx
from spx import nn
from tests._torch_utils import assert_grads_match, copy_torch_weights

torch = pytest.importorskip("torch")

E, H, FF, N, S, T = 8, 2, 16, 3, 5, 4
RTOL, ATOL = 1e-4, 1e-5  # a few float32 ulps over several layers of sums in another order


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _pair(make):
    torch.manual_seed(0)
    t = make(torch.nn)
    s = make(nn)
    assert list(s.state_dict()) == list(t.state_dict())
    # Random values everywhere (biases start at 0, norms at 1), so every term counts.
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in t.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
    copy_torch_weights(t, s)
    return t, s


def _check(t, s, inputs, **kwargs):
    t_in = [torch.tensor(a, requires_grad=True) for a in inputs]
    s_in = [spx.tensor(a, requires_grad=True) for a in inputs]
    t_kw = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    s_kw = {k: spx.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    out_t, out_s = t(*t_in, **t_kw), s(*s_in, **s_kw)
    np.testing.assert_allclose(out_s.detach().numpy(), out_t.detach().numpy(), RTOL, ATOL)
    w = _rand(tuple(out_t.shape), 9)
    (out_t * torch.from_numpy(w)).sum().backward()
    (out_s * spx.tensor(w)).sum().backward()
    assert_grads_match(t, s, rtol=RTOL, atol=ATOL)
    for a, b in zip(t_in, s_in, strict=True):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), RTOL, ATOL)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer(norm_first, activation, batch_first):
    t, s = _pair(
        lambda m: m.TransformerEncoderLayer(
            E, H, FF, dropout=0.0, activation=activation, batch_first=batch_first,
            norm_first=norm_first,
        )
    )  # fmt: skip
    shape = (N, S, E) if batch_first else (S, N, E)
    _check(t, s, [_rand(shape, 0)])


def test_encoder_with_masks_and_final_norm():
    t, s = _pair(
        lambda m: m.TransformerEncoder(
            m.TransformerEncoderLayer(E, H, FF, dropout=0.0, batch_first=True), 2, m.LayerNorm(E)
        )
    )
    causal = np.triu(np.full((S, S), -np.inf, np.float32), 1)
    padding = np.zeros((N, S), bool)
    padding[0, -2:] = True
    _check(t, s, [_rand((N, S, E), 1)], mask=causal)
    t.zero_grad()
    s.zero_grad()
    _check(t, s, [_rand((N, S, E), 2)], src_key_padding_mask=padding)


def test_decoder_with_masks():
    t, s = _pair(
        lambda m: m.TransformerDecoder(
            m.TransformerDecoderLayer(E, H, FF, dropout=0.0, norm_first=True), 2, m.LayerNorm(E)
        )
    )
    tgt_mask = np.triu(np.ones((T, T), bool), 1)
    memory_padding = np.zeros((N, S), bool)
    memory_padding[1, -1] = True
    _check(
        t, s, [_rand((T, N, E), 3), _rand((S, N, E), 4)],
        tgt_mask=tgt_mask, memory_key_padding_mask=memory_padding, tgt_is_causal=True,
    )  # fmt: skip


def test_transformer_end_to_end():
    t, s = _pair(lambda m: m.Transformer(E, H, 2, 1, FF, dropout=0.0, batch_first=True))
    tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(T).numpy()
    np.testing.assert_array_equal(nn.Transformer.generate_square_subsequent_mask(T), tgt_mask)
    _check(t, s, [_rand((N, S, E), 5), _rand((N, T, E), 6)], tgt_mask=tgt_mask)


def test_stacks_start_from_copies_and_transformer_reinitializes_matrices():
    layer = nn.TransformerEncoderLayer(E, H, FF)
    enc = nn.TransformerEncoder(layer, 3)
    first = enc.layers[0].linear1.weight.detach().numpy()
    for i in (1, 2):  # equal values, separate parameters (torch deep-copies the layer)
        np.testing.assert_array_equal(enc.layers[i].linear1.weight.detach().numpy(), first)
        assert enc.layers[i].linear1.weight is not enc.layers[0].linear1.weight
    spx.manual_seed(0)
    model = nn.Transformer(E, H, 1, 1, FF)
    bound = np.sqrt(6 / (FF + E))  # xavier_uniform_ on linear1.weight (FF, E)
    w = model.encoder.layers[0].linear1.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert np.all(model.encoder.layers[0].linear1.bias.detach().numpy() != 0)  # biases untouched


def test_errors_name_the_problem():
    with pytest.raises(RuntimeError, match="relu/gelu"):
        nn.TransformerEncoderLayer(E, H, activation="tanh")
    model = nn.Transformer(E, H, 1, 1, FF, batch_first=True)
    with pytest.raises(RuntimeError, match="batch number"):
        model(spx.ones(2, S, E), spx.ones(3, T, E))
    with pytest.raises(RuntimeError, match="d_model"):
        model(spx.ones(2, S, E + 1), spx.ones(2, T, E + 1))
    with pytest.raises(ValueError, match="num_layers"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H), -1)
