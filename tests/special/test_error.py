"""spx.special's error-function family against torch.special: values and gradients in float32
and float64 over edge values (zeros, tails, infinities, NaN)."""

import numpy as np
import pytest

import spx
from tests.special._compare import DTYPES, EDGES, PROBABILITIES, compare, torch

ON_REALS = ["erf", "erfc", "erfcx", "ndtr", "log_ndtr"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ON_REALS)
def test_values_and_gradients_match_torch(name, dtype):
    x = EDGES
    if name == "log_ndtr" and dtype == np.float32:
        # float32 log_ndtr' = exp(-(log_ndtr(x) + x^2/2)) cancels two large terms below -10:
        # torch's and spx's are both noise there.
        x = EDGES[(np.abs(EDGES) <= 10) | ~np.isfinite(EDGES)]
    compare(lambda m, t: getattr(m.special, name)(t), [x], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["erfinv", "ndtri"])
def test_inverse_functions_match_torch_on_and_off_their_domain(name, dtype):
    compare(lambda m, t: getattr(m.special, name)(t), [PROBABILITIES], dtype)


def test_ndtri_slope_is_infinite_at_0_and_1_as_torch():
    x = spx.tensor([0.0, 1.0], requires_grad=True)
    spx.special.ndtri(x).sum().backward()
    assert np.isinf(x.grad.numpy()).all()


@pytest.mark.parametrize("name", [*ON_REALS, "erfinv", "ndtri"])
def test_integer_input_is_computed_as_float32(name):
    got = getattr(spx.special, name)(spx.tensor([0, 1]))
    want = getattr(torch.special, name)(torch.tensor([0, 1]))
    assert got.dtype == spx.float32 and want.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_half_input_keeps_its_dtype():
    got = spx.special.erf(spx.tensor([0.5, 2.0], dtype=spx.float16))
    want = torch.special.erf(torch.tensor([0.5, 2.0], dtype=torch.float16))
    assert got.dtype == spx.float16
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=1e-3)
