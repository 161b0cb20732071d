"""Gamma, Beta and Dirichlet against torch.distributions, and their reparameterized draws."""

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

_F = np.float32

CASES = [
    Case(
        "gamma-batch",
        lambda D, p: D.Gamma(p["concentration"], p["rate"]),
        {"concentration": np.array([0.5, 2.0, 7.5], _F), "rate": np.array([1.0, 0.5, 3.0], _F)},
        np.array([[0.2, 1.0, 2.0], [3.0, 0.5, 0.01]], _F),
        cdf=True,
        cdf_grad=False,  # torch has no derivative of igamma in the concentration
        rtol=1e-4,
    ),
    Case(
        "gamma-scalar",
        lambda D, p: D.Gamma(p["concentration"], p["rate"]),
        {"concentration": 3.0, "rate": 2.0},
        np.array([0.1, 1.0, 4.0], _F),
        cdf=True,
        rtol=1e-4,
    ),
    Case(
        "beta-batch",
        lambda D, p: D.Beta(p["c1"], p["c0"]),
        {"c1": np.array([0.5, 2.0, 5.0], _F), "c0": np.array([0.5, 3.0, 1.5], _F)},
        np.array([[0.1, 0.5, 0.9], [0.7, 0.2, 0.4]], _F),
        rtol=1e-4,
        atol=1e-5,
    ),
    Case(
        "beta-scalar",
        lambda D, p: D.Beta(p["c1"], p["c0"]),
        {"c1": 2.0, "c0": 4.0},
        np.array([0.1, 0.5], _F),
        rtol=1e-4,
        atol=1e-5,
    ),
    Case(
        "dirichlet-batch",
        lambda D, p: D.Dirichlet(p["concentration"]),
        {"concentration": np.array([[0.5, 1.0, 2.0], [3.0, 4.0, 0.7]], _F)},
        np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], _F),
        rtol=1e-4,
        atol=1e-5,
    ),
    Case(
        "dirichlet-sparse-mode",  # all concentrations < 1: torch's one-hot mode
        lambda D, p: D.Dirichlet(p["concentration"]),
        {"concentration": np.array([[0.5, 0.3, 0.2], [2.0, 3.0, 1.0]], _F)},
        np.array([0.2, 0.3, 0.5], _F),
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


def test_sample_statistics():
    spx.manual_seed(0)
    g = D.Gamma(spx.tensor([0.5, 2.0, 9.0]), spx.tensor([1.0, 4.0, 0.5]))
    x = g.rsample((20000,))
    assert (host(x) > 0).all()
    check_sample_moments(x, g.mean, g.variance)
    b = D.Beta(spx.tensor([0.5, 2.0]), spx.tensor([0.5, 5.0]))
    x = b.sample((20000,))
    assert ((host(x) > 0) & (host(x) < 1)).all()
    check_sample_moments(x, b.mean, b.variance)
    d = D.Dirichlet(spx.tensor([[1.0, 2.0, 3.0], [0.3, 0.3, 5.0]]))
    x = d.sample((20000,))
    assert x.shape == (20000, 2, 3)
    np.testing.assert_allclose(host(x).sum(-1), 1.0, rtol=1e-5)
    check_sample_moments(x, d.mean, d.variance)


def _expected_rsample_grads(dist, params, weight, n=20000):
    """The average over n draws of d(weight . x)/d(params): an unbiased estimate of
    d E[weight . x] / d(params) for a reparameterized sampler."""
    spx.manual_seed(0)
    x = dist.rsample((n,))
    (x * spx.tensor(weight)).reshape(n, -1).sum(-1).mean().backward()
    return [host(p.grad) for p in params]


def test_gamma_rsample_gradients_are_unbiased():
    alpha = spx.tensor([0.5, 2.0, 6.0], requires_grad=True)
    rate = spx.tensor([1.0, 2.0, 0.5], requires_grad=True)
    ga, gr = _expected_rsample_grads(D.Gamma(alpha, rate), [alpha, rate], np.ones(3, _F))
    a, r = host(alpha), host(rate)
    # E[x] = alpha / rate.
    np.testing.assert_allclose(ga, 1 / r, rtol=0.05)
    np.testing.assert_allclose(gr, -a / r**2, rtol=0.05)


def test_beta_rsample_gradients_are_unbiased():
    c1 = spx.tensor([0.7, 2.0], requires_grad=True)
    c0 = spx.tensor([1.5, 4.0], requires_grad=True)
    g1, g0 = _expected_rsample_grads(D.Beta(c1, c0), [c1, c0], np.ones(2, _F))
    a, b = host(c1), host(c0)
    # E[x] = a / (a + b).
    np.testing.assert_allclose(g1, b / (a + b) ** 2, rtol=0.05)
    np.testing.assert_allclose(g0, -a / (a + b) ** 2, rtol=0.05)


def test_dirichlet_rsample_gradients_are_unbiased():
    conc = spx.tensor([0.8, 2.0, 3.5], requires_grad=True)
    w = np.array([1.0, -2.0, 0.5], _F)
    (g,) = _expected_rsample_grads(D.Dirichlet(conc), [conc], w)
    a = host(conc)
    a0 = a.sum()
    # E[x_i] = a_i / a0: d/da_j sum_i w_i a_i / a0 = w_j / a0 - sum_i w_i a_i / a0^2.
    want = w / a0 - (w * a).sum() / a0**2
    np.testing.assert_allclose(g, want, rtol=0.05, atol=0.005)


def test_gamma_cdf_gradients():
    conc, rate = np.array([0.5, 2.0, 7.5], _F), np.array([1.0, 0.5, 3.0], _F)
    x = np.array([0.3, 2.0, 2.5], _F)
    # d/drate against torch (torch has no d/dconcentration of igamma).
    sr = spx.tensor(rate, requires_grad=True)
    D.Gamma(spx.tensor(conc), sr).cdf(spx.tensor(x)).sum().backward()
    tr = torch.tensor(rate, requires_grad=True)
    torch.distributions.Gamma(torch.tensor(conc), tr).cdf(torch.tensor(x)).sum().backward()
    assert_close(sr.grad, tr.grad, rtol=1e-4)
    # d/dconcentration (spx has it) against central differences of torch's cdf in float64.
    sc = spx.tensor(conc, requires_grad=True)
    D.Gamma(sc, spx.tensor(rate)).cdf(spx.tensor(x)).sum().backward()
    c64, h = torch.tensor(conc, dtype=torch.float64), 1e-6
    cdf = lambda c: torch.special.gammainc(c, torch.tensor(rate * x, dtype=torch.float64))  # noqa: E731
    assert_close(sc.grad, (cdf(c64 + h) - cdf(c64 - h)) / (2 * h), rtol=1e-3, atol=1e-5)


def test_validation_errors_match_torch():
    with pytest.raises(ValueError, match=r"Expected parameter concentration"):
        D.Gamma(spx.tensor([-1.0]), spx.tensor([1.0]))
    with pytest.raises(ValueError, match=r"Expected parameter rate"):
        D.Gamma(1.0, 0.0)
    with pytest.raises(ValueError, match=r"support \(GreaterThanEq\(lower_bound=0.0\)\)"):
        D.Gamma(1.0, 1.0).log_prob(spx.tensor([-0.5]))
    # torch's Beta builds its Dirichlet first, so the Dirichlet's check reports the error.
    with pytest.raises(ValueError, match=r"Expected parameter concentration .* Dirichlet"):
        D.Beta(spx.tensor([-1.0]), spx.tensor([1.0]))
    with pytest.raises(ValueError, match=r"support \(Interval\(lower_bound=0.0, upper_bound=1.0"):
        D.Beta(1.0, 1.0).log_prob(spx.tensor([1.5]))
    with pytest.raises(ValueError, match=r"IndependentConstraint\(GreaterThan"):
        D.Dirichlet(spx.tensor([1.0, 0.0]))
    with pytest.raises(ValueError, match=r"support \(Simplex\(\)\)"):
        D.Dirichlet(spx.ones(3)).log_prob(spx.tensor([0.5, 0.5, 0.5]))
    with pytest.raises(ValueError, match="at least one-dimensional"):
        D.Dirichlet(spx.tensor(1.0))


def test_beta_of_numbers_matches_torch():
    s, t = D.Beta(2.0, 3.0), torch.distributions.Beta(2.0, 3.0)
    assert tuple(s.batch_shape) == tuple(t.batch_shape) == ()
    assert_close(s.concentration1, t.concentration1)
    assert_close(s.log_prob(spx.tensor(0.3)), t.log_prob(torch.tensor(0.3)), rtol=1e-5)
