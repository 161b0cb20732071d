"""cosine_similarity, pairwise_distance and the shape helpers against torch."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import spx.nn.functional as F

from ._reference import assert_close, check_against_torch, randn, torch

TF = torch.nn.functional


@pytest.mark.parametrize(("s1", "s2", "dim"), [((4, 5), (4, 5), 1), ((3, 4, 5), (4, 5), -1),
                                               ((6,), (6,), 0)])  # fmt: skip
def test_cosine_similarity(s1, s2, dim):
    rng = np.random.default_rng(0)
    check_against_torch(lambda a, b: F.cosine_similarity(a, b, dim),
                        lambda a, b: TF.cosine_similarity(a, b, dim),
                        [randn(rng, *s1), randn(rng, *s2)])  # fmt: skip


def test_cosine_similarity_zero_vector_is_finite():
    y = F.cosine_similarity(jnp.zeros((2, 3)), jnp.ones((2, 3)))
    assert_close(y, TF.cosine_similarity(torch.zeros(2, 3), torch.ones(2, 3)))


@pytest.mark.parametrize(("p", "keepdim"), [(2.0, False), (1.0, True), (3.0, False)])
def test_pairwise_distance(p, keepdim):
    rng = np.random.default_rng(1)
    check_against_torch(lambda a, b: F.pairwise_distance(a, b, p, keepdim=keepdim),
                        lambda a, b: TF.pairwise_distance(a, b, p, keepdim=keepdim),
                        [randn(rng, 4, 6), randn(rng, 4, 6)])  # fmt: skip


@pytest.mark.parametrize(("start", "end"), [(0, -1), (1, -1), (1, 2), (-2, -1)])
def test_flatten_unflatten(start, end):
    x = np.arange(120.0, dtype=np.float32).reshape(2, 3, 4, 5)
    y = F.flatten(jnp.asarray(x), start, end)
    ref = torch.flatten(torch.tensor(x), start, end)
    assert_close(y, ref)
    assert F.unflatten(jnp.ones((2, 12)), 1, (3, -1)).shape == (2, 3, 4)
    assert F.flatten(jnp.ones(())).shape == (1,)


def test_pixel_shuffle_roundtrip():
    x = np.arange(2 * 8 * 3 * 3, dtype=np.float32).reshape(2, 8, 3, 3)
    y = F.pixel_shuffle(jnp.asarray(x), 2)
    assert_close(y, TF.pixel_shuffle(torch.tensor(x), 2))
    assert_close(F.pixel_unshuffle(y, 2), x)
    assert_close(F.pixel_unshuffle(y, 2), TF.pixel_unshuffle(torch.tensor(np.asarray(y)), 2))


@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, 3.0, 0.5, float("inf")])
def test_pdist_values_and_gradients(p):
    import spx

    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    x[3] = x[1]  # a zero distance: torch's gradient there is 0, not NaN
    a, b = spx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got, want = spx.nn.functional.pdist(a, p), TF.pdist(b, p)
    (got * spx.arange(10.0)).sum().backward()
    (want * torch.arange(10.0)).sum().backward()
    assert_close(got.detach().numpy(), want.detach())
    assert_close(a.grad.numpy(), b.grad, atol=1e-5)
    assert_close(spx.pdist(spx.tensor(x), p).numpy(), torch.pdist(torch.tensor(x), p))
    with pytest.raises(RuntimeError, match="2D"):
        spx.pdist(spx.ones(3))
    with pytest.raises(RuntimeError, match="floating-point"):
        spx.pdist(spx.ones(3, 3, dtype=spx.int32))
