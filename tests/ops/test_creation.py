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


@pytest.mark.parametrize("value", [2.0, 3, True])
def test_tensor_of_a_python_number_has_a_definite_dtype(value):
    # A 0-d tensor of a number promotes like any 0-d tensor (it is not a "wrapped number"):
    # with another 0-d tensor the wider dtype wins.
    for lib in (spx, torch):
        t = lib.tensor(value)
        half = lib.ones((), dtype=lib.float16)
        assert str(t.dtype).rsplit(".", 1)[-1] in ("float32", "int32", "int64", "bool")
        want = torch.promote_types(torch.tensor(value).dtype, torch.float16)
        assert str((t * half).dtype).rsplit(".", 1)[-1] == str(want).rsplit(".", 1)[-1]
    assert_same(spx.as_tensor(value), torch.as_tensor(value))
