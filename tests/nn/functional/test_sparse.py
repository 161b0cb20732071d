"""embedding and one_hot against torch: lookups, weight gradients (padding row gets none,
max_norm, scale_grad_by_freq), validation; one_hot values, dtype and errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx.nn.functional as F

from ._reference import assert_close, check_against_torch, randn, torch

TF = torch.nn.functional
IDX = np.array([[0, 3, 3, 1], [2, 0, 4, 3]])


@pytest.mark.parametrize("padding_idx", [None, 0, 3, -2])
def test_embedding_padding_row_gets_no_gradient(padding_idx):
    rng = np.random.default_rng(0)
    w = randn(rng, 5, 3)
    out = check_against_torch(
        lambda w: F.embedding(jnp.asarray(IDX), w, padding_idx),
        lambda w: TF.embedding(torch.as_tensor(IDX), w, padding_idx),
        [w],
    )
    if padding_idx is not None:
        # The padding row still reads its stored value (torch does not zero the output).
        hits = padding_idx % 5 == IDX
        assert_close(out[hits], np.broadcast_to(w[padding_idx], (hits.sum(), 3)))
        # (check_against_torch compared the weight gradient: torch's padding row is zero.)


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm(norm_type):
    rng = np.random.default_rng(1)
    w = randn(rng, 5, 3, scale=2.0)
    # torch renormalizes its weight in place; give it a copy and compare outputs and grads.
    check_against_torch(
        lambda w: F.embedding(jnp.asarray(IDX), w, max_norm=1.0, norm_type=norm_type),
        lambda w: TF.embedding(torch.as_tensor(IDX), w.clone(), max_norm=1.0, norm_type=norm_type),
        [w],
    )


def test_embedding_scale_grad_by_freq():
    rng = np.random.default_rng(2)
    w = randn(rng, 5, 3)
    check_against_torch(
        lambda w: F.embedding(jnp.asarray(IDX), w, padding_idx=1, scale_grad_by_freq=True),
        lambda w: TF.embedding(torch.as_tensor(IDX), w, padding_idx=1, scale_grad_by_freq=True),
        [w],
    )


def test_embedding_under_jit():
    w = jnp.arange(15.0).reshape(5, 3)
    f = jax.jit(lambda i, w: F.embedding(i, w, padding_idx=0))
    assert_close(f(jnp.asarray(IDX), w), np.asarray(w)[IDX])


def test_embedding_errors():
    w = jnp.ones((3, 2))
    with pytest.raises(ValueError, match="padding_idx 5"):
        F.embedding(jnp.array([1]), w, padding_idx=5)
    with pytest.raises(TypeError, match="integer"):
        F.embedding(jnp.array([1.0]), w)
    with pytest.raises(RuntimeError, match="num_embeddings"):
        F.embedding(jnp.array([1]), jnp.ones(3))


@pytest.mark.parametrize("num_classes", [-1, 6])
def test_one_hot(num_classes):
    x = np.array([[0, 2], [4, 1]])
    y = F.one_hot(jnp.asarray(x), num_classes)
    ref = TF.one_hot(torch.as_tensor(x), num_classes)
    assert y.dtype == jnp.int32  # torch gives int64; documented
    np.testing.assert_array_equal(np.asarray(y), ref.numpy())


def test_one_hot_errors_and_jit():
    with pytest.raises(RuntimeError, match="non-negative"):
        F.one_hot(jnp.array([1, -1]))
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        F.one_hot(jnp.array([1, 3]), 3)
    with pytest.raises(ValueError, match="explicitly"):
        jax.jit(lambda x: F.one_hot(x))(jnp.array([1, 2]))
    assert jax.jit(lambda x: F.one_hot(x, 4))(jnp.array([1, 2])).shape == (2, 4)
    with pytest.raises(TypeError, match="integer"):
        F.one_hot(jnp.array([1.0]))
