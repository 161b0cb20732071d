"""EmbeddingBag against torch: every mode on 2-D and offset inputs (empty bags, padding,
include_last_offset), per_sample_weights, scale_grad_by_freq, max_norm, values and gradients,
the module (init, repr, state_dict, from_pretrained) and torch's errors."""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx.nn.functional.embedding_bag import embedding_bag
from spx.nn.modules.sparse import EmbeddingBag
from tests.nn._parity import assert_close, check_module, copy_weights, host

torch = pytest.importorskip("torch")

MODES = ["sum", "mean", "max"]
RTOL, ATOL = 1e-5, 1e-6
NUM, DIM = 10, 4
IDX = np.array([1, 2, 4, 2, 9, 0, 2, 7, 7, 3, 5], dtype=np.int64)  # repeats on purpose
# (offsets, include_last_offset): plain, an empty bag in the middle and at the end, CSR form.
OFFSETS = {
    "plain": (np.array([0, 3, 5, 9]), False),
    "empty_bags": (np.array([0, 2, 2, 6, 11]), False),
    "csr": (np.array([0, 4, 4, 11]), True),
}


def _weight(seed=0, num=NUM, dim=DIM):
    return np.random.default_rng(seed).standard_normal((num, dim)).astype(np.float32)


def _both(idx, weight, offsets=None, psw=None, **kwargs):
    """Output and the gradients of weight (and per_sample_weights) on both sides."""
    t_w, s_w = torch.tensor(weight, requires_grad=True), spx.tensor(weight, requires_grad=True)
    t_psw = s_psw = None
    if psw is not None:
        t_psw, s_psw = torch.tensor(psw, requires_grad=True), spx.tensor(psw, requires_grad=True)
    t_off = None if offsets is None else torch.tensor(offsets)
    s_off = None if offsets is None else spx.tensor(offsets)
    t_out = torch.nn.functional.embedding_bag(
        torch.tensor(idx), t_w, t_off, per_sample_weights=t_psw, **kwargs
    )
    s_out = embedding_bag(spx.tensor(idx), s_w, s_off, per_sample_weights=s_psw, **kwargs)
    assert tuple(s_out.shape) == tuple(t_out.shape)
    assert s_out.dtype == spx.float32
    cot = np.random.default_rng(5).standard_normal(tuple(t_out.shape)).astype(np.float32)
    (t_out * torch.tensor(cot)).sum().backward()
    (s_out * spx.tensor(cot)).sum().backward()
    assert_close(s_out, t_out, RTOL, ATOL, "output")
    assert_close(s_w.grad, t_w.grad, RTOL, ATOL, "gradient of weight")
    if psw is not None:
        assert_close(s_psw.grad, t_psw.grad, RTOL, ATOL, "gradient of per_sample_weights")
    return s_out


@pytest.mark.parametrize("padding_idx", [None, 2, -3])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(3, 4), (1, 1), (5, 2)], ids=str)
def test_2d_input(shape, mode, padding_idx):
    idx = np.random.default_rng(sum(shape)).integers(0, NUM, shape)
    idx.flat[0] = 2  # the padding index, when there is one (a bag may be all padding)
    _both(idx, _weight(), mode=mode, padding_idx=padding_idx)


@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("offsets", list(OFFSETS), ids=str)
def test_offsets(offsets, mode, padding_idx):
    off, last = OFFSETS[offsets]
    out = _both(IDX, _weight(1), off, mode=mode, include_last_offset=last, padding_idx=padding_idx)
    if offsets == "empty_bags":
        assert (host(out)[1] == 0).all()


def test_all_padding_bag_is_zero():
    out = _both(np.array([[2, 2], [1, 2]]), _weight(), mode="max", padding_idx=2)
    assert (host(out)[0] == 0).all()


def _tied_weight(seed=0, num=NUM, dim=DIM):
    """Small integers: rows tie on many features, so "max" has several maximal rows."""
    return np.random.default_rng(seed).integers(-1, 2, (num, dim)).astype(np.float32)


