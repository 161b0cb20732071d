"""Dropout: keep-rate statistics, 1/(1-p) scaling, key determinism, eval identity, p=0/1 edges,
channel-wise masks, validation; and alpha dropout's moment preservation."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
import spx.nn.functional as F

from ._reference import assert_close, torch

TF = torch.nn.functional


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_statistics_and_scale(p):
    x = jnp.ones((200, 500))
    y = np.asarray(F.dropout(x, p, key=jax.random.key(0)))
    kept = y != 0
    # Kept values are exactly 1/(1-p); the kept fraction is 1-p within 5 standard errors.
    assert_close(y[kept], np.full(kept.sum(), 1 / (1 - p), np.float32))
    se = np.sqrt(p * (1 - p) / y.size)
    assert abs(kept.mean() - (1 - p)) < 5 * se
    assert abs(y.mean() - 1.0) < 5 * se / (1 - p)


def test_same_key_same_mask_and_fresh_keys_differ():
    x = jnp.ones((64, 64))
    a = F.dropout(x, 0.5, key=jax.random.key(7))
    b = F.dropout(x, 0.5, key=jax.random.key(7))
    assert_close(a, b)
    spx.manual_seed(3)
    c, d = F.dropout(x, 0.5), F.dropout(x, 0.5)
    assert not np.array_equal(np.asarray(c), np.asarray(d))
    spx.manual_seed(3)
    assert_close(F.dropout(x, 0.5), c)  # reproducible from the seed


def test_default_is_training_like_torch_and_eval_is_identity():
    x = spx.ones(32, 32)
    assert np.any(F.dropout(x, key=jax.random.key(1)).numpy() == 0)  # training=True default
    # As torch: the input tensor itself, nothing recorded.
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0, key=jax.random.key(1)) is x
    t = torch.ones(3)
    assert TF.dropout(t, 0.5, training=False) is t
    # An array in: a Tensor with the same values out.
    y = F.dropout(jnp.ones(3), 0.5, training=False)
    assert isinstance(y, spx.Tensor)
    assert_close(y, np.ones(3))


def test_p_one_gives_zeros_and_zero_gradient():
    x = jnp.arange(6.0)
    assert_close(F.dropout(x, 1.0), np.zeros(6))
    assert_close(jax.grad(lambda x: jnp.asarray(F.dropout(x, 1.0)).sum())(x), np.zeros(6))
    xt = spx.arange(6.0).requires_grad_()
    F.dropout(xt, 1.0).sum().backward()
    assert_close(xt.grad, np.zeros(6))


def test_gradient_is_mask_times_scale():
    x = jnp.arange(1.0, 101.0)
    key = jax.random.key(5)
    y = F.dropout(x, 0.3, key=key)
    g = jax.grad(lambda x: jnp.asarray(F.dropout(x, 0.3, key=key)).sum())(x)
    assert_close(g, np.where(np.asarray(y) != 0, 1 / 0.7, 0.0))
    # torch flow: the same mask (same key) scales the gradient reaching .grad.
    xt = spx.arange(1.0, 101.0).requires_grad_()
    F.dropout(xt, 0.3, key=key).sum().backward()
    assert_close(xt.grad, np.where(np.asarray(y) != 0, 1 / 0.7, 0.0))


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_bad_p_raises_value_error_like_torch(p):
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(jnp.ones(3), p)
    with pytest.raises(ValueError):
        TF.dropout(torch.ones(3), p)


def test_bad_key_type():
    with pytest.raises(TypeError, match="PRNG key"):
        F.dropout(jnp.ones(3), 0.5, key=123)


def test_dropout_inside_jit_with_explicit_key():
    f = jax.jit(lambda x, k: F.dropout(x, 0.5, key=k))
    x = jnp.ones((16, 16))
    assert_close(f(x, jax.random.key(2)), F.dropout(x, 0.5, key=jax.random.key(2)))


@pytest.mark.parametrize(
    ("fn", "shape"),
    [(F.dropout1d, (4, 8, 5)), (F.dropout1d, (8, 5)), (F.dropout2d, (4, 8, 3, 3)),
     (F.dropout3d, (2, 8, 2, 2, 2)), (F.dropout3d, (8, 2, 2, 2))],
)  # fmt: skip
def test_channel_dropout_zeroes_whole_channels(fn, shape):
    y = np.asarray(jax.jit(lambda x, k: fn(x, 0.5, key=k))(jnp.ones(shape), jax.random.key(0)))
    batched = len(shape) == {F.dropout1d: 3, F.dropout2d: 4, F.dropout3d: 5}[fn]
    per_channel = y.reshape(*shape[: 2 if batched else 1], -1)
    # Every channel is either all zero or all 2.0, and both occur.
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1))
    assert (per_channel == 0).any() and (per_channel == 2.0).any()


def test_dropout2d_on_3d_input_warns_like_torch():
    with pytest.warns(UserWarning, match=r"\(N, C, L\)"):
        F.dropout2d(jnp.ones((2, 3, 4)), 0.5, key=jax.random.key(0))


def test_alpha_dropout_keeps_mean_and_variance():
    x = jax.random.normal(jax.random.key(0), (400_000,))
    y = F.alpha_dropout(x, 0.2, training=True, key=jax.random.key(1))
    assert abs(float(jnp.mean(y))) < 0.01
    assert abs(float(jnp.std(y)) - 1.0) < 0.01
    xt = spx.tensor(np.asarray(x))
    assert F.alpha_dropout(xt, 0.2) is xt  # torch's default is training=False
