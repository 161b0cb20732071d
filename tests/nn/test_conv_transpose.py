"""ConvTranspose1d/2d/3d against torch.nn: outputs, gradients, output_size, init, repr, errors."""

import math

import jax.numpy as jnp
import numpy as np
import pytest

from spx import nn
from tests.nn._parity import check_module, copy_weights

torch = pytest.importorskip("torch")

# Transposed convs sum kernel x channel products in another order than oneDNN's.
RTOL, ATOL = 1e-5, 2e-6


def _check_parity(t_layer, s_layer, x_np, output_size=None):
    copy_weights(t_layer, s_layer)
    assert list(s_layer.state_dict()) == list(t_layer.state_dict())
    for k, v in t_layer.state_dict().items():
        assert s_layer.state_dict()[k].shape == tuple(v.shape)
    if output_size is not None:
        t_layer = _WithSize(t_layer, output_size)
        s_layer = _SWithSize(s_layer, output_size)
    check_module(t_layer, s_layer, [x_np], rtol=RTOL, atol=ATOL, param_atol=5 * ATOL)


class _WithSize(torch.nn.Module):
    def __init__(self, layer, output_size):
        super().__init__()
        self.layer, self.output_size = layer, output_size

    def forward(self, x):
        return self.layer(x, output_size=self.output_size)


class _SWithSize(nn.Module):
    def __init__(self, layer, output_size):
        super().__init__()
        self.layer, self.output_size = layer, output_size

    def forward(self, x):
        return self.layer(x, output_size=self.output_size)


CT1D = [
    dict(in_channels=4, out_channels=6, kernel_size=3),
    dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1, output_padding=1),
    dict(in_channels=4, out_channels=6, kernel_size=4, stride=3, padding=2, dilation=2,
         groups=2, bias=False),
    dict(in_channels=4, out_channels=8, kernel_size=2, stride=2, groups=4),
    dict(in_channels=4, out_channels=6, kernel_size=3, dilation=3, output_padding=2),  # op < d
]  # fmt: skip
CT2D = [
    dict(in_channels=4, out_channels=6, kernel_size=3),
    dict(in_channels=4, out_channels=6, kernel_size=(3, 2), stride=(2, 1), padding=(1, 0),
         output_padding=(1, 0)),
    dict(in_channels=4, out_channels=2, kernel_size=3, stride=2, padding=1, dilation=(1, 2),
         groups=2, bias=False),
    dict(in_channels=4, out_channels=6, kernel_size=4, stride=(3, 2), padding=(2, 1),
         output_padding=(2, 1)),
]  # fmt: skip
CT3D = [
    dict(in_channels=4, out_channels=2, kernel_size=2, stride=2),
    dict(in_channels=4, out_channels=6, kernel_size=(2, 3, 2), stride=(1, 2, 2),
         padding=(0, 1, 1), output_padding=(0, 1, 0), groups=2, dilation=(2, 1, 1)),
]  # fmt: skip


@pytest.mark.parametrize("kwargs", CT1D, ids=str)
def test_conv_transpose1d_matches_torch(kwargs):
    x = np.random.default_rng(0).standard_normal((2, 4, 7)).astype(np.float32)
    _check_parity(torch.nn.ConvTranspose1d(**kwargs), nn.ConvTranspose1d(**kwargs), x)


@pytest.mark.parametrize("kwargs", CT2D, ids=str)
def test_conv_transpose2d_matches_torch(kwargs):
    x = np.random.default_rng(1).standard_normal((2, 4, 5, 6)).astype(np.float32)
    _check_parity(torch.nn.ConvTranspose2d(**kwargs), nn.ConvTranspose2d(**kwargs), x)


@pytest.mark.parametrize("kwargs", CT3D, ids=str)
def test_conv_transpose3d_matches_torch(kwargs):
    x = np.random.default_rng(2).standard_normal((2, 4, 3, 4, 3)).astype(np.float32)
    _check_parity(torch.nn.ConvTranspose3d(**kwargs), nn.ConvTranspose3d(**kwargs), x)


@pytest.mark.parametrize("output_size", [[10, 11], [9, 12], (2, 6, 9, 11), [10, 12]], ids=str)
def test_output_size_matches_torch(output_size):
    kwargs = dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1)
    x = np.random.default_rng(3).standard_normal((2, 4, 5, 6)).astype(np.float32)
    t, s = torch.nn.ConvTranspose2d(**kwargs), nn.ConvTranspose2d(**kwargs)
    _check_parity(t, s, x, output_size=output_size)
    assert tuple(s(x, output_size=output_size).shape[-2:]) == tuple(output_size)[-2:]


