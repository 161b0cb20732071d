"""spx's reductions and scans (spx.sum, spx.max, spx.std_mean, spx.unique, ...) against torch."""

import numpy as np
import pytest

import spx
from tests.tensor._parity import check, check_grad, check_raises, data

torch = pytest.importorskip("torch")

X = (3, 4, 2)
INTS = data((3, 4), 3, "int")


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "nansum", "nanmean", "amax", "amin",
                                  "std", "var", "all", "any", "count_nonzero"])  # fmt: skip
def test_reductions(name):
    check(lambda m, x: getattr(m, name)(x), X)
    check(lambda m, x: getattr(m, name)(x, 1), X)
    if name != "prod":  # torch's prod takes one dim
        check(lambda m, x: getattr(m, name)(x, dim=(0, 2)), X)
    if name != "count_nonzero":
        check(lambda m, x: getattr(m, name)(x, dim=-1, keepdim=True), X)


def test_reductions_dtype_and_grad():
    check(lambda m, x: m.sum(x, dtype=m.float32), INTS)
    check(lambda m, x: m.mean(x, 0, dtype=m.float32), INTS)
    check_grad(lambda m, x: m.sum(x, (0, 1)), X)
    check_grad(lambda m, x: m.mean(x, -1, keepdim=True), X)
    check_grad(lambda m, x: m.prod(x, 1), X, rtol=1e-4)
    check_grad(lambda m, x: m.std(x, 0), X, rtol=1e-4)


@pytest.mark.parametrize("name", ["std_mean", "var_mean"])
def test_std_var_mean(name):
    check(lambda m, x: getattr(m, name)(x), X)
    check(lambda m, x: getattr(m, name)(x, 1), X)
    check(lambda m, x: getattr(m, name)(x, dim=(0, 1), keepdim=True), X)
    check(lambda m, x: getattr(m, name)(x, dim=1, correction=0), X)
    check(lambda m, x: getattr(m, name)(x, 1, False), X)
    check(lambda m, x: getattr(m, name)(x, unbiased=False), X)
    check_grad(lambda m, x: getattr(m, name)(x, 0), X, rtol=1e-4)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_forms(name):
    check(lambda m, x: getattr(m, name)(x), X)
    check(lambda m, x: getattr(m, name)(x, 1), X)
    check(lambda m, x: getattr(m, name)(x, dim=0, keepdim=True), X)
    check(lambda m, x, y: getattr(m, name)(x, y), X, X)
    check_grad(lambda m, x: getattr(m, name)(x, 1).values, X)


def test_argmax_argmin_aminmax():
    check(lambda m, x: m.argmax(x), X)
    check(lambda m, x: m.argmax(x, dim=1), X)
    check(lambda m, x: m.argmin(x, 2, keepdim=True), X)
    check(lambda m, x: tuple(m.aminmax(x)), X)
    check(lambda m, x: tuple(m.aminmax(x, dim=1, keepdim=True)), X)


def test_logsumexp_norm():
    check(lambda m, x: m.logsumexp(x, 1), X)
    check(lambda m, x: m.logsumexp(x, (0, 2), keepdim=True), X)
    check(lambda m, x: m.norm(x), X)
    check(lambda m, x: m.norm(x, 1, dim=1), X)
    check(lambda m, x: m.norm(x, p=float("inf"), dim=(0, 1)), X)
    check(lambda m, x: m.norm(x, "fro", dim=(1, 2), keepdim=True), X)
    check_grad(lambda m, x: m.logsumexp(x, 1), X)
    check_grad(lambda m, x: m.norm(x, dim=-1), X)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "logcumsumexp"])
def test_scans(name):
    check(lambda m, x: getattr(m, name)(x, 1), X, rtol=1e-5)
    check(lambda m, x: getattr(m, name)(x, dim=-1), X, rtol=1e-5)
    check_grad(lambda m, x: getattr(m, name)(x, 0), X, rtol=1e-4)


def test_cummax_cummin():
    check(lambda m, x: m.cummax(x, 1), X)
    check(lambda m, x: m.cummin(x, dim=0), X)
    check(lambda m, x: m.cummax(x, 1), INTS)


def test_median_nanmedian():
    check(lambda m, x: m.median(x), X)
    check(lambda m, x: m.median(x, 1), (3, 4))
    check(lambda m, x: m.median(x, dim=0, keepdim=True), (4, 3))
    x = data((3, 5))
    x[0, 1] = np.nan
    x[2, :] = np.nan
    check(lambda m, t: m.median(t, 1), x)
    check(lambda m, t: m.median(t), x)
    check(lambda m, t: m.nanmedian(t), x)
    got = spx.nanmedian(spx.tensor(x), 1)
    want = torch.nanmedian(torch.tensor(x), 1)
    np.testing.assert_allclose(got.values.numpy(), want.values.numpy())
    # an all-NaN row's index is unspecified (torch returns some position); the others match
    np.testing.assert_array_equal(got.indices.numpy()[:2], want.indices.numpy()[:2])
    check(lambda m, t: m.nanmedian(t, 0, keepdim=True), x[:2].copy())
    check_grad(lambda m, t: m.nanmedian(t, 1).values, x[:2].copy())


