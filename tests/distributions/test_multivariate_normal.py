"""MultivariateNormal against torch.distributions: the three parameterizations, batching."""

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

_rng = np.random.default_rng(4)
_F = np.float32
_PROPS = ("mean", "variance", "stddev", "mode", "covariance_matrix", "precision_matrix")


def _spd(*batch, n=3):
    a = _rng.standard_normal((*batch, n, n))
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(_F)


def _tril(*batch, n=3):
    t = np.tril(_rng.standard_normal((*batch, n, n)), -1)
    return (t + np.eye(n) * _rng.uniform(0.5, 2.0, (*batch, n))[..., None]).astype(_F)


CASES = [
    Case(
        "covariance",
        lambda D, p: D.MultivariateNormal(p["loc"], covariance_matrix=p["cov"]),
        {"loc": _rng.standard_normal(3).astype(_F), "cov": _spd()},
        _rng.standard_normal((4, 3)).astype(_F),
        props=(*_PROPS, "scale_tril"),
        rtol=1e-4,
        atol=1e-5,
    ),
    Case(
        "scale-tril-batched-loc",
        lambda D, p: D.MultivariateNormal(p["loc"], scale_tril=p["tril"]),
        {"loc": _rng.standard_normal((2, 3)).astype(_F), "tril": _tril()},
        _rng.standard_normal((5, 2, 3)).astype(_F),
        props=_PROPS,
        rtol=1e-4,
        atol=1e-5,
    ),
    Case(
        "precision-batched-matrix",
        lambda D, p: D.MultivariateNormal(p["loc"], precision_matrix=p["prec"]),
        {"loc": _rng.standard_normal(3).astype(_F), "prec": _spd(2)},
        _rng.standard_normal((4, 1, 3)).astype(_F),
        props=(*_PROPS, "scale_tril"),
        rtol=1e-4,
        atol=1e-5,
    ),
    Case(
        "covariance-broadcast-batches",
        lambda D, p: D.MultivariateNormal(p["loc"], covariance_matrix=p["cov"]),
        {"loc": _rng.standard_normal((2, 1, 2)).astype(_F), "cov": _spd(3, n=2)},
        _rng.standard_normal((3, 2, 3, 2)).astype(_F),
        props=_PROPS,
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


def test_rsample_is_loc_plus_scale_tril_times_normal_noise():
    loc, tril = _rng.standard_normal((2, 3)).astype(_F), _tril()
    sl, st = spx.tensor(loc, requires_grad=True), spx.tensor(tril, requires_grad=True)
    spx.manual_seed(9)
    eps = host(spx.randn((4, 2, 3)))
    spx.manual_seed(9)
    x = D.MultivariateNormal(sl, scale_tril=st).rsample((4,))
    assert_close(x, loc + np.einsum("ij,sbj->sbi", tril, eps), rtol=1e-5, atol=1e-6)
    x.sum().backward()
    # torch's formula on the same noise.
    tl, tt = torch.tensor(loc, requires_grad=True), torch.tensor(tril, requires_grad=True)
    (tl + (tt @ torch.tensor(eps).unsqueeze(-1)).squeeze(-1)).sum().backward()
    assert_close(sl.grad, tl.grad)
    assert_close(st.grad, tt.grad, rtol=1e-5, atol=1e-5)


def test_sample_mean_and_covariance():
    spx.manual_seed(0)
    cov = np.array([[2.0, 0.6], [0.6, 0.5]], _F)
    loc = np.array([1.0, -1.0], _F)
    n = 20000
    x = host(D.MultivariateNormal(spx.tensor(loc), spx.tensor(cov)).sample((n,))).astype(float)
    se = np.sqrt(np.diag(cov) / n)
    np.testing.assert_array_less(np.abs(x.mean(0) - loc), 5 * se)
    # Var of a sample covariance entry: (S_ij^2 + S_ii S_jj) / n.
    se_cov = np.sqrt((cov**2 + np.outer(np.diag(cov), np.diag(cov))) / n)
    np.testing.assert_array_less(np.abs(np.cov(x.T) - cov), 5 * se_cov)


def test_validation_errors_match_torch():
    loc = spx.zeros(2)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix"):
        D.MultivariateNormal(loc)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix"):
        D.MultivariateNormal(loc, spx.eye(2), scale_tril=spx.eye(2))
    with pytest.raises(ValueError, match="loc must be at least one-dimensional"):
        D.MultivariateNormal(spx.tensor(0.0), spx.eye(1))
    with pytest.raises(ValueError, match="covariance_matrix must be at least two-dimensional"):
        D.MultivariateNormal(loc, spx.ones(2))
    not_pd = spx.tensor([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ValueError, match=r"covariance_matrix .* PositiveDefinite\(\)"):
        D.MultivariateNormal(loc, not_pd)
    with pytest.raises(ValueError, match=r"covariance_matrix .* PositiveDefinite\(\)"):
        D.MultivariateNormal(loc, spx.tensor([[1.0, 0.5], [0.0, 1.0]]))  # not symmetric
    with pytest.raises(ValueError, match=r"precision_matrix .* PositiveDefinite\(\)"):
        D.MultivariateNormal(loc, precision_matrix=not_pd)
    with pytest.raises(ValueError, match=r"scale_tril .* LowerCholesky\(\)"):
        D.MultivariateNormal(loc, scale_tril=spx.tensor([[1.0, 1.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match=r"scale_tril .* LowerCholesky\(\)"):
        D.MultivariateNormal(loc, scale_tril=spx.tensor([[-1.0, 0.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
        D.MultivariateNormal(loc, spx.eye(2)).log_prob(spx.zeros(3))
