"""Reductions, scans and sorting of spx.Tensor against torch, with dim/keepdim variants."""

import numpy as np
import pytest

import spx
from tests.tensor._parity import check, check_grad, check_raises, data

torch = pytest.importorskip("torch")

X = (3, 4, 2)
INTS = data((3, 4), 3, "int")
BOOLS = data((3, 4), 4, "bool")
DIMS = [None, 0, 1, -1, (0, 2), (-1, 1), [0]]
KEEP = [False, True]


def _dim_kwargs(dim, keepdim):
    return {} if dim is None else {"dim": dim, "keepdim": keepdim}


@pytest.mark.parametrize("name", ["sum", "mean", "nansum", "nanmean", "amax", "amin",
                                  "logsumexp", "std", "var", "all", "any"])  # fmt: skip
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("keepdim", KEEP)
def test_reduce_dims(name, dim, keepdim):
    if name == "logsumexp" and dim is None:
        dim = (0, 1, 2)  # torch's logsumexp needs dim
    kw = _dim_kwargs(dim, keepdim)
    check(lambda m, x: getattr(x, name)(**kw), X, rtol=1e-5, atol=1e-6)
    if name not in ("all", "any"):
        check_grad(lambda m, x: getattr(x, name)(**kw), X, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdim", KEEP)
def test_prod(dim, keepdim):
    kw = _dim_kwargs(dim, keepdim)
    check(lambda m, x: x.prod(**kw), (3, 4), rtol=1e-5)
    check_grad(lambda m, x: x.prod(**kw), (3, 4), rtol=1e-4)


def test_reduce_positional_dim():
    check(lambda m, x: x.sum(1), X)
    check(lambda m, x: x.sum(1, True), X)
    check(lambda m, x: x.mean((0, 1)), X)
    check(lambda m, x: x.std(0), X)
    check(lambda m, x: x.amax(1, True), X)


@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "all", "any", "count_nonzero"])
@pytest.mark.parametrize("kind", ["int", "bool"])
def test_reduce_int_bool(name, kind):
    x = INTS if kind == "int" else BOOLS
    check(lambda m, t: getattr(t, name)(), x)
    check(lambda m, t: getattr(t, name)(dim=1), x)


def test_reduce_dtype():
    check(lambda m, x: x.sum(dtype=m.float32), INTS)
    check(lambda m, x: x.sum(1, dtype=m.float32), INTS)
    check(lambda m, x: x.mean(dtype=m.float32), INTS)
    check(lambda m, x: x.prod(dtype=m.float32), INTS)
    check(lambda m, x: x.cumsum(0, dtype=m.float32), INTS)
    check(lambda m, x: x.half().sum(dtype=m.float32), X, rtol=1e-3)


def test_mean_of_ints_raises():
    check_raises(lambda m, x: x.mean(), INTS, error=RuntimeError)


@pytest.mark.parametrize("correction", [0, 1, 2])
@pytest.mark.parametrize("dim", [None, 1, (0, 2)], ids=str)
def test_std_var_correction(correction, dim):
    for name in ("std", "var"):
        check(lambda m, x, n=name: getattr(x, n)(dim=dim, correction=correction), X, rtol=1e-5)
        check_grad(lambda m, x, n=name: getattr(x, n)(dim, correction=correction), X, rtol=1e-4)


@pytest.mark.parametrize("unbiased", [True, False])
def test_std_var_unbiased(unbiased):
    check(lambda m, x: x.std(unbiased), X)
    check(lambda m, x: x.var(unbiased=unbiased), X)
    check(lambda m, x: x.std(1, unbiased, True), X)
    check(lambda m, x: x.var(dim=0, unbiased=unbiased, keepdim=True), X)


