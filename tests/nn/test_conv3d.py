"""Conv3d / LazyConv3d against torch.nn: outputs, gradients, state_dict, init, repr, errors."""

import math

import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from tests.nn._parity import check_module, copy_weights

torch = pytest.importorskip("torch")

# Sums over kD * kH * kW * C_in products: XLA and oneDNN order them differently (see
# tests/nn/test_conv.py), so a few ulps of the output magnitude separate the two.
RTOL, ATOL = 1e-5, 3e-6


def _check_parity(t_layer, s_layer, x_np):
    copy_weights(t_layer, s_layer)
    assert list(s_layer.state_dict()) == list(t_layer.state_dict())
    for k, v in t_layer.state_dict().items():
        assert s_layer.state_dict()[k].shape == tuple(v.shape), k
    check_module(t_layer, s_layer, [x_np], rtol=RTOL, atol=ATOL, param_atol=5 * ATOL)


# Few weight shapes (in_channels=4 throughout): each new one costs XLA compiles.
CONV3D = [
    dict(in_channels=4, out_channels=6, kernel_size=3),
    dict(in_channels=4, out_channels=6, kernel_size=(3, 2, 1), stride=(2, 1, 2), padding=(1, 0, 1)),
    dict(in_channels=4, out_channels=6, kernel_size=3, dilation=(2, 1, 1), groups=2, bias=False),
    dict(in_channels=4, out_channels=4, kernel_size=(2, 3, 2), padding="same"),  # odd total
    dict(in_channels=4, out_channels=6, kernel_size=3, padding="valid", groups=2),
    dict(in_channels=4, out_channels=6, kernel_size=3, padding=(1, 2, 1), padding_mode="reflect"),
    dict(in_channels=4, out_channels=6, kernel_size=3, padding=1, padding_mode="replicate"),
    dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1,
         padding_mode="circular"),
    dict(in_channels=4, out_channels=4, kernel_size=(2, 3, 2), padding="same",
         padding_mode="circular"),
]  # fmt: skip


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("kwargs", CONV3D, ids=str)
def test_conv3d_matches_torch(kwargs):
    x = np.random.default_rng(0).standard_normal((2, 4, 5, 6, 7)).astype(np.float32)
    _check_parity(torch.nn.Conv3d(**kwargs), nn.Conv3d(**kwargs), x)
    assert repr(nn.Conv3d(**kwargs)) == repr(torch.nn.Conv3d(**kwargs))


def test_unbatched_input():
    x = np.random.default_rng(1).standard_normal((4, 5, 6, 7)).astype(np.float32)
    _check_parity(torch.nn.Conv3d(4, 6, 3, padding=1), nn.Conv3d(4, 6, 3, padding=1), x)


def test_default_init_is_torchs():
    layer = nn.Conv3d(4, 8, 3)
    assert layer.weight.shape == (8, 4, 3, 3, 3) and layer.bias.shape == (8,)
    bound = 1 / math.sqrt(4 * 27)  # kaiming_uniform_(a=sqrt(5)): U(±1/sqrt(fan_in))
    w, b = np.asarray(layer.weight.data), np.asarray(layer.bias.data)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.95 * bound
    np.testing.assert_allclose(w.std(), bound / math.sqrt(3), rtol=0.1)
    t = torch.nn.Conv3d(4, 8, 3)
    np.testing.assert_allclose(w.std(), t.weight.detach().numpy().std(), rtol=0.15)


def test_dtype_and_no_bias():
    layer = nn.Conv3d(4, 6, 3, bias=False, dtype=jnp.bfloat16)
    assert layer.bias is None and layer.weight.dtype == jnp.bfloat16
    assert list(layer.state_dict()) == ["weight"]
    assert layer(jnp.ones((1, 4, 3, 3, 3), jnp.bfloat16)).dtype == jnp.bfloat16


def test_lazy_conv3d_materializes_same_parameter_and_matches_torch():
    layer = nn.LazyConv3d(6, 3, 1, 1)  # stride=1, padding=1 positionally, as torch's
    t_lazy = torch.nn.LazyConv3d(6, 3, 1, 1)
    assert repr(layer) == repr(t_lazy)
    weight, bias = layer.weight, layer.bias
    opt = spx.optim.SGD(layer.parameters(), lr=0.1)  # built before the first call
    x = np.random.default_rng(2).standard_normal((2, 4, 5, 6, 7)).astype(np.float32)
    y = layer(x)
    assert y.shape == (2, 6, 5, 6, 7) and layer.in_channels == 4
    assert layer.weight is weight and layer.bias is bias and weight.shape == (6, 4, 3, 3, 3)
    # Materialized, it is a Conv3d, as torch's becomes (cls_to_become).
    assert repr(layer) == repr(torch.nn.Conv3d(4, 6, 3, 1, 1))
    _check_parity(torch.nn.Conv3d(4, 6, 3, 1, 1), layer, x)
    before = np.asarray(weight.data).copy()
    opt.step()
    np.testing.assert_allclose(
        np.asarray(weight.data), before - 0.1 * np.asarray(weight.grad), rtol=1e-6, atol=1e-7
    )


def test_lazy_conv3d_loads_a_state_dict_before_its_first_call():
    t_layer = torch.nn.Conv3d(4, 6, 3, groups=2)
    layer = nn.LazyConv3d(6, 3, groups=2)
    copy_weights(t_layer, layer)
    assert layer.weight.shape == (6, 2, 3, 3, 3)
    x = np.random.default_rng(3).standard_normal((1, 4, 4, 4, 4)).astype(np.float32)
    with spx.no_grad():
        y = layer(x)
    assert layer.in_channels == 4
    np.testing.assert_allclose(
        y.numpy(), t_layer(torch.tensor(x)).detach().numpy(), rtol=RTOL, atol=ATOL
    )


def test_validation():
    with pytest.raises(ValueError, match=r"in_channels \(5\) must be divisible by groups \(2\)"):
        nn.Conv3d(5, 4, 3, groups=2)
    with pytest.raises(ValueError, match="kernel_size"):
        nn.Conv3d(4, 4, (3, 3))
    with pytest.raises(ValueError, match="strided"):
        nn.Conv3d(4, 4, 3, stride=2, padding="same")
    layer = nn.Conv3d(4, 6, 3)
    with pytest.raises(RuntimeError, match=r"input has 5 channels.*in_channels=4"):
        layer(jnp.ones((1, 5, 4, 4, 4)))
    with pytest.raises(RuntimeError, match=r"5-D input \(N, C, D, H, W\)"):
        layer(jnp.ones((4, 4, 4)))
    with pytest.raises(ValueError, match="not divisible by groups=2"):
        nn.LazyConv3d(4, 3, groups=2)(jnp.ones((1, 3, 4, 4, 4)))
