"""Indexing of spx.Tensor against torch: x[...] reads, x[...] = v writes, gather/scatter
methods, index_* and masked_* methods, with gradients."""

import warnings

import numpy as np
import pytest

import spx
from tests.tensor._parity import check, check_grad, check_raises, data

torch = pytest.importorskip("torch")

X = (3, 4, 5)

READS = [
    ("int", lambda m, x: x[1]),
    ("neg_int", lambda m, x: x[-1]),
    ("two_ints", lambda m, x: x[1, 2]),
    ("three_ints", lambda m, x: x[2, -1, 0]),
    ("slice", lambda m, x: x[1:]),
    ("slice_stop", lambda m, x: x[:2]),
    ("slice_neg", lambda m, x: x[-2:]),
    ("slice_past_end", lambda m, x: x[1:10]),
    ("slice_empty", lambda m, x: x[2:1]),
    ("slice_step", lambda m, x: x[::2]),
    ("slice_step_start", lambda m, x: x[:, 1::2]),
    ("slices", lambda m, x: x[1:, :2, 3:]),
    ("int_and_slice", lambda m, x: x[0, 1:3]),
    ("ellipsis", lambda m, x: x[..., 1]),
    ("ellipsis_mid", lambda m, x: x[0, ..., 2]),
    ("ellipsis_only", lambda m, x: x[...]),
    ("two_ellipses", lambda m, x: x[..., 0, ...]),  # torch: the second ... stands for nothing
    ("none", lambda m, x: x[None]),
    ("none_mid", lambda m, x: x[:, None, 1]),
    ("none_last", lambda m, x: x[..., None]),
    ("int_tensor", lambda m, x: x[m.tensor([2, 0, 2])]),
    ("int_tensor_2d", lambda m, x: x[m.tensor([[0, 1], [2, 2]])]),
    ("neg_int_tensor", lambda m, x: x[m.tensor([-1, 0])]),
    ("list", lambda m, x: x[[0, 2]]),
    ("int_tensor_dim1", lambda m, x: x[:, m.tensor([3, 1])]),
    ("two_int_tensors", lambda m, x: x[m.tensor([0, 2]), m.tensor([1, 3])]),
    ("broadcast_int_tensors", lambda m, x: x[m.tensor([[0], [2]]), m.tensor([1, 3])]),
    ("adv_separated", lambda m, x: x[m.tensor([0, 2]), :, m.tensor([1, 3])]),
    ("adv_and_int", lambda m, x: x[1, :, m.tensor([0, 4])]),  # torch: (4, 2); numpy: (2, 4)
    ("adv_and_int_after", lambda m, x: x[m.tensor([0, 1]), :, 2]),
    ("int_adv_int", lambda m, x: x[0, m.tensor([1, 3]), -1]),
    ("mask", lambda m, x: x[x > 0]),
    ("mask_rows", lambda m, x: x[m.tensor([True, False, True])]),
    ("mask_2d", lambda m, x: x[(x > 0).all(-1)]),
    ("mask_dim1", lambda m, x: x[:, m.tensor([True, False, True, True])]),
    ("scalar_tensor_index", lambda m, x: x[m.tensor(1)]),
    ("int_then_mask", lambda m, x: x[0][x[0] > 0]),
]


@pytest.mark.parametrize("fn", [r[1] for r in READS], ids=[r[0] for r in READS])
def test_getitem(fn):
    check(fn, X)
    check_grad(fn, X)


def test_getitem_0d_and_int_tensors():
    check(lambda m, x: x[0].item(), (3,))
    check(lambda m, x: x[1:3], data((5,), kind="int"))
    check(lambda m, x: x[x > 0], data((5,), kind="int"))


READ_ERRORS = [
    ("int_out_of_range", lambda m, x: x[3], IndexError),
    ("neg_out_of_range", lambda m, x: x[-4], IndexError),
    ("too_many", lambda m, x: x[0, 0, 0, 0], IndexError),
    ("tensor_out_of_range", lambda m, x: x[m.tensor([0, 3])], IndexError),
    ("float_tensor", lambda m, x: x[m.tensor([0.0])], IndexError),
    ("negative_step", lambda m, x: x[::-1], ValueError),
    ("mask_shape", lambda m, x: x[m.tensor([True, False])], IndexError),
]


@pytest.mark.parametrize("fn,error", [r[1:] for r in READ_ERRORS], ids=[r[0] for r in READ_ERRORS])
def test_getitem_errors(fn, error):
    check_raises(fn, X, error=error)


