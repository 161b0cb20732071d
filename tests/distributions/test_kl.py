"""kl_divergence and register_kl against torch.distributions.kl: values and gradients."""

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import spx
import spx.distributions as D
from tests.distributions._parity import TD, assert_close, assert_grads_match, host, leaves

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(6)
_F = np.float32


def _a(*v):
    return np.array(v, _F)


def _spd(n, *batch):
    a = _rng.standard_normal((*batch, n, n))
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(_F)


@dataclass
class KLCase:
    id: str
    make: Any  # (D, params) -> (p, q)
    params: dict


def _logits(*shape):
    return _rng.standard_normal(shape).astype(_F)


CASES = [
    # -- same families
    KLCase(
        "normal",
        lambda D, a: (D.Normal(a["m1"], a["s1"]), D.Normal(a["m2"], a["s2"])),
        {"m1": _a(0.0, 1.0, -1.0), "s1": _a(1.0, 0.5, 2.0), "m2": _a(0.5), "s2": _a(1.5)},
    ),
    KLCase(
        "categorical",
        lambda D, a: (D.Categorical(logits=a["l1"]), D.Categorical(logits=a["l2"])),
        {"l1": _logits(2, 4), "l2": _logits(4)},
    ),
    KLCase(
        "categorical-zero-probs",
        lambda D, a: (D.Categorical(probs=a["p1"]), D.Categorical(probs=a["p2"])),
        {"p1": _a([0.0, 0.5, 0.5], [0.2, 0.3, 0.5]), "p2": _a([0.3, 0.3, 0.4], [0.0, 0.5, 0.5])},
    ),
    KLCase(
        "bernoulli",
        lambda D, a: (D.Bernoulli(logits=a["l1"]), D.Bernoulli(logits=a["l2"])),
        {"l1": _logits(2, 3), "l2": _logits(2, 3)},
    ),
    KLCase(
        "bernoulli-edge-probs",
        lambda D, a: (D.Bernoulli(a["p1"]), D.Bernoulli(a["p2"])),
        {"p1": _a(0.0, 1.0, 0.5, 0.3), "p2": _a(0.4, 0.4, 0.0, 1.0)},
    ),
    KLCase(
        "uniform",
        lambda D, a: (D.Uniform(a["l1"], a["h1"]), D.Uniform(a["l2"], a["h2"])),
        {
            "l1": _a(0.0, 0.0, -1.0),
            "h1": _a(1.0, 2.0, 1.0),
            "l2": _a(-1.0, 0.5, -2.0),
            "h2": _a(2.0, 3.0, 0.5),
        },
    ),
    KLCase(
        "mvn",
        lambda D, a: (
            D.MultivariateNormal(a["m1"], covariance_matrix=a["c1"]),
            D.MultivariateNormal(a["m2"], scale_tril=a["t2"]),
        ),
        {
            "m1": _logits(2, 3),
            "c1": _spd(3),
            "m2": _logits(3),
            "t2": np.tril(_spd(3, 2)).astype(_F),
        },
    ),
    KLCase(
        "independent",
        lambda D, a: (
            D.Independent(D.Normal(a["m1"], a["s1"]), 1),
            D.Independent(D.Normal(a["m2"], a["s2"]), 1),
        ),
        {"m1": _logits(2, 3), "s1": _a(1.0, 0.5, 2.0), "m2": _logits(3), "s2": _a(0.7)},
    ),
    KLCase(
        "exponential",
        lambda D, a: (D.Exponential(a["r1"]), D.Exponential(a["r2"])),
        {"r1": _a(0.5, 2.0), "r2": _a(1.5, 1.0)},
    ),
    KLCase(
        "laplace",
        lambda D, a: (D.Laplace(a["m1"], a["s1"]), D.Laplace(a["m2"], a["s2"])),
        {"m1": _a(0.0, 1.0), "s1": _a(1.0, 0.5), "m2": _a(0.3, -1.0), "s2": _a(2.0, 1.0)},
    ),
    KLCase(
        "beta",
        lambda D, a: (D.Beta(a["a1"], a["b1"]), D.Beta(a["a2"], a["b2"])),
        {"a1": _a(0.5, 2.0), "b1": _a(1.0, 3.0), "a2": _a(2.0, 1.0), "b2": _a(2.0, 0.7)},
    ),
    KLCase(
        "gamma",
        lambda D, a: (D.Gamma(a["a1"], a["b1"]), D.Gamma(a["a2"], a["b2"])),
        {"a1": _a(0.5, 2.0), "b1": _a(1.0, 3.0), "a2": _a(2.0, 1.0), "b2": _a(2.0, 0.7)},
    ),
    KLCase(
        "dirichlet",
        lambda D, a: (D.Dirichlet(a["c1"]), D.Dirichlet(a["c2"])),
        {"c1": _a([0.5, 1.0, 2.0], [3.0, 1.0, 1.0]), "c2": _a(1.0, 2.0, 0.7)},
    ),
    KLCase(
        "onehot",
        lambda D, a: (D.OneHotCategorical(logits=a["l1"]), D.OneHotCategorical(logits=a["l2"])),
        {"l1": _logits(2, 3), "l2": _logits(2, 3)},
    ),
    KLCase(
        "lognormal",
        lambda D, a: (D.LogNormal(a["m1"], a["s1"]), D.LogNormal(a["m2"], a["s2"])),
        {"m1": _a(0.0, 1.0), "s1": _a(1.0, 0.5), "m2": _a(0.5, 0.0), "s2": _a(0.8, 2.0)},
    ),
    KLCase(
        "poisson",
        lambda D, a: (D.Poisson(a["r1"]), D.Poisson(a["r2"])),
        {"r1": _a(0.5, 4.0), "r2": _a(1.0, 3.0)},
    ),
    KLCase(
        "binomial",
        lambda D, a: (D.Binomial(a["n1"], a["p1"]), D.Binomial(a["n2"], a["p2"])),
        {"n1": 5.0, "p1": _a(0.2, 0.7), "n2": 5.0, "p2": _a(0.5, 0.5)},
    ),
    KLCase(
        "binomial-larger-p-count",
        lambda D, a: (D.Binomial(6, a["p1"]), D.Binomial(5, a["p2"])),
        {"p1": _a(0.2, 0.7), "p2": _a(0.5, 0.5)},
    ),
    # -- different families
    KLCase(
        "bernoulli-poisson",
        lambda D, a: (D.Bernoulli(a["p"]), D.Poisson(a["r"])),
        {"p": _a(0.2, 0.7), "r": _a(0.5, 2.0)},
    ),
    KLCase(
        "beta-exponential",
        lambda D, a: (D.Beta(a["a"], a["b"]), D.Exponential(a["r"])),
        {"a": _a(0.5, 2.0), "b": _a(1.0, 3.0), "r": _a(2.0, 0.5)},
    ),
    KLCase(
        "beta-gamma",
        lambda D, a: (D.Beta(a["a"], a["b"]), D.Gamma(a["c"], a["r"])),
        {"a": _a(0.5, 2.0), "b": _a(1.0, 3.0), "c": _a(2.0, 0.5), "r": _a(1.0, 3.0)},
    ),
    KLCase(
        "beta-normal",
        lambda D, a: (D.Beta(a["a"], a["b"]), D.Normal(a["m"], a["s"])),
        {"a": _a(0.5, 2.0), "b": _a(1.0, 3.0), "m": _a(0.2, 1.0), "s": _a(1.0, 0.3)},
    ),
    KLCase(
        "beta-uniform",
        lambda D, a: (D.Beta(a["a"], a["b"]), D.Uniform(a["l"], a["h"])),
        {"a": _a(0.5, 2.0), "b": _a(1.0, 3.0), "l": _a(-0.5, 0.1), "h": _a(1.5, 1.0)},
    ),
    KLCase(
        "exponential-gamma",
        lambda D, a: (D.Exponential(a["r"]), D.Gamma(a["c"], a["q"])),
        {"r": _a(0.5, 2.0), "c": _a(1.0, 3.0), "q": _a(2.0, 0.5)},
    ),
    KLCase(
        "exponential-normal",
        lambda D, a: (D.Exponential(a["r"]), D.Normal(a["m"], a["s"])),
        {"r": _a(0.5, 2.0), "m": _a(1.0, -1.0), "s": _a(2.0, 0.5)},
    ),
    KLCase(
        "gamma-exponential",
        lambda D, a: (D.Gamma(a["c"], a["q"]), D.Exponential(a["r"])),
        {"r": _a(0.5, 2.0), "c": _a(1.0, 3.0), "q": _a(2.0, 0.5)},
    ),
    KLCase(
        "gamma-normal",
        lambda D, a: (D.Gamma(a["c"], a["q"]), D.Normal(a["m"], a["s"])),
        {"c": _a(1.0, 3.0), "q": _a(2.0, 0.5), "m": _a(1.0, -1.0), "s": _a(2.0, 0.5)},
    ),
    KLCase(
        "laplace-normal",
        lambda D, a: (D.Laplace(a["m1"], a["s1"]), D.Normal(a["m2"], a["s2"])),
        {"m1": _a(0.0, 1.0), "s1": _a(1.0, 0.5), "m2": _a(0.3, -1.0), "s2": _a(2.0, 1.0)},
    ),
    KLCase(
        "normal-laplace",
        lambda D, a: (D.Normal(a["m1"], a["s1"]), D.Laplace(a["m2"], a["s2"])),
        {"m1": _a(0.0, 1.0), "s1": _a(1.0, 0.5), "m2": _a(0.3, -1.0), "s2": _a(2.0, 1.0)},
    ),
    KLCase(
        "uniform-beta",
        lambda D, a: (D.Uniform(a["l"], a["h"]), D.Beta(a["a"], a["b"])),
        {"l": _a(0.1, -0.5), "h": _a(0.7, 0.5), "a": _a(2.0, 1.0), "b": _a(3.0, 2.0)},
    ),
    KLCase(
        "uniform-exponential",
        lambda D, a: (D.Uniform(a["l"], a["h"]), D.Exponential(a["r"])),
        {"l": _a(0.1, -0.5), "h": _a(0.7, 0.5), "r": _a(2.0, 1.0)},
    ),
    KLCase(
        "uniform-gamma",
        lambda D, a: (D.Uniform(a["l"], a["h"]), D.Gamma(a["c"], a["r"])),
        {"l": _a(0.1, -0.5), "h": _a(0.7, 0.5), "c": _a(2.0, 1.0), "r": _a(3.0, 2.0)},
    ),
    KLCase(
        "uniform-normal",
        lambda D, a: (D.Uniform(a["l"], a["h"]), D.Normal(a["m"], a["s"])),
        {"l": _a(0.1, -0.5), "h": _a(0.7, 0.5), "m": _a(2.0, 1.0), "s": _a(3.0, 2.0)},
    ),
]


