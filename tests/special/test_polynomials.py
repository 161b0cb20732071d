"""spx.special's orthogonal polynomials against torch.special on a grid of points and degrees:
negative degrees, the closed forms at the endpoints, the trigonometric forms for large
degrees, the recurrences, infinities; results that do not require grad, as torch's."""

import numpy as np
import pytest

import spx
from tests.special._compare import DTYPES, compare, torch

NAMES = [n for n in dir(torch.special) if "_polynomial_" in n]
POINTS = [-1.5, -1.0, -0.7, -0.2, 0.0, 1e-9, 0.3, 0.5, 0.999, 1.0, 1.3, 2.0, np.inf, -np.inf]
DEGREES = [-2, 0, 1, 2, 3, 4.7, 5, 6, 7, 9, 12, 20, 40]


def test_every_torch_polynomial_is_covered():
    assert len(NAMES) == 12
    for name in NAMES:
        assert hasattr(spx.special, name), name


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_values_match_torch_on_a_grid(name, dtype):
    # (torch returns an uninitialized value for some polynomials at x = NaN: see below.)
    x, n = np.meshgrid(np.array(POINTS), np.array(DEGREES))
    compare(lambda m, a, b: getattr(m.special, name)(a, b), [x, n], dtype, scale=5.0)


@pytest.mark.parametrize("name", NAMES)
def test_a_python_int_degree_and_a_scalar_point(name):
    x = np.array([-0.4, 0.2, 0.9], np.float32)
    want = getattr(torch.special, name)(torch.tensor(x), 4)
    got = getattr(spx.special, name)(spx.tensor(x), 4)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    want = getattr(torch.special, name)(0.3, torch.tensor([0, 2, 5]))
    got = getattr(spx.special, name)(0.3, spx.tensor([0, 2, 5]))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert got.dtype == spx.float32 and want.dtype == torch.float32


@pytest.mark.parametrize("name", NAMES)
def test_nan_point_gives_nan(name):
    # torch leaves the recurrence's result uninitialized when x is NaN (its loop stops before
    # the first step), so it is compared with the right answer instead: NaN.
    got = getattr(spx.special, name)(spx.tensor([np.nan, np.nan]), spx.tensor([3, 12]))
    assert np.isnan(got.numpy()).all()


def test_hermite_degrees_past_torchs_limit_are_nan():
    got = spx.special.hermite_polynomial_h(spx.tensor([0.5]), spx.tensor([200.0]))
    want = torch.special.hermite_polynomial_h(torch.tensor([0.5]), torch.tensor([200.0]))
    assert np.isnan(got.numpy()).all() and np.isnan(want.numpy()).all()


def test_integer_point_is_computed_as_float32():
    got = spx.special.chebyshev_polynomial_t(spx.tensor([2]), 3)
    want = torch.special.chebyshev_polynomial_t(torch.tensor([2]), 3)
    assert got.dtype == spx.float32 and got.tolist() == want.tolist() == [26.0]
