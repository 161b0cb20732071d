"""Activations and softmax against torch: values and input (and PReLU weight) gradients."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx.nn.functional as F

from ._reference import assert_close, check_against_torch, randn, torch

TF = torch.nn.functional

# (name, spx call, torch call); each gets the same input.
ELEMENTWISE = [
    ("relu", F.relu, TF.relu),
    ("relu6", F.relu6, TF.relu6),
    ("leaky_relu", F.leaky_relu, TF.leaky_relu),
    ("leaky_relu_0.2", lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2)),
    ("elu", F.elu, TF.elu),
    ("elu_0.5", lambda x: F.elu(x, 0.5), lambda x: TF.elu(x, 0.5)),
    ("selu", F.selu, TF.selu),
    ("celu", lambda x: F.celu(x, 2.0), lambda x: TF.celu(x, 2.0)),
    ("gelu", F.gelu, TF.gelu),
    ("gelu_tanh", lambda x: F.gelu(x, "tanh"), lambda x: TF.gelu(x, approximate="tanh")),
    ("silu", F.silu, TF.silu),
    ("mish", F.mish, TF.mish),
    ("sigmoid", F.sigmoid, torch.sigmoid),
    ("tanh", F.tanh, torch.tanh),
    ("hardtanh", F.hardtanh, TF.hardtanh),
    ("hardtanh_custom", lambda x: F.hardtanh(x, -0.5, 2.0), lambda x: TF.hardtanh(x, -0.5, 2.0)),
    ("hardsigmoid", F.hardsigmoid, TF.hardsigmoid),
    ("hardswish", F.hardswish, TF.hardswish),
    ("softplus", F.softplus, TF.softplus),
    ("softplus_beta", lambda x: F.softplus(x, 2.0, 3.0), lambda x: TF.softplus(x, 2.0, 3.0)),
    ("softsign", F.softsign, TF.softsign),
    ("logsigmoid", F.logsigmoid, TF.logsigmoid),
    ("tanhshrink", F.tanhshrink, TF.tanhshrink),
    ("softshrink", lambda x: F.softshrink(x, 0.7), lambda x: TF.softshrink(x, 0.7)),
    ("hardshrink", lambda x: F.hardshrink(x, 0.7), lambda x: TF.hardshrink(x, 0.7)),
    ("threshold", lambda x: F.threshold(x, 0.3, -2.0), lambda x: TF.threshold(x, 0.3, -2.0)),
]

# Exactly at the kinks, where the gradient convention matters.
KINKS = np.array([-6.0, -3.0, -1.0, -0.5, 0.0, 0.3, 0.5, 1.0, 2.0, 3.0, 6.0, 7.0], np.float32)


@pytest.mark.parametrize(
    ("name", "spx_fn", "torch_fn"), ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE]
)
def test_elementwise_matches_torch(name, spx_fn, torch_fn):
    rng = np.random.default_rng(0)
    # Random values and the kinks in one input: one compiled check.
    x = np.concatenate([randn(rng, 60, scale=3.0), KINKS])
    check_against_torch(spx_fn, torch_fn, [x])


@pytest.mark.parametrize(
    ("name", "spx_fn", "torch_fn"), ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE]
)
def test_nan_inputs_give_torchs_values(name, spx_fn, torch_fn):
    # A NaN must stay visible: a clip or a threshold that turned it into a finite value would
    # hide a diverging run.
    x = np.array([np.nan, -7.0, 0.3, 7.0], np.float32)
    expected = torch_fn(torch.tensor(x)).numpy()
    np.testing.assert_allclose(np.asarray(spx_fn(jnp.asarray(x))), expected, rtol=1e-5, atol=1e-6)


def test_inplace_flag_accepted_and_returns_new_array():
    x = jnp.array([-1.0, 2.0])
    y = F.relu(x, inplace=True)
    assert_close(y, [0.0, 2.0])
    assert_close(x, [-1.0, 2.0])


def test_gelu_rejects_unknown_approximate():
    with pytest.raises(ValueError, match="approximate"):
        F.gelu(jnp.ones(2), approximate="fast")


def test_hardtanh_rejects_inverted_bounds():
    with pytest.raises(ValueError, match="min_val"):
        F.hardtanh(jnp.ones(2), 1.0, -1.0)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (7,)])
def test_prelu_input_and_weight_gradients(shape):
    rng = np.random.default_rng(1)
    x = randn(rng, *shape)
    channels = shape[1] if len(shape) >= 2 else 1
    for w in (np.array([0.25], np.float32), randn(rng, channels)):
        check_against_torch(F.prelu, TF.prelu, [x, w])


def test_prelu_rejects_wrong_slope_count():
    with pytest.raises(RuntimeError, match="channels"):
        F.prelu(jnp.ones((2, 3, 4)), jnp.ones(2))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_glu(dim):
    rng = np.random.default_rng(2)
    x = randn(rng, 4, 6, 2)
    check_against_torch(lambda t: F.glu(t, dim), lambda t: TF.glu(t, dim), [x])


def test_glu_odd_dim_raises():
    with pytest.raises(RuntimeError, match="even"):
        F.glu(jnp.ones((3, 5)))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "softmin"])
def test_softmax_family(op, dim):
    rng = np.random.default_rng(3)
    x = randn(rng, 3, 4, 5, scale=4.0)
    check_against_torch(
        lambda t: getattr(F, op)(t, dim=dim), lambda t: getattr(TF, op)(t, dim=dim), [x]
    )


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_softmax_implicit_dim_matches_torch_with_warning(ndim):
    rng = np.random.default_rng(4)
    x = randn(rng, *(3,) * ndim)
    with pytest.warns(UserWarning, match="Implicit dimension") as caught:
        y = F.softmax(jnp.asarray(x))
    assert caught[0].filename == __file__  # the user's line, not spx's internals (as torch)
    with pytest.warns(UserWarning):
        ref = TF.softmax(torch.tensor(x))
    assert_close(y, ref)


def test_softmax_dtype_argument_casts_first():
    x = jnp.arange(4, dtype=jnp.float32).astype(jnp.bfloat16)
    y = F.log_softmax(x, dim=0, dtype=jnp.float32)
    assert y.dtype == jnp.float32
    ref = TF.log_softmax(torch.arange(4.0).bfloat16(), dim=0, dtype=torch.float32)
    assert_close(y, ref)


def test_gumbel_softmax_soft_and_hard():
    logits = jnp.tile(jnp.log(jnp.array([0.7, 0.2, 0.1])), (4000, 1))
    w = jnp.arange(3.0)

    @jax.jit
    def run(logits, key):
        def weighted(z, hard):
            return jnp.sum(F.gumbel_softmax(z, tau=0.5, hard=hard, key=key) * w)

        soft = F.gumbel_softmax(logits, tau=0.5, key=key)
        hard = F.gumbel_softmax(logits, tau=0.5, hard=True, key=key)
        return soft, hard, jax.grad(weighted)(logits, True), jax.grad(weighted)(logits, False)

    soft, hard, g_hard, g_soft = run(logits, jax.random.key(0))
    assert_close(jnp.sum(soft, -1), np.ones(4000))
    assert set(np.unique(np.asarray(hard)).tolist()) <= {0.0, 1.0}
    assert_close(jnp.sum(hard, -1), np.ones(4000))
    # Hard samples are the argmax of the soft ones and follow softmax(logits): class
    # frequencies within a few standard errors (~0.007).
    assert_close(jnp.argmax(hard, -1), jnp.argmax(soft, -1))
    assert_close(jnp.mean(hard, 0), [0.7, 0.2, 0.1], atol=0.03)
    # Straight-through: the hard sample's gradient is the soft sample's.
    assert_close(g_hard, g_soft)


IN_PLACE = [
    ("relu_", ()),
    ("leaky_relu_", (0.2,)),
    ("elu_", (0.5,)),
    ("celu_", (2.0,)),
    ("selu_", ()),
    ("hardtanh_", (-0.5, 0.5)),
    ("threshold_", (0.1, -3.0)),
]


@pytest.mark.parametrize("name,args", IN_PLACE, ids=[c[0] for c in IN_PLACE])
def test_in_place_activations_write_their_input_and_keep_the_gradient(name, args):
    import spx

    x = randn(np.random.default_rng(0), 3, 4)
    t_w = torch.tensor(x, requires_grad=True)
    t_x = t_w * 1.5  # a non-leaf, as torch requires for an in-place op in a graph
    t_out = getattr(TF, name)(t_x, *args)
    s_w = spx.tensor(x, requires_grad=True)
    s_x = s_w * 1.5
    s_out = getattr(F, name)(s_x, *args)
    assert s_out is s_x and t_out is t_x
    assert_close(s_x.detach().numpy(), t_x.detach().numpy())
    (t_x * t_x).sum().backward()
    (s_x * s_x).sum().backward()
    assert_close(s_w.grad.numpy(), t_w.grad.numpy())
    with pytest.raises(TypeError, match=r"must be a Tensor.*returns the result"):
        getattr(F, name)(jnp.asarray(x), *args)