def test_mode():
    x = np.array([[1, 2, 2, 1, 3], [5, 5, 4, 4, 4], [3, 1, 2, 0, 7]], np.float32)
    check(lambda m, t: m.mode(t), x)
    check(lambda m, t: m.mode(t, 1, keepdim=True), x)
    check(lambda m, t: m.mode(t, 0), x)
    check(lambda m, t: t.mode(), x.astype(np.int64))
    check_grad(lambda m, t: m.mode(t, 1).values, x)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(interpolation):
    kw = {"interpolation": interpolation}
    check(lambda m, x: m.quantile(x, 0.3, **kw), X)
    check(lambda m, x: m.quantile(x, 0.5, dim=1, **kw), X)
    check(lambda m, x: m.quantile(x, m.tensor([0.1, 0.9]), dim=0, keepdim=True, **kw), X)
    check(lambda m, x: m.quantile(x, 0.75, keepdim=True, **kw), X)
    check(lambda m, x: x.quantile(m.tensor([0.25, 0.5]), **kw), X)
    y = data((4, 5))
    y[1, 2] = np.nan
    check(lambda m, t: m.nanquantile(t, 0.4, dim=1, **kw), y)
    check(lambda m, t: m.quantile(t, 0.4, dim=1, **kw), y)


def test_quantile_errors():
    check_raises(lambda m, x: m.quantile(x, 1.5), X, error=RuntimeError)
    check_raises(lambda m, x: m.quantile(x, 0.5), INTS, error=RuntimeError)
    check_raises(lambda m, x: m.quantile(x, 0.5, interpolation="cubic"), X, error=ValueError)


def test_quantile_grad():
    check_grad(lambda m, x: m.quantile(x, 0.3, dim=1), (3, 5), rtol=1e-4)


def test_unique():
    x = np.array([[3, 1, 3], [2, 1, 5]])
    check(lambda m, t: m.unique(t), x)
    check(lambda m, t: m.unique(t, return_inverse=True), x)
    check(lambda m, t: m.unique(t, return_counts=True), x)
    check(lambda m, t: m.unique(t, return_inverse=True, return_counts=True), x)
    check(lambda m, t: t.unique(sorted=True), x.astype(np.float32))
    rows = np.array([[1, 2], [1, 2], [0, 5]])
    check(lambda m, t: m.unique(t, dim=0, return_inverse=True, return_counts=True), rows)
    check(lambda m, t: m.unique(t, dim=1), rows.T.copy())


def test_unique_consecutive():
    x = np.array([1, 1, 2, 2, 3, 1, 1, 2])
    check(lambda m, t: m.unique_consecutive(t), x)
    check(lambda m, t: m.unique_consecutive(t, return_inverse=True, return_counts=True), x)
    rows = np.array([[1, 2], [1, 2], [0, 5], [1, 2]])
    check(lambda m, t: m.unique_consecutive(t, return_counts=True, dim=0), rows)
    check(lambda m, t: t.unique_consecutive(return_inverse=True), x.reshape(2, 4))


def test_accepts_arrays_and_numbers():
    assert spx.sum(np.ones((2, 2), np.float32)).item() == 4.0
    assert spx.max(3.0).item() == 3.0
    values, indices = spx.max(np.array([[1.0, 7.0]], np.float32), dim=1)
    assert values.tolist() == [7.0] and indices.tolist() == [1]


def test_bincount():
    x = np.array([0, 2, 2, 5, 1])
    check(lambda m, t: m.bincount(t), x)
    check(lambda m, t: t.bincount(minlength=8), x)
    check(lambda m, t, w: m.bincount(t, w), x, (5,))
    check(lambda m, t, w: m.bincount(t, weights=w, minlength=7), x, (5,))
    check(lambda m, t: m.bincount(t), np.zeros(0, np.int64))
    check_raises(lambda m, t: m.bincount(t), np.array([1, -1]), error=RuntimeError)
    check_raises(lambda m, t: m.bincount(t), np.array([[1]]), error=RuntimeError)
    check_raises(lambda m, t: m.bincount(t), (3,), error=RuntimeError)


def test_histc():
    x = np.array([1.0, 2.0, 1.0, 4.0, 3.0, -1.0, 2.5], np.float32)
    check(lambda m, t: m.histc(t, bins=4, min=0, max=3), x)
    check(lambda m, t: m.histc(t, bins=3), x)
    check(lambda m, t: t.histc(5, -2, 5), x)
    check(lambda m, t: m.histc(t, bins=4), np.array([2.0, 2.0], np.float32))
    check(lambda m, t: m.histc(t, 10), (50,))
    check_raises(lambda m, t: m.histc(t, 4, 3, 1), x, error=RuntimeError)


def test_cov_corrcoef():
    check(lambda m, t: m.cov(t), (3, 6), rtol=1e-5)
    check(lambda m, t: m.cov(t, correction=0), (3, 6), rtol=1e-5)
    check(lambda m, t: t.cov(), (6,), rtol=1e-5)
    fw, aw = np.array([1, 2, 1, 3]), data((4,), 8, "pos")
    check(lambda m, t, f, a: m.cov(t, fweights=f, aweights=a), (2, 4), fw, aw, rtol=1e-5)
    check(lambda m, t: m.corrcoef(t), (3, 6), rtol=1e-5, atol=1e-6)
    check(lambda m, t: m.cov(t), data((2, 5), kind="int"), rtol=1e-5)
    check_grad(lambda m, t: m.cov(t), (3, 6), rtol=1e-4)
    check_grad(lambda m, t: m.corrcoef(t), (3, 6), rtol=1e-4)
