"""spx.unravel_index against torch's: shapes as ints, tuples and Size; wrapping of negative
and out-of-range indices; batched indices; the errors."""

import numpy as np
import pytest

import spx
from tests.tensor._parity import check, check_raises

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "indices,shape",
    [
        (np.array(5), 6),
        (np.array([0, 4, 5]), (2, 3)),
        (np.array([[5, 7], [0, 3]]), (2, 2, 2)),
        (np.array([-1, 10, -7]), (2, 3)),
        (np.array([3, 11]), (4, 1, 3)),
    ],
)
def test_unravel_index_matches_torch(indices, shape):
    check(lambda m, i: m.unravel_index(i, shape), indices)


def test_a_size_shape():
    check(lambda m, i: m.unravel_index(i, m.Size([3, 4])), np.array([7, 11]))


def test_float_indices_raise():
    check_raises(lambda m, i: m.unravel_index(i, (2, 3)), np.array([1.0]), error=TypeError)


def test_negative_shape_raises():
    with pytest.raises(TypeError, match="non-negative"):
        spx.unravel_index(spx.tensor([1]), (2, -3))