def _write(index, value):
    """x[index] = value on a copy of x; returns the copy (and works for both libraries)."""

    def fn(m, x):
        y = x.clone()
        y[index(m, y)] = value(m, y) if callable(value) else value
        return y

    return fn


WRITES = [
    ("int_scalar", lambda m, y: 1, 7.0),
    ("int_tensor_value", lambda m, y: 0, lambda m, y: m.ones(4, 5)),
    ("int_broadcast", lambda m, y: 0, lambda m, y: m.arange(5.0)),
    ("two_ints", lambda m, y: (1, 2), -1.0),
    ("elem", lambda m, y: (2, 3, 4), 9.0),
    ("slice", lambda m, y: slice(1, None), 0.0),
    ("slice_step", lambda m, y: (slice(None), slice(None, None, 2)), 5.0),
    ("ellipsis", lambda m, y: (Ellipsis, 0), lambda m, y: m.zeros(3, 4)),
    ("mask_scalar", lambda m, y: y > 0, 0.0),
    ("mask_tensor_value", lambda m, y: y > 0, lambda m, y: y[y > 0] * 2),
    ("mask_rows", lambda m, y: m.tensor([True, False, True]), -3.0),
    ("int_tensor", lambda m, y: m.tensor([2, 0]), 1.5),
    ("int_tensor_value", lambda m, y: m.tensor([2, 0]), lambda m, y: m.ones(2, 4, 5)),
    ("two_int_tensors", lambda m, y: (m.tensor([0, 2]), m.tensor([1, 3])), 4.0),
    ("adv_and_slice", lambda m, y: (slice(None), m.tensor([0, 3])), lambda m, y: m.zeros(5)),
    ("list", lambda m, y: [0, 1], 2.0),
    ("zero_d_tensor_value", lambda m, y: 0, lambda m, y: m.tensor(3.0)),
]


@pytest.mark.parametrize("index,value", [w[1:] for w in WRITES], ids=[w[0] for w in WRITES])
def test_setitem(index, value):
    check(_write(index, value), X)
    check_grad(_write(index, value), X)


def test_setitem_casts_to_tensor_dtype():
    check(_write(lambda m, y: 0, 2.7), data((3, 2), kind="int"))
    check(_write(lambda m, y: y > 0, 1), data((3, 2)))
    check(_write(lambda m, y: 1, True), data((3, 2), kind="bool"))


def test_setitem_gradient_to_the_value():
    for lib in (torch, spx):
        x = lib.zeros(3, 2)
        v = lib.ones(2, requires_grad=True)
        y = x * 1
        y[1] = v * 3
        (y * lib.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])).sum().backward()
        assert v.grad.tolist() == [9.0, 12.0]


def test_setitem_wrong_shape():
    def fn(m, x):
        x[0] = m.ones(3)

    check_raises(fn, (2, 4), error=(RuntimeError, ValueError, TypeError))


def test_setitem_on_leaf_that_requires_grad_raises():
    x = spx.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x[0] = 1.0
    with spx.no_grad():
        x[0] = 1.0
    assert x.tolist() == [1.0, 0.0, 0.0]


def test_losses_into_a_preallocated_tensor():
    # losses[k] = loss.item() is a common training-script pattern.
    losses = spx.zeros(3)
    for k in range(3):
        losses[k] = float(k) * 1.5
    assert losses.tolist() == [0.0, 1.5, 3.0]


METHODS = [
    ("index_select", lambda m, x: x.index_select(1, m.tensor([3, 0, 3]))),
    ("index_add", lambda m, x: x.index_add(0, m.tensor([0, 0]), m.ones(2, 4, 5), alpha=2)),
    ("index_copy", lambda m, x: x.index_copy(2, m.tensor([4, 1]), m.zeros(3, 4, 2))),
    ("index_fill", lambda m, x: x.index_fill(1, m.tensor([1, 2]), -1.0)),
    ("take", lambda m, x: x.take(m.tensor([[0, 59], [7, 7]]))),
    ("take_along_dim", lambda m, x: x.take_along_dim(m.tensor([[[0]], [[2]], [[4]]]), 2)),
    ("masked_select", lambda m, x: x.masked_select(x > 0.5)),
    ("masked_select_broadcast", lambda m, x: x.masked_select(m.tensor([True] * 4 + [False]))),
    ("masked_fill", lambda m, x: x.masked_fill(x < 0, 0.0)),
    ("gather", lambda m, x: x.gather(2, m.zeros(3, 4, 2, dtype=m.int64))),
    ("scatter", lambda m, x: x.scatter(1, m.tensor([[[0, 1, 2, 3, 0]]]), -5.0 * m.ones(1, 1, 5))),
    ("scatter_value", lambda m, x: x.scatter(2, m.tensor([[[4]]]), value=0.0)),
    ("argwhere", lambda m, x: x.argwhere()),
    ("nonzero_tuple", lambda m, x: (x > 0).nonzero(as_tuple=True)),
]


