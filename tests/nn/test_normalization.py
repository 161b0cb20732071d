"""LayerNorm / RMSNorm / GroupNorm against torch.nn: outputs, grads, state_dict, init, repr."""

import jax.numpy as jnp
import numpy as np
import pytest

from spx import nn
from tests.nn._parity import check_module, copy_weights, host

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-5, 1e-5  # grads of normalizations sum over the normalized dims


def _randomize(t_layer):
    # Non-trivial affine parameters so their gradients and effect are really compared.
    torch.manual_seed(0)
    with torch.no_grad():
        for p in t_layer.parameters():
            p.copy_(torch.randn(p.shape))


def _check_parity(t_layer, s_layer, x_np):
    _randomize(t_layer)
    copy_weights(t_layer, s_layer)
    assert [(k, tuple(v.shape)) for k, v in s_layer.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in t_layer.state_dict().items()
    ]
    assert sorted(n for n, _ in s_layer.named_parameters()) == sorted(
        n for n, _ in t_layer.named_parameters()
    )
    check_module(t_layer, s_layer, [x_np], rtol=RTOL, atol=ATOL, param_atol=ATOL)


def _x(*shape):
    return (np.random.default_rng(0).standard_normal(shape) * 2 + 0.5).astype(np.float32)


@pytest.mark.parametrize(
    ("args", "kwargs", "shape"),
    [
        ((6,), {}, (4, 6)),
        ((6,), {"bias": False}, (2, 3, 6)),
        (([3, 6],), {"eps": 1e-3}, (2, 3, 6)),
        ((6,), {"elementwise_affine": False}, (4, 6)),
    ],
)
def test_layer_norm_matches_torch(args, kwargs, shape):
    t_layer, s_layer = torch.nn.LayerNorm(*args, **kwargs), nn.LayerNorm(*args, **kwargs)
    assert repr(s_layer) == repr(t_layer)
    _check_parity(t_layer, s_layer, _x(*shape))


@pytest.mark.parametrize(
    ("args", "kwargs", "shape"),
    [
        ((6,), {}, (4, 6)),
        ((6,), {"eps": 1e-6}, (2, 3, 6)),
        (((3, 6),), {}, (2, 3, 6)),
        ((6,), {"elementwise_affine": False}, (4, 6)),
    ],
)
def test_rms_norm_matches_torch(args, kwargs, shape):
    t_layer, s_layer = torch.nn.RMSNorm(*args, **kwargs), nn.RMSNorm(*args, **kwargs)
    assert repr(s_layer) == repr(t_layer)
    _check_parity(t_layer, s_layer, _x(*shape))


@pytest.mark.parametrize(
    ("args", "kwargs", "shape"),
    [
        ((2, 6), {}, (3, 6, 5)),
        ((3, 6), {"eps": 1e-3}, (2, 6, 2, 3)),
        ((6, 6), {"bias": False}, (2, 6, 4)),
        ((1, 6), {"affine": False}, (2, 6)),
    ],
)
def test_group_norm_matches_torch(args, kwargs, shape):
    t_layer, s_layer = torch.nn.GroupNorm(*args, **kwargs), nn.GroupNorm(*args, **kwargs)
    assert repr(s_layer) == repr(t_layer)
    _check_parity(t_layer, s_layer, _x(*shape))


def test_default_init_is_ones_and_zeros_like_torch():
    for t_layer, s_layer in (
        (torch.nn.LayerNorm((2, 3)), nn.LayerNorm((2, 3))),
        (torch.nn.RMSNorm(5), nn.RMSNorm(5)),
        (torch.nn.GroupNorm(2, 4), nn.GroupNorm(2, 4)),
    ):
        assert list(s_layer.state_dict()) == list(t_layer.state_dict())
        for k, v in t_layer.state_dict().items():
            np.testing.assert_array_equal(np.asarray(s_layer.state_dict()[k]), v.numpy())
    no_affine = nn.LayerNorm(4, elementwise_affine=False)
    assert no_affine.weight is None and no_affine.bias is None
    assert list(no_affine.state_dict()) == []
    assert nn.LayerNorm(4, dtype=jnp.bfloat16).weight.dtype == jnp.bfloat16


def test_rms_norm_default_eps_is_the_dtype_epsilon():
    # torch: eps=None means torch.finfo(input.dtype).eps; check it on a near-zero input.
    x = np.full((1, 4), 1e-4, np.float32)
    y_t = torch.nn.RMSNorm(4)(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(host(nn.RMSNorm(4)(jnp.asarray(x))), y_t, rtol=1e-5)


def test_shape_validation():
    with pytest.raises(ValueError, match=r"\(\*, 6\).*\(4, 5\)"):
        nn.LayerNorm(6)(jnp.ones((4, 5)))
    with pytest.raises(ValueError, match="normalized_shape"):
        nn.RMSNorm((3, 6))(jnp.ones((2, 6)))
    with pytest.raises(ValueError, match="divisible"):
        nn.GroupNorm(4, 6)
    with pytest.raises(ValueError, match=r"num_channels=6.*\(2, 4, 3\)"):
        nn.GroupNorm(2, 6)(jnp.ones((2, 4, 3)))
    with pytest.raises(TypeError, match="normalized_shape"):
        nn.LayerNorm(2.5)
    with pytest.raises(ValueError, match="empty"):
        nn.LayerNorm(())
    with pytest.raises(ValueError, match="num_groups"):
        nn.GroupNorm(0, 6)


def test_bf16_input_keeps_its_dtype():
    x = jnp.asarray(_x(2, 8), jnp.bfloat16)
    for layer in (nn.LayerNorm(8), nn.RMSNorm(8), nn.GroupNorm(2, 8)):
        assert layer(x).dtype == jnp.bfloat16
