"""linear / bilinear against torch: outputs and input, weight and bias gradients."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import spx.nn.functional as F

from ._reference import check_against_torch, randn, torch

TF = torch.nn.functional


@pytest.mark.parametrize("in_shape", [(5, 3), (2, 4, 3), (3,)])
def test_linear_with_and_without_bias(in_shape):
    rng = np.random.default_rng(0)
    x, w, b = randn(rng, *in_shape), randn(rng, 4, 3), randn(rng, 4)
    check_against_torch(F.linear, TF.linear, [x, w, b])
    check_against_torch(lambda x, w: F.linear(x, w), lambda x, w: TF.linear(x, w), [x, w])


def test_linear_one_dimensional_weight_is_a_dot_product():
    rng = np.random.default_rng(1)
    check_against_torch(F.linear, TF.linear, [randn(rng, 5, 3), randn(rng, 3)])


def test_linear_shape_mismatch_names_both_shapes():
    with pytest.raises(RuntimeError, match=r"in_features=3.*\(5, 4\)"):
        F.linear(jnp.ones((5, 4)), jnp.ones((2, 3)))


@pytest.mark.parametrize("lead", [(6,), (2, 3)])
def test_bilinear(lead):
    rng = np.random.default_rng(2)
    x1, x2 = randn(rng, *lead, 3), randn(rng, *lead, 4)
    w, b = randn(rng, 5, 3, 4), randn(rng, 5)
    check_against_torch(F.bilinear, TF.bilinear, [x1, x2, w, b])
    check_against_torch(
        lambda a, c, w: F.bilinear(a, c, w), lambda a, c, w: TF.bilinear(a, c, w), [x1, x2, w]
    )


def test_bilinear_mismatched_features_raise():
    with pytest.raises(RuntimeError, match="bilinear"):
        F.bilinear(jnp.ones((2, 3)), jnp.ones((2, 4)), jnp.ones((5, 4, 4)))
