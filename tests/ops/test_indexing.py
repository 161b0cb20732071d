"""spx's indexing functions (where, gather, scatter, index_*, masked_*, searchsorted, ...)."""

import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import spx
from tests.tensor._parity import check, check_grad, check_raises, data

torch = pytest.importorskip("torch")

X = (3, 4)
IDX = np.array([[0, 2, 1, 0], [2, 2, 0, 1]])  # indices along dim 0 of a (3, 4) input


def test_where_three_args():
    check(lambda m, x, y: m.where(x > 0, x, y), X, X)
    check(lambda m, x, y: m.where(x > 0, x, y), X, (4,))
    check(lambda m, x: m.where(x > 0, x, 0.0), X)
    check(lambda m, x: m.where(x > 0, 1.0, x), X)
    check(lambda m, x: m.where(x > 0, 1.0, 0.0), X)
    check(lambda m, x: m.where(x > 0, 1, 0), X)
    check(lambda m, x: m.where(x > 0, x.half(), 2.5), X, rtol=1e-3)
    check(lambda m, x: m.where(x > 0, 2, x.half()), X, rtol=1e-3)
    check_grad(lambda m, x, y: m.where(x > 0, x, y), X, X)
    check_grad(lambda m, x: m.where(x > 0, x * 2, 0.0), X)


def test_where_one_arg_is_nonzero_tuple():
    check(lambda m, x: m.where(x > 0), X)
    check(lambda m, x: m.where(x), np.array([[0, 1], [2, 0]]))


def test_where_errors():
    check_raises(lambda m, x: m.where(x, x, x), X, error=RuntimeError)
    with pytest.raises(TypeError, match="both input and other"):
        spx.where(spx.ones(2) > 0, spx.ones(2))


@pytest.mark.parametrize("dim", [0, 1])
def test_gather(dim):
    idx = IDX if dim == 0 else np.array([[3, 0], [1, 1], [2, 3]])
    check(lambda m, x, i: m.gather(x, dim, i), X, idx)
    check(lambda m, x, i: x.gather(dim, i), X, idx)
    check_grad(lambda m, x, i: m.gather(x, dim, i), X, idx)


def test_gather_smaller_index():
    check(lambda m, x, i: m.gather(x, 1, i), X, np.array([[3], [0]]))


GATHER_ERRORS = [
    ("float_index", lambda m, x: m.gather(x, 0, m.zeros(1, 4))),
    ("rank", lambda m, x: m.gather(x, 0, m.tensor([0, 1]))),
    ("size", lambda m, x: m.gather(x, 0, m.zeros(1, 5, dtype=m.int64))),
    ("scatter_src_small", lambda m, x: x.scatter(0, m.zeros(2, 4, dtype=m.int64), m.ones(1, 4))),
]


@pytest.mark.parametrize("fn", [c[1] for c in GATHER_ERRORS], ids=[c[0] for c in GATHER_ERRORS])
def test_gather_scatter_errors(fn):
    check_raises(fn, X, error=RuntimeError)


def test_scatter_forms():
    check(lambda m, x, i, s: m.scatter(x, 0, i, s), X, np.array([[0, 1, 2, 0]]), (1, 4))
    check(lambda m, x, i: m.scatter(x, 1, i, value=-1.0), X, np.array([[1], [0], [3]]))
    check(lambda m, x, i, s: m.scatter(x, 0, i, s, reduce="add"), X, IDX, (2, 4))
    check(lambda m, x, i, s: m.scatter(x, 0, i, s, reduce="multiply"), X, IDX, (2, 4))
    check(lambda m, x, i, s: m.scatter_add(x, 0, i, s), X, IDX, (2, 4))
    check(lambda m, x, i, s: x.scatter_add(0, i, s), X, IDX, (3, 4))
    check_grad(lambda m, x, i, s: m.scatter_add(x, 0, i, s), X, IDX, (2, 4))
    check_grad(lambda m, x, i, s: m.scatter(x, 0, i, s), X, np.array([[0, 1, 2, 0]]), (1, 4))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    kw = {"include_self": include_self}
    check(lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, reduce, **kw), X, IDX, (2, 4))
    check(lambda m, x, i, s: x.scatter_reduce(0, i, s, reduce=reduce, **kw), X, IDX, (2, 4))
    ints = data(X, 5, "int")
    check(lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, reduce, **kw), ints, IDX,
          data((2, 4), 6, "int"))  # fmt: skip


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    kw = {"include_self": include_self}
    idx = np.array([2, 0, 2])  # a repeated index: two source slices meet in slice 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch: "index_reduce() is in beta"
        check(lambda m, x, i, s: m.index_reduce(x, 0, i, s, reduce, **kw), X, idx, (3, 4))
        check(lambda m, x, i, s: x.index_reduce(1, i, s, reduce, **kw), X, idx, (3, 3))
        check(lambda m, x, i, s: x.clone().index_reduce_(-1, i, s, reduce, **kw), X, idx, (3, 3))
        ints = data(X, 5, "int")
        check(lambda m, x, i, s: x.index_reduce(0, i, s, reduce, **kw), ints, idx,
              data((3, 4), 6, "int"))  # fmt: skip
        if reduce == "mean":  # JAX has no gradient of a scatter-multiply with repeated indices
            # (spx raises), torch none of amax/amin here
            check_grad(lambda m, x, i, s: m.index_reduce(x, 0, i, s, reduce, **kw), X, idx,
                       (3, 4))  # fmt: skip