def test_max_gradient_goes_to_the_first_maximal_row():
    # torch sends a bag's gradient, per feature, to the first row (in input order) holding
    # the maximum; segment_max's own gradient would split it among the tied rows.
    weight = np.array([[1, 2], [1, 0], [3, 2], [0, 0]], np.float32)
    idx, off = np.array([0, 1, 2, 1, 0, 3, 3]), np.array([0, 2, 2, 5])
    s_w = spx.tensor(weight, requires_grad=True)
    out = embedding_bag(spx.tensor(idx), s_w, spx.tensor(off), mode="max")
    (out * spx.arange(1.0, 9.0).reshape(4, 2)).sum().backward()
    np.testing.assert_array_equal(host(out), [[1, 2], [0, 0], [3, 2], [0, 0]])
    np.testing.assert_array_equal(host(s_w.grad), [[1, 2], [0, 0], [5, 6], [7, 8]])
    for padding_idx in (None, 3, 0):
        _both(idx, weight, off, mode="max", padding_idx=padding_idx)


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("offsets", list(OFFSETS), ids=str)
def test_max_with_ties_offsets(offsets, padding_idx):
    off, last = OFFSETS[offsets]
    for seed in range(3):
        _both(IDX, _tied_weight(seed), off, mode="max", include_last_offset=last,
              padding_idx=padding_idx)  # fmt: skip


@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("shape", [(3, 4), (2, 6), (4, 1)], ids=str)
def test_max_with_ties_2d_input(shape, padding_idx):
    rng = np.random.default_rng(sum(shape))
    idx = rng.integers(0, 5, shape)  # few distinct indices: the same row twice in a bag
    idx.flat[0] = idx.flat[-1] = 2
    for seed in range(3):
        _both(idx, _tied_weight(seed), mode="max", padding_idx=padding_idx)


def test_max_with_ties_under_jit():
    weight, off = _tied_weight(), OFFSETS["empty_bags"][0]

    @jax.jit
    def grad(w, idx, off):
        return jax.grad(lambda w: jnp.asarray(embedding_bag(idx, w, off, mode="max")).sum())(w)

    t_w = torch.tensor(weight, requires_grad=True)
    torch.nn.functional.embedding_bag(
        torch.tensor(IDX), t_w, torch.tensor(off), mode="max"
    ).sum().backward()
    assert_close(grad(jnp.asarray(weight), jnp.asarray(IDX), jnp.asarray(off)), t_w.grad)


@pytest.mark.parametrize("form", ["2d", "offsets", "csr"])
def test_per_sample_weights(form):
    psw = np.random.default_rng(3).uniform(0.5, 2, IDX.shape).astype(np.float32)
    if form == "2d":
        _both(IDX[:10].reshape(2, 5), _weight(), psw=psw[:10].reshape(2, 5), mode="sum")
    else:
        off, last = OFFSETS["plain" if form == "offsets" else "csr"]
        _both(IDX, _weight(), off, psw=psw, mode="sum", include_last_offset=last, padding_idx=7)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_scale_grad_by_freq_matches_torch(mode):
    # Every index occurs twice: torch's CPU kernel is right here (see the next test).
    idx = np.array([3, 1, 3, 5, 1, 5, 8, 8])
    _both(idx, _weight(), np.array([0, 3, 6]), mode=mode, scale_grad_by_freq=True)
    _both(idx.reshape(2, 4), _weight(), mode=mode, scale_grad_by_freq=True)


def test_scale_grad_by_freq_divides_by_each_index_count():
    # torch 2.13's CPU embedding_bag divides row 3 here by index 1's count (pytorch#190063);
    # the documented semantics are torch's F.embedding(scale_grad_by_freq=True) then the sum.
    idx, weight = np.array([1, 1, 3, 2]), _weight()
    t_w = torch.tensor(weight, requires_grad=True)
    rows = torch.nn.functional.embedding(torch.tensor(idx), t_w, scale_grad_by_freq=True)
    cot = np.random.default_rng(1).standard_normal((2, DIM)).astype(np.float32)
    ref = torch.stack([rows[:3].sum(0), rows[3:].sum(0)])
    (ref * torch.tensor(cot)).sum().backward()
    s_w = spx.tensor(weight, requires_grad=True)
    out = embedding_bag(spx.tensor(idx), s_w, spx.tensor([0, 3]), mode="sum",
                        scale_grad_by_freq=True)  # fmt: skip
    (out * spx.tensor(cot)).sum().backward()
    assert_close(out, ref, RTOL, ATOL, "output")
    assert_close(s_w.grad, t_w.grad, RTOL, ATOL, "gradient")