def _ls(D, a, cls, k):
    return getattr(D, cls)(a[f"loc{k}"], a[f"scale{k}"])


_LOC_SCALE = {
    "loc1": _a(0.0, 1.0, -1.5),
    "scale1": _a(1.0, 0.5, 2.0),
    "loc2": _a(0.5, -1.0, 0.0),
    "scale2": _a(1.5, 1.0, 0.7),
}
CASES += [
    KLCase("cauchy", lambda D, a: (_ls(D, a, "Cauchy", 1), _ls(D, a, "Cauchy", 2)), _LOC_SCALE),
    KLCase("gumbel", lambda D, a: (_ls(D, a, "Gumbel", 1), _ls(D, a, "Gumbel", 2)), _LOC_SCALE),
    KLCase("gumbel-normal", lambda D, a: (_ls(D, a, "Gumbel", 1), _ls(D, a, "Normal", 2)),
           _LOC_SCALE),
    KLCase("normal-gumbel", lambda D, a: (_ls(D, a, "Normal", 1), _ls(D, a, "Gumbel", 2)),
           _LOC_SCALE),
    KLCase(
        "half_normal",
        lambda D, a: (D.HalfNormal(a["s1"]), D.HalfNormal(a["s2"])),
        {"s1": _a(0.5, 1.0, 3.0), "s2": _a(1.0, 2.0, 0.5)},
    ),
    KLCase(
        "geometric",
        lambda D, a: (D.Geometric(a["p1"]), D.Geometric(logits=a["l2"])),
        {"p1": _a(0.2, 0.5, 0.9), "l2": _a(0.0, -1.0, 2.0)},
    ),
    KLCase(
        "exponential-gumbel",
        lambda D, a: (D.Exponential(a["r"]), _ls(D, a, "Gumbel", 2)),
        {"r": _a(0.5, 1.0, 3.0), "loc2": _a(0.5, -1.0, 0.0), "scale2": _a(1.5, 1.0, 0.7)},
    ),
    KLCase(
        "gamma-gumbel",
        lambda D, a: (D.Gamma(a["c"], a["r"]), _ls(D, a, "Gumbel", 2)),
        {"c": _a(0.5, 2.0, 4.0), "r": _a(1.0, 0.5, 2.0), "loc2": _a(0.5, -1.0, 0.0),
         "scale2": _a(1.5, 1.0, 0.7)},
    ),
    KLCase(
        "uniform-gumbel",
        lambda D, a: (D.Uniform(a["lo"], a["hi"]), _ls(D, a, "Gumbel", 2)),
        {"lo": _a(0.0, -1.0, 2.0), "hi": _a(1.0, 0.5, 4.0), "loc2": _a(0.5, -1.0, 0.0),
         "scale2": _a(1.5, 1.0, 0.7)},
    ),
    KLCase(
        "chi2-gamma",  # through Gamma's rule
        lambda D, a: (D.Chi2(a["df"]), D.Gamma(a["c"], a["r"])),
        {"df": _a(1.0, 3.0, 7.0), "c": _a(0.5, 2.0, 4.0), "r": _a(1.0, 0.5, 2.0)},
    ),
]  # fmt: skip

