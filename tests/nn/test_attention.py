"""MultiheadAttention against torch.nn.MultiheadAttention (dropout=0): outputs, weights, grads."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.nn.modules.attention import NonDynamicallyQuantizableLinear
from tests.nn._parity import host

torch = pytest.importorskip("torch")

# Scores, softmax and two projections each sum over E in a different order than torch's
# kernels; the differences stay within a few float32 ulps of the values (~1e-6 absolute).
RTOL, ATOL = 1e-5, 2e-6
E, H, N, L, S = 8, 2, 3, 4, 5


def _pair(**kwargs):
    torch.manual_seed(0)
    t = torch.nn.MultiheadAttention(E, H, **kwargs)
    s = nn.MultiheadAttention(E, H, **kwargs)
    sd = t.state_dict()
    # add_bias_kv/bias are random or zero in torch; randomize everything so every term counts.
    gen = torch.Generator().manual_seed(1)
    sd = {k: torch.randn(v.shape, generator=gen) * 0.3 for k, v in sd.items()}
    t.load_state_dict(sd)
    missing, unexpected = s.load_state_dict({k: v.numpy() for k, v in sd.items()})
    assert not missing and not unexpected
    assert list(s.state_dict()) == list(t.state_dict())
    for k, v in t.state_dict().items():
        assert s.state_dict()[k].shape == tuple(v.shape), k
    return t, s


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _check(t, s, q, k, v, self_attention=False, **fwd):
    """Compare outputs, weights and grads w.r.t. q/k/v and every parameter with torch."""
    qt = torch.tensor(q, requires_grad=True)
    kt, vt = (qt, qt) if self_attention else (torch.tensor(a, requires_grad=True) for a in (k, v))
    tfwd = {
        n: (torch.from_numpy(np.asarray(m)) if hasattr(m, "shape") else m) for n, m in fwd.items()
    }
    out_t, w_t = t(qt, kt, vt, **tfwd)
    cot = _rand(tuple(out_t.shape), 10)
    loss_t = (out_t * torch.from_numpy(cot)).sum()
    cot_w = None
    if w_t is not None:
        cot_w = _rand(tuple(w_t.shape), 11)
        loss_t = loss_t + (w_t * torch.from_numpy(cot_w)).sum()
    loss_t.backward()

    qj = jnp.asarray(q)
    kj, vj = (qj, qj) if self_attention else (jnp.asarray(k), jnp.asarray(v))

    def loss(m, q, k, v):
        if self_attention:
            k = v = q
        o, w = m(q, k, v, **fwd)
        total = (jnp.asarray(o) * cot).sum()
        return total if w is None else total + (jnp.asarray(w) * cot_w).sum()

    # One jitted program per case: op-by-op eager dispatch compiles every primitive separately,
    # which costs several times more than the whole test (eager use is covered by test_jit).
    @jax.jit
    def run(m, q, k, v):
        kk, vv = (q, q) if self_attention else (k, v)
        return m(q, kk, vv, **fwd), jax.grad(loss, argnums=(0, 1, 2, 3))(m, q, k, v)

    (out_s, w_s), (g_mod, g_q, g_k, g_v) = run(s, qj, kj, vj)
    np.testing.assert_allclose(np.asarray(out_s), out_t.detach().numpy(), rtol=RTOL, atol=ATOL)
    if w_t is None:
        assert w_s is None
    else:
        np.testing.assert_allclose(np.asarray(w_s), w_t.detach().numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(np.asarray(g_q), qt.grad.numpy(), rtol=RTOL, atol=5 * ATOL)
    if not self_attention:
        np.testing.assert_allclose(np.asarray(g_k), kt.grad.numpy(), rtol=RTOL, atol=5 * ATOL)
        np.testing.assert_allclose(np.asarray(g_v), vt.grad.numpy(), rtol=RTOL, atol=5 * ATOL)
    grads = dict(g_mod.named_parameters())
    for name, p in t.named_parameters():
        np.testing.assert_allclose(
            host(grads[name]), p.grad.numpy(), rtol=RTOL, atol=5 * ATOL, err_msg=name
        )

    # torch flow: Tensors that require grad, loss.backward() into .grad of inputs and weights.
    s.zero_grad()
    qs = spx.tensor(q, requires_grad=True)
    ks, vs = (qs, qs) if self_attention else (spx.tensor(a, requires_grad=True) for a in (k, v))
    out_s, w_s = s(qs, ks, vs, **fwd)
    loss_s = (out_s * spx.tensor(cot)).sum()
    if w_s is not None:
        loss_s = loss_s + (w_s * spx.tensor(cot_w)).sum()
    loss_s.backward()
    np.testing.assert_allclose(host(out_s), out_t.detach().numpy(), rtol=RTOL, atol=ATOL)
    if w_t is not None:
        np.testing.assert_allclose(host(w_s), w_t.detach().numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(qs.grad.numpy(), qt.grad.numpy(), rtol=RTOL, atol=5 * ATOL)
    if not self_attention:
        np.testing.assert_allclose(ks.grad.numpy(), kt.grad.numpy(), rtol=RTOL, atol=5 * ATOL)
        np.testing.assert_allclose(vs.grad.numpy(), vt.grad.numpy(), rtol=RTOL, atol=5 * ATOL)
    s_params = dict(s.named_parameters())
    for name, p in t.named_parameters():
        np.testing.assert_allclose(
            s_params[name].grad.numpy(), p.grad.numpy(), rtol=RTOL, atol=5 * ATOL, err_msg=name
        )


def _qkv(batch_first, kdim=E, vdim=E, unbatched=False):
    def shape(seq, d):
        if unbatched:
            return (seq, d)
        return (N, seq, d) if batch_first else (seq, N, d)

    return _rand(shape(L, E), 0), _rand(shape(S, kdim), 1), _rand(shape(S, vdim), 2)


# Each case compiles one XLA program (~1 s of CPU), so the grid is sampled rather than full:
# batch_first, need_weights and average_attn_weights each take both values somewhere.
@pytest.mark.parametrize(
    "batch_first,need_weights,average", [(False, True, True), (True, True, False)]
)
def test_self_attention(batch_first, need_weights, average):
    t, s = _pair(batch_first=batch_first)
    q, _, _ = _qkv(batch_first)
    _check(t, s, q, None, None, True, need_weights=need_weights, average_attn_weights=average)


def test_self_attention_is_causal_hint_without_weights():
    t, s = _pair(batch_first=True)
    causal = np.triu(np.ones((L, L), bool), 1)
    q, _, _ = _qkv(True)
    _check(t, s, q, None, None, True, attn_mask=causal, is_causal=True, need_weights=False)
    with pytest.raises(RuntimeError, match="attn_mask"):  # torch also needs the mask itself
        s(jnp.asarray(q), jnp.asarray(q), jnp.asarray(q), is_causal=True)


def test_cross_attention():
    t, s = _pair()
    _check(t, s, *_qkv(False))


def test_cross_attention_with_kdim_vdim_uses_separate_weights():
    t, s = _pair(batch_first=True, kdim=6, vdim=3)
    assert s.in_proj_weight is None and s.q_proj_weight.shape == (E, E)
    assert s.k_proj_weight.shape == (E, 6) and s.v_proj_weight.shape == (E, 3)
    _check(t, s, *_qkv(True, kdim=6, vdim=3), average_attn_weights=False)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(bias=False, add_zero_attn=True),
        dict(add_bias_kv=True, kdim=5),
    ],
    ids=str,
)
def test_options(kwargs):
    t, s = _pair(**kwargs)
    q, k, v = _qkv(False, kdim=kwargs.get("kdim", E))
    kpm = np.zeros((N, S), bool)
    kpm[0, -2:] = True
    _check(t, s, q, k, v, key_padding_mask=kpm, attn_mask=np.triu(np.ones((L, S), bool), 2))


def test_bool_masks():
    t, s = _pair(batch_first=True)
    kpm = np.zeros((N, S), bool)
    kpm[0, -1] = kpm[2, 1:3] = True  # no row fully masked (NaN there: tested below)
    causal = np.triu(np.ones((L, S), bool), 1)
    _check(t, s, *_qkv(True), key_padding_mask=kpm, attn_mask=causal)


def test_fully_masked_queries_as_torch_nan_with_weights_zero_without():
    # torch's MultiheadAttention computes softmax itself when it returns weights (a query with
    # every key masked gets NaN) and uses fused attention (zeros) when it does not.
    t, s = _pair(batch_first=True)
    q, k, v = _qkv(True)
    kpm = np.zeros((N, S), bool)
    kpm[1] = True  # batch entry 1: every key padded
    for need in (True, False):
        out_t, w_t = t(*(torch.tensor(a) for a in (q, k, v)), key_padding_mask=torch.tensor(kpm),
                       need_weights=need)  # fmt: skip
        out_s, w_s = s(*(jnp.asarray(a) for a in (q, k, v)), key_padding_mask=jnp.asarray(kpm),
                       need_weights=need)  # fmt: skip
        np.testing.assert_allclose(host(out_s), out_t.detach().numpy(), rtol=RTOL, atol=ATOL)
        assert np.isnan(host(out_s)[1]).all() == need
        if need:
            np.testing.assert_allclose(host(w_s), w_t.detach().numpy(), rtol=RTOL, atol=ATOL)


def test_float_masks_and_3d_mask():
    t, s = _pair()
    rng = np.random.default_rng(3)
    attn = rng.standard_normal((N * H, L, S)).astype(np.float32)
    kpm = np.where(rng.random((N, S)) < 0.3, -1e4, 0.0).astype(np.float32)
    _check(t, s, *_qkv(False), key_padding_mask=kpm, attn_mask=attn)


def test_unbatched():
    t, s = _pair(batch_first=True)  # batch_first is ignored for unbatched input, as in torch
    q, k, v = _qkv(True, unbatched=True)
    kpm = np.zeros((S,), bool)
    kpm[-1] = True
    _check(t, s, q, k, v, key_padding_mask=kpm)


def test_state_dict_layout_and_init():
    # Sizes shared with _pair: new shapes would cost fresh XLA compiles of the initializers.
    s, t = nn.MultiheadAttention(E, H), torch.nn.MultiheadAttention(E, H)
    assert (
        list(s.state_dict())
        == list(t.state_dict())
        == [
            "in_proj_weight",
            "in_proj_bias",
            "out_proj.weight",
            "out_proj.bias",
        ]
    )
    assert repr(s) == repr(t)
    assert isinstance(s.out_proj, NonDynamicallyQuantizableLinear)
    bound = math.sqrt(6 / (E + 3 * E))  # xavier_uniform_ on the packed (3E, E) weight
    w = np.asarray(s.in_proj_weight.data)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert not np.asarray(s.in_proj_bias.data).any() and not np.asarray(s.out_proj.bias.data).any()
    assert np.abs(np.asarray(s.out_proj.weight.data)).max() <= 1 / math.sqrt(E)  # Linear init
    kv = nn.MultiheadAttention(E, H, add_bias_kv=True, kdim=5, bias=False)
    tkv = torch.nn.MultiheadAttention(E, H, add_bias_kv=True, kdim=5, bias=False)
    assert list(kv.state_dict()) == list(tkv.state_dict())
    assert kv.bias_k.shape == (1, 1, E) and np.asarray(kv.bias_k.data).std() > 0


def test_dropout_only_in_training():
    _, s = _pair()
    s2 = nn.MultiheadAttention(E, H, dropout=0.5)
    s2.load_state_dict(s.state_dict())
    q, k, v = (jnp.asarray(a) for a in _qkv(False))
    s2.eval()
    ref, evaluated = jax.jit(lambda a, b: (a(q, k, v)[0], b(q, k, v)[0]))(s, s2)
    np.testing.assert_allclose(np.asarray(evaluated), np.asarray(ref), rtol=1e-6)
    s2.train()
    out, _ = s2(q, k, v)  # eager: dropout draws its key from spx's generator
    out = host(out)
    assert out.shape == (L, N, E) and np.isfinite(out).all()
    assert not np.allclose(out, np.asarray(ref))


def test_jit():
    _, s = _pair(batch_first=True)
    q, k, v = (jnp.asarray(a) for a in _qkv(True))
    out, w = jax.jit(lambda m, q, k, v: m(q, k, v))(s, q, k, v)
    with spx.no_grad():
        ref, ref_w = s(q, k, v)
    np.testing.assert_allclose(np.asarray(out), ref.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(w), ref_w.numpy(), rtol=1e-5, atol=1e-6)


def test_validation():
    with pytest.raises(ValueError, match=r"embed_dim \(10\) must be divisible by num_heads \(3\)"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="num_heads must be a positive int, got 0"):
        nn.MultiheadAttention(8, 0)
    with pytest.raises(ValueError, match="dropout"):
        nn.MultiheadAttention(8, 2, dropout=1.5)
    with pytest.raises(ValueError, match="kdim"):
        nn.MultiheadAttention(8, 2, kdim=0)
    s = nn.MultiheadAttention(8, 2, kdim=4)
    x = jnp.ones((L, N, 8))
    with pytest.raises(RuntimeError, match=r"key has 8 features.*kdim=4"):
        s(x, x, x)
    with pytest.raises(RuntimeError, match="same sequence length"):
        s(x, jnp.ones((S, N, 4)), jnp.ones((S + 1, N, 8)))
    with pytest.raises(RuntimeError, match="3-D"):
        s(x, jnp.ones((S, 4)), jnp.ones((S, 8)))


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_backward_through_the_weights_alone_leaves_out_proj_grad_none(compiled):
    # torch's graph connects out_proj to the output only: a loss on the attention weights
    # leaves its .grad None (spx gave zeros, which AdamW's weight decay then moved).
    t, s = _pair()
    q = _rand((L, N, E), 0)
    t(torch.from_numpy(q), torch.from_numpy(q), torch.from_numpy(q))[1].pow(2).sum().backward()

    def loss(m, x):
        return m(x, x, x)[1].pow(2).sum()

    run = spx.compile(lambda m, x: loss(m, x).backward()) if compiled else None
    if compiled:
        run(s, spx.from_numpy(q))
    else:
        loss(s, spx.from_numpy(q)).backward()
    for (name, tp), sp in zip(t.named_parameters(), s.parameters(), strict=True):
        if tp.grad is None:
            assert sp.grad is None, name
        else:
            np.testing.assert_allclose(host(sp.grad), tp.grad.numpy(), rtol=1e-4, atol=1e-6)
    assert t.out_proj.weight.grad is None  # the case this test is about