def test_trailing_indices_after_the_last_offset_are_in_no_bag():
    # torch 2.13's CPU kernel handles them differently per mode (pytorch#191965); its plain
    # "sum" forward is the documented one, so it is the reference for every mode here.
    idx, weight = np.array([0, 1, 2, 3]), _weight()
    off = np.array([0, 1, 3])
    t_out = torch.nn.functional.embedding_bag(
        torch.tensor(idx), torch.tensor(weight), torch.tensor(off), mode="sum",
        include_last_offset=True,
    )  # fmt: skip
    assert_close(t_out, [weight[0], weight[1:3].sum(0)], RTOL, ATOL, "torch's sum")
    for mode, reduce in (("sum", np.sum), ("mean", np.mean), ("max", np.max)):
        s_w = spx.tensor(weight, requires_grad=True)
        out = embedding_bag(spx.tensor(idx), s_w, spx.tensor(off), mode=mode,
                            include_last_offset=True, padding_idx=0)  # fmt: skip
        out.sum().backward()
        np.testing.assert_allclose(host(out), [np.zeros(DIM), reduce(weight[1:3], 0)], rtol=RTOL)
        assert (host(s_w.grad)[3] == 0).all()  # the trailing index gets no gradient either


@pytest.mark.parametrize("mode", MODES)
def test_max_norm_renormalises_the_table_in_place(mode):
    weight = _weight() * 3
    t_w, s_w = torch.tensor(weight, requires_grad=True), spx.tensor(weight, requires_grad=True)
    kwargs = dict(max_norm=1.5, norm_type=2.0, mode=mode)
    t_out = torch.nn.functional.embedding_bag(torch.tensor(IDX), t_w, torch.tensor([0, 4]),
                                              **kwargs)  # fmt: skip
    s_out = embedding_bag(spx.tensor(IDX), s_w, spx.tensor([0, 4]), **kwargs)
    t_out.sum().backward()
    s_out.sum().backward()
    assert_close(s_out, t_out, RTOL, ATOL, "output")
    assert_close(s_w, t_w, RTOL, ATOL, "renormalised table")
    assert_close(s_w.grad, t_w.grad, RTOL, ATOL, "gradient")
    # A raw array cannot be renormalised: the output is scaled, the same numbers.
    raw = embedding_bag(jnp.asarray(IDX), jnp.asarray(weight), jnp.array([0, 4]), **kwargs)
    assert_close(raw, t_out, RTOL, ATOL, "output from a raw array")


def test_compiles_under_jit():
    weight, off = _weight(), OFFSETS["empty_bags"][0]

    @jax.jit
    def value_and_grad(w, idx, off):
        return jax.value_and_grad(lambda w: jnp.asarray(embedding_bag(idx, w, off)).sum())(w)

    value, grad = value_and_grad(jnp.asarray(weight), jnp.asarray(IDX), jnp.asarray(off))
    t_w = torch.tensor(weight, requires_grad=True)
    t_out = torch.nn.functional.embedding_bag(torch.tensor(IDX), t_w, torch.tensor(off)).sum()
    t_out.backward()
    assert_close(value, t_out, RTOL, ATOL, "value")
    assert_close(grad, t_w.grad, RTOL, ATOL, "gradient")


