"""ChannelShuffle / F.channel_shuffle and Softmax2d against torch."""

import numpy as np
import pytest

import spx
import spx.nn.functional as F
from spx import nn
from tests.nn._parity import check_module

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("shape,g", [((2, 6, 3, 4), 3), ((2, 4, 5), 2), ((1, 8, 2, 2, 2), 4)])
def test_channel_shuffle_matches_torch(shape, g):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    check_module(torch.nn.ChannelShuffle(g), nn.ChannelShuffle(g), [x], rtol=0, atol=0)
    want = torch.nn.functional.channel_shuffle(torch.tensor(x), g).numpy()
    np.testing.assert_array_equal(F.channel_shuffle(spx.tensor(x), g).numpy(), want)


@pytest.mark.parametrize("shape,g", [((1, 5, 2, 2), 2), ((5,), 2), ((1, 4, 2), 0), ((2, 4), 2)])
def test_channel_shuffle_errors_match_torch(shape, g):
    x = np.zeros(shape, np.float32)
    with pytest.raises(RuntimeError) as want:
        torch.nn.functional.channel_shuffle(torch.tensor(x), g)
    with pytest.raises(RuntimeError) as got:
        F.channel_shuffle(spx.tensor(x), g)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (3, 4, 5)])
def test_softmax2d_matches_torch(shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    check_module(torch.nn.Softmax2d(), nn.Softmax2d(), [x])


def test_softmax2d_rank_error_and_reprs():
    with pytest.raises(ValueError, match="expected input to be 3D or 4D, got 2D instead"):
        nn.Softmax2d()(spx.zeros(2, 3))
    assert repr(nn.Softmax2d()) == repr(torch.nn.Softmax2d())
    assert repr(nn.ChannelShuffle(3)) == repr(torch.nn.ChannelShuffle(3))
