"""Losses added beyond the core set, against torch.nn: values, input gradients, reprs, errors."""

import numpy as np
import pytest

import spx
from spx import nn
from spx.nn import functional as F
from tests.nn._parity import check_module

torch = pytest.importorskip("torch")

N, C, D = 5, 4, 6
REDUCTIONS = ["mean", "sum", "none"]


def _r(shape, seed, low=None, high=None):
    rng = np.random.default_rng(seed)
    if low is not None:
        return rng.uniform(low, high, shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def _signs(shape, seed):
    return np.where(np.random.default_rng(seed).random(shape) < 0.5, -1.0, 1.0).astype(np.float32)


def _check(name, args, kwargs, inputs, diff, s_kwargs=None):
    t_loss = getattr(torch.nn, name)(*args, **kwargs)
    s_loss = getattr(nn, name)(*args, **(kwargs if s_kwargs is None else s_kwargs))
    assert repr(s_loss) == repr(t_loss)
    assert list(s_loss.state_dict()) == list(t_loss.state_dict())
    check_module(t_loss, s_loss, inputs, rtol=1e-5, atol=1e-5, diff=diff, cot_seed=3)


@pytest.mark.parametrize("reduction", [*REDUCTIONS, "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kldiv(reduction, log_target):
    logp = np.log(_r((N, C), 0, 0.05, 1)).astype(np.float32)
    target = _r((N, C), 1, 0, 1)
    target[0, 0] = 0.0  # 0 * log 0 = 0
    if log_target:
        target = np.log(target + 0.1).astype(np.float32)
    kw = dict(reduction=reduction, log_target=log_target)
    if reduction == "mean":
        with pytest.warns(UserWarning):
            _check("KLDivLoss", (), kw, [logp, target], [0, 1])
    else:
        _check("KLDivLoss", (), kw, [logp, target], [0, 1])
    out = F.kl_div(spx.tensor(logp), spx.tensor(target), reduction="batchmean")
    ref = torch.nn.functional.kl_div(
        torch.tensor(logp), torch.tensor(target), reduction="batchmean"
    )
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_huber_and_soft_margin(reduction):
    x, t = _r((N, C), 0) * 2, _r((N, C), 1)
    _check("HuberLoss", (), dict(reduction=reduction, delta=0.7), [x, t], [0, 1])
    _check("SoftMarginLoss", (), dict(reduction=reduction), [x, _signs((N, C), 2)], [0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kwargs", [{}, dict(log_input=False), dict(full=True)], ids=str)
def test_poisson_nll(reduction, kwargs):
    x = _r((N, C), 0, 0.1, 2)
    t = np.random.default_rng(1).integers(0, 5, (N, C)).astype(np.float32)
    # torch's full=True target gradient is NaN where target <= 1 (spx's is finite): input only.
    diff = [0] if kwargs.get("full") else [0, 1]
    _check("PoissonNLLLoss", (), dict(reduction=reduction, **kwargs), [x, t], diff)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("var_shape", [(N, C), (N, 1), (N,)])
@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll(reduction, var_shape, full):
    x, t = _r((N, C), 0), _r((N, C), 1)
    var = _r(var_shape, 2, 0.1, 2)
    var.flat[0] = 1e-8  # clamped: the gradient still passes, as in torch
    _check("GaussianNLLLoss", (), dict(reduction=reduction, full=full), [x, t, var], [0, 1, 2])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_ranking_hinge_cosine(reduction):
    x1, x2, y = _r((N,), 0), _r((N,), 1), _signs((N,), 2)
    _check("MarginRankingLoss", (0.3,), dict(reduction=reduction), [x1, x2, y], [0, 1])
    _check("HingeEmbeddingLoss", (0.8,), dict(reduction=reduction), [x1, y], [0])
    a, b = _r((N, D), 3), _r((N, D), 4)
    _check("CosineEmbeddingLoss", (0.1,), dict(reduction=reduction), [a, b, y], [0, 1])
    _check("CosineEmbeddingLoss", (), dict(reduction=reduction), [a[0], b[0], y[0]], [0, 1])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_margin(reduction, p, weighted):
    x, t = _r((N, C), 0), np.random.default_rng(1).integers(0, C, (N,))
    w = _r((C,), 2, 0.5, 2) if weighted else None
    kw = dict(p=p, margin=0.7, reduction=reduction)
    t_loss = torch.nn.MultiMarginLoss(weight=None if w is None else torch.tensor(w), **kw)
    s_loss = nn.MultiMarginLoss(weight=w, **kw)
    assert list(s_loss.state_dict()) == list(t_loss.state_dict())
    check_module(t_loss, s_loss, [x, t], rtol=1e-5, atol=1e-5, diff=[0])
    check_module(t_loss, s_loss, [x[0], t[0]], rtol=1e-5, atol=1e-5, diff=[0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin(reduction):
    x = _r((N, C), 0)
    t = np.array(
        [[3, 0, -1, 1], [0, 1, 2, 3], [-1, 2, 1, 0], [2, -1, -1, -1], [1, 1, -1, 0]], np.int64
    )
    _check("MultiLabelMarginLoss", (), dict(reduction=reduction), [x, t], [0])
    _check("MultiLabelMarginLoss", (), dict(reduction=reduction), [x[0], t[0]], [0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_multilabel_soft_margin(reduction, weighted):
    x, t = _r((N, C), 0), (np.random.default_rng(1).random((N, C)) < 0.5).astype(np.float32)
    w = _r((C,), 2, 0.5, 2) if weighted else None
    t_loss = torch.nn.MultiLabelSoftMarginLoss(
        weight=None if w is None else torch.tensor(w), reduction=reduction
    )
    s_loss = nn.MultiLabelSoftMarginLoss(weight=w, reduction=reduction)
    assert list(s_loss.state_dict()) == list(t_loss.state_dict())
    check_module(t_loss, s_loss, [x, t], rtol=1e-5, atol=1e-5, diff=[0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kwargs", [{}, dict(margin=2.0, p=1.0, swap=True), dict(p=3.0)], ids=str)
def test_triplet_margin(reduction, kwargs):
    a, p, n = _r((N, D), 0), _r((N, D), 1), _r((N, D), 2)
    _check("TripletMarginLoss", (), dict(reduction=reduction, **kwargs), [a, p, n], [0, 1, 2])
    _check("TripletMarginLoss", (), dict(reduction=reduction, **kwargs), [a[0], p[0], n[0]],
           [0, 1, 2])  # fmt: skip


@pytest.mark.parametrize("swap", [False, True])
def test_triplet_with_distance(swap):
    a, p, n = _r((N, D), 0), _r((N, D), 1), _r((N, D), 2)
    _check("TripletMarginWithDistanceLoss", (), dict(swap=swap, margin=1.5), [a, p, n], [0, 1, 2])
    t_loss = torch.nn.TripletMarginWithDistanceLoss(
        distance_function=lambda x, y: 1 - torch.nn.functional.cosine_similarity(x, y), swap=swap
    )
    s_loss = nn.TripletMarginWithDistanceLoss(
        distance_function=lambda x, y: 1 - F.cosine_similarity(x, y), swap=swap
    )
    check_module(t_loss, s_loss, [a, p, n], rtol=1e-5, atol=1e-5, jax_form=False)


def test_legacy_flags_and_errors():
    with pytest.warns(DeprecationWarning):
        assert nn.KLDivLoss(size_average=False).reduction == "sum"
    with pytest.raises(ValueError, match="reduction"):
        nn.KLDivLoss(reduction="avg")
    with pytest.raises(ValueError, match="p == 1 and p == 2"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="greater than 0"):
        nn.TripletMarginWithDistanceLoss(margin=0)
    with pytest.raises(ValueError, match="delta"):
        nn.HuberLoss(delta=0)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(spx.zeros(3, 2), spx.zeros(3, 2), spx.ones(2, 2))
    with pytest.raises(RuntimeError, match="same"):
        F.cosine_embedding_loss(spx.zeros(3, 2), spx.zeros(3, 4), spx.ones(3))
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multilabel_margin_loss(spx.zeros(3, 2), spx.zeros(3, 4, dtype=spx.int64))


# Values torch checks eagerly are checked when they are known (here: spx.tensor(...)).
VALUE_ERRORS = [
    (
        "bce_input_above_1",
        lambda m: m.nn.BCELoss()(m.tensor([1.5, 0.5]), m.tensor([1.0, 0.0])),
        RuntimeError,
    ),
    (
        "bce_input_negative",
        lambda m: m.nn.functional.binary_cross_entropy(m.tensor([-0.5]), m.tensor([1.0])),
        RuntimeError,
    ),
    (
        "bce_input_nan",
        lambda m: m.nn.functional.binary_cross_entropy(m.tensor([float("nan")]), m.tensor([1.0])),
        RuntimeError,
    ),
    (
        "bce_target_above_1",
        lambda m: m.nn.BCELoss()(m.tensor([0.3, 0.5]), m.tensor([2.0, 0.0])),
        RuntimeError,
    ),
    (
        "gaussian_nll_negative_var",
        lambda m: m.nn.GaussianNLLLoss()(m.zeros(2), m.zeros(2), m.tensor([-1.0, 1.0])),
        ValueError,
    ),
    (
        "multi_margin_target_past_end",
        lambda m: m.nn.MultiMarginLoss()(m.zeros(2, 4), m.tensor([4, 0])),
        RuntimeError,
    ),
    (
        "multi_margin_target_negative",
        lambda m: m.nn.MultiMarginLoss()(m.zeros(2, 4), m.tensor([-1, 0])),
        RuntimeError,
    ),
    (
        "multilabel_margin_target_past_end",
        lambda m: m.nn.MultiLabelMarginLoss()(m.zeros(2, 4), m.tensor([[4, -1, 0, 0], [0] * 4])),
        RuntimeError,
    ),
    (
        "multilabel_margin_target_below_minus_1",
        lambda m: m.nn.MultiLabelMarginLoss()(m.zeros(2, 4), m.tensor([[-2, 0, 0, 0], [0] * 4])),
        RuntimeError,
    ),
]


@pytest.mark.parametrize(
    "fn,error", [e[1:] for e in VALUE_ERRORS], ids=[e[0] for e in VALUE_ERRORS]
)
def test_known_values_out_of_domain_raise_as_torch(fn, error):
    with pytest.raises(error):
        fn(torch)
    with pytest.raises(error):
        fn(spx)


VALUE_EDGES = [
    ("bce_at_0_and_1", lambda m: m.nn.BCELoss()(m.tensor([1.0, 0.0]), m.tensor([1.0, 0.0]))),
    ("gaussian_nll_zero_var", lambda m: m.nn.GaussianNLLLoss()(m.zeros(2), m.ones(2), m.zeros(2))),
    ("multi_margin_last_class", lambda m: m.nn.MultiMarginLoss()(m.ones(2, 4), m.tensor([3, 0]))),
    (
        "multilabel_margin_minus_1_ends",
        lambda m: m.nn.MultiLabelMarginLoss()(m.ones(2, 4), m.tensor([[3, -1, 0, 0], [0] * 4])),
    ),
]


@pytest.mark.parametrize("fn", [e[1] for e in VALUE_EDGES], ids=[e[0] for e in VALUE_EDGES])
def test_known_values_in_domain_match_torch(fn):
    np.testing.assert_allclose(float(fn(spx)), float(fn(torch)), rtol=1e-5, atol=1e-6)


def test_bce_on_logits_names_the_fix():
    with pytest.raises(RuntimeError, match="binary_cross_entropy_with_logits"):
        F.binary_cross_entropy(spx.tensor([2.0]), spx.tensor([1.0]))