@pytest.mark.parametrize("fn", [c[1] for c in METHODS], ids=[c[0] for c in METHODS])
def test_indexing_methods(fn):
    check(fn, X)


@pytest.mark.parametrize(
    "fn", [c[1] for c in METHODS if c[0] not in ("argwhere", "nonzero_tuple")],
    ids=[c[0] for c in METHODS if c[0] not in ("argwhere", "nonzero_tuple")],
)  # fmt: skip
def test_indexing_method_grads(fn):
    check_grad(fn, X)


def test_index_update_inplace_methods():
    check(lambda m, x: x.clone().index_add_(0, m.tensor([1]), m.ones(1, 4, 5)), X)
    check(lambda m, x: x.clone().index_fill_(2, m.tensor([0]), 3.0), X)
    check(lambda m, x: x.clone().index_copy_(0, m.tensor([2]), m.zeros(1, 4, 5)), X)
    check(lambda m, x: x.clone().scatter_(2, m.tensor([[[1]]]), 8.0), X)
    check(lambda m, x: x.clone().scatter_add_(0, m.tensor([[[1, 0]]]), m.ones(1, 1, 2)), X)
    check(lambda m, x: x.clone().masked_fill_(x > 0, 1.0), X)
    i = np.array([[[0, 1]]])
    check(lambda m, x, j: x.clone().scatter_reduce_(2, j, m.ones(1, 1, 2), "amax"), X, i)


def test_basic_indices_repeated_over_shapes():
    # Basic indices are parsed once per (shape, index): the result must still follow the shape.
    for shape in [(3, 4), (5, 2), (3, 4)]:
        for _ in range(2):
            check(lambda m, x: (x[-1], x[1:], x[:, ::2], x[None, 0], x[..., 1]), shape)
            check_raises(lambda m, x: x[5], shape, error=IndexError)
    x = spx.zeros(4)
    for i in range(4):
        x[i] = float(i)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_uint8_index_is_a_mask_with_torchs_warning():
    mask = np.array([1, 0, 1], np.uint8)
    with pytest.warns(UserWarning):  # both warn; spx's own warning is checked below
        check(lambda m, x, k: x[k], (3,), mask)
    with pytest.warns(UserWarning, match="uint8 is now deprecated, please use a dtype torch.bool"):
        assert spx.tensor([10.0, 20.0, 30.0])[spx.tensor(mask)].tolist() == [10.0, 30.0]


@pytest.mark.parametrize(
    "index",
    [True, (True, 0), (0, True), (Ellipsis, True), (True, Ellipsis, 1), (True, slice(None), None)],
)
def test_a_true_index_adds_a_dimension_as_torch(index):
    # A 0-d True mask: a new dimension of size 1 that consumes no dimension (as None).
    check(lambda m, x: x[index], X)
    check_grad(lambda m, x: x[index], X)


def test_a_false_index_raises_with_the_equivalent():
    with pytest.raises(IndexError, match=r"x\[None\]\[:0\]"):
        spx.ones(2, 3)[False]


@pytest.mark.parametrize("index", [(True, True), (True, [0, 1]), (True, slice(None), [0, 2])])
def test_a_true_index_mixed_with_advanced_indices_raises(index):
    # torch broadcasts a 0-d boolean with the other advanced indices; spx refuses the mix.
    with pytest.raises(IndexError, match="on its own first"):
        spx.ones(2, 3)[index]