def test_var_single_element_is_nan():
    check(lambda m, x: x.var(), (1,))
    check(lambda m, x: x.std(0), (1, 3))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min(name):
    check(lambda m, x: getattr(x, name)(), X)
    check_grad(lambda m, x: getattr(x, name)(), X)
    for dim in (0, 1, -1):
        for keepdim in KEEP:
            check(lambda m, x, d=dim, k=keepdim: getattr(x, name)(d, k), X)
            check(lambda m, x, d=dim, k=keepdim: getattr(x, name)(dim=d, keepdim=k), X)
            check_grad(lambda m, x, d=dim, k=keepdim: getattr(x, name)(d, k)[0], X)
    check(lambda m, x: getattr(x, name)(1).values, X)
    check(lambda m, x: getattr(x, name)(1).indices, X)
    check(lambda m, x, y: getattr(x, name)(y), X, X)
    check_grad(lambda m, x, y: getattr(x, name)(y), X, X)
    check(lambda m, x: getattr(x, name)(dim=0), INTS)


def test_max_dim_unpacks():
    values, indices = spx.tensor(data(X)).max(dim=1)
    assert values.shape == (3, 2) and indices.shape == (3, 2)


def test_max_ties_first_index():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], np.float32)
    check(lambda m, t: t.max(1), x)
    check(lambda m, t: t.min(0), x)
    check(lambda m, t: t.argmax(1), x)
    check(lambda m, t: t.argmin(), x)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin(name):
    check(lambda m, x: getattr(x, name)(), X)
    for dim in (0, 1, -1):
        check(lambda m, x, d=dim: getattr(x, name)(d), X)
        check(lambda m, x, d=dim: getattr(x, name)(dim=d, keepdim=True), X)
    check(lambda m, x: getattr(x, name)(keepdim=True), X)
    check(lambda m, x: getattr(x, name)(1), INTS)


def test_aminmax():
    check(lambda m, x: tuple(x.aminmax()), X)
    check(lambda m, x: tuple(x.aminmax(dim=1)), X)
    check(lambda m, x: tuple(x.aminmax(dim=-1, keepdim=True)), X)
    check(lambda m, x: x.aminmax(dim=0).max, X)


def test_count_nonzero():
    x = np.where(data(X) > 0.3, data(X), 0).astype(np.float32)
    check(lambda m, t: t.count_nonzero(), x)
    check(lambda m, t: t.count_nonzero(1), x)
    check(lambda m, t: t.count_nonzero((0, 2)), x)


NORMS = [("fro", None), (2, None), (1, None), (float("inf"), None), (float("-inf"), None),
         (0, None), (3, None), (0.5, None), (2, 1), (1, (0, 1)), ("fro", (0, 1)),
         (float("inf"), -1), (3, 0), ("nuc", None)]  # fmt: skip


@pytest.mark.parametrize("p,dim", NORMS, ids=str)
@pytest.mark.parametrize("keepdim", KEEP)
def test_norm(p, dim, keepdim):
    shape = (3, 4)
    check(lambda m, x: x.norm(p, dim, keepdim), shape, rtol=1e-5)
    if p not in (0,):
        check_grad(lambda m, x: x.norm(p, dim, keepdim), shape, rtol=1e-4)


def test_norm_kwargs():
    check(lambda m, x: x.norm(), X)
    check(lambda m, x: x.norm(dim=1), X)
    check(lambda m, x: x.norm(p=1, dim=-1, keepdim=True), X)


def test_norm_grad_at_zero():
    check_grad(lambda m, x: (x * 0).norm(), (3,))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", KEEP)
def test_median_kthvalue(dim, keepdim):
    check(lambda m, x: x.median(dim, keepdim), (4, 5))
    check(lambda m, x: x.median(dim=dim, keepdim=keepdim), (5, 4))
    check(lambda m, x: x.kthvalue(2, dim, keepdim), (4, 5))
    check_grad(lambda m, x: x.median(dim)[0], (4, 5))
    check_grad(lambda m, x: x.kthvalue(3, dim)[0], (4, 5))


def test_median_all():
    check(lambda m, x: x.median(), (4, 5))
    check(lambda m, x: x.median(), (3, 3))
    check(lambda m, x: x.median(), INTS)
    check_grad(lambda m, x: x.median(), (3, 3))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort(dim, descending):
    check(lambda m, x: x.sort(dim, descending), X)
    check(lambda m, x: x.sort(dim=dim, descending=descending, stable=True), X)
    check(lambda m, x: x.argsort(dim, descending), X)
    check(lambda m, x: x.argsort(dim=dim, descending=descending), INTS[:, :3].copy())
    check_grad(lambda m, x: x.sort(dim, descending)[0], X)


