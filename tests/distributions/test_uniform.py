"""Uniform against torch.distributions."""

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
        "uniform-batch",
        lambda D, p: D.Uniform(p["low"], p["high"]),
        {"low": np.array([0.0, -2.0, 1.0], _F), "high": np.array([1.0, 3.0, 1.5], _F)},
        np.array([[0.5, 0.0, 1.2], [0.0, -1.5, 1.49]], _F),
        cdf=True,
        icdf=True,
    ),
    Case(
        "uniform-scalar",
        lambda D, p: D.Uniform(p["low"], p["high"]),
        {"low": -1.0, "high": 4.0},
        np.array([-1.0, 0.0, 3.9], _F),
        cdf=True,
        icdf=True,
    ),
    Case(
        "uniform-broadcast",
        lambda D, p: D.Uniform(p["low"], p["high"]),
        {"low": np.array([[0.0], [1.0]], _F), "high": np.array([2.0, 5.0], _F)},
        np.array([1.5, 1.75], _F),
        cdf=True,
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


def test_rsample_is_low_plus_uniform_noise_times_the_width():
    low = spx.tensor([0.0, -1.0], requires_grad=True)
    high = spx.tensor([2.0, 4.0], requires_grad=True)
    spx.manual_seed(5)
    u = host(spx.rand((6, 2)))
    spx.manual_seed(5)
    x = D.Uniform(low, high).rsample((6,))
    assert_close(x, host(low) + u * (host(high) - host(low)), rtol=1e-6)
    x.sum().backward()
    assert_close(low.grad, (1 - u).sum(0), rtol=1e-5)
    assert_close(high.grad, u.sum(0), rtol=1e-5)


def test_sample_statistics():
    spx.manual_seed(0)
    d = D.Uniform(spx.tensor([0.0, -3.0]), spx.tensor([1.0, 5.0]))
    x = d.sample((20000,))
    assert (host(x) >= host(d.low)).all() and (host(x) < host(d.high)).all()
    check_sample_moments(x, d.mean, d.variance)


def test_log_prob_outside_is_minus_inf_without_validation():
    d = D.Uniform(0.0, 1.0, validate_args=False)
    t = torch.distributions.Uniform(0.0, 1.0, validate_args=False)
    v = np.array([-0.5, 0.5, 1.0], _F)
    assert_close(d.log_prob(spx.tensor(v)), t.log_prob(torch.tensor(v)))


def test_validation_errors_match_torch():
    with pytest.raises(ValueError, match=r"Expected parameter low .* LessThan\(upper_bound="):
        D.Uniform(spx.tensor([2.0]), spx.tensor([1.0]))
    with pytest.raises(ValueError, match=r"support \(Interval\(lower_bound="):
        D.Uniform(0.0, 1.0).log_prob(spx.tensor([1.5]))
