"""Normal and LogNormal against torch.distributions: values, gradients, sampling, validation."""

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

_rng = np.random.default_rng(0)
_F = np.float32

CASES = [
    Case(
        "normal-scalar",
        lambda D, p: D.Normal(p["loc"], p["scale"]),
        {"loc": 0.5, "scale": 2.0},
        np.array([-1.0, 0.0, 3.0], _F),
        cdf=True,
        icdf=True,
    ),
    Case(
        "normal-batch",
        lambda D, p: D.Normal(p["loc"], p["scale"]),
        {"loc": _rng.standard_normal(3).astype(_F), "scale": np.array([0.5, 1.0, 2.5], _F)},
        _rng.standard_normal((4, 3)).astype(_F),
        cdf=True,
        icdf=True,
    ),
    Case(
        "normal-broadcast",
        lambda D, p: D.Normal(p["loc"], p["scale"]),
        {"loc": _rng.standard_normal((2, 1)).astype(_F), "scale": np.array([0.3, 1.7, 2.0], _F)},
        _rng.standard_normal(3).astype(_F),
        cdf=True,
        icdf=True,
    ),
    Case(
        "normal-tensor-and-number",
        lambda D, p: D.Normal(p["loc"], 1.5),
        {"loc": _rng.standard_normal(4).astype(_F)},
        _rng.standard_normal(4).astype(_F),
        cdf=True,
    ),
    Case(
        "lognormal-batch",
        lambda D, p: D.LogNormal(p["loc"], p["scale"]),
        {"loc": np.array([0.0, -0.5, 1.0], _F), "scale": np.array([0.25, 1.0, 0.7], _F)},
        _rng.uniform(0.1, 4.0, (4, 3)).astype(_F),
        cdf=True,
        icdf=True,
        rtol=1e-4,
    ),
    Case(
        "lognormal-scalar",
        lambda D, p: D.LogNormal(p["loc"], p["scale"]),
        {"loc": 0.2, "scale": 0.5},
        np.array([0.5, 1.0, 2.0], _F),
        cdf=True,
        icdf=True,
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


def test_rsample_is_loc_plus_scale_times_the_generators_normal_noise():
    loc = spx.tensor([0.5, -1.0, 2.0], requires_grad=True)
    scale = spx.tensor([1.0, 0.5, 3.0], requires_grad=True)
    spx.manual_seed(7)
    eps = spx.randn((4, 3))
    spx.manual_seed(7)
    x = D.Normal(loc, scale).rsample((4,))
    assert_close(x, host(loc)[None] + host(eps) * host(scale)[None], rtol=1e-6)
    x.sum().backward()
    # d/dloc sum(loc + eps * scale) = number of draws; d/dscale = sum of the noise.
    assert_close(loc.grad, np.full(3, 4.0))
    assert_close(scale.grad, host(eps).sum(0), rtol=1e-5)
    # torch's formula on the same noise gives the same gradients.
    tl = torch.tensor(host(loc), requires_grad=True)
    ts = torch.tensor(host(scale), requires_grad=True)
    (tl + torch.tensor(host(eps)) * ts).sum().backward()
    assert_close(loc.grad, tl.grad)
    assert_close(scale.grad, ts.grad)


def test_lognormal_rsample_is_exp_of_the_normal_rsample():
    loc = spx.tensor([0.0, 0.5], requires_grad=True)
    scale = spx.tensor([0.5, 0.2], requires_grad=True)
    spx.manual_seed(3)
    eps = host(spx.randn((6, 2)))
    spx.manual_seed(3)
    y = D.LogNormal(loc, scale).rsample((6,))
    want = np.exp(host(loc) + eps * host(scale))
    assert_close(y, want, rtol=1e-5)
    y.sum().backward()
    assert_close(loc.grad, want.sum(0), rtol=1e-5)
    assert_close(scale.grad, (want * eps).sum(0), rtol=1e-5)


def test_sample_statistics():
    spx.manual_seed(0)
    d = D.Normal(spx.tensor([0.0, 3.0]), spx.tensor([1.0, 0.5]))
    check_sample_moments(d.sample((20000,)), d.mean, d.variance)
    check_sample_moments(d.rsample((20000,)), d.mean, d.variance)
    ln = D.LogNormal(spx.tensor([0.0, 0.5]), spx.tensor([0.5, 0.25]))
    check_sample_moments(ln.sample((20000,)), ln.mean, ln.variance)


def test_samples_are_reproducible_from_the_seed_and_fresh_per_call():
    d = D.Normal(spx.zeros(3), spx.ones(3))
    spx.manual_seed(1)
    a, b = host(d.sample()), host(d.sample())
    spx.manual_seed(1)
    np.testing.assert_array_equal(host(d.sample()), a)
    assert not np.allclose(a, b)


@pytest.mark.parametrize("cls", ["Normal", "LogNormal"])
def test_invalid_scale_raises_torchs_value_error(cls):
    with pytest.raises(ValueError, match=r"Expected parameter scale .* GreaterThan\(lower_bound=0"):
        getattr(D, cls)(spx.tensor([0.0]), spx.tensor([-1.0]))
    with pytest.raises(ValueError, match="Expected parameter scale"):
        getattr(D, cls)(0.0, 0.0)
    # The same call raises in torch.
    with pytest.raises(ValueError, match="Expected parameter scale"):
        getattr(torch.distributions, cls)(torch.tensor([0.0]), torch.tensor([-1.0]))
    getattr(D, cls)(0.0, -1.0, validate_args=False)  # no check when switched off


def test_out_of_support_and_misshapen_values_raise():
    with pytest.raises(ValueError, match=r"Expected value argument .* support \(Real\(\)\)"):
        D.Normal(0.0, 1.0).log_prob(spx.tensor([float("nan")]))
    with pytest.raises(ValueError, match=r"support \(GreaterThan\(lower_bound=0.0\)\)"):
        D.LogNormal(0.0, 1.0).log_prob(spx.tensor([-1.0]))
    with pytest.raises(ValueError, match="Value is not broadcastable"):
        D.Normal(spx.zeros(3), spx.ones(3)).log_prob(spx.zeros(2))
    with pytest.raises(ValueError, match="must be a Tensor"):
        D.Normal(0.0, 1.0).log_prob(0.5)
    lp = D.Normal(0.0, 1.0, validate_args=False).log_prob(spx.tensor([float("nan")]))
    assert np.isnan(host(lp)).all()
