"""InstanceNorm1d/2d/3d and LocalResponseNorm against torch.nn: values, grads, running stats."""

import numpy as np
import pytest

import spx
from spx import nn
from tests.nn._parity import check_module, copy_weights

torch = pytest.importorskip("torch")


def _x(shape, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 2 + 1).astype(np.float32)


SHAPES = {1: (3, 4, 7), 2: (2, 4, 5, 6), 3: (2, 4, 3, 4, 5)}


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize(
    "kwargs", [{}, dict(affine=True), dict(affine=True, bias=False, eps=1e-3)], ids=str
)
def test_instancenorm_matches_torch(nd, kwargs):
    name = f"InstanceNorm{nd}d"
    t_layer, s_layer = getattr(torch.nn, name)(4, **kwargs), getattr(nn, name)(4, **kwargs)
    if kwargs.get("affine"):
        with torch.no_grad():
            t_layer.weight.uniform_(0.5, 1.5)
        copy_weights(t_layer, s_layer)
    assert repr(s_layer) == repr(t_layer)
    assert list(s_layer.state_dict()) == list(t_layer.state_dict())
    check_module(t_layer, s_layer, [_x(SHAPES[nd])], rtol=1e-4, atol=1e-5)
    check_module(t_layer, s_layer, [_x(SHAPES[nd][1:])], rtol=1e-4, atol=1e-5)  # unbatched


@pytest.mark.parametrize("momentum", [0.1, None])
def test_running_stats_match_torch(momentum):
    kw = dict(affine=True, track_running_stats=True, momentum=momentum)
    t_layer, s_layer = torch.nn.InstanceNorm2d(4, **kw), nn.InstanceNorm2d(4, **kw)
    assert list(s_layer.state_dict()) == list(t_layer.state_dict())
    for seed in range(2):
        x = _x(SHAPES[2], seed)
        t_layer(torch.tensor(x))
        s_layer(spx.tensor(x))
    for key in ("running_mean", "running_var"):
        np.testing.assert_allclose(
            s_layer.state_dict()[key].numpy(), t_layer.state_dict()[key].numpy(), rtol=1e-5
        )
    t_layer.eval(), s_layer.eval()
    check_module(t_layer, s_layer, [_x(SHAPES[2], 5)], rtol=1e-4, atol=1e-5)


def test_instancenorm_errors():
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.InstanceNorm2d(4)(spx.zeros(4, 5))
    with pytest.raises(ValueError, match="num_features"):
        nn.InstanceNorm1d(4, affine=True)(spx.zeros(2, 3, 5))
    with pytest.warns(UserWarning, match="num_features"):
        nn.InstanceNorm1d(4)(spx.zeros(2, 3, 5))
    with pytest.raises(ValueError, match="num_features"):
        nn.InstanceNorm3d(0)


@pytest.mark.parametrize("shape", [(2, 6, 5), (2, 7, 4, 3), (1, 5, 2, 3, 4)])
@pytest.mark.parametrize("kwargs", [dict(size=2), dict(size=3, alpha=0.1, beta=0.5, k=2.0)])
def test_local_response_norm_matches_torch(shape, kwargs):
    t_layer, s_layer = torch.nn.LocalResponseNorm(**kwargs), nn.LocalResponseNorm(**kwargs)
    assert repr(s_layer) == repr(t_layer)
    check_module(t_layer, s_layer, [_x(shape)], rtol=1e-5, atol=1e-5)


def test_local_response_norm_rank_error():
    with pytest.raises(ValueError, match="3D or higher"):
        nn.LocalResponseNorm(2)(spx.zeros(2, 3))
