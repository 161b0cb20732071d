"""1-D/3-D max/avg pools, adaptive avg/max pools and LP pools against torch.nn / torch F."""

import numpy as np
import pytest

import spx
from spx import nn
from spx.nn import functional as F
from tests.nn._parity import check_module

torch = pytest.importorskip("torch")


def _input(shape, seed=0):
    # A permutation keeps values distinct, so max-pool gradients have no ties to split.
    rng = np.random.default_rng(seed)
    return (rng.permutation(int(np.prod(shape))).reshape(shape) / 10.0 + 0.1).astype(np.float32)


SHAPES = {1: (2, 3, 11), 2: (2, 3, 9, 10), 3: (2, 2, 7, 6, 5)}

MAX = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, dilation=2, padding=1),
    dict(kernel_size=3, stride=2, ceil_mode=True),
]
AVG = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
]


def _check(t_layer, s_layer, x):
    assert repr(s_layer) == repr(t_layer)
    assert list(s_layer.state_dict()) == []
    check_module(t_layer, s_layer, [x], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("nd", [1, 3])
@pytest.mark.parametrize("kwargs", MAX, ids=str)
def test_maxpool_matches_torch(nd, kwargs):
    name = f"MaxPool{nd}d"
    _check(getattr(torch.nn, name)(**kwargs), getattr(nn, name)(**kwargs), _input(SHAPES[nd]))


@pytest.mark.parametrize("nd", [1, 3])
@pytest.mark.parametrize("kwargs", AVG, ids=str)
def test_avgpool_matches_torch(nd, kwargs):
    name = f"AvgPool{nd}d"
    _check(getattr(torch.nn, name)(**kwargs), getattr(nn, name)(**kwargs), _input(SHAPES[nd]))


def test_avgpool3d_divisor_override_and_unbatched():
    x = _input((2, 5, 6, 4))
    _check(torch.nn.AvgPool3d(2, divisor_override=3), nn.AvgPool3d(2, divisor_override=3), x)
    _check(torch.nn.MaxPool1d(2), nn.MaxPool1d(2), _input((3, 8)))


@pytest.mark.parametrize("kind", ["Avg", "Max"])
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("size", [1, 2, 3])
def test_adaptive_pools_match_torch(kind, nd, size):
    name = f"Adaptive{kind}Pool{nd}d"
    _check(getattr(torch.nn, name)(size), getattr(nn, name)(size), _input(SHAPES[nd]))


def test_adaptive_none_entries():
    size = (None, 2, 3)
    x = _input(SHAPES[3])
    _check(torch.nn.AdaptiveMaxPool3d(size), nn.AdaptiveMaxPool3d(size), x)
    _check(torch.nn.AdaptiveAvgPool3d(size), nn.AdaptiveAvgPool3d(size), x)


LP = [
    dict(norm_type=2, kernel_size=2),
    dict(norm_type=3, kernel_size=3, stride=2),
    dict(norm_type=1.5, kernel_size=2, stride=1, ceil_mode=True),
    dict(norm_type=float("inf"), kernel_size=2),
]


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kwargs", LP, ids=str)
def test_lppool_matches_torch(nd, kwargs):
    name = f"LPPool{nd}d"
    shape = {1: (2, 3, 9), 2: (2, 3, 7, 6), 3: (1, 2, 5, 6, 5)}[nd]
    _check(getattr(torch.nn, name)(**kwargs), getattr(nn, name)(**kwargs), _input(shape))


def test_functional_forms():
    x = _input(SHAPES[3])
    for fn, args in [
        ("adaptive_max_pool3d", (2,)),
        ("lp_pool3d", (2, 2)),
        ("lp_pool1d", (2, 3)),
        ("max_pool1d", (3,)),
    ]:
        xi = x if fn.endswith("3d") else x[:, :, 0, 0]
        out = getattr(F, fn)(spx.tensor(xi), *args)
        ref = getattr(torch.nn.functional, fn)(torch.tensor(xi), *args)
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)


def test_lppool_zero_window_has_zero_gradient():
    x = spx.zeros(1, 1, 4, requires_grad=True)
    F.lp_pool1d(x, 2, 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((1, 1, 4)))


def test_constructor_validation():
    with pytest.raises(ValueError, match="kernel_size"):
        nn.MaxPool3d((2, 2))
    with pytest.raises(ValueError, match="kernel_size"):
        nn.MaxPool1d(0)
    with pytest.raises(ValueError, match="must be at most half"):
        nn.AvgPool3d(3, padding=2)
    with pytest.raises(TypeError, match="return_indices must be True or False"):
        nn.AdaptiveMaxPool2d(2, return_indices="yes")
    with pytest.raises(TypeError, match="return_indices must be True or False"):
        nn.MaxPool1d(2, return_indices=None)
    with pytest.raises(ValueError, match="output_size"):
        nn.AdaptiveMaxPool3d((1, 2))
    with pytest.raises(ValueError, match="norm_type"):
        nn.LPPool2d(0, 2)
    with pytest.raises(TypeError, match="ceil_mode"):
        nn.LPPool1d(2, 2, ceil_mode=1)
    with pytest.raises(RuntimeError, match="expected a 2-D"):
        F.max_pool1d(spx.zeros(2), 2)


@pytest.mark.parametrize("norm_type", [1, 3, 1.5])
def test_lp_pool_of_signed_input_with_odd_power_is_torchs(norm_type):
    # A negative window sum of x^p: torch's formula keeps it (p = 1: the sum itself; p = 3:
    # NaN), where clamping it at 0 gave 0.
    x = np.array([[[1.0, -3.0, 2.0, -0.5, 1.0, 1.0]]], np.float32)
    expected = torch.nn.LPPool1d(norm_type, 2)(torch.tensor(x)).numpy()
    got = nn.LPPool1d(norm_type, 2)(spx.tensor(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-6)
