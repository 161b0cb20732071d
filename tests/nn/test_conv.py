"""Conv1d / Conv2d against torch.nn: outputs, gradients, state_dict, init, repr, validation."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.nn.modules.conv import LazyConv2d  # not in spx.nn's name map yet
from tests.nn._parity import check_module, copy_weights

torch = pytest.importorskip("torch")

# Convolutions sum kernel-size x channel products; XLA and oneDNN order those sums differently,
# so a few ulps of the output magnitude (~1e-6 absolute at these sizes) separate the two.
RTOL, ATOL = 1e-5, 2e-6


def _check_parity(t_layer, s_layer, x_np):
    """Outputs and grads w.r.t. input and every parameter match torch (both autograd forms)."""
    copy_weights(t_layer, s_layer)
    assert list(s_layer.state_dict()) == list(t_layer.state_dict())
    for k, v in t_layer.state_dict().items():
        assert s_layer.state_dict()[k].shape == tuple(v.shape)
    check_module(t_layer, s_layer, [x_np], rtol=RTOL, atol=ATOL, param_atol=5 * ATOL)


# Cases share in_channels=4 and few weight shapes: every new shape costs an XLA compile of the
# initializers, so reusing them keeps the file fast without losing coverage.
CONV1D = [
    dict(in_channels=4, out_channels=8, kernel_size=3),
    dict(in_channels=4, out_channels=8, kernel_size=3, stride=2, padding=1, bias=False),
    dict(in_channels=4, out_channels=8, kernel_size=3, padding="same", dilation=2, groups=2),
    dict(in_channels=4, out_channels=4, kernel_size=4, padding="same"),  # odd total padding
    dict(in_channels=4, out_channels=8, kernel_size=3, padding="valid", groups=4),
    dict(in_channels=4, out_channels=8, kernel_size=3, padding=2, padding_mode="reflect"),
    dict(in_channels=4, out_channels=4, kernel_size=4, padding="same", padding_mode="reflect"),
]  # replicate/circular go through the same F.pad call; CONV2D covers them

CONV2D = [
    dict(in_channels=4, out_channels=8, kernel_size=3),
    dict(in_channels=4, out_channels=8, kernel_size=(3, 2), stride=(2, 1), padding=(1, 0)),
    dict(in_channels=4, out_channels=8, kernel_size=3, dilation=(2, 1), groups=4, bias=False),
    dict(in_channels=4, out_channels=4, kernel_size=(2, 3), padding="same"),
    dict(in_channels=4, out_channels=8, kernel_size=3, padding=(1, 2), padding_mode="reflect"),
    dict(in_channels=4, out_channels=8, kernel_size=3, padding=1, padding_mode="replicate"),
    dict(
        in_channels=4, out_channels=8, kernel_size=3, stride=2, padding=1, padding_mode="circular"
    ),
    dict(
        in_channels=4, out_channels=4, kernel_size=(2, 3), padding="same", padding_mode="circular"
    ),
]


# torch warns that it copies the input for even kernels with padding="same"; not our concern.
@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("kwargs", CONV1D, ids=str)
def test_conv1d_matches_torch(kwargs):
    x = np.random.default_rng(0).standard_normal((2, 4, 11)).astype(np.float32)
    _check_parity(torch.nn.Conv1d(**kwargs), nn.Conv1d(**kwargs), x)


@pytest.mark.parametrize("kwargs", CONV2D, ids=str)
def test_conv2d_matches_torch(kwargs):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 9, 8)).astype(np.float32)
    _check_parity(torch.nn.Conv2d(**kwargs), nn.Conv2d(**kwargs), x)


def test_unbatched_input():
    x = np.random.default_rng(2).standard_normal((4, 9, 8)).astype(np.float32)
    _check_parity(torch.nn.Conv2d(4, 8, 3, padding=1), nn.Conv2d(4, 8, 3, padding=1), x)
    x1 = np.random.default_rng(3).standard_normal((4, 11)).astype(np.float32)
    _check_parity(
        torch.nn.Conv1d(4, 8, 3, padding=1, padding_mode="reflect"),
        nn.Conv1d(4, 8, 3, padding=1, padding_mode="reflect"),
        x1,
    )


def test_default_init_is_torchs():
    # kaiming_uniform_(a=sqrt(5)) is U(±1/sqrt(fan_in)), the same bound as the bias.
    layer = nn.Conv2d(4, 8, 3)
    bound = 1 / math.sqrt(4 * 9)
    w, b = np.asarray(layer.weight.data), np.asarray(layer.bias.data)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    np.testing.assert_allclose(w.std(), bound / math.sqrt(3), rtol=0.15)  # ~6 sigma for 288
    assert np.abs(w).max() > 0.95 * bound
    # With groups, fan_in counts only the channels of one group: (4 // 2) * 3.
    grouped = nn.Conv1d(4, 8, 3, padding="same", dilation=2, groups=2)
    bound = 1 / math.sqrt(2 * 3)
    w, b = np.asarray(grouped.weight.data), np.asarray(grouped.bias.data)
    assert w.shape == (8, 2, 3) and np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 1 / math.sqrt(4 * 3)  # wider than the bound ignoring groups


def test_dtype_and_no_bias():
    layer = nn.Conv1d(4, 8, 3, bias=False, dtype=jnp.bfloat16)
    assert layer.bias is None and layer.weight.dtype == jnp.bfloat16
    assert list(layer.state_dict()) == ["weight"]
    assert layer(jnp.ones((2, 4, 11), jnp.bfloat16)).dtype == jnp.bfloat16


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(in_channels=4, out_channels=8, kernel_size=3),
        dict(in_channels=4, out_channels=8, kernel_size=(3, 3), stride=2, padding=(1, 0)),
        dict(in_channels=4, out_channels=8, kernel_size=3, padding="same", dilation=2, groups=2),
        dict(in_channels=4, out_channels=8, kernel_size=3, bias=False, padding_mode="circular"),
        dict(in_channels=4, out_channels=8, kernel_size=3, padding="valid"),
    ],
    ids=str,
)
def test_repr_matches_torch(kwargs):
    assert repr(nn.Conv2d(**kwargs)) == repr(torch.nn.Conv2d(**kwargs))
    k1 = {k: (v[0] if isinstance(v, tuple) else v) for k, v in kwargs.items()}
    assert repr(nn.Conv1d(**k1)) == repr(torch.nn.Conv1d(**k1))


def test_lazy_conv_materializes_same_parameter():
    layer = LazyConv2d(8, 3, 1, 1)  # stride=1, padding=1 positionally, as in torch
    weight = layer.weight
    y = layer(jnp.ones((2, 4, 9, 8)))
    assert y.shape == (2, 8, 9, 8) and layer.in_channels == 4
    assert layer.weight is weight and weight.shape == (8, 4, 3, 3)
    assert nn.Conv1d(None, 8, 3)(jnp.ones((2, 4, 11))).shape == (2, 8, 9)
    # The materialized layer computes and trains like torch's.
    torch.manual_seed(0)
    x = np.random.default_rng(4).standard_normal((2, 4, 9, 8)).astype(np.float32)
    _check_parity(torch.nn.Conv2d(4, 8, 3, 1, 1), layer, x)


def test_jit_and_grad_through_module():
    layer = nn.Conv2d(4, 8, 3, padding=1, padding_mode="reflect")
    x = jnp.ones((2, 4, 9, 8))
    with spx.no_grad():
        eager = layer(x).numpy()
    np.testing.assert_allclose(np.asarray(jax.jit(lambda m, x: m(x))(layer, x)), eager, rtol=1e-6)


def test_constructor_validation():
    with pytest.raises(ValueError, match=r"in_channels \(5\) must be divisible by groups \(2\)"):
        nn.Conv2d(5, 4, 3, groups=2)
    with pytest.raises(ValueError, match=r"out_channels \(5\) must be divisible by groups \(2\)"):
        nn.Conv2d(4, 5, 3, groups=2)
    with pytest.raises(ValueError, match="groups must be a positive int"):
        nn.Conv2d(4, 4, 3, groups=0)
    with pytest.raises(ValueError, match="padding string 'full'"):
        nn.Conv1d(4, 4, 3, padding="full")
    with pytest.raises(ValueError, match="strided"):
        nn.Conv2d(4, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(4, 4, 3, padding_mode="zero")
    with pytest.raises(ValueError, match="kernel_size"):
        nn.Conv2d(4, 4, (3, 3, 3))
    with pytest.raises(ValueError, match="out_channels must be a positive int"):
        nn.Conv1d(4, 0, 3)
    with pytest.raises(ValueError, match="padding"):
        nn.Conv1d(4, 4, 3, padding=-1)


def test_input_validation():
    layer = nn.Conv2d(4, 8, 3)
    with pytest.raises(RuntimeError, match=r"input has 5 channels.*in_channels=4"):
        layer(jnp.ones((2, 5, 8, 8)))
    with pytest.raises(RuntimeError, match="4-D input"):
        layer(jnp.ones((8, 8)))


@pytest.mark.parametrize(
    "x_shape,w_shape,kwargs",
    [
        ((1, 3, 3), (4, 3, 4), {}),
        ((1, 3, 3, 3), (4, 3, 4, 4), {}),
        ((1, 3, 4, 4), (4, 3, 3, 3), {"dilation": 2}),
        ((1, 3, 2, 2), (4, 3, 5, 5), {"padding": 1}),
    ],
)
def test_kernel_larger_than_padded_input_raises_as_torch(x_shape, w_shape, kwargs):
    # XLA returns an empty output here; torch refuses it.
    name = f"conv{len(x_shape) - 2}d"
    x, w = np.zeros(x_shape, np.float32), np.zeros(w_shape, np.float32)
    with pytest.raises(RuntimeError, match="Kernel size can't be greater"):
        getattr(torch.nn.functional, name)(torch.tensor(x), torch.tensor(w), **kwargs)
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        getattr(spx.nn.functional, name)(spx.tensor(x), spx.tensor(w), **kwargs)


def test_kernel_equal_to_padded_input_matches_torch():
    x = np.random.RandomState(0).randn(1, 3, 2, 2).astype(np.float32)
    w = np.random.RandomState(1).randn(4, 3, 4, 4).astype(np.float32)
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1).numpy()
    got = spx.nn.functional.conv2d(spx.tensor(x), spx.tensor(w), padding=1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_bias_of_wrong_size_raises_as_torch():
    x, w, b = np.zeros((1, 3, 8, 8), np.float32), np.zeros((4, 3, 3, 3), np.float32), np.zeros(5)
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 4 elements"):
        torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b).float())
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 4 elements"):
        spx.nn.functional.conv2d(spx.tensor(x), spx.tensor(w), spx.tensor(b).float())
