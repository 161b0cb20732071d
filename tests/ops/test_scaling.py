"""spx.frexp and spx.renorm (and Tensor.renorm/renorm_) against torch's: values at zeros,
subnormals, infinities and NaN; gradients; argument errors."""

import numpy as np
import pytest

import spx
from tests.tensor._parity import check, check_grad, check_raises

torch = pytest.importorskip("torch")

# (No subnormals: XLA on CPU flushes them to zero, so spx cannot split them as torch does.)
EDGES = np.array([0.0, -0.0, 1.0, 3.5, -0.3, 1e-37, 1e30, np.inf, -np.inf, np.nan], np.float32)


def test_frexp_matches_torch_at_edges():
    check(lambda m, x: m.frexp(x), EDGES)


def test_frexp_gradient_matches_torch():
    check_grad(lambda m, x: m.frexp(x).mantissa, np.array([0.3, -5.0, 8.0, 1e-3], np.float32))
    check_grad(lambda m, x: m.frexp(x).mantissa, EDGES[np.isfinite(EDGES)])


def test_frexp_of_float16_and_named_fields():
    check(lambda m, x: m.frexp(x), np.array([0.75, -6.0, 1e-5], np.float16))
    mantissa, exponent = spx.frexp(spx.tensor([8.0]))
    out = spx.frexp(spx.tensor([8.0]))
    assert out.mantissa.tolist() == mantissa.tolist() == [0.5]
    assert out.exponent.tolist() == exponent.tolist() == [4]


def test_frexp_refuses_integers():
    check_raises(lambda m, x: m.frexp(x), np.array([1, 2]), error=RuntimeError)


A = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [0.0, 0.0, 0.0]], np.float32)


@pytest.mark.parametrize("p", [1, 2, 3.5, float("inf")])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("maxnorm", [0.0, 5.0, 100.0])
def test_renorm_values_and_gradients_match_torch(p, dim, maxnorm):
    check(lambda m, x: m.renorm(x, p, dim, maxnorm), A)
    check_grad(lambda m, x: m.renorm(x, p, dim, maxnorm), A, rtol=1e-4, atol=1e-5)


def test_renorm_of_a_3d_tensor_and_the_methods():
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    check(lambda m, t: m.renorm(t, 2, 1, 1.0), x)
    check(lambda m, t: t.renorm(2, 2, 0.5), x)
    check(lambda m, t: t.clone().renorm_(1, 0, 2.0), x)


def test_renorm_argument_errors():
    check_raises(lambda m, x: m.renorm(x, 0, 0, 1.0), A, error=RuntimeError)
    check_raises(lambda m, x: m.renorm(x, 2, 0, -1.0), A, error=RuntimeError)
    check_raises(lambda m, x: m.renorm(x, 2, 3, 1.0), A, error=IndexError)
