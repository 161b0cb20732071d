"""MixtureSameFamily against torch.distributions: Gaussian mixtures with scalar and vector
events, batched and broadcast mixture weights, gradients, samples and the errors."""

import numpy as np
import pytest

import spx
import spx.distributions as D
from tests.distributions._parity import (
    Case,
    check_grads,
    check_sample_moments,
    check_shapes,
    check_values,
)

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(11)
_F = np.float32


def _normal_mixture(D, p):
    return D.MixtureSameFamily(D.Categorical(logits=p["logits"]), D.Normal(p["loc"], p["scale"]))


def _vector_mixture(D, p):
    comp = D.Independent(D.Normal(p["loc"], p["scale"]), 1)
    return D.MixtureSameFamily(D.Categorical(logits=p["logits"]), comp)


CASES = [
    Case(
        "gmm",
        _normal_mixture,
        {
            "logits": np.array([0.2, -1.0, 0.7], _F),
            "loc": np.array([-2.0, 0.0, 3.0], _F),
            "scale": np.array([0.5, 1.0, 2.0], _F),
        },
        np.array([-2.5, 0.1, 1.0, 4.0], _F),
        props=("mean", "variance", "stddev"),
        entropy=False,  # torch has none
        cdf=True,
        rtol=1e-5,
    ),
    Case(
        "gmm-batched",
        _normal_mixture,
        {
            "logits": _rng.standard_normal((2, 3)).astype(_F),
            "loc": _rng.standard_normal((2, 3)).astype(_F),
            "scale": _rng.uniform(0.5, 2.0, (2, 3)).astype(_F),
        },
        _rng.standard_normal((4, 2)).astype(_F),
        props=("mean", "variance", "stddev"),
        entropy=False,
        cdf=True,
    ),
    Case(
        "gmm-shared-weights",  # one Categorical for every batch entry
        _normal_mixture,
        {
            "logits": np.array([0.0, 1.0, -0.5], _F),
            "loc": _rng.standard_normal((2, 3)).astype(_F),
            "scale": _rng.uniform(0.5, 2.0, (2, 3)).astype(_F),
        },
        _rng.standard_normal((4, 2)).astype(_F),
        props=("mean", "variance", "stddev"),
        entropy=False,
    ),
    Case(
        "vector-events",
        _vector_mixture,
        {
            "logits": np.array([0.3, -0.3], _F),
            "loc": _rng.standard_normal((2, 3)).astype(_F),
            "scale": _rng.uniform(0.5, 2.0, (2, 3)).astype(_F),
        },
        _rng.standard_normal((4, 3)).astype(_F),
        props=("mean", "variance", "stddev"),
        entropy=False,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_values_match_torch(case):
    check_values(case)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradients_match_torch(case):
    check_grads(case)


# torch 2.13's sample() fails for the shared weights (its gather gets too few index dims):
# that case's draws are checked on their own below.
SAMPLED = [c for c in CASES if c.id != "gmm-shared-weights"]


@pytest.mark.parametrize("case", SAMPLED, ids=lambda c: c.id)
def test_sample_shapes_and_expand_match_torch(case):
    check_shapes(case)


def test_shared_weights_sample_one_component_per_mixture_and_batch_entry():
    # torch 2.13 raises in sample() when the Categorical broadcasts over the batch; spx draws.
    spx.manual_seed(1)
    loc = spx.tensor([[-10.0, 10.0], [-20.0, 20.0]])
    d = _normal_mixture(
        D, {"logits": spx.tensor([0.0, 0.0]), "loc": loc, "scale": spx.ones(2, 2) * 0.01}
    )
    x = d.sample((4000, 3)).numpy(force=True)
    assert x.shape == (4000, 3, 2)
    assert np.all(np.isin(np.round(x), [-10.0, 10.0, -20.0, 20.0]))
    assert np.all(np.abs(x[..., 0]) < 11) and np.all(np.abs(x[..., 1]) > 19)
    # the batch entries pick their components independently: both positive a quarter of the time
    both = ((x[..., 0] > 0) & (x[..., 1] > 0)).mean()
    assert abs(both - 0.25) < 0.02, both
    check_sample_moments(d.sample((40000,)), d.mean, d.variance)


def test_samples_follow_the_mixture():
    spx.manual_seed(0)
    d = _normal_mixture(
        D,
        {
            "logits": spx.tensor([[0.0, 1.0], [2.0, -1.0]]),
            "loc": spx.tensor([[-3.0, 2.0], [0.0, 5.0]]),
            "scale": spx.tensor([[1.0, 0.5], [2.0, 1.0]]),
        },
    )
    check_sample_moments(d.sample((40000,)), d.mean, d.variance)
    v = _vector_mixture(
        D,
        {
            "logits": spx.tensor([0.0, 0.0]),
            "loc": spx.tensor([[-1.0, 4.0], [1.0, -4.0]]),
            "scale": spx.tensor([[0.1, 0.1], [0.1, 0.1]]),
        },
    )
    x = v.sample((2000,)).numpy(force=True)
    # each draw takes both coordinates from one component, never a mix of the two
    near = np.minimum(np.abs(x - [-1.0, 4.0]).max(-1), np.abs(x - [1.0, -4.0]).max(-1))
    assert near.max() < 1.0
    assert not v.has_rsample


def test_support_checks_each_component_like_torch():
    d = D.MixtureSameFamily(D.Categorical(logits=spx.zeros(2)), D.Gamma(spx.ones(2), spx.ones(2)))
    td = torch.distributions.MixtureSameFamily(
        torch.distributions.Categorical(logits=torch.zeros(2)),
        torch.distributions.Gamma(torch.ones(2), torch.ones(2)),
    )
    x = np.array([1.0, -1.0, 0.5], _F)
    assert d.support.check(spx.tensor(x)).tolist() == td.support.check(torch.tensor(x)).tolist()
    with pytest.raises(ValueError, match="support"):
        d.log_prob(spx.tensor([-1.0]))


def test_errors_match_torch():
    comp = D.Normal(spx.zeros(3), spx.ones(3))
    with pytest.raises(ValueError, match="Categorical"):
        D.MixtureSameFamily(D.Normal(0.0, 1.0), comp)
    with pytest.raises(ValueError, match="Component distribution"):
        D.MixtureSameFamily(D.Categorical(logits=spx.zeros(3)), "normal")
    with pytest.raises(ValueError, match=r"does not equal `component_distribution.batch_shape"):
        D.MixtureSameFamily(D.Categorical(logits=spx.zeros(2)), comp)
    with pytest.raises(ValueError, match="not compatible"):
        D.MixtureSameFamily(
            D.Categorical(logits=spx.zeros(4, 3)), D.Normal(spx.zeros(2, 3), spx.ones(2, 3))
        )
    with pytest.raises(ValueError, match="not compatible"):
        torch.distributions.MixtureSameFamily(
            torch.distributions.Categorical(logits=torch.zeros(4, 3)),
            torch.distributions.Normal(torch.zeros(2, 3), torch.ones(2, 3)),
        )
