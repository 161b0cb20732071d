"""autograd.Variable (torch's deprecated wrapper) against torch's."""

import pytest

import spx
from spx.autograd import Variable

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("requires_grad", [False, True])
def test_variable_is_a_storage_sharing_leaf_as_torch(requires_grad):
    for lib, var in ((torch, torch.autograd.Variable), (spx, Variable)):
        x = lib.ones(2)
        v = var(x * 1, requires_grad=requires_grad) if requires_grad else var(x)
        assert v is not x and isinstance(x, var) and isinstance(v, var)
        assert v.requires_grad is requires_grad and v.is_leaf and v.grad_fn is None
        if not requires_grad:
            v[0] = 5.0  # shares x's storage
            assert x.tolist() == [5.0, 1.0]
        else:
            (v * 3).sum().backward()
            assert v.grad.tolist() == [3.0, 3.0]
        with pytest.raises(TypeError, match="has to be a tensor"):
            var([1, 2])
    assert not isinstance([1.0], Variable)
