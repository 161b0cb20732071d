"""spx.nn.utils.spectral_norm / remove_spectral_norm against torch.nn.utils (the old API)."""

from __future__ import annotations

import numpy as np
import pytest

import spx
from spx import nn
from tests.nn.utils._parity import assert_state_matches, host, load_from_torch, train_and_compare

torch = pytest.importorskip("torch")

LAYERS = {
    "linear": (lambda: torch.nn.Linear(5, 3), lambda: nn.Linear(5, 3), (4, 5)),
    "conv2d": (lambda: torch.nn.Conv2d(2, 4, 3), lambda: nn.Conv2d(2, 4, 3), (2, 2, 6, 6)),
    "convT2d": (
        lambda: torch.nn.ConvTranspose2d(3, 2, 3),
        lambda: nn.ConvTranspose2d(3, 2, 3),
        (2, 3, 4, 4),
    ),
}


def _pair(layer, **kw):
    """torch's and spx's layer with spectral norm, spx starting from torch's u, v."""
    make_t, make_s, shape = LAYERS[layer]
    torch.manual_seed(0)
    t = torch.nn.utils.spectral_norm(make_t(), **kw)
    s = nn.utils.spectral_norm(make_s(), **kw)
    load_from_torch(t, s)
    return t, s, shape


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("n_power_iterations", [1, 2])
@pytest.mark.parametrize("layer", list(LAYERS))
def test_keys_forward_and_training_match_torch(layer, n_power_iterations, compiled):
    t, s, shape = _pair(layer, n_power_iterations=n_power_iterations)
    keys = ["bias", "weight_orig", "weight_u", "weight_v"]
    assert list(s.state_dict()) == list(t.state_dict()) == keys
    assert type(s).__name__ == type(t).__name__  # no class swap in the old API
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(
        host(s(spx.from_numpy(x))), host(t(torch.from_numpy(x))), rtol=1e-5, atol=1e-5
    )
    assert_state_matches(t, s)  # one power iteration each, u and v in place
    train_and_compare(t, s, shape, steps=3, compiled=compiled)


def test_weight_reads_the_normalized_value_and_default_dims():
    t, s, _ = _pair("linear")
    for _ in range(20):  # the power method converges: the largest singular value becomes 1
        t(torch.zeros(1, 5))
        s(spx.zeros(1, 5))
    np.testing.assert_allclose(host(s.weight), host(t.weight), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.linalg.svd(host(s.weight))[1][0], 1.0, rtol=1e-3)
    _, s, _ = _pair("convT2d")
    assert tuple(s.weight_u.shape) == (2,)  # ConvTranspose's output dim is 1
    _, s, _ = _pair("conv2d", dim=1)
    assert tuple(s.weight_u.shape) == (2,) and tuple(s.weight_v.shape) == (4 * 3 * 3,)


def test_eval_uses_u_v_without_updating_them():
    t, s, shape = _pair("conv2d")
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    t(torch.from_numpy(x))  # from the random start to a sensible u, v (sigma far from 0)
    s(spx.from_numpy(x))
    t.eval()
    s.eval()
    u = host(s.weight_u)
    for _ in range(2):
        np.testing.assert_allclose(
            host(s(spx.from_numpy(x))), host(t(torch.from_numpy(x))), rtol=1e-5, atol=1e-5
        )
    np.testing.assert_array_equal(host(s.weight_u), u)
    assert_state_matches(t, s)
    s.train()
    s(spx.from_numpy(x))
    assert not np.array_equal(host(s.weight_u), u)


def test_buffers_are_updated_in_place():
    _, s, _ = _pair("linear")
    alias = s.state_dict()["weight_u"]
    s(spx.ones(2, 5))
    np.testing.assert_array_equal(host(alias), host(s.weight_u))


def test_two_forwards_one_backward_like_a_gan():
    t, s, shape = _pair("linear")
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    (t(torch.from_numpy(a)).mean() - t(torch.from_numpy(b)).mean()).backward()
    (s(spx.from_numpy(a)).mean() - s(spx.from_numpy(b)).mean()).backward()
    np.testing.assert_allclose(
        host(s.weight_orig.grad), host(t.weight_orig.grad), rtol=1e-5, atol=1e-6
    )
    assert_state_matches(t, s)


def test_remove_spectral_norm_matches_torch():
    t, s, shape = _pair("linear")
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    t(torch.from_numpy(x))
    s(spx.from_numpy(x))
    torch.nn.utils.remove_spectral_norm(t)
    nn.utils.remove_spectral_norm(s)
    assert list(s.state_dict()) == list(t.state_dict()) == ["bias", "weight"]
    assert isinstance(s.weight, nn.Parameter) and not s._forward_pre_hooks
    assert_state_matches(t, s)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(s)


def test_alongside_weight_norm_on_another_parameter():
    m = nn.Bilinear(2, 3, 4)
    nn.utils.spectral_norm(m)
    nn.utils.weight_norm(m, "bias")
    assert list(m.state_dict()) == ["weight_orig", "bias_g", "bias_v", "weight_u", "weight_v"]
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(m)
    nn.utils.remove_weight_norm(m, "bias")
    nn.utils.remove_spectral_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"]


def test_errors_match_torch():
    for lib, fn in ((torch, torch.nn.utils.spectral_norm), (spx, nn.utils.spectral_norm)):
        m = fn(lib.nn.Linear(2, 2))
        with pytest.raises(RuntimeError, match="two spectral_norm hooks"):
            fn(m)
        with pytest.raises(ValueError, match="n_power_iterations=0"):
            fn(lib.nn.Linear(2, 2), n_power_iterations=0)
        with pytest.raises(KeyError):
            fn(lib.nn.Linear(2, 2), name="kernel")
        with pytest.raises(ValueError, match="uninitialized parameters"):
            fn(lib.nn.LazyLinear(2))
        no_bias = lib.nn.Linear(2, 2)
        no_bias.bias = None
        with pytest.raises(ValueError, match="parameter `bias` is None"):
            fn(no_bias, name="bias")
