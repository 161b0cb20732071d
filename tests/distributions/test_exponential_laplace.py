"""Exponential and Laplace against torch.distributions."""

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

_rng = np.random.default_rng(3)
_F = np.float32

CASES = [
    Case(
        "exponential-batch",
        lambda D, p: D.Exponential(p["rate"]),
        {"rate": np.array([0.5, 1.0, 4.0], _F)},
        np.array([[0.0, 1.0, 0.1], [3.0, 0.2, 2.5]], _F),
        cdf=True,
        icdf=True,
    ),
    Case(
        "exponential-scalar",
        lambda D, p: D.Exponential(p["rate"]),
        {"rate": 2.0},
        np.array([0.0, 0.5, 3.0], _F),
        cdf=True,
        icdf=True,
    ),
    Case(
        "laplace-batch",
        lambda D, p: D.Laplace(p["loc"], p["scale"]),
        {"loc": np.array([0.0, -1.0, 2.0], _F), "scale": np.array([1.0, 0.5, 3.0], _F)},
        _rng.standard_normal((4, 3)).astype(_F),
        cdf=True,
        icdf=True,
    ),
    Case(
        "laplace-broadcast",
        lambda D, p: D.Laplace(p["loc"], p["scale"]),
        {"loc": np.array([[0.5], [-0.5]], _F), "scale": np.array([0.3, 2.0], _F)},
        np.array([0.1, -0.7], _F),
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


def test_exponential_rsample_is_unit_exponential_noise_over_the_rate():
    rate = spx.tensor([0.5, 2.0], requires_grad=True)
    spx.manual_seed(11)
    e = host(spx.empty((5, 2)).exponential_())
    spx.manual_seed(11)
    x = D.Exponential(rate).rsample((5,))
    assert_close(x, e / host(rate), rtol=1e-6)
    x.sum().backward()
    assert_close(rate.grad, -(e / host(rate) ** 2).sum(0), rtol=1e-5)


def test_laplace_rsample_is_torchs_inverse_cdf_of_uniform_noise():
    loc = spx.tensor([0.0, 1.0], requires_grad=True)
    scale = spx.tensor([1.0, 0.5], requires_grad=True)
    eps = float(np.finfo(np.float32).eps)
    spx.manual_seed(2)
    u = host(spx.empty((5, 2)).uniform_(eps - 1, 1))
    spx.manual_seed(2)
    x = D.Laplace(loc, scale).rsample((5,))
    noise = -np.sign(u) * np.log1p(-np.abs(u))
    assert_close(x, host(loc) + host(scale) * noise, rtol=1e-5, atol=1e-6)
    x.sum().backward()
    assert_close(loc.grad, np.full(2, 5.0))
    assert_close(scale.grad, noise.sum(0), rtol=1e-5)


def test_sample_statistics():
    spx.manual_seed(0)
    for d in (
        D.Exponential(spx.tensor([0.5, 3.0])),
        D.Laplace(spx.tensor([0.0, 2.0]), spx.tensor([1.0, 0.25])),
    ):
        check_sample_moments(d.sample((20000,)), d.mean, d.variance)
        check_sample_moments(d.rsample((20000,)), d.mean, d.variance)


def test_validation_errors_match_torch():
    with pytest.raises(ValueError, match=r"Expected parameter rate .* GreaterThan"):
        D.Exponential(spx.tensor([0.0]))
    with pytest.raises(ValueError, match=r"support \(GreaterThanEq\(lower_bound=0.0\)\)"):
        D.Exponential(1.0).log_prob(spx.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"Expected parameter scale"):
        D.Laplace(0.0, -2.0)
