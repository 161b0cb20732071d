"""scaled_dot_product_attention and multi_head_attention_forward against torch: bool and float
masks, is_causal (also L != S), custom scale, GQA, fully masked rows, dropout determinism, and
MHA's packed/separate projections, masks, bias_k/v, zero-attn, batch_first, unbatched input;
outputs, attention weights and gradients of inputs and projection weights."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
import spx.nn.functional as F

from ._reference import assert_close, cat, check_against_torch, randn, torch

TF = torch.nn.functional
# Softmax-weighted sums over S keys in a different association order than torch's kernels.
ATOL = 1e-5
# Projection-weight gradients of MHA sum N * L * S terms of magnitude ~10 that cancel to O(0.1):
# float32 rounding of such sums is ~1e-5 absolute, whichever order is used.
WEIGHT_GRAD_ATOL = 1e-4


def _qkv(rng, n=2, h=3, L=4, S=5, e=8, ev=6):
    return randn(rng, n, h, L, e), randn(rng, n, h, S, e), randn(rng, n, h, S, ev)


@pytest.mark.parametrize(
    ("L", "S", "kwargs"),
    [(4, 5, {}), (6, 3, {}), (5, 5, dict(is_causal=True)), (4, 5, dict(is_causal=True)),
     (6, 3, dict(is_causal=True, scale=1.5)), (5, 5, dict(scale=0.3))],
    ids=str,
)  # fmt: skip
def test_sdpa(L, S, kwargs):
    rng = np.random.default_rng(0)
    q, k, v = _qkv(rng, L=L, S=S)
    check_against_torch(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kwargs),
        lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, **kwargs),
        [q, k, v],
        atol=ATOL,
    )


@pytest.mark.parametrize(
    ("kind", "mask_shape"),
    [("bool", (4, 5)), ("bool", (2, 1, 4, 5)), ("bool", (1, 5)), ("float", (2, 3, 4, 5)),
     ("float", (4, 5))],
    ids=str,
)  # fmt: skip
def test_sdpa_masks(kind, mask_shape):
    rng = np.random.default_rng(1)
    q, k, v = _qkv(rng)
    if kind == "bool":
        mask = rng.uniform(size=mask_shape) > 0.3
        mask[..., 0] = True  # keep every row attendable (fully masked rows are tested below)
    else:
        mask = randn(rng, *mask_shape)
        mask[..., 1] = -np.inf
    check_against_torch(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, jnp.asarray(mask)),
        lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, torch.tensor(mask)),
        [q, k, v],
        atol=ATOL,
    )


def test_sdpa_float_mask_gradient():
    rng = np.random.default_rng(2)
    q, k, v = _qkv(rng)
    bias = randn(rng, 3, 4, 5)  # e.g. a learned relative-position bias
    check_against_torch(F.scaled_dot_product_attention, TF.scaled_dot_product_attention,
                        [q, k, v, bias], atol=ATOL)  # fmt: skip


def test_sdpa_fully_masked_row_gives_zeros_like_torch():
    rng = np.random.default_rng(3)
    q, k, v = _qkv(rng)
    mask = np.ones((4, 5), bool)
    mask[2] = False
    out = check_against_torch(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, jnp.asarray(mask)),
        lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, torch.tensor(mask)),
        [q, k, v],
        atol=ATOL,
    )
    assert_close(out[:, :, 2], np.zeros((2, 3, 6)))


def test_sdpa_gqa_and_three_dim_inputs():
    rng = np.random.default_rng(4)
    q, k, v = randn(rng, 2, 6, 4, 8), randn(rng, 2, 2, 5, 8), randn(rng, 2, 2, 5, 8)
    check_against_torch(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
        lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
        [q, k, v],
        atol=ATOL,
    )
    q3, k3, v3 = randn(rng, 3, 4, 8), randn(rng, 3, 5, 8), randn(rng, 3, 5, 2)
    check_against_torch(F.scaled_dot_product_attention, TF.scaled_dot_product_attention,
                        [q3, k3, v3], atol=ATOL)  # fmt: skip


def test_sdpa_dropout_is_keyed():
    q, k, v = (jnp.asarray(a) for a in _qkv(np.random.default_rng(5)))

    @jax.jit
    def run(key):
        with_p = [F.scaled_dot_product_attention(q, k, v, dropout_p=p, dropout_key=key)
                  for p in (0.5, 0.0, 1.0)]  # fmt: skip
        return [*with_p, F.scaled_dot_product_attention(q, k, v, dropout_p=0.5, dropout_key=key)]

    a, no_dropout, all_dropped, again = run(jax.random.key(0))
    assert_close(a, again)
    assert not np.allclose(np.asarray(a), np.asarray(no_dropout))
    assert_close(all_dropped, np.zeros(a.shape))


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_sdpa_mask_and_is_causal_both_apply_as_torchs_inference_kernel(kind):
    rng = np.random.default_rng(6)
    q, k, v = _qkv(rng, ev=8)  # the fused kernel needs value's head dim equal to query's
    if kind == "bool":
        mask = rng.uniform(size=(4, 5)) > 0.3
        mask[:, 0] = True  # every row keeps a key under the causal mask too
    else:
        mask = randn(rng, 4, 5)
    # torch combines the two in its fused float32 CPU kernel; its math kernel (float64,
    # inputs that require grad, unequal head dims) refuses them. spx combines them always.
    q, k, v, mask = (a.astype(np.float32) if a.dtype == np.float64 else a for a in (q, k, v, mask))
    got = F.scaled_dot_product_attention(*map(jnp.asarray, (q, k, v)), jnp.asarray(mask),
                                         is_causal=True)  # fmt: skip
    with torch.no_grad():
        want = TF.scaled_dot_product_attention(*map(torch.tensor, (q, k, v)), torch.tensor(mask),
                                               is_causal=True)  # fmt: skip
    assert_close(got, want, atol=ATOL)


def test_sdpa_errors():
    q = jnp.ones((1, 2, 3, 4))
    with pytest.raises(RuntimeError, match="multiple"):
        F.scaled_dot_product_attention(q, jnp.ones((1, 3, 3, 4)), jnp.ones((1, 3, 3, 4)),
                                       enable_gqa=True)  # fmt: skip
    with pytest.raises(TypeError, match="bool"):
        F.scaled_dot_product_attention(q, q, q, jnp.ones((3, 3), jnp.int32))


# -- multi_head_attention_forward ------------------------------------------------------------

E, H = 8, 2


def _mha_weights(rng, bias=True):
    return dict(
        in_w=randn(rng, 3 * E, E, scale=0.5),
        in_b=randn(rng, 3 * E) if bias else None,
        out_w=randn(rng, E, E, scale=0.5),
        out_b=randn(rng, E) if bias else None,
    )


def _mha_call(lib_f, wrap, **options):
    """A function of (x, in_w, in_b, out_w) running self-attention through ``lib_f``."""

    def fn(x, in_w, in_b, out_w, out_b):
        opts = {k: (wrap(v) if isinstance(v, np.ndarray) else v) for k, v in options.items()}
        out, weights = lib_f(x, x, x, E, H, in_w, in_b, None, None, False, 0.0, out_w, out_b,
                             training=False, **opts)  # fmt: skip
        return out, weights

    return fn


def _check_mha(rng, x, options, need_weights=True):
    w = _mha_weights(rng)
    args = [x, w["in_w"], w["in_b"], w["out_w"], w["out_b"]]
    options = dict(options, need_weights=need_weights)
    ours = _mha_call(F.multi_head_attention_forward, jnp.asarray, **options)
    theirs = _mha_call(TF.multi_head_attention_forward, torch.tensor, **options)

    def joined(fn, cat):
        # Output and attention weights checked (values and gradients) in one compiled program.
        def f(*a):
            out, weights = fn(*a)
            assert (weights is None) == (not need_weights)
            return (
                out.reshape(-1) if weights is None else cat([out.reshape(-1), weights.reshape(-1)])
            )

        return f

    check_against_torch(joined(ours, cat), joined(theirs, torch.cat), args, atol=ATOL,
                        grad_atol=WEIGHT_GRAD_ATOL)  # fmt: skip


@pytest.mark.parametrize(
    ("case", "need_weights"),
    [("plain", True), ("plain", False), ("key_padding", True), ("key_padding", False),
     ("bool_mask", False), ("float_3d_mask", True), ("both", True), ("per_head_weights", True)],
    ids=str,
)  # fmt: skip
def test_mha_self_attention(case, need_weights):
    rng = np.random.default_rng(6)
    L, N = 5, 3
    x = randn(rng, L, N, E)
    kpm = np.zeros((N, L), bool)
    kpm[0, -2:] = True
    causal = np.triu(np.ones((L, L), bool), 1)  # True = blocked (nn.MultiheadAttention)
    options = {
        "plain": {},
        "key_padding": dict(key_padding_mask=kpm),
        "bool_mask": dict(attn_mask=causal, is_causal=True),
        "float_3d_mask": dict(attn_mask=randn(rng, N * H, L, L)),
        "both": dict(attn_mask=np.where(causal, -np.inf, 0).astype(np.float32),
                     key_padding_mask=np.where(kpm, -np.inf, 0).astype(np.float32)),
        "per_head_weights": dict(average_attn_weights=False),
    }[case]  # fmt: skip
    _check_mha(rng, x, options, need_weights)


def test_mha_unbatched():
    rng = np.random.default_rng(7)
    _check_mha(rng, randn(rng, 4, E), {})
    _check_mha(rng, randn(rng, 4, E), dict(key_padding_mask=np.array([0, 0, 1, 0], bool)))


def test_mha_module_parity_cross_attention_bias_kv_zero_attn_kdim_batch_first():
    """Against nn.MultiheadAttention itself, with every optional feature switched on."""
    torch.manual_seed(0)
    kdim, vdim = 6, 4
    mod = torch.nn.MultiheadAttention(E, H, bias=True, add_bias_kv=True, add_zero_attn=True,
                                      kdim=kdim, vdim=vdim, batch_first=True)  # fmt: skip
    mod.eval()
    rng = np.random.default_rng(8)
    q, k, v = randn(rng, 2, 3, E), randn(rng, 2, 5, kdim), randn(rng, 2, 5, vdim)
    kpm = np.zeros((2, 5), bool)
    kpm[1, :2] = True
    p = {n: jnp.asarray(t.detach().numpy()) for n, t in mod.named_parameters()}
    tq = torch.tensor(q, requires_grad=True)
    ref_out, ref_w = mod(tq, torch.tensor(k), torch.tensor(v), key_padding_mask=torch.tensor(kpm))

    def ours(q, q_proj):
        return F.multi_head_attention_forward(
            q, jnp.asarray(k), jnp.asarray(v), E, H, None, p["in_proj_bias"], p["bias_k"],
            p["bias_v"], True, 0.0, p["out_proj.weight"], p["out_proj.bias"], training=False,
            key_padding_mask=jnp.asarray(kpm), use_separate_proj_weight=True,
            q_proj_weight=q_proj, k_proj_weight=p["k_proj_weight"],
            v_proj_weight=p["v_proj_weight"], batch_first=True,
        )  # fmt: skip

    g = np.random.default_rng(9).standard_normal(tuple(ref_out.shape)).astype(np.float32)

    def ours_arrays(q, q_proj):
        out, w = ours(q, q_proj)
        return jnp.asarray(out), jnp.asarray(w)

    @jax.jit
    def run(q, wq):
        (out, w), vjp = jax.vjp(ours_arrays, q, wq)
        return out, w, vjp((jnp.asarray(g), jnp.zeros_like(w)))

    out, w, (gq, gw) = run(jnp.asarray(q), p["q_proj_weight"])
    assert_close(out, ref_out, atol=ATOL)
    assert_close(w, ref_w, atol=ATOL)
    (ref_out * torch.tensor(g)).sum().backward()
    assert_close(gq, tq.grad, atol=ATOL)
    assert_close(gw, mod.q_proj_weight.grad, atol=WEIGHT_GRAD_ATOL)
    # torch flow: Tensors that require grad, loss.backward() into .grad.
    sq = spx.tensor(q, requires_grad=True)
    swq = spx.nn.Parameter(p["q_proj_weight"])
    out_s, w_s = ours(sq, swq)
    (out_s * spx.tensor(g)).sum().backward()
    assert_close(out_s, ref_out, atol=ATOL)
    assert_close(w_s, ref_w, atol=ATOL)
    assert_close(sq.grad, tq.grad, atol=ATOL)
    assert_close(swq.grad, mod.q_proj_weight.grad, atol=WEIGHT_GRAD_ATOL)


def test_mha_errors():
    x = jnp.ones((3, 2, E))
    w = _mha_weights(np.random.default_rng(10))
    args = (E, H, w["in_w"], w["in_b"], None, None, False, 0.0, w["out_w"], w["out_b"])
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        F.multi_head_attention_forward(x, x, x, *args, is_causal=True)
    with pytest.raises(RuntimeError, match="2D attn_mask"):
        F.multi_head_attention_forward(x, x, x, *args, attn_mask=jnp.zeros((2, 2)))
    with pytest.raises(RuntimeError, match="embedding dim"):
        F.multi_head_attention_forward(jnp.ones((3, 2, 4)), x, x, *args)
