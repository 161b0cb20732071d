"""RReLU / F.rrelu / F.rrelu_ and FeatureAlphaDropout / F.feature_alpha_dropout vs torch."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.nn import functional as F
from tests.nn._parity import assert_close, host

torch = pytest.importorskip("torch")

X = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)


def test_eval_is_leaky_relu_with_the_mean_slope_like_torch():
    for lower, upper in ((1 / 8, 1 / 3), (0.1, 0.3), (0.2, 0.2)):
        s_layer, t_layer = nn.RReLU(lower, upper).eval(), torch.nn.RReLU(lower, upper).eval()
        x = spx.tensor(X, requires_grad=True)
        xt = torch.tensor(X, requires_grad=True)
        y, yt = s_layer(x), t_layer(xt)
        assert_close(y, yt, 1e-6, 1e-7)
        (y * y).sum().backward()
        (yt * yt).sum().backward()
        assert_close(x.grad, xt.grad, 1e-6, 1e-7)
    # The functional default is training=False, as torch's.
    assert_close(F.rrelu(spx.tensor(X)), torch.nn.functional.rrelu(torch.tensor(X)), 1e-6, 1e-7)
    # The slope at 0 is the mean slope in eval (torch's leaky_relu backward).
    z = spx.zeros(3, requires_grad=True)
    F.rrelu(z, 0.1, 0.3).sum().backward()
    zt = torch.zeros(3, requires_grad=True)
    torch.nn.functional.rrelu(zt, 0.1, 0.3).sum().backward()
    assert_close(z.grad, zt.grad)


def test_training_slopes_are_uniform_and_the_gradient_is_the_drawn_slope():
    lower, upper = 0.1, 0.3
    spx.manual_seed(0)
    x = spx.tensor(X, requires_grad=True)
    y = nn.RReLU(lower, upper)(x)
    y.sum().backward()
    slope = host(y) / X
    neg = X < 0
    np.testing.assert_array_equal(slope[~neg], 1.0)
    drawn = slope[neg]
    assert drawn.min() >= lower - 1e-6 and drawn.max() <= upper + 1e-6
    # torch's slopes for the same call: same distribution (mean 0.2, sd 0.2 / sqrt(12)).
    torch.manual_seed(0)
    t_slope = (torch.nn.RReLU(lower, upper)(torch.tensor(X)) / torch.tensor(X)).numpy()[neg]
    assert abs(drawn.mean() - t_slope.mean()) < 0.005
    assert abs(drawn.std() - t_slope.std()) < 0.005
    assert abs(drawn.std() - (upper - lower) / np.sqrt(12)) < 0.005
    np.testing.assert_allclose(x.grad.numpy(), slope, rtol=1e-6)  # d y / d x = drawn slope
    # torch's gradient is its drawn slope too, by the same rule.
    xt = torch.tensor(X, requires_grad=True)
    yt = torch.nn.functional.rrelu(xt, lower, upper, training=True)
    yt.sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), (yt / xt).detach().numpy(), rtol=1e-6)


def test_training_draws_from_spx_random_and_each_call_is_fresh():
    layer = nn.RReLU()
    spx.manual_seed(7)
    a, b = host(layer(X)), host(layer(X))
    assert not np.array_equal(a, b)
    spx.manual_seed(7)
    expected = F.rrelu(X, 1 / 8, 1 / 3, True, key=spx.random.next_key())
    np.testing.assert_array_equal(a, host(expected))
    out = F.rrelu(X, 0.1, 0.3, training=True, key=jax.random.key(3))
    np.testing.assert_array_equal(
        host(out), host(F.rrelu(X, 0.1, 0.3, True, key=jax.random.key(3)))
    )
    # Eval draws no key.
    spx.manual_seed(1)
    before = jax.random.key_data(spx.random.get_key())
    layer.eval()(X)
    assert (jax.random.key_data(spx.random.get_key()) == before).all()


def test_rrelu_in_place_writes_into_its_input():
    x = spx.tensor(X.copy())
    out = F.rrelu_(x, 0.1, 0.3)
    assert out is x
    assert_close(x, torch.nn.functional.rrelu(torch.tensor(X), 0.1, 0.3), 1e-6, 1e-7)
    with pytest.raises(TypeError, match="rrelu_"):
        F.rrelu_(np.ones(3, np.float32))


def test_repr_and_errors():
    for args in ((), (0.1, 0.3), (0.1, 0.3, True)):
        assert repr(nn.RReLU(*args)) == repr(torch.nn.RReLU(*args))
    with pytest.raises(ValueError, match=r"lower \(0\.5\) must be at most upper \(0\.2\)"):
        nn.RReLU(0.5, 0.2)
    with pytest.raises(RuntimeError, match="Lower bound"):
        torch.nn.functional.rrelu(torch.tensor(X), 0.5, 0.2)
    with pytest.raises(RuntimeError, match=r"lower bound \(0\.5\) should be less"):
        F.rrelu(X, 0.5, 0.2)
    with pytest.raises(NotImplementedError, match="floating point"):
        F.rrelu(jnp.arange(3), training=True)


def test_compiled_step_gets_fresh_slopes():
    layer = nn.RReLU()
    step = spx.compile(lambda m, x: m(x))
    a, b = step(layer, X), step(layer, X)
    assert not np.array_equal(host(a), host(b))


# -- FeatureAlphaDropout ---------------------------------------------------------------------

ALPHA = 1.7580993408473766


def _a(p):
    return 1.0 / np.sqrt((ALPHA**2 * p + 1) * (1 - p))


def test_feature_alpha_dropout_drops_whole_channels_with_torchs_affine_map():
    p = 0.3
    spx.manual_seed(0)
    xn = np.random.default_rng(1).standard_normal((16, 32, 3, 3)).astype(np.float32)
    x = spx.tensor(xn, requires_grad=True)
    y = nn.FeatureAlphaDropout(p)(x)
    (y * 2.0).sum().backward()
    a = _a(p)
    kept = np.isclose(host(y), xn * a + ALPHA * a * p, rtol=1e-5, atol=1e-5)
    dropped = np.isclose(host(y), -ALPHA * a + ALPHA * a * p, rtol=1e-5, atol=1e-6)
    assert (kept | dropped).all()
    per_channel = kept.reshape(16, 32, -1)
    assert (per_channel.all(-1) | ~per_channel.any(-1)).all()  # whole channels at once
    frac = 1 - per_channel.all(-1).mean()
    # torch's fraction of dropped channels for the same configuration
    yt = torch.nn.FeatureAlphaDropout(p)(torch.tensor(xn)).numpy()
    t_kept = np.isclose(yt, xn * a + ALPHA * a * p, rtol=1e-5, atol=1e-5).reshape(16, 32, -1)
    assert abs(frac - p) < 0.06 and abs(frac - (1 - t_kept.all(-1).mean())) < 0.08
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, 2 * a, 0.0), rtol=1e-6)


def test_feature_alpha_dropout_eval_p0_p1_and_defaults():
    xn = np.random.default_rng(2).standard_normal((4, 6, 5)).astype(np.float32)
    x = spx.tensor(xn)
    assert nn.FeatureAlphaDropout(0.5).eval()(x) is x
    assert F.feature_alpha_dropout(x, 0.5) is x  # training=False by default, as torch
    np.testing.assert_array_equal(host(nn.FeatureAlphaDropout(0.0)(x)), xn)
    spx.manual_seed(0)
    out = host(F.feature_alpha_dropout(x, 1.0, training=True))
    t_out = torch.nn.functional.feature_alpha_dropout(torch.tensor(xn), 1.0, training=True)
    np.testing.assert_array_equal(out, t_out.numpy())  # zeros
    assert repr(nn.FeatureAlphaDropout(0.2)) == repr(torch.nn.FeatureAlphaDropout(0.2))
    assert repr(nn.FeatureAlphaDropout(0.2, True)) == repr(torch.nn.FeatureAlphaDropout(0.2, True))


def test_feature_alpha_dropout_keeps_mean_and_variance():
    spx.manual_seed(0)
    x = jax.random.normal(jax.random.key(0), (64, 512, 4))
    y = host(nn.FeatureAlphaDropout(0.2)(x))
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1.0) < 0.05


def test_feature_alpha_dropout_errors():
    with pytest.raises(ValueError, match=r"must be a number in \[0, 1\], got 1.5"):
        nn.FeatureAlphaDropout(1.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.feature_alpha_dropout(X, -0.1, True)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        F.feature_alpha_dropout(np.ones(5, np.float32), 0.5, True)
    with pytest.raises(RuntimeError):
        torch.nn.functional.feature_alpha_dropout(torch.ones(5), 0.5, True)