INDEX_REDUCE_ERRORS = [
    ("sum", lambda m, x, i: x.index_reduce(0, i, m.ones(3, 4), "sum"), RuntimeError),
    ("count", lambda m, x, i: x.index_reduce(0, i[:2], m.ones(3, 4), "prod"), RuntimeError),
    ("slices", lambda m, x, i: x.index_reduce(0, i, m.ones(3, 5), "prod"), RuntimeError),
    (
        "past_end",
        lambda m, x, i: x.index_reduce(0, m.tensor([3, 0, 2]), m.ones(3, 4), "prod"),
        IndexError,
    ),
]


@pytest.mark.parametrize(
    ("fn", "error"), [e[1:] for e in INDEX_REDUCE_ERRORS], ids=[e[0] for e in INDEX_REDUCE_ERRORS]
)
def test_index_reduce_errors(fn, error):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check_raises(fn, X, np.array([2, 0, 2]), error=error)


def test_index_functions():
    idx = np.array([2, 0, 2])
    check(lambda m, x, i: m.index_select(x, 0, i), X, idx)
    check(lambda m, x, i: m.index_select(x, 1, i), X, idx)
    check(lambda m, x, i, s: m.index_add(x, 0, i, s), X, idx, (3, 4))
    check(lambda m, x, i, s: m.index_add(x, 1, i, s, alpha=2), X, idx, (3, 3))
    check(lambda m, x, i, s: m.index_copy(x, 0, i, s), X, np.array([2, 0]), (2, 4))
    check(lambda m, x, i: m.index_fill(x, 1, i, -2.0), X, idx)
    check_grad(lambda m, x, i: m.index_select(x, 1, i), X, idx)
    check_grad(lambda m, x, i, s: m.index_add(x, 0, i, s, alpha=0.5), X, idx, (3, 4))
    check_grad(lambda m, x, i, s: m.index_copy(x, 0, i, s), X, np.array([2, 0]), (2, 4))


def test_masked():
    check(lambda m, x: m.masked_fill(x, x > 0, 0.5), X)
    check(lambda m, x: m.masked_fill(x, m.tensor([True, False, True, False]), -1), X)
    check(lambda m, x: m.masked_select(x, x > 0), X)
    check(lambda m, x: m.masked_select(x, m.tensor([True, False, True, True])), X)
    check_grad(lambda m, x: m.masked_fill(x, x > 0, 0.0), X)
    check_grad(lambda m, x: m.masked_select(x, x > 0), X)
    check_raises(lambda m, x: m.masked_fill(x, x, 0.0), X, error=RuntimeError)


def test_take():
    check(lambda m, x, i: m.take(x, i), X, np.array([[0, 11], [5, 5]]))
    check(lambda m, x, i: m.take_along_dim(x, i, 1), X, np.array([[0], [2], [3]]))
    check(lambda m, x, i: m.take_along_dim(x, i), X, np.array([5, 0]))
    check_grad(lambda m, x, i: m.take(x, i), X, np.array([[0, 11], [5, 5]]))


def test_nonzero_argwhere():
    x = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]], np.float32)
    check(lambda m, t: m.nonzero(t), x)
    check(lambda m, t: m.nonzero(t, as_tuple=True), x)
    check(lambda m, t: m.argwhere(t), x)
    check(lambda m, t: t.nonzero(), x)


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_bucketize(right):
    seq = np.array([1, 3, 5, 7])
    vals = np.array([[0, 3, 6], [7, 8, 1]])
    check(lambda m, s, v: m.searchsorted(s, v, right=right), seq, vals)
    check(lambda m, s, v: m.searchsorted(s, v, side="right" if right else "left"), seq, vals)
    check(lambda m, s: m.searchsorted(s, 3, right=right), seq)
    check(lambda m, s, v: m.bucketize(v, s, right=right), seq, vals)
    check(lambda m, s: m.bucketize(5, s, right=right), seq)
    seq2 = np.array([[1, 3, 5], [2, 4, 6]])
    check(lambda m, s, v: m.searchsorted(s, v, right=right), seq2, np.array([[3, 0], [6, 5]]))
    unsorted = np.array([5, 1, 3])
    check(lambda m, s, v: m.searchsorted(s, v, sorter=m.argsort(s)), unsorted, np.array([2, 4]))
    fl = data((5,)).cumsum().astype(np.float32)
    check(lambda m, s, v: m.bucketize(v, s, right=right), fl, (2, 3))


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_with_nan_follows_torchs_binary_search(right):
    # NaN sorts last; torch's search steps right past it for a value above the finite entries
    # and for a NaN value (a search by sort order stopped before the NaNs).
    nan = np.nan
    for seq in ([1.0, 2.0, nan], [1.0, 2.0, 2.0, nan, nan], [nan], [0.0, 1.0, 2.0, 3.0, nan]):
        values = np.array([0.5, 1.5, 2.0, 3.0, nan, -1.0], np.float32)
        check(lambda m, s, v: m.searchsorted(s, v, right=right), np.array(seq, np.float32), values)
    rows = np.array([[1.0, nan, nan], [0.0, 4.0, nan]], np.float32)
    check(lambda m, s, v: m.searchsorted(s, v, right=right), rows, np.array([[2.0, nan]] * 2))
    empty = np.zeros(0, np.float32)
    check(lambda m, s, v: m.searchsorted(s, v, right=right), empty, np.array([1.0], np.float32))


