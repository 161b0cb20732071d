"""Independent against torch.distributions: event dims from batch dims."""

import numpy as np
import pytest

import spx
import spx.distributions as D
from tests.distributions._parity import Case, check_grads, check_shapes, check_values

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(5)
_F = np.float32

CASES = [
    Case(
        "normal-1",
        lambda D, p: D.Independent(D.Normal(p["loc"], p["scale"]), 1),
        {"loc": _rng.standard_normal((2, 3)).astype(_F), "scale": np.full((2, 3), 0.7, _F)},
        _rng.standard_normal((4, 2, 3)).astype(_F),
        props=("mean", "variance", "stddev", "mode"),
    ),
    Case(
        "bernoulli-2",
        lambda D, p: D.Independent(D.Bernoulli(logits=p["logits"]), 2),
        {"logits": _rng.standard_normal((2, 3)).astype(_F)},
        np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]], _F),
        props=("mean", "variance"),
    ),
    Case(
        "mvn-1",
        lambda D, p: D.Independent(D.MultivariateNormal(p["loc"], scale_tril=p["tril"]), 1),
        {"loc": _rng.standard_normal((2, 3)).astype(_F), "tril": np.eye(3, dtype=_F) * 1.5},
        _rng.standard_normal((2, 3)).astype(_F),
        props=("mean", "variance"),
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


def test_support_and_flags_follow_torch():
    base = D.Normal(spx.zeros(2, 3), spx.ones(2, 3))
    d = D.Independent(base, 2)
    assert repr(d.support) == "IndependentConstraint(Real(), 2)"
    assert d.has_rsample and not d.has_enumerate_support
    assert D.Independent(D.Bernoulli(spx.full((3,), 0.5)), 0).has_enumerate_support
    with pytest.raises(NotImplementedError, match="cartesian product"):
        D.Independent(D.Bernoulli(spx.full((3,), 0.5)), 1).enumerate_support()
    with pytest.raises(ValueError, match="Expected reinterpreted_batch_ndims <="):
        D.Independent(base, 3)
    assert repr(D.Independent(D.Normal(0.0, 1.0), 0)) == (
        "Independent(Normal(loc: 0.0, scale: 1.0), 0)"
    )


def test_out_of_support_value_is_reported_by_the_base_as_in_torch():
    bad = [[1.0, 1.0, 1.0], [1.0, -1.0, 1.0]]
    match = r"support \(GreaterThanEq\(lower_bound=0.0\)\) of the distribution Exponential"
    with pytest.raises(ValueError, match=match):
        D.Independent(D.Exponential(spx.ones(2, 3)), 1).log_prob(spx.tensor(bad))
    with pytest.raises(ValueError, match=match):
        TD = torch.distributions
        TD.Independent(TD.Exponential(torch.ones(2, 3)), 1).log_prob(torch.tensor(bad))
