"""Cauchy, StudentT and Chi2 against torch.distributions, and their reparameterized draws."""

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

_rng = np.random.default_rng(5)
_F = np.float32

CASES = [
    Case(
        "cauchy-batch",
        lambda D, p: D.Cauchy(p["loc"], p["scale"]),
        {"loc": np.array([0.0, -1.0, 2.0], _F), "scale": np.array([1.0, 0.5, 3.0], _F)},
        (3 * _rng.standard_normal((4, 3))).astype(_F),
        props=("mean", "variance", "mode"),  # NaN mean, inf variance: as torch's
        cdf=True,
        icdf=True,
    ),
    Case(
        "cauchy-scalar",
        lambda D, p: D.Cauchy(p["loc"], p["scale"]),
        {"loc": 1.0, "scale": 2.0},
        np.array([-3.0, 1.0, 10.0], _F),
        props=("mean", "variance", "mode"),
        cdf=True,
        icdf=True,
    ),
    Case(
        "student_t-batch",
        lambda D, p: D.StudentT(p["df"], p["loc"], p["scale"]),
        # df <= 1 (no mean), 1 < df <= 2 (infinite variance) and df > 2
        {
            "df": np.array([0.8, 1.5, 3.0, 30.0], _F),
            "loc": np.array([0.0, 1.0, -2.0, 0.5], _F),
            "scale": np.array([1.0, 0.5, 2.0, 1.5], _F),
        },
        (2 * _rng.standard_normal((3, 4))).astype(_F),
        rtol=1e-4,
    ),
    Case(
        "student_t-df-only",
        lambda D, p: D.StudentT(p["df"]),
        {"df": np.array([4.0, 7.5], _F)},
        np.array([[0.0, 1.0], [-2.5, 0.3]], _F),
        rtol=1e-4,
    ),
    Case(
        "chi2-batch",
        lambda D, p: D.Chi2(p["df"]),
        {"df": np.array([1.0, 2.0, 9.5], _F)},
        np.array([[0.2, 1.0, 8.0], [3.0, 0.5, 12.0]], _F),
        cdf=True,
        cdf_grad=False,  # torch has no derivative of igamma in the concentration
        rtol=1e-4,
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


def test_chi2_is_a_gamma_with_torchs_df():
    d = D.Chi2(spx.tensor([3.0, 5.0]))
    assert isinstance(d, D.Gamma)
    assert (
        d.df.tolist()
        == [3.0, 5.0]
        == torch.distributions.Chi2(torch.tensor([3.0, 5.0])).df.tolist()
    )
    assert type(d.expand((2, 2))) is D.Chi2


def test_cauchy_rsample_is_loc_plus_scale_times_cauchy_noise():
    loc = spx.tensor([0.0, 1.0], requires_grad=True)
    scale = spx.tensor([1.0, 0.5], requires_grad=True)
    spx.manual_seed(4)
    eps = host(spx.empty((6, 2)).cauchy_())
    spx.manual_seed(4)
    x = D.Cauchy(loc, scale).rsample((6,))
    assert_close(x, host(loc) + host(scale) * eps, rtol=1e-5, atol=1e-6)
    x.sum().backward()
    assert_close(loc.grad, np.full(2, 6.0))
    assert_close(scale.grad, eps.sum(0), rtol=1e-5)


def test_cauchy_samples_have_its_quartiles():
    # No moments to compare: its quartiles are loc -+ scale.
    spx.manual_seed(0)
    loc, scale = np.array([0.0, 3.0], _F), np.array([1.0, 0.25], _F)
    x = host(D.Cauchy(spx.tensor(loc), spx.tensor(scale)).sample((40000,)))
    for q, at in ((0.25, loc - scale), (0.5, loc), (0.75, loc + scale)):
        frac = (x <= at).mean(0)
        assert np.all(np.abs(frac - q) < 0.01), (q, frac)  # 5 standard errors


def test_student_t_samples_and_reparameterized_gradients():
    spx.manual_seed(0)
    d = D.StudentT(spx.tensor([6.0, 30.0]), spx.tensor([1.0, -2.0]), spx.tensor([0.5, 2.0]))
    check_sample_moments(d.sample((40000,)), d.mean, d.variance)
    check_sample_moments(D.Chi2(spx.tensor([2.0, 7.0])).sample((40000,)), [2.0, 7.0], [4.0, 14.0])
    # d rsample / d loc = 1 and d rsample / d scale = the standardized draw.
    loc = spx.tensor([1.0, -2.0], requires_grad=True)
    scale = spx.tensor([0.5, 2.0], requires_grad=True)
    df = spx.tensor([6.0, 30.0], requires_grad=True)
    x = D.StudentT(df, loc, scale).rsample((5,))
    x.sum().backward()
    assert_close(loc.grad, np.full(2, 5.0))
    assert_close(scale.grad, ((host(x) - host(loc)) / host(scale)).sum(0), rtol=1e-4, atol=1e-5)
    assert df.grad is not None and np.isfinite(host(df.grad)).all()


def test_validation_errors_match_torch():
    with pytest.raises(ValueError, match=r"Expected parameter scale"):
        D.Cauchy(0.0, -1.0)
    with pytest.raises(ValueError, match=r"Expected parameter df"):
        D.StudentT(spx.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"Expected parameter df"):
        torch.distributions.StudentT(torch.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"support \(GreaterThanEq\(lower_bound=0.0\)\)"):
        D.Chi2(2.0).log_prob(spx.tensor([-1.0]))