# Pairs whose KL torch defines as +inf everywhere (the support of p is not inside q's).
INFINITE = [
    ("Gumbel", (0.0, 1.0), "Uniform", (0.0, 1.0)),
    ("Gumbel", (0.0, 1.0), "Exponential", (1.0,)),
    ("Gumbel", (0.0, 1.0), "Gamma", (1.0, 1.0)),
    ("Gumbel", (0.0, 1.0), "Beta", (1.0, 1.0)),
    ("Normal", (0.0, 1.0), "Uniform", (0.0, 1.0)),
    ("Normal", (0.0, 1.0), "Exponential", (1.0,)),
    ("Normal", (0.0, 1.0), "Gamma", (1.0, 1.0)),
    ("Normal", (0.0, 1.0), "Beta", (1.0, 1.0)),
    ("Laplace", (0.0, 1.0), "Uniform", (0.0, 1.0)),
    ("Laplace", (0.0, 1.0), "Exponential", (1.0,)),
    ("Laplace", (0.0, 1.0), "Gamma", (1.0, 1.0)),
    ("Laplace", (0.0, 1.0), "Beta", (1.0, 1.0)),
    ("Exponential", (1.0,), "Uniform", (0.0, 1.0)),
    ("Exponential", (1.0,), "Beta", (1.0, 1.0)),
    ("Gamma", (1.0, 1.0), "Uniform", (0.0, 1.0)),
    ("Gamma", (1.0, 1.0), "Beta", (1.0, 1.0)),
    ("Poisson", (1.0,), "Bernoulli", (0.5,)),
    ("Poisson", (1.0,), "Binomial", (3, 0.5)),
]


