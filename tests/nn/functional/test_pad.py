"""pad against torch: last-dim-first pad order, every mode, negative (cropping) pads,
constant values, unbatched inputs, gradients, and torch's error cases."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import spx.nn.functional as F

from ._reference import check_against_torch, randn, torch

TF = torch.nn.functional

CASES = [
    ((2, 3, 5), (1, 2)),
    ((2, 3, 5), (-1, 2)),
    ((3, 5), (2, 0)),  # unbatched 1-D
    ((2, 3, 4, 5), (1, 2, 2, 1)),
    ((2, 3, 4, 5), (0, -1, 1, -2)),
    ((3, 4, 5), (1, 1, 2, 0)),  # unbatched 2-D
    ((1, 2, 3, 4, 5), (1, 0, 2, 1, 0, 2)),
    ((2, 3, 4, 5), (1, 1, 1, 1, 1, 1)),  # 3-D padding of an unbatched (C, D, H, W)
]


@pytest.mark.parametrize(("shape", "pad"), CASES, ids=str)
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_modes(mode, shape, pad):
    rng = np.random.default_rng(0)
    x = randn(rng, *shape)
    check_against_torch(lambda x: F.pad(x, pad, mode), lambda x: TF.pad(x, pad, mode), [x])


@pytest.mark.parametrize("pad", [(1, 1), (1, 2, 3, 4, 0, 1, 2, 0), (-1, -2, 0, 3)], ids=str)
def test_constant_pad_any_rank_and_value(pad):
    rng = np.random.default_rng(1)
    x = randn(rng, 2, 3, 4, 5)
    check_against_torch(
        lambda x: F.pad(x, pad, value=2.5), lambda x: TF.pad(x, pad, value=2.5), [x]
    )


def test_crop_to_empty_matches_torch():
    assert F.pad(jnp.ones((2, 3)), (-3, 0)).shape == tuple(TF.pad(torch.ones(2, 3), (-3, 0)).shape)


def test_pad_errors_match_torch_kinds():
    x = jnp.ones((1, 3, 4))
    with pytest.raises(RuntimeError, match="divisible by 2"):
        F.pad(x, (1,))
    with pytest.raises(RuntimeError, match="at most twice"):
        F.pad(x, (1,) * 8)
    with pytest.raises(NotImplementedError, match="unrecognised padding mode"):
        F.pad(x, (1, 1), mode="mirror")
    with pytest.raises(NotImplementedError, match="not supported for a 4-D"):
        F.pad(jnp.ones((1, 1, 3, 4)), (1, 1), mode="reflect")
    with pytest.raises(RuntimeError, match="less than the input size"):
        F.pad(x, (4, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="at most the input size"):
        F.pad(x, (5, 0), mode="circular")
    with pytest.raises(ValueError, match="value"):
        F.pad(x, (1, 1), mode="reflect", value=0.0)
    with pytest.raises(RuntimeError, match="below zero"):
        F.pad(x, (-3, -2))