def test_searchsorted_errors():
    check_raises(lambda m, s: m.bucketize(s, s.reshape(2, 2)), np.array([1, 2, 3, 4]),
                 error=RuntimeError)  # fmt: skip
    check_raises(lambda m, s: m.searchsorted(s, m.tensor([[1]])), np.array([[1, 2], [3, 4]]),
                 error=RuntimeError)  # fmt: skip
    check_raises(lambda m, s: m.searchsorted(s, 1, side="left", right=True), np.array([1, 2]),
                 error=RuntimeError)  # fmt: skip


def test_accepts_jax_and_numpy():
    x = jnp.arange(6.0).reshape(2, 3)
    out = spx.gather(x, 1, np.array([[2], [0]]))
    assert isinstance(out, spx.Tensor) and out.tolist() == [[2.0], [3.0]]
    assert spx.where(np.array([True, False]), 1.0, 2.0).tolist() == [1.0, 2.0]
    assert spx.index_select(np.eye(2, dtype=np.float32), 0, jnp.array([1])).tolist() == [[0, 1]]


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(accumulate):
    rows, cols = np.array([0, 2, 0]), np.array([1, 1, 1])
    check(lambda m, x, r, c: m.index_put(x, (r, c), m.tensor(5.0), accumulate), X, rows, cols)
    check(lambda m, x, r, c, v: x.index_put((r, c), v, accumulate=accumulate), X, rows, cols,
          (3,))  # fmt: skip
    check(lambda m, x, r: x.index_put((r,), m.ones(4), accumulate), X, rows)

    def inplace(m, x, r, c, v):
        y = x.clone()
        assert y.index_put_((r, c), v, accumulate) is y
        return y

    check(inplace, X, rows, cols, (3,))
    # distinct positions: with repeated ones and no accumulate, which write wins (and where
    # the gradient goes) is unspecified in torch
    rows, cols = (rows, cols) if accumulate else (np.array([0, 2, 1]), cols)
    check_grad(lambda m, x, r, c, v: x.index_put((r, c), v, accumulate), X, rows, cols, (3,))


def test_masked_scatter_and_put():
    mask = np.array([[True, False, True, False], [False, True, False, False], [True] * 4])
    check(lambda m, x, k, s: m.masked_scatter(x, k, s), X, mask, (12,))
    check(lambda m, x, k, s: x.masked_scatter(k, s), X, mask[0].copy(), (3, 5))
    check(lambda m, x, k, s: x.clone().masked_scatter_(k, s), X, mask, (4, 4))
    check_grad(lambda m, x, k, s: m.masked_scatter(x, k, s), X, mask, (12,))
    idx = np.array([0, 11, 5])
    check(lambda m, x, i, s: m.put(x, i, s), X, idx, (3,))
    check(lambda m, x, i, s: x.put(i, s, accumulate=True), X, np.array([1, 1, 2]), (3,))
    check(lambda m, x, i, s: x.clone().put_(i, s), X, idx, (3,))
    check_grad(lambda m, x, i, s: m.put(x, i, s), X, idx, (3,))
    check_raises(lambda m, x: x.masked_scatter(x, x), X, error=RuntimeError)
    # a source with fewer elements than the mask's True positions (broadcast too): torch's error
    check_raises(lambda m, x, k, s: x.masked_scatter(k, s), X, mask, (6,), error=RuntimeError)
    check_raises(lambda m, x, k, s: x.masked_scatter(k, s), X, mask[0].copy(), (5,),
                 error=RuntimeError)  # fmt: skip


def test_masked_scatter_edges_as_torch():
    # an empty source where the mask has no True; a mask broader than self (out of place)
    check(lambda m, x, k, s: x.masked_scatter(k, s), (3,), np.zeros(3, bool),
          np.zeros(0, np.float32))  # fmt: skip
    broad = np.array([[True, False, True], [False, True, False]])
    check(lambda m, x, k, s: x.masked_scatter(k, s), (3,), broad, (4,))
    check_raises(lambda m, x, k, s: x.masked_scatter_(k, s), (3,), broad, (4,),
                 error=RuntimeError)  # fmt: skip


def test_masked_scatter_checks_a_computed_mask_once_it_is_known():
    x, src = spx.zeros(2, 3), spx.tensor([1.0, 2.0, 3.0])
    mask = spx.tensor([1.0, 0.0, 1.0]) > 0.5  # recorded: its values are computed later
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones"):
        x.masked_scatter(mask, src).tolist()
