"""Dropout modules: train/eval behaviour, mask statistics, RNG source, grads, repr (torch.nn)."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.nn import functional as F
from spx.nn.modules.dropout import AlphaDropout, Dropout1d, Dropout2d, Dropout3d
from tests.nn._parity import host

torch = pytest.importorskip("torch")

X = jnp.asarray(np.random.default_rng(0).uniform(0.5, 1.5, (64, 64)).astype(np.float32))


def test_repr_matches_torch():
    for p, inplace in ((0.5, False), (0.1, True), (0, False), (1.0, False)):
        assert repr(nn.Dropout(p, inplace)) == repr(torch.nn.Dropout(p, inplace))
    for name in ("Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"):
        s_cls = {"Dropout1d": Dropout1d, "Dropout2d": Dropout2d, "Dropout3d": Dropout3d}.get(
            name, AlphaDropout
        )
        assert repr(s_cls(0.25)) == repr(getattr(torch.nn, name)(0.25))


def test_invalid_p_raises_like_torch():
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match="between 0 and 1"):
            torch.nn.Dropout(p)
        with pytest.raises(ValueError, match=rf"must be a number in \[0, 1\], got {p}"):
            nn.Dropout(p)
    with pytest.raises(TypeError, match=r"p .* must be a real number, got str '0\.5'"):
        nn.Dropout("0.5")


def test_eval_is_identity_and_draws_no_key():
    drop = nn.Dropout(0.5).eval()
    spx.manual_seed(0)
    key_before = spx.random.get_key()
    y = drop(X)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(X))
    x = spx.tensor(np.asarray(X))
    assert drop(x) is x  # as torch: the input tensor itself
    assert (jax.random.key_data(spx.random.get_key()) == jax.random.key_data(key_before)).all()
    assert drop.train() is drop and drop.training


def test_train_mask_statistics_and_scaling():
    spx.manual_seed(0)
    drop = nn.Dropout(0.3)
    y = np.asarray(drop(X))
    dropped = y == 0
    assert abs(dropped.mean() - 0.3) < 0.03
    np.testing.assert_allclose(y[~dropped], np.asarray(X)[~dropped] / 0.7, rtol=1e-6)
    # torch's statistics for the same configuration
    yt = torch.nn.Dropout(0.3)(torch.tensor(np.asarray(X))).numpy()
    assert abs(dropped.mean() - (yt == 0).mean()) < 0.04
    assert abs(y.mean() - yt.mean()) < 0.05


def test_mask_draws_from_spx_random_next_key():
    drop = nn.Dropout(0.5)
    spx.manual_seed(7)
    y1, y2 = drop(X), drop(X)
    assert not np.array_equal(np.asarray(y1), np.asarray(y2))  # fresh mask per call
    spx.manual_seed(7)
    expected = F.dropout(X, 0.5, training=True, key=spx.random.next_key())
    np.testing.assert_array_equal(np.asarray(y1), np.asarray(expected))
    spx.manual_seed(7)
    np.testing.assert_array_equal(np.asarray(drop(X)), np.asarray(y1))  # reproducible


def test_p_zero_and_one():
    spx.manual_seed(0)
    np.testing.assert_array_equal(np.asarray(nn.Dropout(0.0)(X)), np.asarray(X))
    assert not np.asarray(nn.Dropout(1.0)(X)).any()


def test_gradient_is_the_scaled_mask():
    drop = nn.Dropout(0.25)
    spx.manual_seed(3)
    y = np.asarray(drop(X))
    spx.manual_seed(3)
    g = jax.grad(lambda x: jnp.asarray(drop(x).sum()))(X)
    np.testing.assert_allclose(np.asarray(g), (y != 0) / 0.75, rtol=1e-6)
    # torch flow: the same seed gives the same mask, and .grad is the scaled mask.
    spx.manual_seed(3)
    x = spx.tensor(np.asarray(X), requires_grad=True)
    drop(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (y != 0) / 0.75, rtol=1e-6)


def test_compiled_step_gets_fresh_masks():
    drop = nn.Dropout(0.5)
    step = spx.compile(lambda m, x: m(x))
    a, b = step(drop, X), step(drop, X)
    assert not np.array_equal(np.asarray(a), np.asarray(b))
    drop.eval()
    np.testing.assert_array_equal(np.asarray(step(drop, X)), np.asarray(X))


def test_channel_dropout_zeroes_whole_channels():
    spx.manual_seed(0)
    x = jnp.ones((8, 16, 2, 2))
    y = np.asarray(Dropout2d(0.5)(x))
    per_channel = y.reshape(8, 16, -1)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    assert 0.3 < (per_channel == 0).all(-1).mean() < 0.7
    assert Dropout1d(0.5)(jnp.ones((4, 3, 7))).shape == (4, 3, 7)
    assert Dropout3d(0.5)(jnp.ones((2, 3, 2, 2, 2))).shape == (2, 3, 2, 2, 2)
    np.testing.assert_array_equal(np.asarray(Dropout2d(0.5).eval()(x)), 1.0)


@pytest.mark.parametrize(
    ("layer", "shape"),
    [
        (Dropout1d(0.5), (4, 6, 5)),
        (Dropout2d(0.5), (4, 6, 3, 3)),
        (Dropout3d(0.5), (2, 6, 2, 2, 2)),
    ],
    ids=["1d", "2d", "3d"],
)
def test_channel_dropout_gradient_is_the_scaled_mask(layer, shape):
    spx.manual_seed(1)
    x = spx.ones(*shape, requires_grad=True)
    y = layer(x)
    (y * 3.0).sum().backward()
    mask = host(y)  # 0 or 1 / (1 - p) = 2 per element, whole channels at once
    assert set(np.unique(mask).tolist()) == {0.0, 2.0}
    np.testing.assert_array_equal(x.grad.numpy(), 3.0 * mask)


def test_alpha_dropout_gradient_is_the_kept_mask_times_a():
    spx.manual_seed(2)
    p = 0.2
    x = spx.tensor(np.random.default_rng(0).standard_normal(1000).astype(np.float32))
    x.requires_grad_()
    y = AlphaDropout(p)(x)
    y.sum().backward()
    alpha = 1.7580993408473766
    a = 1.0 / np.sqrt((alpha**2 * p + 1) * (1 - p))
    kept = np.isclose(host(y), x.detach().numpy() * a + alpha * a * p, rtol=1e-5, atol=1e-6)
    assert 0.7 < kept.mean() < 0.9
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, a, 0.0), rtol=1e-6)


def test_alpha_dropout_keeps_mean_and_variance():
    spx.manual_seed(0)
    x = jax.random.normal(jax.random.key(0), (50_000,))
    y = np.asarray(AlphaDropout(0.2)(x))
    assert abs(y.mean()) < 0.03 and abs(y.std() - 1.0) < 0.03
    np.testing.assert_array_equal(np.asarray(AlphaDropout(0.2).eval()(x)), np.asarray(x))


def test_a_shape_warning_is_given_once_at_the_call_not_again_where_the_value_is_computed():
    # spx computes a recorded call's output shape (running its shape checks and their
    # warnings) once per function and input shape: a shape no other test uses.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = spx.nn.functional.dropout2d(spx.ones(5, 7, 13), 0.5)  # 3-D: torch's warning
        float(y.sum())  # computes the recorded call
    messages = [w for w in caught if "dropout2d" in str(w.message)]
    assert len(messages) == 1
    assert messages[0].filename == __file__
