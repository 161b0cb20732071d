"""spx.special's modified Bessel functions against torch.special: i0/i0e/i1/i1e (values and
torch's gradients, including the limit 1/2 of I1' at 0) and the non-differentiable
modified_bessel_*/scaled_modified_bessel_* (values; results without grad, as torch's)."""

import numpy as np
import pytest

import spx
from tests.special._compare import DTYPES, EDGES, compare

DIFFERENTIABLE = ["i0", "i0e", "i1", "i1e"]
CONSTANT = [
    "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_values_and_gradients_match_torch(name, dtype):
    compare(lambda m, t: getattr(m.special, name)(t), [EDGES], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", CONSTANT)
def test_values_match_torch_and_do_not_require_grad(name, dtype):
    x = np.concatenate([EDGES, [0.1, 1.9, 2.1, 3.0, 50.0, 700.0]])
    compare(lambda m, t: getattr(m.special, name)(t), [x], dtype)


def test_i0_slope_is_zero_at_zero_and_i1_slope_is_one_half():
    x = spx.tensor([0.0, -0.0], requires_grad=True)
    spx.special.i0(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])
    y = spx.tensor([0.0, 1e-30], requires_grad=True)
    spx.special.i1(y).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [0.5, 0.5])