# Index tensors whose values are already known are range-checked as torch does (JAX would read
# NaN, wrap a negative index, or drop the write, silently).
INDEX_VALUE_ERRORS = [
    ("gather_past_end", lambda m, x: x.gather(1, m.tensor([[4], [0], [0]])), RuntimeError),
    ("gather_negative", lambda m, x: x.gather(1, m.tensor([[-1], [0], [0]])), RuntimeError),
    ("scatter_past_end", lambda m, x: x.scatter(1, m.tensor([[4], [0], [0]]), 1.0), RuntimeError),
    ("scatter_add_negative", lambda m, x: x.scatter_add(1, m.tensor([[-1]]), x), RuntimeError),
    (
        "scatter_reduce_past_end",
        lambda m, x: x.scatter_reduce(1, m.tensor([[4]]), x, "amax"),
        RuntimeError,
    ),
    ("index_select_past_end", lambda m, x: x.index_select(0, m.tensor([3])), IndexError),
    ("index_select_negative", lambda m, x: x.index_select(0, m.tensor([-1])), IndexError),
    ("index_select_2d_index", lambda m, x: x.index_select(0, m.tensor([[1]])), IndexError),
    ("index_add_past_end", lambda m, x: x.index_add(0, m.tensor([3]), m.ones(1, 4)), RuntimeError),
    ("index_add_2d_index", lambda m, x: x.index_add(0, m.tensor([[1]]), m.ones(1, 4)), IndexError),
    ("index_copy_negative", lambda m, x: x.index_copy(0, m.tensor([-1]), m.ones(1, 4)), IndexError),
    ("index_fill_past_start", lambda m, x: x.index_fill(0, m.tensor([-4]), 1.0), IndexError),
    ("index_fill_2d_index", lambda m, x: x.index_fill(0, m.tensor([[1]]), 1.0), RuntimeError),
    ("take_past_end", lambda m, x: x.take(m.tensor([12])), IndexError),
    ("take_past_start", lambda m, x: x.take(m.tensor([-13])), IndexError),
    ("put_past_end", lambda m, x: x.put(m.tensor([12]), m.ones(1)), IndexError),
    (
        "masked_select_int_mask",
        lambda m, x: x.masked_select(m.ones(3, 4, dtype=m.long)),
        RuntimeError,
    ),
    ("spx_gather", lambda m, x: m.gather(x, 1, m.tensor([[4], [0], [0]])), RuntimeError),
    ("spx_index_select", lambda m, x: m.index_select(x, 0, m.tensor([3])), IndexError),
]


@pytest.mark.parametrize(
    "fn,error", [e[1:] for e in INDEX_VALUE_ERRORS], ids=[e[0] for e in INDEX_VALUE_ERRORS]
)
def test_index_values_out_of_range_raise_as_torch(fn, error):
    check_raises(fn, (3, 4), error=error)


INDEX_VALUE_EDGES = [
    ("index_fill_negative", lambda m, x: x.index_fill(0, m.tensor([-1]), 1.0)),
    ("take_negative", lambda m, x: x.take(m.tensor([-1, 11]))),
    ("put_negative", lambda m, x: x.put(m.tensor([-1]), m.ones(1))),
    ("index_select_0d_index", lambda m, x: x.index_select(0, m.tensor(2))),
    ("gather_last", lambda m, x: x.gather(1, m.tensor([[3], [0], [2]]))),
    ("masked_select_bool", lambda m, x: x.masked_select(x > 0)),
]


@pytest.mark.parametrize(
    "fn", [e[1] for e in INDEX_VALUE_EDGES], ids=[e[0] for e in INDEX_VALUE_EDGES]
)
def test_index_values_in_range_match_torch(fn):
    check(fn, (3, 4))


def test_index_range_message_names_the_value():
    with pytest.raises(RuntimeError, match="index 4 is out of bounds for dimension 1 with size 4"):
        spx.zeros(3, 4).gather(1, spx.tensor([[4], [0], [0]]))


@pytest.mark.parametrize(
    "index",
    [
        lambda m: [[0, 1], [2, 0]],  # a list of lists is a tuple of indices (old numpy's rule)
        lambda m: [[0, 1]],
        lambda m: [m.tensor(0), m.tensor(1)],
        lambda m: [0, slice(None)],
        lambda m: [0, None],
        lambda m: [0, 2],  # a flat list stays one index array
        lambda m: np.array([[0, 1], [2, 0]]),  # an array too
    ],
    ids=["lists", "one_list", "tensors", "slice", "none", "flat", "ndarray"],
)
def test_a_list_index_is_a_tuple_by_torchs_rule(index):
    def fn(m, x):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's deprecation of the rule
            got = x[index(m)]
            y = x.clone()
            y[index(m)] = -1.0
        return got, y

    check(fn, (4, 3))
    with pytest.warns(UserWarning, match="non-tuple sequence") as caught:
        spx.ones(4, 3)[[[0, 1], [2, 0]]]
    assert caught[0].filename == __file__  # it names the indexing line, as torch's does