def test_unbatched_input_and_output_size():
    kwargs = dict(in_channels=4, out_channels=6, kernel_size=3, stride=3)
    x = np.random.default_rng(4).standard_normal((4, 7)).astype(np.float32)
    _check_parity(torch.nn.ConvTranspose1d(**kwargs), nn.ConvTranspose1d(**kwargs), x)
    _check_parity(
        torch.nn.ConvTranspose1d(**kwargs), nn.ConvTranspose1d(**kwargs), x, output_size=[23]
    )


def test_output_size_errors_match_torch():
    layer = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1)
    t = torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1)
    x = np.zeros((2, 4, 5, 6), np.float32)
    for bad, match in [
        ([12, 11], r"valid sizes range from \[9, 11\] to \[10, 12\]"),
        ([11], "output_size must have 2 or 4 elements"),
    ]:
        with pytest.raises(ValueError, match=match):
            layer(x, output_size=bad)
        with pytest.raises(ValueError, match=match):
            t(torch.tensor(x), output_size=bad)


def test_default_init_is_torchs():
    # torch's fan_in for a transposed weight (in, out // groups, *k) is (out // groups) * k.
    layer = nn.ConvTranspose2d(8, 6, 3, groups=2)
    assert layer.weight.shape == (8, 3, 3, 3)
    bound = 1 / math.sqrt(3 * 9)
    w, b = np.asarray(layer.weight.data), np.asarray(layer.bias.data)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.9 * bound
    np.testing.assert_allclose(w.std(), bound / math.sqrt(3), rtol=0.2)


def test_dtype_and_no_bias():
    layer = nn.ConvTranspose1d(4, 6, 3, bias=False, dtype=jnp.bfloat16)
    assert layer.bias is None and list(layer.state_dict()) == ["weight"]
    assert layer(jnp.ones((2, 4, 7), jnp.bfloat16)).dtype == jnp.bfloat16


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(in_channels=4, out_channels=6, kernel_size=3),
        dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1, output_padding=1),
        dict(in_channels=4, out_channels=6, kernel_size=3, dilation=2, groups=2, bias=False),
    ],
    ids=str,
)
def test_repr_matches_torch(kwargs):
    for nd in (1, 2, 3):
        name = f"ConvTranspose{nd}d"
        assert repr(getattr(nn, name)(**kwargs)) == repr(getattr(torch.nn, name)(**kwargs))


def test_lazy_conv_transpose():
    for nd in (1, 2, 3):
        layer = getattr(nn, f"LazyConvTranspose{nd}d")(6, 2, stride=2, groups=2)
        weight = layer.weight
        y = layer(jnp.ones((1, 4, *(3,) * nd)))
        assert y.shape == (1, 6, *(6,) * nd) and layer.in_channels == 4
        assert layer.weight is weight and weight.shape == (4, 3, *(2,) * nd)
    torch.manual_seed(0)
    layer = nn.LazyConvTranspose2d(6, 3, stride=2, padding=1, output_padding=1)
    x = np.random.default_rng(5).standard_normal((2, 4, 5, 6)).astype(np.float32)
    layer(x)
    _check_parity(torch.nn.ConvTranspose2d(4, 6, 3, 2, 1, 1), layer, x)


def test_constructor_and_input_validation():
    with pytest.raises(ValueError, match='Only "zeros" padding mode'):
        nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="padding must be an int"):
        nn.ConvTranspose1d(4, 4, 3, padding="same")
    with pytest.raises(ValueError, match=r"in_channels \(5\) must be divisible by groups \(2\)"):
        nn.ConvTranspose2d(5, 4, 3, groups=2)
    with pytest.raises(ValueError, match="output_padding"):
        nn.ConvTranspose2d(4, 4, 3, output_padding=-1)
    with pytest.raises(ValueError, match="kernel_size"):
        nn.ConvTranspose3d(4, 4, (3, 3))
    layer = nn.ConvTranspose2d(4, 8, 3, output_padding=1)  # torch also only fails at the call
    with pytest.raises(ValueError, match="output_padding"):
        layer(jnp.ones((1, 4, 5, 5)))
    assert layer(jnp.ones((1, 4, 5, 5)), output_size=[7, 7]).shape == (1, 8, 7, 7)
    with pytest.raises(RuntimeError, match=r"input has 5 channels.*in_channels=4"):
        nn.ConvTranspose2d(4, 8, 3)(jnp.ones((2, 5, 8, 8)))
    with pytest.raises(RuntimeError, match=r"5-D input \(N, C, D, H, W\)"):
        nn.ConvTranspose3d(4, 8, 3)(jnp.ones((4, 8, 8)))
