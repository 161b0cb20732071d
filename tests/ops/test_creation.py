"""The creation functions spx.ops adds to the lead's (tril/triu_indices, scalar_tensor)."""

import pytest

import spx
from tests.tensor._parity import assert_same

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize("args", [(3, 3), (3, 4), (4, 2), (3, 3, 1), (3, 4, -1), (2, 5, 3)])
def test_triangle_indices(name, args):
    assert_same(getattr(spx, name)(*args), getattr(torch, name)(*args))


def test_scalar_tensor():
    for value in (3, 2.5, True):
        assert_same(spx.scalar_tensor(value), torch.scalar_tensor(value))
    assert_same(spx.scalar_tensor(3, dtype=spx.int32), torch.scalar_tensor(3, dtype=torch.int32))
