"""Bernoulli and Binomial against torch.distributions."""

import numpy as np
import pytest

import spx
import spx.distributions as D
from tests.distributions._parity import (
    Case,
    assert_close,
    check_grads,
    check_sample_moments,
    check_shapes,
    check_values,
    host,
)

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(2)
_F = np.float32

CASES = [
    Case(
        "bernoulli-probs",
        lambda D, p: D.Bernoulli(probs=p["probs"]),
        {"probs": np.array([0.1, 0.5, 0.8], _F)},
        np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]], _F),
    ),
    Case(
        "bernoulli-logits",
        lambda D, p: D.Bernoulli(logits=p["logits"]),
        {"logits": _rng.standard_normal((2, 3)).astype(_F)},
        np.array([0.0, 1.0, 1.0], _F),
    ),
    Case(
        "bernoulli-scalar",
        lambda D, p: D.Bernoulli(p["probs"]),
        {"probs": 0.3},
        np.array([0.0, 1.0], _F),
    ),
    Case(
        "binomial-probs",
        lambda D, p: D.Binomial(10, probs=p["probs"]),
        {"probs": np.array([0.1, 0.5, 0.75], _F)},
        np.array([[0.0, 5.0, 10.0], [3.0, 2.0, 7.0]], _F),
        rtol=1e-4,
        atol=1e-5,
    ),
    Case(
        "binomial-logits-tensor-count",
        lambda D, p: D.Binomial(p["total_count"], logits=p["logits"]),
        {"total_count": np.array([[4.0], [4.0]], _F), "logits": np.array([-1.0, 0.5], _F)},
        np.array([0.0, 4.0], _F),
        rtol=1e-4,
        atol=1e-5,
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


@pytest.mark.parametrize("expand", [True, False])
def test_enumerate_support_matches_torch(expand):
    s = D.Bernoulli(spx.full((2, 3), 0.4)).enumerate_support(expand)
    t = torch.distributions.Bernoulli(torch.full((2, 3), 0.4)).enumerate_support(expand)
    np.testing.assert_array_equal(host(s), t.numpy())
    s = D.Binomial(3, spx.full((2,), 0.4)).enumerate_support(expand)
    t = torch.distributions.Binomial(3, torch.full((2,), 0.4)).enumerate_support(expand)
    np.testing.assert_array_equal(host(s), t.numpy())


def test_sample_statistics():
    spx.manual_seed(0)
    b = D.Bernoulli(spx.tensor([0.1, 0.5, 0.9]))
    x = b.sample((20000,))
    assert set(np.unique(host(x))) <= {0.0, 1.0}
    check_sample_moments(x, b.mean, b.variance)
    n = D.Binomial(spx.tensor([5.0, 20.0]), spx.tensor([0.3, 0.8]))
    x = n.sample((20000,))
    assert (host(x) % 1 == 0).all() and (host(x) <= np.array([5, 20])).all()
    check_sample_moments(x, n.mean, n.variance)


def test_binomial_with_unequal_counts_has_no_entropy():
    d = D.Binomial(spx.tensor([2.0, 3.0]), spx.tensor([0.5, 0.5]))
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count"):
        d.entropy()
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count"):
        d.enumerate_support()


def test_validation_errors_match_torch():
    with pytest.raises(ValueError, match=r"Expected parameter probs .* Interval\(lower_bound=0.0"):
        D.Bernoulli(spx.tensor([1.5]))
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified"):
        D.Bernoulli()
    with pytest.raises(ValueError, match=r"support \(Boolean\(\)\)"):
        D.Bernoulli(spx.tensor([0.5])).log_prob(spx.tensor([0.5]))
    with pytest.raises(ValueError, match=r"Expected parameter total_count .* IntegerGreaterThan"):
        D.Binomial(spx.tensor([-1.0]), spx.tensor([0.5]))
    with pytest.raises(ValueError, match=r"Expected parameter total_count"):
        D.Binomial(spx.tensor([2.5]), spx.tensor([0.5]))
    with pytest.raises(ValueError, match=r"support \(IntegerInterval\(lower_bound=0"):
        D.Binomial(3, spx.tensor([0.5])).log_prob(spx.tensor([4.0]))


def test_logits_gradient_of_the_lazy_probs():
    # probs made from logits (a lazy property) carries the gradient back to the logits.
    logits = np.array([0.3, -2.0], _F)
    sl = spx.tensor(logits, requires_grad=True)
    with spx.no_grad():
        d = D.Bernoulli(logits=sl)
    d.probs.sum().backward()  # computed on first access, with grad enabled as in torch
    tl = torch.tensor(logits, requires_grad=True)
    with torch.no_grad():
        t = torch.distributions.Bernoulli(logits=tl)
    t.probs.sum().backward()
    assert_close(sl.grad, tl.grad)