# Writes that torch does not cast: a tensor source of another dtype raises (spx cast it,
# saturating where torch's copy_ wraps); the same write with a matching dtype works.
SAME_DTYPE_WRITES = {
    "scatter_": lambda m, x, v: x.scatter_(0, m.tensor([0, 2]), v),
    "scatter_add_": lambda m, x, v: x.scatter_add_(0, m.tensor([0, 2]), v),
    "scatter_reduce_": lambda m, x, v: x.scatter_reduce_(0, m.tensor([0, 2]), v, "amax"),
    "index_put_": lambda m, x, v: x.index_put_((m.tensor([0, 2]),), v),
    "index_put_accumulate": lambda m, x, v: x.index_put_((m.tensor([0, 2]),), v, True),
    "setitem_index": lambda m, x, v: x.__setitem__(m.tensor([0, 2]), v),
    "setitem_mask": lambda m, x, v: x.__setitem__(m.tensor([True, False, True]), v),
    "put_": lambda m, x, v: x.put_(m.tensor([0, 2]), v),
    "index_copy_": lambda m, x, v: x.index_copy_(0, m.tensor([0, 2]), v),
    "index_add_": lambda m, x, v: x.index_add_(0, m.tensor([0, 2]), v),
    "index_reduce_": lambda m, x, v: x.index_reduce_(0, m.tensor([0, 2]), v, "amax"),
    "masked_scatter_": lambda m, x, v: x.masked_scatter_(m.tensor([True, False, True]), v),
}


@pytest.mark.parametrize("how", sorted(SAME_DTYPE_WRITES))
@pytest.mark.parametrize(
    "dst, src", [("int32", "float32"), ("float32", "int32"), ("uint8", "bool")]
)
def test_tensor_sources_of_another_dtype_raise_as_torch(how, dst, src):
    write = SAME_DTYPE_WRITES[how]
    with pytest.raises(RuntimeError) as torch_error:
        write(
            torch,
            torch.zeros(3, dtype=getattr(torch, dst)),
            torch.ones(2, dtype=getattr(torch, src)),
        )
    with pytest.raises(RuntimeError, match="cast the source first") as spx_error:
        write(spx, spx.zeros(3, dtype=getattr(spx, dst)), spx.ones(2, dtype=getattr(spx, src)))
    # torch's message, up to the dtype names
    assert str(spx_error.value).split()[:3] == str(torch_error.value).split()[:3]
    values = np.array([300, 7]) if dst != "uint8" else np.array([200, 7])
    t = torch.zeros(3, dtype=getattr(torch, dst))
    s = spx.zeros(3, dtype=getattr(spx, dst))
    write(torch, t, torch.tensor(values, dtype=getattr(torch, dst)))
    write(spx, s, spx.tensor(values, dtype=getattr(spx, dst)))
    assert s.tolist() == t.tolist()


MASK_FILLS = {
    "mask_in_a_slice": lambda m, x, v: x.__setitem__((slice(None), m.tensor([True, False])), v),
    "mask_then_int": lambda m, x, v: x.__setitem__((m.tensor([True, False]), 0), v),
    "list_mask": lambda m, x, v: x.__setitem__([True, False], v),
    "one_element": lambda m, x, v: x.__setitem__(m.tensor([True, False]), v.reshape(1)),
    "index_put_": lambda m, x, v: x.index_put_((m.tensor([True, False]),), v),
    "list_as_tuple": lambda m, x, v: x.__setitem__([slice(None), m.tensor([True, False])], v),
    "zero_d_int_beside": lambda m, x, v: x.__setitem__((m.tensor(0), m.tensor([True, False])), v),
}


@pytest.mark.parametrize("how", sorted(MASK_FILLS))
def test_one_value_through_a_bool_mask_is_a_cast_as_torch(how):
    # torch's canDispatchToMaskedFill: one element and a bool mask as the only tensor index
    # make the write a masked_fill, which casts the value.
    got = []
    for m in (torch, spx):
        x = m.zeros(2, 2)
        MASK_FILLS[how](m, x, m.tensor(7, dtype=m.int32))
        got.append(x.tolist())
    assert got[0] == got[1]


def test_numbers_and_basic_index_writes_still_cast_as_torch():
    for m in (torch, spx):
        x = m.zeros(3, dtype=m.int32)
        x.scatter_(0, m.tensor([0]), 2.7)  # a number: cast
        x[1:] = m.tensor([1.5, -1.5])  # basic indexing: copy_'s cast
        x[m.tensor([True, False, False])] = m.tensor(4.5)  # mask and one value: masked_fill
        assert x.tolist() == [4, 1, -1]
