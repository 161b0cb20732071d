"""spx.vander against torch.vander: default and explicit N, increasing powers, integer and
float inputs, gradients (at 0 too), and the errors."""

import numpy as np
import pytest

import spx
from tests.tensor._parity import assert_same, check, check_raises

torch = pytest.importorskip("torch")

X = np.array([1.5, -2.0, 0.0, 0.5], np.float32)


@pytest.mark.parametrize("N", [None, 0, 1, 3, 6])
@pytest.mark.parametrize("increasing", [False, True])
def test_values_match_torch(N, increasing):
    check(lambda m, x: m.vander(x, N, increasing), X)


@pytest.mark.parametrize("N", [1, 3, 6])
@pytest.mark.parametrize("increasing", [False, True])
def test_gradients_match_torch_powers(N, increasing):
    # torch.vander's own backward fails in torch 2.13 ("modified by an inplace operation"),
    # so the reference is torch's gradient of the same matrix built as x[:, None] ** k.
    powers = torch.arange(N) if increasing else torch.arange(N - 1, -1, -1)
    w = torch.linspace(0.5, 1.5, X.size * N).reshape(X.size, N)
    t = torch.tensor(X, requires_grad=True)
    (t[:, None] ** powers * w).sum().backward()
    s = spx.tensor(X, requires_grad=True)
    (spx.vander(s, N, increasing) * spx.tensor(w.numpy())).sum().backward()
    assert_same(s.grad, t.grad, rtol=1e-5, atol=1e-6)


def test_integer_input_stays_integer():
    check(lambda m, x: m.vander(x), np.array([1, 2, 3]))


def test_non_vector_input_raises():
    check_raises(lambda m, x: m.vander(x), np.ones((2, 2), np.float32), error=RuntimeError)
