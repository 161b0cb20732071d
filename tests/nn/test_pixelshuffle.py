"""PixelShuffle / PixelUnshuffle and their functional forms against torch."""

import numpy as np
import pytest

import spx
import spx.nn.functional as F
from spx import nn
from tests.nn._parity import check_module

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "shape,r", [((2, 8, 3, 4), 2), ((18, 2, 3), 3), ((2, 3, 4, 2, 2), 2), ((1, 4, 1, 1), 1)]
)
def test_pixel_shuffle_matches_torch(shape, r):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    y = check_module(torch.nn.PixelShuffle(r), nn.PixelShuffle(r), [x], rtol=0, atol=0)
    back = check_module(
        torch.nn.PixelUnshuffle(r), nn.PixelUnshuffle(r), [y.numpy(force=True)], rtol=0, atol=0
    )
    np.testing.assert_array_equal(back.numpy(force=True), x)


def test_repr_and_state():
    for name, r in [("PixelShuffle", 3), ("PixelUnshuffle", 2)]:
        assert repr(getattr(nn, name)(r)) == repr(getattr(torch.nn, name)(r))
        assert dict(getattr(nn, name)(r).state_dict()) == {}


@pytest.mark.parametrize(
    "fn,shape,r,match",
    [
        ("pixel_shuffle", (1, 3, 2, 2), 2, r"input.size\(-3\)=3 is not divisible by 4"),
        ("pixel_shuffle", (3, 2), 2, "at least 3 dimensions"),
        ("pixel_shuffle", (1, 4, 2, 2), 0, "positive upscale_factor, but got 0"),
        ("pixel_unshuffle", (1, 3, 3, 2), 2, r"height to be divisible.*input.size\(-2\)=3"),
        ("pixel_unshuffle", (1, 3, 2, 3), 2, r"width to be divisible.*input.size\(-1\)=3"),
        ("pixel_unshuffle", (1, 3, 4, 4), 0, "positive downscale_factor, but got 0"),
    ],
)
def test_functional_errors_match_torch(fn, shape, r, match):
    x = np.zeros(shape, np.float32)
    with pytest.raises(RuntimeError, match=match):
        getattr(F, fn)(spx.tensor(x), r)
    with pytest.raises(RuntimeError, match=match):
        getattr(torch.nn.functional, fn)(torch.tensor(x), r)


def test_constructor_validation():
    with pytest.raises(ValueError, match="upscale_factor must be a positive int"):
        nn.PixelShuffle(0)
    with pytest.raises(TypeError, match="downscale_factor must be an int"):
        nn.PixelUnshuffle(2.0)
