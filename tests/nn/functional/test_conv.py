"""Convolutions against torch: NCHW layouts, stride/padding/dilation/groups combinations,
"same"/"valid" padding, unbatched input, transposed convs; input, weight and bias gradients."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import spx.nn.functional as F

from ._reference import check_against_torch, randn, torch

TF = torch.nn.functional

# Convolutions sum C_in * k * k products; XLA and torch order them differently, so allow a
# few float32 ulps more than elementwise ops (outputs are O(1)-O(10)).
ATOL = 1e-5

CONV2D_CASES = [
    dict(),
    dict(stride=2),
    dict(padding=1),
    dict(padding=(2, 1), stride=(1, 2)),
    dict(dilation=2, padding=2),
    dict(groups=2),
    dict(groups=4, padding=1),  # depthwise
    dict(stride=2, padding=1, dilation=(2, 1), groups=2),
    dict(padding="same"),
    dict(padding="same", dilation=2),
    dict(padding="valid"),
]


# torch warns that it copies the input for "same" padding with even kernels; irrelevant here.
@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("kwargs", CONV2D_CASES, ids=str)
def test_conv2d(kwargs):
    rng = np.random.default_rng(0)
    groups = kwargs.get("groups", 1)
    x = randn(rng, 2, 4, 7, 6)
    w, b = randn(rng, 8, 4 // groups, 3, 2), randn(rng, 8)
    check_against_torch(
        lambda x, w, b: F.conv2d(x, w, b, **kwargs),
        lambda x, w, b: TF.conv2d(x, w, b, **kwargs),
        [x, w, b],
        atol=ATOL,
    )


def test_conv2d_same_with_even_kernel_pads_right_like_torch():
    rng = np.random.default_rng(1)
    x, w = randn(rng, 1, 2, 6, 6), randn(rng, 3, 2, 4, 4)
    check_against_torch(
        lambda x, w: F.conv2d(x, w, padding="same"),
        lambda x, w: TF.conv2d(x, w, padding="same"),
        [x, w],
        atol=ATOL,
    )


def test_conv2d_unbatched_and_no_bias():
    rng = np.random.default_rng(2)
    x, w = randn(rng, 3, 5, 5), randn(rng, 2, 3, 3, 3)
    out = check_against_torch(F.conv2d, TF.conv2d, [x, w], atol=ATOL)
    assert out.shape == (2, 3, 3)


@pytest.mark.parametrize("kwargs", [dict(), dict(stride=2, padding=1), dict(dilation=3, groups=3),
                                    dict(padding="same")], ids=str)  # fmt: skip
def test_conv1d(kwargs):
    rng = np.random.default_rng(3)
    groups = kwargs.get("groups", 1)
    x, w, b = randn(rng, 2, 3, 11), randn(rng, 6, 3 // groups, 3), randn(rng, 6)
    check_against_torch(
        lambda x, w, b: F.conv1d(x, w, b, **kwargs),
        lambda x, w, b: TF.conv1d(x, w, b, **kwargs),
        [x, w, b],
        atol=ATOL,
    )


def test_conv3d():
    rng = np.random.default_rng(4)
    x, w, b = randn(rng, 1, 2, 4, 5, 4), randn(rng, 4, 1, 2, 3, 2), randn(rng, 4)
    check_against_torch(
        lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=1, groups=2),
        lambda x, w, b: TF.conv3d(x, w, b, stride=(1, 2, 1), padding=1, groups=2),
        [x, w, b],
        atol=ATOL,
    )


CONV_T_CASES = [
    dict(),
    dict(stride=2),
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=(2, 3), padding=(0, 1), output_padding=(1, 2)),
    dict(dilation=2, padding=1),
    dict(groups=2, stride=2),
    dict(padding=3),  # more padding than dilation * (k - 1): crops
]


@pytest.mark.parametrize("kwargs", CONV_T_CASES, ids=str)
def test_conv_transpose2d(kwargs):
    rng = np.random.default_rng(5)
    groups = kwargs.get("groups", 1)
    x = randn(rng, 2, 4, 5, 6)
    w, b = randn(rng, 4, 6 // groups, 3, 4), randn(rng, 6)
    check_against_torch(
        lambda x, w, b: F.conv_transpose2d(x, w, b, **kwargs),
        lambda x, w, b: TF.conv_transpose2d(x, w, b, **kwargs),
        [x, w, b],
        atol=ATOL,
    )


def test_conv_transpose1d_and_3d():
    rng = np.random.default_rng(6)
    x, w, b = randn(rng, 2, 4, 7), randn(rng, 4, 1, 3), randn(rng, 2)
    check_against_torch(
        lambda x, w, b: F.conv_transpose1d(x, w, b, stride=3, padding=1, groups=2),
        lambda x, w, b: TF.conv_transpose1d(x, w, b, stride=3, padding=1, groups=2),
        [x, w, b],
        atol=ATOL,
    )
    x, w = randn(rng, 1, 2, 3, 3, 2), randn(rng, 2, 3, 2, 2, 2)
    check_against_torch(
        lambda x, w: F.conv_transpose3d(x, w, stride=2),
        lambda x, w: TF.conv_transpose3d(x, w, stride=2),
        [x, w],
        atol=ATOL,
    )


def test_conv_errors_name_the_problem():
    x = jnp.ones((1, 3, 5, 5))
    with pytest.raises(RuntimeError, match=r"expected input .* to have 2 channels"):
        F.conv2d(x, jnp.ones((4, 2, 3, 3)))
    with pytest.raises(ValueError, match="strided"):
        F.conv2d(x, jnp.ones((4, 3, 3, 3)), stride=2, padding="same")
    with pytest.raises(ValueError, match="'same' or 'valid'"):
        F.conv2d(x, jnp.ones((4, 3, 3, 3)), padding="full")
    with pytest.raises(RuntimeError, match="4-D"):
        F.conv2d(jnp.ones((5, 5)), jnp.ones((4, 3, 3, 3)))
    with pytest.raises(RuntimeError, match="divisible by groups"):
        F.conv2d(jnp.ones((1, 4, 5, 5)), jnp.ones((3, 2, 3, 3)), groups=2)
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose2d(x, jnp.ones((3, 2, 3, 3)), stride=1, output_padding=1)
