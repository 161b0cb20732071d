"""spx.trapezoid / trapz / cumulative_trapezoid against torch's: spacing by dx or by sample
points (1-D or broadcast), dims, integer samples, empty dims, gradients, and the errors."""

import numpy as np
import pytest

import spx
from tests.tensor._parity import check, check_grad, check_raises

torch = pytest.importorskip("torch")

NAMES = ["trapezoid", "trapz", "cumulative_trapezoid"]
Y = np.array([[1.0, 2.0, 4.0, 7.0], [3.0, -5.0, 9.0, 0.5]], np.float32)
X1 = np.array([0.0, 1.0, 3.0, 3.5], np.float32)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dim", [-1, 0])
def test_constant_spacing(name, dim):
    check(lambda m, y: getattr(m, name)(y, dim=dim), Y)
    if name != "trapz" or dim == -1:
        check(lambda m, y: getattr(m, name)(y, dx=0.25, dim=dim), Y)
    check_grad(lambda m, y: getattr(m, name)(y, dx=0.5, dim=dim), Y)


@pytest.mark.parametrize("name", NAMES)
def test_sample_points_1d_and_broadcast(name):
    check(lambda m, y, x: getattr(m, name)(y, x), Y, X1)
    x2 = np.cumsum(np.abs(Y) + 0.1, axis=0).astype(np.float32)
    check(lambda m, y, x: getattr(m, name)(y, x, dim=0), Y, x2)
    check_grad(lambda m, y, x: getattr(m, name)(y, x), Y, X1)
    check_grad(lambda m, y, x: getattr(m, name)(y, x, dim=0), Y, x2)


@pytest.mark.parametrize("name", NAMES)
def test_integer_samples_integrate_to_float(name):
    check(lambda m, y: getattr(m, name)(y), np.array([1, 2, 3], np.int64))


@pytest.mark.parametrize("name", NAMES)
def test_empty_and_single_sample_dims(name):
    check(lambda m, y: getattr(m, name)(y), np.zeros((2, 0), np.float32))
    check(lambda m, y: getattr(m, name)(y), np.ones((2, 1), np.float32))


@pytest.mark.parametrize("name", NAMES)
def test_mismatched_points_raise(name):
    check_raises(lambda m, y, x: getattr(m, name)(y, x), Y, X1[:3], error=RuntimeError)


def test_a_number_for_x_is_refused_with_the_fix():
    with pytest.raises(TypeError):
        torch.trapezoid(torch.tensor(Y), 2.0)
    with pytest.raises(TypeError, match=r"dx=2\.0"):
        spx.trapezoid(spx.tensor(Y), 2.0)
