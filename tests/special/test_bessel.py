"""spx.special's Bessel functions of the first and second kind and airy_ai against
torch.special: values across every branch of the approximations, and results that do not
require grad (torch's have no grad_fn)."""

import numpy as np
import pytest

from tests.special._compare import DTYPES, EDGES, compare

NAMES = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "spherical_bessel_j0", "airy_ai"]
# Both sides of each switch: 1e-5 (j0's series), 0.5 (spherical j0), 2.09 and 8.32 (Airy),
# 5 (Bessel), 103.892 (Ai underflows).
BRANCHES = np.array([1e-5, 2e-5, 0.49, 0.51, 2.08, 2.1, -2.08, -2.1, 8.3, 8.33, 103.0, 104.0,
                     -15.0, 12.3, 50.0, -50.0])  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_values_match_torch_and_do_not_require_grad(name, dtype):
    x = np.concatenate([EDGES, BRANCHES])
    compare(lambda m, t: getattr(m.special, name)(t), [x], dtype)


@pytest.mark.parametrize("name", NAMES)
def test_integer_input_is_computed_as_float32(name):
    compare(lambda m, t: getattr(m.special, name)(t.int()), [np.arange(-3, 8)], np.float32)