def test_sort_stable_ties():
    x = np.array([[2, 1, 2, 1, 0, 2], [0, 0, 1, 1, 0, 0]], np.int64)
    check(lambda m, t: t.sort(stable=True), x)
    check(lambda m, t: t.sort(descending=True, stable=True), x)
    check(lambda m, t: t.float().sort(descending=True, stable=True), x)
    check(lambda m, t: t.argsort(dim=1, stable=True), x)


def test_sort_default():
    check(lambda m, x: x.sort(), X)
    check(lambda m, x: x.msort(), X)


@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("dim", [1, -1])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(k, dim, largest):
    shape = (3, 4)
    check(lambda m, x: x.topk(k, dim, largest), shape)
    check(lambda m, x: x.topk(k, dim=dim, largest=largest, sorted=True), shape)
    check_grad(lambda m, x: x.topk(k, dim, largest).values, shape)


def test_topk_dim0_and_default():
    check(lambda m, x: x.topk(2), X)
    check(lambda m, x: x.topk(2, 0), X)
    check(lambda m, x: x.topk(1, dim=1), INTS)


def test_topk_k_too_big():
    check_raises(lambda m, x: x.topk(5), (3, 4), error=RuntimeError)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "logcumsumexp"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scans(name, dim):
    check(lambda m, x: getattr(x, name)(dim), X, rtol=1e-5)
    check(lambda m, x: getattr(x, name)(dim=dim), X, rtol=1e-5)
    check_grad(lambda m, x: getattr(x, name)(dim), X, rtol=1e-4)


def test_scans_int():
    check(lambda m, x: x.cumsum(0), INTS)
    check(lambda m, x: x.cumprod(1), INTS)
    check(lambda m, x: x.cumsum(1), BOOLS)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1])
def test_cummax_cummin(name, dim):
    check(lambda m, x: getattr(x, name)(dim), X)
    check(lambda m, x: getattr(x, name)(dim), INTS)
    check_grad(lambda m, x: getattr(x, name)(dim).values, X)


def test_reduce_dim_errors():
    check_raises(lambda m, x: x.sum(3), X, error=IndexError)
    check_raises(lambda m, x: x.sum((0, 0)), X, error=RuntimeError)
    check_raises(lambda m, x: x.max(3), X, error=IndexError)
    check_raises(lambda m, x: x.argmax(-4), X, error=IndexError)
    check_raises(lambda m, x: x.kthvalue(5, 1), X, error=RuntimeError)


def test_reduce_0d():
    check(lambda m, x: x.reshape(()).sum(), (1,))
    check(lambda m, x: x.reshape(()).sum(0), (1,))
    check(lambda m, x: x.reshape(()).max(0), (1,))
    check(lambda m, x: x.reshape(()).argmax(), (1,))
    check(lambda m, x: x.reshape(()).cumsum(0), (1,))
    check(lambda m, x: x.reshape(()).sort(), (1,))


# -- found by differential fuzzing against torch ---------------------------------------------
NAN3 = np.array([1.0, np.nan, 3.0, np.nan, 0.0], np.float32)
CONST = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]], np.float32)


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, x: x.std(),
        lambda m, x: x.std(1),
        lambda m, x: x.std(1, correction=0),
        lambda m, x: x.std(1, unbiased=False, keepdim=True),
        lambda m, x: m.std_mean(x, 1)[0],
    ],
)
def test_std_gradient_is_zero_where_the_deviation_is(fn):
    # jnp.std's derivative is 0 / 0 = NaN for a constant row; torch's is 0.
    check(fn, CONST)
    check_grad(fn, CONST)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.bool_, np.int32])
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_integer_scans_accumulate_in_the_default_integer(op, dtype):
    x = np.array([100, 100, 3], dtype) if dtype != np.bool_ else np.array([True, True, False])
    check(lambda m, x: getattr(x, op)(0), x)
    check(lambda m, x: getattr(m, op)(x, 0, dtype=m.float32), x)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin_propagate_nan(op):
    check(lambda m, x: getattr(x, op)(0), NAN3)


