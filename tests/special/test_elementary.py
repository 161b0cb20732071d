"""spx.special's elementary functions (expit, logit, exp2, expm1, log1p, sinc, round, xlogy,
xlog1py, entr, softmax, log_softmax, logsumexp) against torch.special, values and gradients."""

import numpy as np
import pytest

import spx
from tests.special._compare import DTYPES, EDGES, PROBABILITIES, compare, torch

UNARY = ["expit", "exp2", "expm1", "log1p", "sinc", "entr"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_unary_values_and_gradients_match_torch(name, dtype):
    x = EDGES
    if name in ("exp2", "expm1"):  # their gradients overflow alike; keep the finite range
        x = EDGES[np.abs(EDGES) < 1e3]
    compare(lambda m, t: getattr(m.special, name)(t), [x], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("eps", [None, 1e-6, 0.2, 0.7, -0.1])
def test_logit_matches_torch_in_and_out_of_the_unit_interval(eps, dtype):
    # eps > 1/2 clamps below lo to lo and elsewhere to hi; a negative eps means none.
    compare(lambda m, t: m.special.logit(t, eps), [PROBABILITIES], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_xlogy_family_matches_torch_at_zero_x_and_every_y(name, dtype):
    # At x = 0 torch's d/dx is 0 only where y <= 0 (y <= -1 for xlog1py); log(y) above.
    x = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, -1.0, 3.0, 2.0, np.nan, 0.5])
    y = np.array([0.0, -1.0, -2.0, np.nan, 2.0, np.inf, -0.5, -1.0, -0.5, 2.0, np.inf, 0.0, 1.0,
                  3.0])  # fmt: skip
    compare(lambda m, a, b: getattr(m.special, name)(a, b), [x, y], dtype)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_xlogy_family_keeps_half_dtypes(name):
    for dtype in ("float16", "bfloat16"):
        a = getattr(spx.special, name)(spx.ones(2, dtype=getattr(spx, dtype)), 2.0)
        b = getattr(torch.special, name)(torch.ones(2, dtype=getattr(torch, dtype)), 2.0)
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1] == dtype


@pytest.mark.parametrize("decimals", [0, 1, -1])
def test_round_matches_torch(decimals):
    x = np.array([0.5, 1.5, 2.5, -0.5, 1.25, 15.0, 25.0, np.inf, np.nan])
    compare(lambda m, t: m.special.round(t, decimals=decimals), [x], np.float32)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_family_matches_torch(name, dim):
    x = np.random.default_rng(0).standard_normal((3, 4))
    compare(lambda m, t: getattr(m.special, name)(t, dim), [x], np.float32)


def test_softmax_dtype_casts_first():
    got = spx.special.softmax(spx.tensor([1, 2]), 0, dtype=spx.float32)
    want = torch.special.softmax(torch.tensor([1, 2]), 0, dtype=torch.float32)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dim,keepdim", [(0, False), (1, True), ((0, 1), False)])
def test_logsumexp_matches_torch(dim, keepdim):
    x = np.random.default_rng(1).standard_normal((3, 4)) * 30
    compare(lambda m, t: m.special.logsumexp(t, dim, keepdim), [x], np.float32)


def test_sinc_gradient_is_zero_where_pi_x_squared_underflows():
    x = spx.tensor([0.0, 1e-30], requires_grad=True)
    spx.special.sinc(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])