def _pair(case, lib):
    params = leaves(case.params, lib)
    return case.make(TD if lib == "torch" else D, params), params


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_kl_values_and_gradients_match_torch(case):
    (tp_, tq), tparams = _pair(case, "torch")
    (sp_, sq), sparams = _pair(case, "spx")
    want = torch.distributions.kl_divergence(tp_, tq)
    got = D.kl_divergence(sp_, sq)
    assert tuple(got.shape) == tuple(want.shape)
    assert_close(got, want, rtol=1e-4, atol=1e-5, what=case.id)
    # Gradients where the divergence is finite (inf entries carry zero gradient in both).
    finite = torch.isfinite(want).detach()
    if not want.requires_grad or not finite.any():
        return
    want[finite].sum().backward()
    got[spx.tensor(finite.numpy())].sum().backward()
    assert_grads_match(tparams, sparams, 1e-4, 1e-5, case.id)


@pytest.mark.parametrize(("p", "pa", "q", "qa"), INFINITE, ids=lambda v: str(v))
def test_kl_between_disjoint_supports_is_infinite(p, pa, q, qa):
    sp = getattr(D, p)(*[spx.tensor([a, a]) if isinstance(a, float) else a for a in pa])
    sq = getattr(D, q)(*[spx.tensor([a, a]) if isinstance(a, float) else a for a in qa])
    kl = host(D.kl_divergence(sp, sq))
    assert kl.shape == (2,) and np.isposinf(kl).all()
    TDist = torch.distributions
    tp = getattr(TDist, p)(*[torch.tensor([a, a]) if isinstance(a, float) else a for a in pa])
    tq = getattr(TDist, q)(*[torch.tensor([a, a]) if isinstance(a, float) else a for a in qa])
    assert np.isposinf(TDist.kl_divergence(tp, tq).numpy()).all()