def test_sort_descending_puts_nan_first():
    check(lambda m, x: x.sort(descending=True), NAN3)
    check(lambda m, x: x.argsort(descending=True), NAN3)
    ties = np.array([3.0, 1.0, 3.0, 2.0, 1.0], np.float32)
    check(lambda m, x: x.sort(descending=True, stable=True), ties)


@pytest.mark.parametrize("dim", [[], ()])
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "std", "var", "nansum"])
def test_empty_dim_list_reduces_everything(op, dim):
    check(lambda m, x: getattr(x, op)(dim=dim), (2, 3))


@pytest.mark.parametrize("dim", [[], ()])
@pytest.mark.parametrize("op", ["any", "all"])
def test_empty_dim_list_reduces_nothing_for_any_all(op, dim):
    x = np.array([[0.0, 1.0], [2.0, 0.0]], np.float32)
    check(lambda m, x: getattr(x, op)(dim=dim), x)


_INTEGRAL_REDUCTIONS = {
    "sum": lambda x: x.sum(),
    "sum(0)": lambda x: x.sum(0),
    "nansum": lambda x: x.nansum(),
    "prod(1)": lambda x: x.prod(1),
    "trace": lambda x: x.reshape(2, 2).trace(),  # torch has no bool trace
    "cumsum": lambda x: x.cumsum(0),
}


@pytest.mark.parametrize(
    ("fn", "dtype"),
    [
        pytest.param(fn, dtype, id=f"{name}-{dtype}")
        for name, fn in _INTEGRAL_REDUCTIONS.items()
        for dtype in ("uint8", "int8", "int16", "bool")
        if (name, dtype) != ("trace", "bool")
    ],
)
def test_integral_reductions_accumulate_in_torchs_int64(fn, dtype):
    # torch sums (and multiplies) bool and integer tensors, uint8 included, in int64 (int32 here
    # without x64); JAX gives uint32 for unsigned inputs, so `x.sum() - 1000` wrapped around.
    import torch

    values = {"uint8": [200, 100, 3, 1], "int8": [100, 100, 3, 1], "bool": [1, 1, 0, 1]}
    array = np.array(values.get(dtype, [200, 100, 3, 1])).astype(dtype).reshape(4, 1)
    expected = fn(torch.tensor(array))
    got = fn(spx.tensor(array))
    assert str(got.dtype) == str(expected.dtype).replace("torch.", "").replace("int64", "int32")
    np.testing.assert_array_equal((got - 1000).numpy(), (expected - 1000).numpy())


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.var(correction=5),
        lambda x: x.std(correction=2),
        lambda x: x.reshape(2, 2).var(dim=0, correction=3),
        lambda x: x.var(correction=4),
    ],
)
def test_a_correction_past_the_count_divides_by_zero_as_torch(fn):
    # torch divides by max(0, N - correction): inf (NaN for a zero sum), not a negative count.
    import torch

    x = np.array([1.0, 2.0, 4.0, 4.0], np.float32)
    expected = fn(torch.tensor(x)).numpy()
    np.testing.assert_array_equal(fn(spx.tensor(x)).numpy(), expected)


def test_uint8_any_all_and_empty_medians_and_unique_nans_as_torch():
    u = np.array([[0, 3], [0, 0]], np.uint8)
    check(lambda m, x: (x.any(), x.all(), x.any(1), x.all(0, keepdim=True)), u)
    empty = np.zeros((0,), np.float32)
    check(lambda m, x: (x.median(), x.nanmedian()), empty)
    check(lambda m, x: x.median(), np.zeros((0,), np.int32))  # the lowest integer
    nans = np.array([np.nan, 1.0, np.nan, 1.0], np.float32)
    check(lambda m, x: m.unique(x, return_counts=True), nans)  # each NaN stays (NaN != NaN)
