"""Poisson against torch.distributions."""

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
    host,
)

torch = pytest.importorskip("torch")

_F = np.float32

CASES = [
    Case(
        "poisson-batch",
        lambda D, p: D.Poisson(p["rate"]),
        {"rate": np.array([0.5, 3.0, 12.0], _F)},
        np.array([[0.0, 2.0, 11.0], [3.0, 0.0, 20.0]], _F),
        entropy=False,
    ),
    Case(
        "poisson-scalar",
        lambda D, p: D.Poisson(p["rate"]),
        {"rate": 4.0},
        np.array([0.0, 4.0, 9.0], _F),
        entropy=False,
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


def test_entropy_is_not_implemented_as_in_torch():
    with pytest.raises(NotImplementedError):
        torch.distributions.Poisson(torch.tensor([2.0])).entropy()
    with pytest.raises(NotImplementedError):  # the generic entropy has no carrier measure
        D.Poisson(spx.tensor([2.0])).entropy()


def test_sample_statistics():
    spx.manual_seed(0)
    d = D.Poisson(spx.tensor([0.7, 4.0, 30.0]))
    x = d.sample((20000,))
    assert (host(x) % 1 == 0).all() and host(x).dtype == np.float32
    check_sample_moments(x, d.mean, d.variance)


def test_validation_errors_match_torch():
    with pytest.raises(ValueError, match=r"Expected parameter rate .* GreaterThanEq"):
        D.Poisson(spx.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"support \(IntegerGreaterThan\(lower_bound=0\)\)"):
        D.Poisson(spx.tensor([1.0])).log_prob(spx.tensor([1.5]))
