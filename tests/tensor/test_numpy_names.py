"""numpy's axis=/keepdims= accepted where torch accepts them, against torch."""

import pickle

import pytest

import spx
from spx._tensor import numpy_names
from tests.tensor._parity import check, check_grad, check_raises

torch = pytest.importorskip("torch")

X = (3, 4, 2)

METHODS = [
    lambda m, x: x.sum(axis=1),
    lambda m, x: x.sum(axis=(0, 2), keepdims=True),
    lambda m, x: x.mean(axis=-1, keepdims=True),
    lambda m, x: x.prod(axis=0),
    lambda m, x: x.std(axis=1),
    lambda m, x: x.var(axis=0, keepdims=True),
    lambda m, x: x.amax(axis=1),
    lambda m, x: x.logsumexp(axis=2),
    lambda m, x: x.max(axis=1),
    lambda m, x: x.min(axis=0, keepdims=True),
    lambda m, x: x.argmax(axis=1),
    lambda m, x: x.any(axis=0),
    lambda m, x: x.cumsum(axis=1),
    lambda m, x: x.softmax(axis=-1),
    lambda m, x: x.log_softmax(axis=0),
    lambda m, x: x.sort(axis=1),
    lambda m, x: x.argsort(axis=0),
    lambda m, x: x.median(axis=1),
    lambda m, x: x.squeeze(axis=0)[None].squeeze(axis=0),
    lambda m, x: x.unsqueeze(axis=1),
    lambda m, x: x.flatten(1).count_nonzero(axis=0),
]
FUNCTIONS = [
    lambda m, x: m.sum(x, axis=1),
    lambda m, x: m.mean(x, axis=(0, 1), keepdims=True),
    lambda m, x: m.max(x, axis=2),
    lambda m, x: m.argmin(x, axis=0, keepdims=True),
    lambda m, x: m.cat([x, x], axis=1),
    lambda m, x: m.stack([x, x], axis=0),
    lambda m, x: m.softmax(x, axis=1),
    lambda m, x: m.cumsum(x, axis=0),
    lambda m, x: m.std(x, axis=1, keepdims=True),
    lambda m, x: m.logsumexp(x, axis=0),
]


@pytest.mark.parametrize("case", METHODS, ids=range(len(METHODS)))
def test_tensor_methods_take_axis_and_keepdims(case):
    check(case, X, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", FUNCTIONS, ids=range(len(FUNCTIONS)))
def test_functions_take_axis_and_keepdims(case):
    check(case, X, rtol=1e-5, atol=1e-6)


def test_gradients_flow_through_the_aliased_calls():
    check_grad(lambda m, x: x.sum(axis=1).softmax(axis=0) * m.mean(x, axis=1), X, rtol=1e-4)


def test_both_names_at_once_is_an_error_naming_both():
    check_raises(lambda m, x: x.sum(dim=0, axis=1), X, error=TypeError)
    x = spx.ones(2, 3)
    with pytest.raises(TypeError, match=r"dim=.*axis="):
        x.sum(dim=0, axis=1)
    with pytest.raises(TypeError, match=r"keepdim=.*keepdims="):
        spx.mean(x, 0, keepdim=True, keepdims=True)


def test_aliased_methods_and_functions_pickle_by_reference():
    for fn in (spx.Tensor.sum, spx.Tensor.softmax, spx.sum, spx.cat):
        assert pickle.loads(pickle.dumps(fn)) is fn


def test_every_torch_named_method_and_function_takes_the_aliases():
    """No method or function with a dim/keepdim parameter was left unwrapped."""
    missing = []
    for name in sorted(set(dir(spx.Tensor)) - numpy_names._HOT):
        fn = getattr(spx.Tensor, name)
        params = numpy_names._parameters(fn)
        if ("dim" in params or "keepdim" in params) and not hasattr(fn, "__numpy_aliases__"):
            missing.append(f"Tensor.{name}")
    for name in spx.ops.__all__:
        fn = getattr(spx, name)
        params = numpy_names._parameters(fn)
        if ("dim" in params or "keepdim" in params) and not hasattr(fn, "__numpy_aliases__"):
            missing.append(f"spx.{name}")
    assert not missing
