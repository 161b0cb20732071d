"""spx.nn.utils.rnn and packed inputs to RNN / LSTM / GRU against torch.

The utilities are compared field by field with torch's (values, shapes, batch_sizes, sorted and
unsorted indices, dtypes), their errors by torch's message keywords, and their gradients through
``loss.backward()`` with ``loss = sum(out * cot)``. The recurrent layers load torch's weights and
run the same packed batch; the packed output, the final states and the gradients of a loss on
all of them w.r.t. the input, the initial states and every parameter must match torch's.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.nn import functional as F
from spx.nn.utils import rnn as srnn
from tests.nn._parity import assert_close, copy_weights, host

torch = pytest.importorskip("torch")
trnn = torch.nn.utils.rnn

# As in tests/nn/test_rnn.py: a recurrence accumulates a few ulps per step, and parameter grads
# sum over time and batch.
RTOL, ATOL, PARAM_ATOL = 1e-5, 2e-6, 1e-5


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _cot(shape, seed):
    return np.random.default_rng(seed).standard_normal(tuple(shape)).astype(np.float32)


def _ints(t):
    return host(t).astype(np.int64).tolist()


def assert_packed_equal(s, t, rtol=RTOL, atol=ATOL):
    """Two PackedSequences hold the same fields (spx indices are int32 without x64)."""
    assert isinstance(s, srnn.PackedSequence), type(s)
    assert tuple(s.data.shape) == tuple(t.data.shape)
    assert str(s.data.dtype) == str(t.data.dtype).removeprefix("torch.")
    assert_close(s.data, t.data, rtol, atol, "data")
    assert _ints(s.batch_sizes) == t.batch_sizes.tolist()
    assert s.batch_sizes.dtype.kind == "i"
    for name in ("sorted_indices", "unsorted_indices"):
        a, b = getattr(s, name), getattr(t, name)
        assert (a is None) == (b is None), name
        if a is not None:
            assert a.dtype.kind == "i" and _ints(a) == b.tolist(), name


# --- PackedSequence. -------------------------------------------------------------------------


def test_packed_sequence_is_torchs_namedtuple():
    p = srnn.pack_sequence([spx.tensor([1.0, 2.0, 3.0]), spx.tensor([4.0])])
    assert srnn.PackedSequence._fields == trnn.PackedSequence._fields
    data, batch_sizes, sorted_indices, unsorted_indices = p  # unpacks as torch's tuple does
    assert data is p.data and batch_sizes is p.batch_sizes
    assert sorted_indices is None and unsorted_indices is None
    assert repr(p).startswith("PackedSequence(data=tensor(")
    # torch's constructor forms: (data, batch_sizes, sorted_indices) infers unsorted_indices,
    # and ((data, batch_sizes),) as one pair.
    q = srnn.PackedSequence(p.data, [2, 1, 1], spx.tensor([1, 0]))
    assert _ints(q.unsorted_indices) == [1, 0] and _ints(q.batch_sizes) == [2, 1, 1]
    r = srnn.PackedSequence((p.data, np.array([2, 1, 1])))
    assert r.sorted_indices is None and r.batch_sizes.tolist() == [2, 1, 1]
    # namedtuple's _replace builds without __new__: the host batch sizes are read back.
    s = p._replace(data=p.data * 2)
    np.testing.assert_array_equal(s._batch_sizes_host(), [2, 1, 1])


def test_packed_sequence_conversions_follow_torch():
    seqs = [np.arange(3, dtype=np.float32), np.arange(2, dtype=np.float32)]
    p = srnn.pack_sequence([spx.tensor(a) for a in seqs], enforce_sorted=False)
    t = trnn.pack_sequence([torch.tensor(a) for a in seqs], enforce_sorted=False)
    assert p.to(spx.float32) is p and p.float() is p  # torch: unchanged data returns self
    assert p.cpu() is p
    for method in ("double", "half", "long", "int", "short", "char", "byte"):
        q, u = getattr(p, method)(), getattr(t, method)()
        assert q.data.dtype == getattr(p.data, method)().dtype, method
        assert q.batch_sizes is p.batch_sizes  # batch_sizes is never converted
        assert _ints(q.sorted_indices) == u.sorted_indices.tolist()
        np.testing.assert_array_equal(host(q.data), u.data.numpy().astype(host(q.data).dtype))
    q = p.to(dtype=spx.bfloat16)
    assert q.data.dtype == spx.bfloat16 and q.sorted_indices.dtype.kind == "i"
    assert p.is_cuda is False


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((np.ones((3, 2), np.float32), [2, 2]), ValueError, r"3 rows but batch_sizes \[2, 2\]"),
        ((np.ones((3, 2), np.float32), [1, 2]), ValueError, "positive and non-increasing"),
        ((np.ones((3, 2), np.float32), [[3]]), RuntimeError, "should be a 1D"),
        ((np.ones((3, 2), np.float32), [2, 1], [0, 1, 2]), ValueError, r"shape \(2,\)"),
        ((np.ones((3, 2), np.float32),), TypeError, "must be the pair"),
    ],
)
def test_packed_sequence_constructor_checks(args, error, match):
    with pytest.raises(error, match=match):
        srnn.PackedSequence(*args)


def test_packed_sequence_is_a_pytree_with_static_batch_sizes():
    p = srnn.pack_padded_sequence(spx.tensor(_x((4, 3, 2))), [2, 4, 1], enforce_sorted=False)
    leaves, tree = jax.tree_util.tree_flatten(p)
    assert len(leaves) == 3  # data, sorted_indices, unsorted_indices
    q = jax.tree_util.tree_unflatten(tree, leaves)
    assert _ints(q.batch_sizes) == [3, 2, 1, 1]

    @jax.jit
    def total(packed):
        # The batch sizes are static inside: Python ints that fix shapes.
        padded, lengths = srnn.pad_packed_sequence(packed, batch_first=True)
        return jnp.asarray(padded).sum() + jnp.asarray(lengths).sum()

    np.testing.assert_allclose(total(p), host(p.data).sum() + 7, rtol=1e-6)


# --- pack_padded_sequence / pad_packed_sequence. -------------------------------------------


PACK_CASES = [
    # (shape (T, B, *) of the time-major input, lengths, enforce_sorted)
    ((5, 3, 2), [5, 3, 1], True),
    ((5, 4), [2, 5, 5, 1], False),  # no trailing dims; ties keep their order as torch's
    ((6, 3, 2, 2), [4, 6, 2], False),
    ((3, 2, 1), [1, 3], False),
]


@pytest.mark.parametrize("lengths_as", ["list", "numpy", "tensor"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["time_major", "batch_first"])
@pytest.mark.parametrize(("shape", "lengths", "enforce_sorted"), PACK_CASES, ids=str)
def test_pack_padded_sequence_matches_torch(
    shape, lengths, enforce_sorted, batch_first, lengths_as
):
    x = _x(shape)
    if batch_first:
        x = np.ascontiguousarray(np.swapaxes(x, 0, 1))
    given = {"list": lengths, "numpy": np.array(lengths), "tensor": spx.tensor(lengths)}
    s = srnn.pack_padded_sequence(spx.tensor(x), given[lengths_as], batch_first, enforce_sorted)
    t = trnn.pack_padded_sequence(torch.tensor(x), lengths, batch_first, enforce_sorted)
    assert_packed_equal(s, t)

    for total_length in (None, shape[0] + 2):
        for pad_first in (False, True):
            ps, ls = srnn.pad_packed_sequence(s, pad_first, -1.5, total_length)
            pt, lt = trnn.pad_packed_sequence(t, pad_first, -1.5, total_length)
            assert tuple(ps.shape) == tuple(pt.shape)
            assert_close(ps, pt, 0, 0, f"padded, batch_first={pad_first}")
            assert _ints(ls) == lt.tolist() and ls.dtype.kind == "i"


def test_integer_data_and_torchs_docstring_example():
    seq = [[1, 2, 0], [3, 0, 0], [4, 5, 6]]
    s = srnn.pack_padded_sequence(spx.tensor(seq), [2, 1, 3], True, False)
    t = trnn.pack_padded_sequence(torch.tensor(seq), [2, 1, 3], True, False)
    assert _ints(s.data) == t.data.tolist() == [4, 1, 3, 5, 2, 6]
    assert s.data.dtype.kind == "i"
    padded, lengths = srnn.pad_packed_sequence(s, batch_first=True)
    assert _ints(padded) == seq and _ints(lengths) == [2, 1, 3]


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_pad_round_trip_gradients_match_torch(enforce_sorted):
    lengths = [5, 3, 2] if enforce_sorted else [3, 5, 2]
    x = _x((3, 5, 4))  # batch_first
    cot_data = _cot((10, 4), 1)
    cot_pad = _cot((3, 7, 4), 2)

    def run(lib, rnn):
        xt = lib.tensor(x, requires_grad=True)
        p = rnn.pack_padded_sequence(xt, lengths, True, enforce_sorted)
        padded, _ = rnn.pad_packed_sequence(p, batch_first=True, total_length=7)
        loss = (p.data * lib.tensor(cot_data)).sum() + (padded * lib.tensor(cot_pad)).sum()
        loss.backward()
        return xt.grad

    g_s, g_t = run(spx, srnn), run(torch, trnn)
    assert_close(g_s, g_t, RTOL, ATOL, "input gradient")
    short = lengths.index(2)
    assert np.all(host(g_s)[short, 2:] == 0)  # nothing flows to the padding


# --- pad_sequence / unpad_sequence / pack_sequence / unpack_sequence. ----------------------


PAD_CASES = [
    dict(shapes=[(3, 2), (5, 2), (1, 2)]),
    dict(shapes=[(4,), (2,), (4,)], padding_value=7.0, batch_first=True),
    dict(shapes=[(2, 3, 2), (4, 3, 2)], padding_side="left", padding_value=-1.0),
    dict(shapes=[(3, 2), (0, 2), (2, 2)], padding_side="left", batch_first=True),
]


@pytest.mark.parametrize("grad", [False, True], ids=["host", "recorded"])
@pytest.mark.parametrize("case", PAD_CASES, ids=str)
def test_pad_sequence_values_and_gradients_match_torch(case, grad):
    case = dict(case)
    arrays = [_x(shape, seed=i) for i, shape in enumerate(case.pop("shapes"))]
    st = [spx.tensor(a, requires_grad=grad) for a in arrays]
    tt = [torch.tensor(a, requires_grad=grad) for a in arrays]
    ps, pt = srnn.pad_sequence(st, **case), trnn.pad_sequence(tt, **case)
    assert tuple(ps.shape) == tuple(pt.shape) and ps.dtype == spx.float32
    assert_close(ps, pt, 0, 0, "padded")
    if not grad:
        # No history: padded in numpy, a computed value (no program, no compile per shape).
        assert ps._s.node.fn is None
        return
    cot = _cot(ps.shape, 3)
    (ps * spx.tensor(cot)).sum().backward()
    (pt * torch.tensor(cot)).sum().backward()
    for i, (a, b) in enumerate(zip(st, tt, strict=True)):
        assert_close(a.grad, b.grad, RTOL, ATOL, f"gradient of sequence {i}")


def test_pad_sequence_inputs_and_dtypes_as_torch():
    a = np.arange(6, dtype=np.int64).reshape(3, 2)
    b = np.ones((1, 2), np.float32)
    ps = srnn.pad_sequence([spx.tensor(a), spx.tensor(b)], padding_value=-1.7)
    pt = trnn.pad_sequence([torch.tensor(a), torch.tensor(b)], padding_value=-1.7)
    assert ps.dtype.kind == "i"  # the first sequence's dtype; the padding value is cast
    assert _ints(ps) == pt.tolist()
    # A Tensor is iterated along dim 0, numpy arrays and a generator are taken as sequences.
    m = _x((2, 3))
    assert_close(srnn.pad_sequence(spx.tensor(m)), trnn.pad_sequence(torch.tensor(m)), 0, 0)
    assert_close(srnn.pad_sequence(iter([m[0], m[1, :2]])), trnn.pad_sequence(
        [torch.tensor(m[0]), torch.tensor(m[1, :2])]
    ), 0, 0)  # fmt: skip
    bf = srnn.pad_sequence([spx.ones(2, dtype=spx.bfloat16), spx.ones(1)])
    assert bf.dtype == spx.bfloat16


def test_pad_sequence_records_one_operation_with_history():
    seqs = [spx.ones(3, 2, requires_grad=True), spx.ones(1, 2, requires_grad=True)]
    out = srnn.pad_sequence(seqs)
    assert out.requires_grad and out._s.node.fn is not None
    with spx.no_grad():
        assert not srnn.pad_sequence(seqs).requires_grad


@pytest.mark.parametrize("batch_first", [False, True])
def test_unpad_sequence_matches_torch_and_leaves_its_argument(batch_first):
    lengths = [3, 1, 4]
    padded = _x((3, 4, 2) if batch_first else (4, 3, 2))
    xs = spx.tensor(padded, requires_grad=True)
    xt = torch.tensor(padded, requires_grad=True)
    us = srnn.unpad_sequence(xs, spx.tensor(lengths), batch_first)
    ut = trnn.unpad_sequence(xt.clone(), torch.tensor(lengths), batch_first)
    assert tuple(xs.shape) == padded.shape  # torch transposes its argument in place; spx doesn't
    loss_s, loss_t = 0, 0
    for i, (a, b) in enumerate(zip(us, ut, strict=True)):
        assert tuple(a.shape) == tuple(b.shape)
        assert_close(a, b, 0, 0, f"sequence {i}")
        cot = _cot(a.shape, i)
        loss_s = loss_s + (a * spx.tensor(cot)).sum()
        loss_t = loss_t + (b * torch.tensor(cot)).sum()
    loss_s.backward()
    loss_t.backward()
    assert_close(xs.grad, xt.grad, 0, 0, "gradient")


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_and_unpack_sequence_match_torch_with_gradients(enforce_sorted):
    shapes = [(5, 3), (3, 3), (2, 3)] if enforce_sorted else [(2, 3), (5, 3), (3, 3), (5, 3)]
    arrays = [_x(s, seed=i) for i, s in enumerate(shapes)]
    st = [spx.tensor(a, requires_grad=True) for a in arrays]
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    ps, pt = srnn.pack_sequence(st, enforce_sorted), trnn.pack_sequence(tt, enforce_sorted)
    assert_packed_equal(ps, pt, 0, 0)
    us, ut = srnn.unpack_sequence(ps), trnn.unpack_sequence(pt)
    loss_s = (ps.data * spx.tensor(_cot(ps.data.shape, 9))).sum()
    loss_t = (pt.data * torch.tensor(_cot(ps.data.shape, 9))).sum()
    for i, (a, b) in enumerate(zip(us, ut, strict=True)):
        assert_close(a, b, 0, 0, f"unpacked sequence {i}")
        loss_s = loss_s + (a * spx.tensor(_cot(a.shape, i))).sum()
        loss_t = loss_t + (b * torch.tensor(_cot(b.shape, i))).sum()
    loss_s.backward()
    loss_t.backward()
    for i, (a, b) in enumerate(zip(st, tt, strict=True)):
        assert_close(a.grad, b.grad, RTOL, ATOL, f"gradient of sequence {i}")


def test_invert_permutation_matches_torch():
    perm = [3, 0, 4, 1, 2]
    assert (
        _ints(srnn.invert_permutation(spx.tensor(perm)))
        == trnn.invert_permutation(torch.tensor(perm)).tolist()
    )
    assert srnn.invert_permutation(None) is None


# --- Errors. ---------------------------------------------------------------------------------


def _pack(lengths, **kw):
    return lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.ones(4, 3, 2), lengths, **kw)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (_pack([2, 3, 1]), RuntimeError, "must be sorted in decreasing order"),
        (_pack([3, 0, 1], enforce_sorted=False), RuntimeError, "has to be greater than 0"),
        (_pack([3, 2]), RuntimeError, r"Expected `len\(lengths\)` to be equal to batch_size"),
        (_pack([[3, 2, 1]]), RuntimeError, "should be a 1D"),
        (
            lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.ones(4, 0, 2), []),
            RuntimeError,
            "Cannot pack empty tensors",
        ),
        (
            lambda lib: lib.nn.utils.rnn.pad_packed_sequence(
                lib.nn.utils.rnn.pack_sequence([lib.ones(3)]), total_length=2
            ),
            ValueError,
            "Expected total_length to be at least the length of the longest sequence",
        ),
        (lambda lib: lib.nn.utils.rnn.pad_sequence([]), RuntimeError, "empty list of sequences"),
        (
            lambda lib: lib.nn.utils.rnn.pad_sequence([lib.ones(2, 3), lib.ones(3, 4)]),
            RuntimeError,
            "must match",
        ),
        (
            lambda lib: lib.nn.utils.rnn.pad_sequence([lib.ones(2)], padding_side="middle"),
            RuntimeError,
            "Expected padding_side to be one of left or right",
        ),
        (lambda lib: lib.nn.utils.rnn.pad_sequence(3), RuntimeError, "Expected iterable"),
        (
            lambda lib: lib.nn.utils.rnn.pack_sequence([lib.ones(2), lib.ones(3)]),
            RuntimeError,
            "must be sorted in decreasing order",
        ),
        (
            lambda lib: lib.nn.utils.rnn.unpad_sequence(lib.ones(3, 2, 1), lib.tensor([3])),
            ValueError,  # torch: zip() argument 2 is shorter than argument 1
            "got 1 lengths for a batch of 2",
        ),
    ],
)
def test_errors_match_torchs(call, error, match):
    with pytest.raises(error, match=match):
        call(spx)
    with pytest.raises(error):
        call(torch)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        # torch reads past the input here and returns whatever memory follows it.
        (lambda: srnn.pack_padded_sequence(spx.ones(4, 3, 2), [5, 2, 1]), RuntimeError,
         r"lengths\[0\] = 5 is longer than the input's 4 time steps"),
        # torch truncates 2.5 to 2.
        (lambda: srnn.pack_padded_sequence(spx.ones(4, 2), [2.5, 1]), TypeError,
         "must be integers"),
        (lambda: srnn.pack_padded_sequence(spx.ones(4), [4]), IndexError, "Dimension out of range"),
        (lambda: srnn.pad_sequence([spx.tensor(1.0)]), RuntimeError, "sequence 0 is 0-D"),
        (lambda: srnn.pad_sequence([[1.0, 2.0]]), TypeError, "must be a Tensor, got list"),
        (lambda: srnn.pad_packed_sequence(spx.ones(3, 2)), TypeError, "must be a PackedSequence"),
        (lambda: srnn.unpad_sequence(spx.ones(3, 2), [4, 1]), ValueError, r"must be in 0\.\.3"),
    ],
)  # fmt: skip
def test_spx_specific_errors_name_the_value_and_the_fix(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_traced_lengths_are_a_clear_error():
    @jax.jit
    def f(x, lengths):
        return srnn.pack_padded_sequence(x, spx.Tensor._of(lengths)).data

    with pytest.raises(TypeError, match="Pass them as a Python list of ints"):
        f(jnp.ones((3, 2, 1)), jnp.array([3, 1]))


# --- RNN / LSTM / GRU with packed input. -------------------------------------------------------

T, N, H_IN, HIDDEN = 6, 4, 3, 5
UNSORTED = [4, 6, 1, 3]

PACKED_CASES = [
    # (kind, constructor kwargs, lengths, enforce_sorted, given initial states)
    ("GRU", dict(), UNSORTED, False, False),
    ("GRU", dict(num_layers=2, bidirectional=True), [6, 4, 3, 1], True, True),
    ("RNN", dict(nonlinearity="relu", bidirectional=True), UNSORTED, False, True),
    ("RNN", dict(num_layers=2, batch_first=True, bias=False), UNSORTED, False, False),
    ("LSTM", dict(num_layers=2, bidirectional=True, batch_first=True), UNSORTED, False, True),
    ("LSTM", dict(proj_size=2, bidirectional=True), UNSORTED, False, True),
    ("LSTM", dict(), [6, 6, 6, 6], True, False),  # every sequence full: as a dense batch
]


def _states(kind, kwargs, seed=10):
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    h = (layers, N, kwargs.get("proj_size") or HIDDEN)
    shapes = [h, (layers, N, HIDDEN)] if kind == "LSTM" else [h]
    return [_x(shape, seed=seed + i) for i, shape in enumerate(shapes)]


def _run_packed(lib, rnn, layer, x, lengths, enforce_sorted, states):
    """Pack ``x``, run ``layer``; returns (packed output, [final states], input, states)."""
    xt = lib.tensor(x, requires_grad=True)
    st = [lib.tensor(s, requires_grad=True) for s in states]
    packed = rnn.pack_padded_sequence(xt, lengths, layer.batch_first, enforce_sorted)
    hx = None if not st else (tuple(st) if len(st) == 2 else st[0])
    out, h = layer(packed, hx) if hx is not None else layer(packed)
    return out, list(h) if isinstance(h, tuple) else [h], xt, st


@pytest.mark.filterwarnings("ignore:LSTM with projections")
@pytest.mark.parametrize(("kind", "kwargs", "lengths", "enforce_sorted", "given"), PACKED_CASES)
def test_packed_input_matches_torch(kind, kwargs, lengths, enforce_sorted, given):
    t_layer = getattr(torch.nn, kind)(H_IN, HIDDEN, **kwargs)
    s_layer = getattr(nn, kind)(H_IN, HIDDEN, **kwargs)
    copy_weights(t_layer, s_layer)
    x = _x((N, T, H_IN) if kwargs.get("batch_first") else (T, N, H_IN))
    states = _states(kind, kwargs) if given else []

    t_out, t_h, t_x, t_st = _run_packed(torch, trnn, t_layer, x, lengths, enforce_sorted, states)
    s_out, s_h, s_x, s_st = _run_packed(spx, srnn, s_layer, x, lengths, enforce_sorted, states)
    assert_packed_equal(s_out, t_out)
    assert s_out.batch_sizes is not None and len(s_h) == len(t_h)
    for i, (a, b) in enumerate(zip(s_h, t_h, strict=True)):
        assert tuple(a.shape) == tuple(b.shape)
        assert_close(a, b, RTOL, ATOL, f"final state {i}")

    cots = [_cot(s_out.data.shape, 1)] + [_cot(h.shape, 2 + i) for i, h in enumerate(s_h)]
    loss_t = sum((y * torch.tensor(c)).sum() for y, c in zip([t_out.data, *t_h], cots, strict=True))
    loss_s = (s_out.data * spx.tensor(cots[0])).sum()
    for y, c in zip(s_h, cots[1:], strict=True):
        loss_s = loss_s + (y * spx.tensor(c)).sum()
    loss_t.backward()
    loss_s.backward()
    assert_close(s_x.grad, t_x.grad, RTOL, ATOL, "input gradient")
    for i, (a, b) in enumerate(zip(s_st, t_st, strict=True)):
        assert_close(a.grad, b.grad, RTOL, ATOL, f"gradient of initial state {i}")
    params = dict(s_layer.named_parameters())
    for name, p in t_layer.named_parameters():
        assert params[name].grad is not None, name
        assert_close(params[name].grad, p.grad, RTOL, PARAM_ATOL, f".grad of {name}")


def test_full_length_packed_batch_equals_the_dense_batch():
    layer = nn.GRU(H_IN, HIDDEN, bidirectional=True)
    x = spx.tensor(_x((T, N, H_IN)))
    dense, h_dense = layer(x)
    packed, h_packed = layer(srnn.pack_padded_sequence(x, [T] * N))
    padded, _ = srnn.pad_packed_sequence(packed)
    assert_close(padded, dense, 1e-6, 1e-6)
    assert_close(h_packed, h_dense, 1e-6, 1e-6)


def test_packed_dropout_between_layers_is_off_in_eval_and_fresh_in_training():
    t_layer = torch.nn.LSTM(H_IN, HIDDEN, num_layers=2, dropout=0.5)
    s_layer = nn.LSTM(H_IN, HIDDEN, num_layers=2, dropout=0.5)
    copy_weights(t_layer, s_layer)
    t_layer.eval()
    s_layer.eval()
    x = _x((T, N, H_IN))
    t_out, _ = t_layer(trnn.pack_padded_sequence(torch.tensor(x), UNSORTED, False, False))
    s_out, _ = s_layer(srnn.pack_padded_sequence(spx.tensor(x), UNSORTED, False, False))
    assert_close(s_out.data, t_out.data, RTOL, ATOL)
    s_layer.train()
    packed = srnn.pack_padded_sequence(spx.tensor(x), UNSORTED, False, False)
    a, b = s_layer(packed)[0].data, s_layer(packed)[0].data
    assert not np.allclose(host(a), host(s_out.data))
    assert not np.allclose(host(a), host(b))


@pytest.mark.parametrize(
    ("layer", "hx", "error", "match"),
    [
        (nn.GRU(3, 5), np.ones((1, 2, 5), np.float32), RuntimeError,
         r"Expected hidden size \(1, 3, 5\), got \[1, 2, 5\]"),
        (nn.RNN(3, 5), np.ones((3, 5), np.float32), RuntimeError,
         "For PackedSequence input, hx should also be 3-D"),
        (nn.LSTM(3, 5), (np.ones((1, 3, 5), np.float32), np.ones((3, 5), np.float32)),
         RuntimeError, r"hx and cx should also be 3-D but got \(3-D, 2-D\)"),
    ],
)  # fmt: skip
def test_packed_input_state_errors(layer, hx, error, match):
    packed = srnn.pack_padded_sequence(spx.ones(4, 3, 3), [4, 2, 1])
    with pytest.raises(error, match=match):
        layer(packed, hx)


def test_packed_data_of_the_wrong_rank_or_size_is_refused_as_in_torch():
    bad_rank = srnn.PackedSequence(spx.ones(3, 2, 3), [2, 1])
    with pytest.raises(RuntimeError, match="input must have 2 dimensions, got 3"):
        nn.GRU(3, 5)(bad_rank)
    with pytest.raises(RuntimeError, match=r"input\.size\(-1\) must be equal to input_size"):
        nn.GRU(4, 5)(srnn.pack_sequence([spx.ones(2, 3)]))


# --- Training: eager and under spx.compile. ---------------------------------------------------


class _TorchClassifier(torch.nn.Module):
    def __init__(self, kind="GRU"):
        super().__init__()
        self.rnn = getattr(torch.nn, kind)(H_IN, 8, batch_first=True, bidirectional=True)
        self.head = torch.nn.Linear(16, 3)

    def forward(self, x, lengths):
        packed = trnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, h = self.rnn(packed)
        h = h[0] if isinstance(h, tuple) else h
        padded, _ = trnn.pad_packed_sequence(out, batch_first=True)
        return self.head(torch.cat([h[-2], h[-1]], -1) + padded.mean(1))


class _Classifier(nn.Module):
    def __init__(self, kind="GRU"):
        super().__init__()
        self.rnn = getattr(nn, kind)(H_IN, 8, batch_first=True, bidirectional=True)
        self.head = nn.Linear(16, 3)

    def forward(self, x, lengths):
        # torch's forward with the import renamed.
        packed = srnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, h = self.rnn(packed)
        h = h[0] if isinstance(h, tuple) else h
        padded, _ = srnn.pad_packed_sequence(out, batch_first=True)
        return self.head(spx.cat([h[-2], h[-1]], -1) + padded.mean(1))


def _batches(n, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        lengths = [[5, 2, 7, 3], [7, 7, 1, 4], [5, 2, 7, 3]][i % 3]  # patterns repeat
        x = rng.standard_normal((4, 7, H_IN)).astype(np.float32)
        for b, n_b in enumerate(lengths):
            x[b, n_b:] = 0.0
        out.append((x, lengths, rng.integers(0, 3, 4)))
    return out


def _torch_steps(t_model, batches, lr):
    opt = torch.optim.SGD(t_model.parameters(), lr=lr)
    losses = []
    for x, lengths, y in batches:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(t_model(torch.tensor(x), lengths), torch.tensor(y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _step(model, opt, x, lengths, y):
    opt.zero_grad()
    loss = F.cross_entropy(model(x, lengths), y)
    loss.backward()
    opt.step()
    return loss


def test_gru_classifier_trains_like_torch():
    t_model, s_model = _TorchClassifier(), _Classifier()
    copy_weights(t_model, s_model)
    batches = _batches(5)
    t_losses = _torch_steps(t_model, batches, lr=0.5)
    opt = spx.optim.SGD(s_model.parameters(), lr=0.5)
    for i, (x, lengths, y) in enumerate(batches):
        loss = _step(s_model, opt, spx.tensor(x), spx.tensor(lengths), spx.tensor(y))
        np.testing.assert_allclose(loss.item(), t_losses[i], rtol=1e-5, err_msg=f"step {i}")
    params = dict(s_model.named_parameters())
    for name, p in t_model.named_parameters():
        assert_close(params[name], p, 1e-5, 1e-5, name)


@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
def test_packed_model_trains_under_spx_compile_like_torch(kind):
    t_model, s_model = _TorchClassifier(kind), _Classifier(kind)
    copy_weights(t_model, s_model)
    batches = _batches(6, seed=1)
    t_losses = _torch_steps(t_model, batches, lr=0.5)
    opt = spx.optim.SGD(s_model.parameters(), lr=0.5)
    step = spx.compile(_step)
    for i, (x, lengths, y) in enumerate(batches):
        # The lengths are host data: a Python list, static for spx.compile.
        loss = step(s_model, opt, spx.from_numpy(x), lengths, spx.from_numpy(y).long())
        np.testing.assert_allclose(loss.item(), t_losses[i], rtol=1e-5, err_msg=f"step {i}")
    params = dict(s_model.named_parameters())
    for name, p in t_model.named_parameters():
        assert_close(params[name], p, 1e-5, 1e-5, name)
    # One trace per distinct lengths list, plus one when the first step created the grads.
    assert step.trace_count == 3
    with pytest.raises(TypeError, match="Pass them as a Python list of ints"):
        step(s_model, opt, spx.from_numpy(x), spx.tensor(lengths), spx.from_numpy(y).long())


def test_packed_sequence_argument_to_spx_compile_retraces_per_batch_sizes():
    layer = nn.GRU(H_IN, HIDDEN)

    @spx.compile
    def final_states(layer, packed):
        return layer(packed)[1]

    x = spx.tensor(_x((T, N, H_IN)))
    for lengths in ([4, 6, 1, 3], [3, 6, 1, 4], [6, 6, 1, 3]):
        packed = srnn.pack_padded_sequence(x, lengths, enforce_sorted=False)
        assert_close(final_states(layer, packed), layer(packed)[1], 1e-6, 1e-6)
    # The first two have the same batch sizes (only the permutation differs, and it is data).
    assert final_states.trace_count == 2
