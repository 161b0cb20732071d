"""MaxPool2d / AvgPool2d / AdaptiveAvgPool2d against torch.nn: outputs, input grads, repr."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spx import nn
from tests.nn._parity import check_module

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-5, 1e-6


def _check_parity(t_layer, s_layer, x_np):
    """Outputs and the gradient w.r.t. the input match torch (pools have no parameters)."""
    assert list(s_layer.state_dict()) == list(t_layer.state_dict()) == []
    check_module(t_layer, s_layer, [x_np], rtol=RTOL, atol=ATOL)


def _input(shape=(2, 3, 9, 10), seed=0):
    # A permutation keeps values distinct, so max-pool gradients have no ties to split.
    rng = np.random.default_rng(seed)
    return (rng.permutation(int(np.prod(shape))).reshape(shape) / 10.0).astype(np.float32)


MAX = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0), dilation=(2, 1)),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=2, stride=(2, 3), padding=1, ceil_mode=True),
]

AVG = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=3, padding=1, divisor_override=4),
]


@pytest.mark.parametrize("kwargs", MAX, ids=str)
def test_maxpool2d_matches_torch(kwargs):
    _check_parity(torch.nn.MaxPool2d(**kwargs), nn.MaxPool2d(**kwargs), _input())
    assert repr(nn.MaxPool2d(**kwargs)) == repr(torch.nn.MaxPool2d(**kwargs))


@pytest.mark.parametrize("kwargs", AVG, ids=str)
def test_avgpool2d_matches_torch(kwargs):
    _check_parity(torch.nn.AvgPool2d(**kwargs), nn.AvgPool2d(**kwargs), _input())
    assert repr(nn.AvgPool2d(**kwargs)) == repr(torch.nn.AvgPool2d(**kwargs))


@pytest.mark.parametrize("output_size", [1, (1, 1), 3, (4, 5), (None, 3), (9, 10), (5, 7)])
def test_adaptive_avgpool2d_matches_torch(output_size):
    t_layer = torch.nn.AdaptiveAvgPool2d(output_size)
    s_layer = nn.AdaptiveAvgPool2d(output_size)
    _check_parity(t_layer, s_layer, _input())
    assert repr(s_layer) == repr(t_layer)


def test_unbatched_input():
    x = _input((3, 8, 7))
    _check_parity(torch.nn.MaxPool2d(2), nn.MaxPool2d(2), x)
    _check_parity(torch.nn.AvgPool2d(3, 2, 1), nn.AvgPool2d(3, 2, 1), x)
    _check_parity(torch.nn.AdaptiveAvgPool2d(3), nn.AdaptiveAvgPool2d(3), x)


def test_pools_under_jit():
    x = jnp.asarray(_input())
    for layer in (nn.MaxPool2d(3, 2, 1), nn.AvgPool2d(2), nn.AdaptiveAvgPool2d((2, 3))):
        np.testing.assert_array_equal(
            np.asarray(jax.jit(lambda m, x: m(x))(layer, x)), layer(x).numpy()
        )


def test_stride_defaults_to_kernel_size():
    assert nn.MaxPool2d(3).stride == 3 and nn.AvgPool2d((2, 3)).stride == (2, 3)


def test_return_indices_returns_torchs_indices():
    # Full coverage (1-3d, adaptive, unpool, gradients) is in tests/nn/test_unpool.py.
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32)
    out, idx = nn.MaxPool2d(3, 2, 1, return_indices=True)(x)
    out_t, idx_t = torch.nn.MaxPool2d(3, 2, 1, return_indices=True)(torch.tensor(x))
    np.testing.assert_array_equal(np.asarray(idx), idx_t.numpy())
    np.testing.assert_array_equal(np.asarray(out), out_t.numpy())


def test_constructor_validation():
    with pytest.raises(ValueError, match="kernel_size"):
        nn.MaxPool2d(0)
    with pytest.raises(ValueError, match="stride"):
        nn.AvgPool2d(2, stride=(1, 2, 3))
    with pytest.raises(ValueError, match="padding=2 must be at most half"):
        nn.MaxPool2d(3, padding=2)
    with pytest.raises(ValueError, match="padding"):
        nn.AvgPool2d(2, padding=-1)
    with pytest.raises(ValueError, match="divisor_override"):
        nn.AvgPool2d(2, divisor_override=0)
    with pytest.raises(TypeError, match="ceil_mode"):
        nn.MaxPool2d(2, ceil_mode="yes")
    with pytest.raises(ValueError, match="output_size"):
        nn.AdaptiveAvgPool2d(0)
    with pytest.raises(ValueError, match="output_size"):
        nn.AdaptiveAvgPool2d((1, 2, 3))
