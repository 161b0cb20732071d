"""spx's comparison functions (eq, maximum, allclose, isnan, sort, topk, ...) against torch."""

import numpy as np
import pytest

import spx
from spx.ops import comparison as ops_cmp
from tests.tensor._parity import check, check_grad, check_raises, data

torch = pytest.importorskip("torch")

X = (3, 4)


@pytest.mark.parametrize("name", ops_cmp._BINARY_NAMES)
def test_binary_comparison(name):
    check(lambda m, a, b: getattr(m, name)(a, b), X, (4,))
    if name not in ("maximum", "minimum"):  # torch wants tensors for these
        check(lambda m, a: getattr(m, name)(a, 0.1), X)


def test_maximum_minimum_grad():
    check_grad(lambda m, a, b: m.maximum(a, b), X, X)
    check_grad(lambda m, a, b: m.minimum(a, b), X, (4,))


@pytest.mark.parametrize("name", ops_cmp._UNARY_NAMES)
def test_unary_predicates(name):
    x = np.array([0.0, -1.5, np.inf, -np.inf, np.nan, 2.0], np.float32)
    check(lambda m, a: getattr(m, name)(a), x)


def test_isclose_allclose_equal():
    a = data(X)
    b = a + np.float32(1e-6)
    c = a.copy()
    c[0, 0] += 1
    check(lambda m, x, y: m.isclose(x, y), a, b)
    check(lambda m, x, y: m.isclose(x, y, rtol=0, atol=1e-8), a, b)
    check(lambda m, x, y: m.allclose(x, y), a, b)
    check(lambda m, x, y: m.allclose(x, y), a, c)
    check(lambda m, x, y: m.allclose(x, y, atol=2), a, c)
    check(lambda m, x, y: m.equal(x, y), a, a.copy())
    check(lambda m, x, y: m.equal(x, y), a, c)
    check(lambda m, x, y: m.equal(x, y), a, a[:2].copy())
    special = np.array([np.inf, -np.inf, np.nan, 1.0], np.float32)
    check(lambda m, x: m.isclose(x, x), special)
    check(lambda m, x: m.isclose(x, x, equal_nan=True), special)
    check(lambda m, x: x.allclose(x, equal_nan=True), special)
    check(lambda m, x: x.isclose(x * 2), X)
    check_raises(lambda m, x: m.isclose(x, x.int()), X, error=RuntimeError)


def test_isin():
    x = np.array([[1, 2, 3], [4, 5, 6]])
    check(lambda m, a, b: m.isin(a, b), x, np.array([2, 6, 9]))
    check(lambda m, a, b: m.isin(a, b, invert=True), x, np.array([2, 6, 9]))
    check(lambda m, a: m.isin(a, 5), x)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort_msort(descending):
    check(lambda m, a: m.sort(a, descending=descending), X)
    check(lambda m, a: m.sort(a, 0, descending), X)
    check(lambda m, a: m.argsort(a, dim=0, descending=descending), X)
    check(lambda m, a: m.msort(a), X)
    check_grad(lambda m, a: m.sort(a, 1, descending).values, X)


def test_topk_kthvalue():
    check(lambda m, a: m.topk(a, 2), X)
    check(lambda m, a: m.topk(a, 3, dim=0, largest=False), X)
    check(lambda m, a: m.kthvalue(a, 2), X)
    check(lambda m, a: m.kthvalue(a, 1, 0, True), X)
    check_grad(lambda m, a: m.topk(a, 2).values, X)


def test_accepts_numpy_and_numbers():
    out = spx.maximum(np.array([1.0, -1.0], np.float32), spx.zeros(2))
    assert isinstance(out, spx.Tensor) and out.tolist() == [1.0, 0.0]
    assert spx.eq(spx.tensor([1, 2]), 2).tolist() == [False, True]
    assert spx.isnan(float("nan")).item() is True
