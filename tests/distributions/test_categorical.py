"""Categorical and OneHotCategorical against torch.distributions."""

import numpy as np
import pytest

import spx
import spx.distributions as D
from tests.distributions._parity import (
    Case,
    assert_close,
    check_grads,
    check_shapes,
    check_values,
    host,
)

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(1)
_F = np.float32
_PROPS = ("mean", "variance", "mode")

CASES = [
    Case(
        "categorical-probs-unnormalized",
        lambda D, p: D.Categorical(probs=p["probs"]),
        {"probs": np.array([1.0, 2.0, 3.0, 4.0], _F)},
        np.array([0, 3, 1], np.int64),
        props=_PROPS,
    ),
    Case(
        "categorical-logits-batch",
        lambda D, p: D.Categorical(logits=p["logits"]),
        {"logits": _rng.standard_normal((2, 3, 5)).astype(_F)},
        _rng.integers(0, 5, (4, 2, 3)),
        props=_PROPS,
    ),
    Case(
        "categorical-probs-with-a-zero",
        lambda D, p: D.Categorical(probs=p["probs"]),
        {"probs": np.array([[0.0, 0.3, 0.7], [0.2, 0.2, 0.6]], _F)},
        np.array([[1, 2], [2, 0]], np.int64),
        props=_PROPS,
        atol=1e-5,
    ),
    Case(
        "onehot-logits",
        lambda D, p: D.OneHotCategorical(logits=p["logits"]),
        {"logits": _rng.standard_normal((3, 4)).astype(_F)},
        np.eye(4, dtype=_F)[[0, 3, 1]],
        props=("mean", "variance", "mode", "stddev"),
    ),
    Case(
        "onehot-probs",
        lambda D, p: D.OneHotCategorical(probs=p["probs"]),
        {"probs": np.array([0.1, 0.6, 0.3], _F)},
        np.eye(3, dtype=_F),
        props=("mean", "variance", "mode", "stddev"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_values_match_torch(case):
    check_values(case)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradients_match_torch(case):
    check_grads(case)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_sample_shapes_and_expand_match_torch(case):
    check_shapes(case)


def test_probs_and_logits_are_normalized_as_torchs():
    raw = np.array([[1.0, 3.0], [2.0, 2.0]], _F)
    s, t = D.Categorical(probs=spx.tensor(raw)), torch.distributions.Categorical(torch.tensor(raw))
    assert_close(s.probs, t.probs)
    assert_close(s.logits, t.logits)
    s = D.Categorical(logits=spx.tensor(raw))
    t = torch.distributions.Categorical(logits=torch.tensor(raw))
    assert_close(s.logits, t.logits)
    assert_close(s.probs, t.probs)
    assert s.param_shape == (2, 2)


@pytest.mark.parametrize("expand", [True, False])
def test_enumerate_support_matches_torch(expand):
    logits = np.zeros((2, 3), _F)
    for cls in ("Categorical", "OneHotCategorical"):
        s = getattr(D, cls)(logits=spx.tensor(logits)).enumerate_support(expand)
        t = getattr(torch.distributions, cls)(logits=torch.tensor(logits)).enumerate_support(expand)
        assert tuple(s.shape) == tuple(t.shape)
        np.testing.assert_array_equal(host(s), t.numpy())


def test_sample_frequencies_match_the_probabilities():
    spx.manual_seed(0)
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], _F)
    n = 20000
    x = host(D.Categorical(spx.tensor(probs)).sample((n,)))
    assert x.shape == (n, 2) and np.issubdtype(x.dtype, np.integer)
    freq = np.stack([(x == k).mean(0) for k in range(3)], -1)
    se = np.sqrt(probs * (1 - probs) / n)
    np.testing.assert_array_less(np.abs(freq - probs), 5 * se)
    oh = host(D.OneHotCategorical(spx.tensor(probs)).sample((n,)))
    assert oh.shape == (n, 2, 3) and (oh.sum(-1) == 1).all()
    np.testing.assert_array_less(np.abs(oh.mean(0) - probs), 5 * se)


def test_straight_through_rsample_passes_the_probs_gradient():
    logits = np.array([0.2, -0.4, 1.0], _F)
    w = np.array([1.0, 2.0, 3.0], _F)
    sl = spx.tensor(logits, requires_grad=True)
    spx.manual_seed(0)
    x = D.OneHotCategoricalStraightThrough(logits=sl).rsample()
    assert host(x).sum() == 1.0
    (x * spx.tensor(w)).sum().backward()
    tl = torch.tensor(logits, requires_grad=True)
    (torch.softmax(tl, -1) * torch.tensor(w)).sum().backward()  # d(sample)/dlogits = dprobs
    assert_close(sl.grad, tl.grad)


def test_validation_errors_match_torch():
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified"):
        D.Categorical()
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified"):
        D.Categorical(probs=spx.ones(2), logits=spx.ones(2))
    with pytest.raises(ValueError, match="must be at least one-dimensional"):
        D.Categorical(probs=spx.tensor(1.0))
    with pytest.raises(ValueError, match=r"Expected parameter probs .* Simplex\(\)"):
        D.Categorical(probs=spx.tensor([0.5, -0.5, 1.0]))
    with pytest.raises(ValueError, match=r"Expected parameter logits .* IndependentConstraint"):
        D.Categorical(logits=spx.tensor([0.0, float("nan")]))
    c = D.Categorical(probs=spx.tensor([0.2, 0.8]))
    with pytest.raises(
        ValueError, match=r"support \(IntegerInterval\(lower_bound=0, upper_bound=1"
    ):
        c.log_prob(spx.tensor(2))
    with pytest.raises(ValueError, match="support"):
        D.OneHotCategorical(probs=spx.tensor([0.2, 0.8])).log_prob(spx.tensor([1.0, 1.0]))
    assert D.Categorical(probs=spx.tensor([0.5, -0.5]), validate_args=False).batch_shape == ()
