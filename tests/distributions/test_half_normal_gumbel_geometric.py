"""HalfNormal, Gumbel and Geometric against torch.distributions, and their draws."""

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

_rng = np.random.default_rng(7)
_F = np.float32

CASES = [
    Case(
        "half_normal-batch",
        lambda D, p: D.HalfNormal(p["scale"]),
        {"scale": np.array([0.5, 1.0, 3.0], _F)},
        np.abs(_rng.standard_normal((4, 3))).astype(_F),
        cdf=True,
        icdf=True,
    ),
    Case(
        "half_normal-scalar",
        lambda D, p: D.HalfNormal(p["scale"]),
        {"scale": 2.0},
        np.array([0.0, 0.5, 4.0], _F),
        cdf=True,
        icdf=True,
    ),
    Case(
        "gumbel-batch",
        lambda D, p: D.Gumbel(p["loc"], p["scale"]),
        {"loc": np.array([0.0, -1.0, 2.0], _F), "scale": np.array([1.0, 0.5, 3.0], _F)},
        (2 * _rng.standard_normal((4, 3))).astype(_F),
        cdf=True,
        icdf=True,
        rtol=1e-4,
    ),
    Case(
        "gumbel-scalar",
        lambda D, p: D.Gumbel(p["loc"], p["scale"]),
        {"loc": 1.0, "scale": 2.0},
        np.array([-3.0, 1.0, 6.0], _F),
        cdf=True,
        icdf=True,
        rtol=1e-4,
    ),
    Case(
        "geometric-probs",
        lambda D, p: D.Geometric(p["probs"]),
        {"probs": np.array([0.1, 0.5, 0.9, 1.0], _F)},  # p = 1: only k = 0 is possible
        np.array([[0.0, 2.0, 1.0, 0.0], [5.0, 0.0, 3.0, 0.0]], _F),
        rtol=1e-5,
    ),
    Case(
        "geometric-logits",
        lambda D, p: D.Geometric(logits=p["logits"]),
        {"logits": np.array([-2.0, 0.0, 1.5], _F)},
        np.array([[0.0, 2.0, 7.0], [4.0, 1.0, 0.0]], _F),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_values_match_torch(case):
    check_values(case)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradients_match_torch(case):
    if case.id == "geometric-probs":  # torch's entropy at p = 1 is 0/1 * ... NaN: drop p = 1
        case = Case(case.id, case.make, {"probs": case.params["probs"][:3]}, case.values[:, :3])
    check_grads(case)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_sample_shapes_and_expand_match_torch(case):
    check_shapes(case)


def test_half_normal_log_prob_is_minus_inf_below_zero_as_torch():
    x = np.array([-1.0, 0.5], _F)
    got = host(D.HalfNormal(1.0, validate_args=False).log_prob(spx.tensor(x)))
    want = torch.distributions.HalfNormal(1.0, validate_args=False).log_prob(torch.tensor(x))
    assert got[0] == -np.inf and want[0].item() == -np.inf
    assert_close(got[1:], want[1:])


def test_sample_statistics():
    spx.manual_seed(0)
    for d in (
        D.HalfNormal(spx.tensor([0.5, 2.0])),
        D.Gumbel(spx.tensor([0.0, 3.0]), spx.tensor([1.0, 0.25])),
        D.Geometric(spx.tensor([0.2, 0.7])),
        D.Geometric(logits=spx.tensor([0.0])),
    ):
        check_sample_moments(d.sample((40000,)), d.mean, d.variance)
        if d.has_rsample:
            check_sample_moments(d.rsample((40000,)), d.mean, d.variance)
    x = host(D.Geometric(spx.tensor([0.3, 1.0])).sample((100,)))
    assert np.all(x >= 0) and np.all(x == np.floor(x)) and np.all(x[:, 1] == 0)


def test_gumbel_rsample_is_loc_minus_scale_log_minus_log_uniform():
    loc = spx.tensor([0.0, 1.0], requires_grad=True)
    scale = spx.tensor([1.0, 0.5], requires_grad=True)
    f = np.finfo(np.float32)
    spx.manual_seed(3)
    u = host(spx.empty((5, 2)).uniform_(float(f.tiny), float(1 - f.eps)))
    spx.manual_seed(3)
    x = D.Gumbel(loc, scale).rsample((5,))
    noise = -np.log(-np.log(u.astype(np.float64)))
    assert_close(x, host(loc) + host(scale) * noise, rtol=1e-5, atol=1e-5)
    x.sum().backward()
    assert_close(loc.grad, np.full(2, 5.0))
    assert_close(scale.grad, noise.sum(0), rtol=1e-5, atol=1e-5)


def test_validation_errors_match_torch():
    with pytest.raises(ValueError, match=r"Expected parameter scale"):
        D.HalfNormal(-1.0)
    with pytest.raises(ValueError, match=r"Expected parameter scale"):
        D.Gumbel(0.0, 0.0)
    # probs = 0 is in unit_interval but no trial succeeds: both refuse it
    with pytest.raises(ValueError, match=r"Expected parameter probs .* to be positive"):
        torch.distributions.Geometric(torch.tensor([0.0, 0.5]))
    with pytest.raises(ValueError, match=r"Expected parameter probs .* to be positive"):
        D.Geometric(spx.tensor([0.0, 0.5]))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.Geometric()
    with pytest.raises(ValueError, match=r"support \(IntegerGreaterThan"):
        D.Geometric(0.5).log_prob(spx.tensor([1.5]))


def test_gumbel_cdf_and_icdf_tails_are_torchs():
    # torch's go through Uniform(tiny, 1 - eps) and its transforms' re-centring: finite at 0
    # and 1, and their float32 rounding in the tails.
    p = np.array([0.0, 1e-7, 0.3, 0.999, 1.0], _F)
    x = np.array([-5.0, 0.0, 3.0, 19.0, 40.0], _F)
    sd = D.Gumbel(spx.tensor([0.5]), spx.tensor([2.0]), validate_args=False)
    td = torch.distributions.Gumbel(torch.tensor([0.5]), torch.tensor([2.0]), validate_args=False)
    assert_close(sd.icdf(spx.tensor(p)), td.icdf(torch.tensor(p)), rtol=1e-6, atol=0)
    assert_close(sd.cdf(spx.tensor(x)), td.cdf(torch.tensor(x)), rtol=1e-6, atol=0)
    assert np.isfinite(host(sd.icdf(spx.tensor(p)))).all()