def test_binomial_with_fewer_trials_in_p_is_not_implemented():
    with pytest.raises(NotImplementedError, match=r"q\.total_count > p\.total_count"):
        D.kl_divergence(D.Binomial(3, spx.tensor([0.5])), D.Binomial(5, spx.tensor([0.5])))


def test_unregistered_pair_raises_torchs_not_implemented_error():
    with pytest.raises(
        NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type"
    ):
        D.kl_divergence(D.Categorical(spx.ones(2)), D.Normal(0.0, 1.0))


def test_register_kl_dispatches_to_the_most_specific_pair():
    class MyNormal(D.Normal):
        pass

    p, q = MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)
    assert D.kl_divergence(p, q).item() == pytest.approx(0.5)  # inherits Normal-Normal

    @D.register_kl(MyNormal, D.Normal)
    def _kl_mine(p, q):
        return spx.tensor(42.0)

    try:
        assert D.kl_divergence(p, q).item() == 42.0
        assert D.kl_divergence(q, q).item() == 0.0
    finally:
        from spx.distributions import kl

        del kl._KL_REGISTRY[MyNormal, D.Normal]
        kl._KL_MEMOIZE.clear()
    assert D.kl_divergence(p, q).item() == pytest.approx(0.5)


def test_ambiguous_registrations_warn_as_in_torch():
    class P(D.Normal):
        pass

    class Q(D.Normal):
        pass

    from spx.distributions import kl

    D.register_kl(P, D.Normal)(lambda p, q: spx.tensor(1.0))
    D.register_kl(D.Normal, Q)(lambda p, q: spx.tensor(2.0))
    try:
        with pytest.warns(RuntimeWarning, match="Ambiguous kl_divergence"):
            D.kl_divergence(P(0.0, 1.0), Q(0.0, 1.0))
    finally:
        del kl._KL_REGISTRY[P, D.Normal], kl._KL_REGISTRY[D.Normal, Q]
        kl._KL_MEMOIZE.clear()


def test_register_kl_rejects_non_distribution_types():
    with pytest.raises(TypeError, match="Distribution subclass"):
        D.register_kl(int, D.Normal)


def _bare_normal(lib):
    """A Normal that only defines its exponential-family parts: entropy and KL come from
    the generic (create_graph) formulas of ExponentialFamily."""
    base = lib.distributions.Normal

    class BareNormal(lib.distributions.ExponentialFamily):
        arg_constraints = base.arg_constraints

        def __init__(self, loc, scale):
            self.loc, self.scale = loc, scale
            super().__init__(batch_shape=loc.shape, validate_args=False)

        _natural_params = base._natural_params
        _log_normalizer = base._log_normalizer
        _mean_carrier_measure = 0

    return BareNormal


def test_generic_exponential_family_entropy_and_bregman_kl_match_torch():
    def run(lib):
        cls = _bare_normal(lib)
        p = cls(lib.tensor([0.3, -1.0]), lib.tensor([1.5, 0.7]))
        q_loc = lib.tensor([0.0, 0.5], requires_grad=True)
        q_scale = lib.tensor([1.0, 2.0], requires_grad=True)
        ent = p.entropy()
        kl = lib.distributions.kl_divergence(p, cls(q_loc, q_scale))
        kl.sum().backward()  # (torch's formulas detach p's natural parameters, not q's)
        return [ent.detach().numpy(), kl.detach().numpy(), q_loc.grad.numpy(), q_scale.grad.numpy()]

    for got, want in zip(run(spx), run(torch), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_bregman_kl_between_different_families_raises_torchs_error():
    with pytest.raises(NotImplementedError, match="different exponential families"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Poisson(spx.tensor(2.0)))