class _LongInput(torch.nn.Module):
    """torch wants int64 (or matching int32) indices and offsets; spx takes any ints."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, *args):
        return self.layer(*[x.long() if not x.is_floating_point() else x for x in args])

    def named_parameters(self, *args, **kwargs):
        return self.layer.named_parameters(*args, **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"mode": "sum"},
        {"mode": "max", "padding_idx": 0},
        {"mode": "sum", "include_last_offset": True, "padding_idx": -1},
        {"mode": "mean", "scale_grad_by_freq": True},
        {"sparse": True},
        {"max_norm": 1.0, "norm_type": 1.0},
    ],
    ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "default",
)
def test_module_matches_torch(kwargs):
    torch.manual_seed(0)
    t_bag, s_bag = torch.nn.EmbeddingBag(NUM, DIM, **kwargs), EmbeddingBag(NUM, DIM, **kwargs)
    assert repr(s_bag) == repr(t_bag)
    assert s_bag.padding_idx == t_bag.padding_idx
    assert list(s_bag.state_dict()) == list(t_bag.state_dict()) == ["weight"]
    if s_bag.padding_idx is not None:
        assert (host(s_bag.weight)[s_bag.padding_idx] == 0).all()
    copy_weights(t_bag, s_bag)
    # Every index twice: torch's CPU scale_grad_by_freq is right then (pytorch#190063).
    idx = np.array([3, 1, 3, 0, 1, 0, 8, 8, 9, 9], np.int32)
    # With include_last_offset the last offset is the input's end (see the trailing test).
    offsets = np.array([0, 4, 4, 10 if kwargs.get("include_last_offset") else 8], np.int32)
    check_module(_LongInput(t_bag), s_bag, [idx, offsets], rtol=RTOL, atol=ATOL)
    if not kwargs.get("include_last_offset"):
        check_module(_LongInput(t_bag), s_bag, [idx.reshape(2, 5)], rtol=RTOL, atol=ATOL)


def test_module_per_sample_weights():
    torch.manual_seed(1)
    t_bag, s_bag = torch.nn.EmbeddingBag(NUM, DIM, mode="sum"), EmbeddingBag(NUM, DIM, mode="sum")
    copy_weights(t_bag, s_bag)
    idx, psw = np.array([[1, 2, 3], [4, 4, 0]]), _weight(2, 2, 3)
    t_psw, s_psw = torch.tensor(psw, requires_grad=True), spx.tensor(psw, requires_grad=True)
    t_out = t_bag(torch.tensor(idx), per_sample_weights=t_psw)
    s_out = s_bag(spx.tensor(idx), per_sample_weights=s_psw)
    t_out.pow(2).sum().backward()
    s_out.pow(2).sum().backward()
    assert_close(s_out, t_out, RTOL, ATOL, "output")
    assert_close(s_psw.grad, t_psw.grad, RTOL, ATOL, "gradient of per_sample_weights")
    assert_close(s_bag.weight.grad, t_bag.weight.grad, RTOL, ATOL, "gradient of weight")


def test_init_is_standard_normal_with_zero_padding_row():
    spx.manual_seed(0)
    bag = EmbeddingBag(2000, 64, padding_idx=5)
    w = host(bag.weight)
    assert w.shape == (2000, 64) and w.dtype == np.float32
    assert (w[5] == 0).all()
    rest = np.delete(w, 5, axis=0)
    assert abs(rest.mean()) < 0.01 and abs(rest.std() - 1) < 0.01
    assert bag.weight.requires_grad


def test_from_pretrained():
    table = _weight()
    t_bag = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(table), mode="sum", padding_idx=1)
    s_bag = EmbeddingBag.from_pretrained(spx.tensor(table), mode="sum", padding_idx=1)
    assert repr(s_bag) == repr(t_bag)
    assert s_bag.weight.requires_grad is t_bag.weight.requires_grad is False
    assert_close(s_bag.weight, t_bag.weight, 0, 0, "table used as is (padding row kept)")
    idx = np.array([[1, 2, 3], [1, 1, 1]])
    assert_close(s_bag(spx.tensor(idx)), t_bag(torch.tensor(idx)), RTOL, ATOL, "output")
    trainable = EmbeddingBag.from_pretrained(table, freeze=False)
    assert trainable.weight.requires_grad
    with pytest.raises(ValueError, match="2-dimensional"):
        EmbeddingBag.from_pretrained(table[0])
    with pytest.raises(ValueError, match=r"_weight has shape \(10, 4\), expected \(3, 4\)"):
        EmbeddingBag(3, DIM, _weight=table)


def test_signatures_match_torch():
    pairs = [
        (torch.nn.functional.embedding_bag, embedding_bag),
        (torch.nn.EmbeddingBag.__init__, EmbeddingBag.__init__),
        (torch.nn.EmbeddingBag.from_pretrained, EmbeddingBag.from_pretrained),
        (torch.nn.EmbeddingBag.forward, EmbeddingBag.forward),
    ]
    for t_fn, s_fn in pairs:
        t_params = inspect.signature(t_fn).parameters
        s_params = inspect.signature(s_fn).parameters
        assert [(k, p.default) for k, p in s_params.items()] == [
            (k, p.default) for k, p in t_params.items()
        ], t_fn


_W = _weight()
_ERRORS = [
    (dict(offsets=np.array([0, 2])), ValueError, "if input is 2D, then offsets has to be None"),
    (dict(input=IDX), ValueError, "offsets has to be a 1D Tensor but got None"),
    (dict(input=IDX, offsets=np.array([[0, 2]])), ValueError, "offsets has to be a 1D Tensor"),
    (dict(input=IDX.reshape(1, 1, -1)), ValueError, "input has to be 1D or 2D"),
    (dict(weight=_W[0]), ValueError, "weight has to be a 2D Tensor"),
    (dict(mode="mx"), ValueError, "mode has to be one of sum, mean or max"),
    (dict(mode="max", scale_grad_by_freq=True), ValueError, "does not support scaling"),
    (dict(mode="max", sparse=True), ValueError, "does not support sparse"),
    (dict(per_sample_weights=np.ones((1, 11), np.float32)), NotImplementedError, "mode='sum'"),
    (dict(per_sample_weights=np.ones(3, np.float32)), ValueError, "same shape as the input"),
    (dict(mode="sum", per_sample_weights=np.ones((1, 11), np.int64)), RuntimeError, "int"),
    (dict(input=IDX.astype(np.float32), offsets=np.array([0])), RuntimeError, "integer"),
    (dict(input=np.array([[1, 12]])), RuntimeError, "takes value 12 .* range \\[0, 10\\)"),
    (dict(input=np.array([[1, -1]])), RuntimeError, "takes value -1"),
    (dict(input=IDX, offsets=np.array([1, 3])), RuntimeError, "offsets\\[0\\] has to be 0"),
    (dict(input=IDX, offsets=np.array([0, 12])), RuntimeError, "can not be greater than input"),
    (dict(padding_idx=10), RuntimeError, "-10 through 9, but got 10"),
]


@pytest.mark.parametrize("change, error, match", _ERRORS, ids=[e[2][:30] for e in _ERRORS])
def test_errors_like_torch(change, error, match):
    args = dict(input=IDX.reshape(1, -1), weight=_W)
    args.update(change)
    t_args = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}
    with pytest.raises(error):
        torch.nn.functional.embedding_bag(**t_args)
    with pytest.raises(error, match=match):
        embedding_bag(**{k: spx.tensor(v) if isinstance(v, np.ndarray) else v
                         for k, v in args.items()})  # fmt: skip


def test_decreasing_offsets_and_module_arguments_raise():
    with pytest.raises(RuntimeError, match=r"offsets\[2\] = 3 comes after offsets\[1\] = 4"):
        embedding_bag(spx.tensor(IDX), spx.tensor(_W), spx.tensor([0, 4, 3]))
    with pytest.raises(ValueError, match="mode has to be one of"):
        EmbeddingBag(NUM, DIM, mode="median")
    with pytest.raises(ValueError, match="padding_idx"):
        EmbeddingBag(NUM, DIM, padding_idx=NUM)
    with pytest.raises(ValueError, match="scaling the gradient"):
        EmbeddingBag(NUM, DIM, mode="max", scale_grad_by_freq=True)


def test_swapped_argument_order_warns_like_torch():
    with pytest.warns(UserWarning, match="Argument order"):
        out = embedding_bag(spx.tensor(_W), spx.tensor(IDX.reshape(1, -1)))
    ref = torch.nn.functional.embedding_bag(torch.tensor(IDX.reshape(1, -1)), torch.tensor(_W))
    assert_close(out, ref, RTOL, ATOL, "output")
