"""Loss modules against torch.nn: values, input gradients, buffers/state_dict, validation."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spx import nn
from tests.nn._parity import check_module

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-5, 1e-6
N, C = 6, 4
REDUCTIONS = ["mean", "sum", "none"]


def _rand(shape, seed, low=None, high=None):
    rng = np.random.default_rng(seed)
    if low is not None:
        return rng.uniform(low, high, shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def _t(a):
    return None if a is None else torch.from_numpy(np.array(a))  # a writable copy


def _check(t_loss, s_loss, x, target):
    """Same value and same gradient w.r.t. the input; same state_dict as torch."""
    assert list(s_loss.state_dict()) == list(t_loss.state_dict())
    for k, v in t_loss.state_dict().items():
        np.testing.assert_array_equal(s_loss.state_dict()[k].numpy(), v.numpy())
    check_module(t_loss, s_loss, [x, target], rtol=RTOL, atol=ATOL, diff=[0], cot_seed=9)


def _targets(shape, seed, ignore=False):
    t = np.random.default_rng(seed).integers(0, C, shape)
    if ignore:
        t.flat[::3] = -1  # every third target ignored
    return t


# Every reduction is exercised for each loss, but not for every option combination: each case
# compiles a few XLA programs, and the options do not interact with the reduction except
# through the weighted mean, which the "all"/"weight" cases cover with every reduction.
W = _rand((C,), 1, 0.1, 2.0)


@pytest.mark.parametrize(
    "kwargs,ignore,reduction",
    [
        ({}, False, "mean"),
        ({"label_smoothing": 0.2}, False, "mean"),
        ({"weight": W}, False, "mean"),
        ({"weight": W, "ignore_index": -1}, True, "mean"),
        ({"weight": W, "ignore_index": -1, "label_smoothing": 0.1}, True, "mean"),
        ({"weight": W, "ignore_index": -1, "label_smoothing": 0.1}, True, "sum"),
        ({"weight": W, "ignore_index": -1, "label_smoothing": 0.1}, True, "none"),
    ],
    ids=["plain", "smoothing", "weight", "weight-ignore", "all-mean", "all-sum", "all-none"],
)
def test_cross_entropy_index_targets(kwargs, ignore, reduction):
    tk = {k: _t(v) for k, v in kwargs.items()}
    _check(
        torch.nn.CrossEntropyLoss(**tk, reduction=reduction),
        nn.CrossEntropyLoss(**kwargs, reduction=reduction),
        _rand((N, C), 0),
        _targets((N,), 3, ignore),
    )


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_cross_entropy_spatial_targets(reduction):
    _check(
        torch.nn.CrossEntropyLoss(_t(W), ignore_index=-1, reduction=reduction, label_smoothing=0.1),
        nn.CrossEntropyLoss(W, ignore_index=-1, reduction=reduction, label_smoothing=0.1),
        _rand((2, C, 3, 2), 5),
        _targets((2, 3, 2), 6, ignore=True),
    )


@pytest.mark.parametrize(
    "smoothing,weighted,reduction",
    [
        (0.0, False, "mean"),
        (0.3, False, "sum"),
        (0.0, True, "mean"),
        (0.3, True, "mean"),
        (0.3, True, "none"),
    ],
)
def test_cross_entropy_probability_targets(reduction, smoothing, weighted):
    probs = np.asarray(jax.nn.softmax(_rand((N, C), 8), axis=1))
    w = W if weighted else None
    _check(
        torch.nn.CrossEntropyLoss(_t(w), reduction=reduction, label_smoothing=smoothing),
        nn.CrossEntropyLoss(w, reduction=reduction, label_smoothing=smoothing),
        _rand((N, C), 0),
        probs,
    )


@pytest.mark.parametrize(
    "weighted,reduction", [(False, "mean"), (True, "mean"), (True, "sum"), (True, "none")]
)
def test_nll_loss(weighted, reduction):
    w = W if weighted else None
    logp = np.asarray(jax.nn.log_softmax(_rand((N, C), 0), axis=1))
    _check(
        torch.nn.NLLLoss(_t(w), ignore_index=-1, reduction=reduction),
        nn.NLLLoss(w, ignore_index=-1, reduction=reduction),
        logp,
        _targets((N,), 3, ignore=True),
    )


@pytest.mark.parametrize(
    "name,kwargs,reduction",
    [
        ("MSELoss", {}, "mean"),
        ("MSELoss", {}, "sum"),
        ("MSELoss", {}, "none"),
        ("L1Loss", {}, "mean"),
        ("L1Loss", {}, "none"),
        ("SmoothL1Loss", {}, "mean"),
        ("SmoothL1Loss", {"beta": 0.5}, "none"),
        ("SmoothL1Loss", {"beta": 0.0}, "sum"),
    ],
)
def test_regression_losses(name, kwargs, reduction):
    _check(
        getattr(torch.nn, name)(reduction=reduction, **kwargs),
        getattr(nn, name)(reduction=reduction, **kwargs),
        _rand((N, C), 0),
        _rand((N, C), 1),
    )


@pytest.mark.parametrize(
    "weighted,reduction", [(False, "mean"), (True, "mean"), (True, "sum"), (True, "none")]
)
def test_bce_loss(weighted, reduction):
    _check(
        torch.nn.BCELoss(_t(W) if weighted else None, reduction=reduction),
        nn.BCELoss(W if weighted else None, reduction=reduction),
        _rand((N, C), 0, 0.02, 0.98),
        _rand((N, C), 1, 0.0, 1.0),
    )


PW = _rand((C,), 3, 0.5, 3.0)


@pytest.mark.parametrize(
    "weight,pos_weight,reduction",
    [
        (None, None, "mean"),
        (W, None, "mean"),
        (None, PW, "mean"),
        (_rand((N, 1), 4, 0.1, 2.0), PW, "mean"),
        (W, PW, "sum"),
        (W, PW, "none"),
    ],
    ids=["plain", "weight", "pos_weight", "both", "both-sum", "both-none"],
)
def test_bce_with_logits_loss(weight, pos_weight, reduction):
    _check(
        torch.nn.BCEWithLogitsLoss(_t(weight), reduction=reduction, pos_weight=_t(pos_weight)),
        nn.BCEWithLogitsLoss(weight, reduction=reduction, pos_weight=pos_weight),
        _rand((N, C), 0) * 3,
        _rand((N, C), 1, 0.0, 1.0),
    )


def test_weights_are_buffers_like_torch():
    w, pw = jnp.ones(C), jnp.full((C,), 2.0)
    loss = nn.BCEWithLogitsLoss(weight=w, pos_weight=pw)
    assert list(loss.state_dict()) == ["weight", "pos_weight"]
    assert [n for n, _ in loss.named_buffers()] == ["weight", "pos_weight"]
    assert list(loss.parameters()) == []
    assert list(nn.CrossEntropyLoss().state_dict()) == []  # None buffers are not saved
    assert nn.CrossEntropyLoss().weight is None
    # Buffers follow .to(dtype) and are pytree leaves, so a compiled step sees their values.
    ce = nn.CrossEntropyLoss(weight=jnp.ones(C)).to(jnp.bfloat16)
    assert ce.weight.dtype == jnp.bfloat16
    ce = nn.CrossEntropyLoss(weight=jnp.ones(C))
    assert len(jax.tree.leaves(ce)) == 1
    x_np, t_np = _rand((N, C), 0), _targets((N,), 3)
    x, t = jnp.asarray(x_np), jnp.asarray(t_np)
    np.testing.assert_allclose(
        float(jax.jit(lambda m, x, t: m(x, t))(ce, x, t)), float(ce(x, t)), rtol=1e-6
    )
    ce.load_state_dict({"weight": np.arange(1.0, C + 1.0, dtype=np.float32)})
    tce = torch.nn.CrossEntropyLoss(weight=torch.arange(1.0, C + 1.0))
    np.testing.assert_allclose(float(ce(x, t)), float(tce(_t(x_np), _t(t_np))), rtol=RTOL)


@pytest.mark.filterwarnings("ignore:size_average and reduce args:UserWarning")  # torch's own
@pytest.mark.parametrize("size_average,reduce", [(False, None), (None, False), (True, True)])
def test_legacy_size_average_and_reduce(size_average, reduce):
    t = torch.nn.MSELoss(size_average=size_average, reduce=reduce)
    with pytest.warns(DeprecationWarning, match="reduction"):
        s = nn.MSELoss(size_average=size_average, reduce=reduce)
    assert s.reduction == t.reduction
    with pytest.warns(DeprecationWarning):
        assert nn.CrossEntropyLoss(None, size_average, -100, reduce).reduction == t.reduction


def test_repr_and_defaults_match_torch():
    for name in (
        "CrossEntropyLoss",
        "NLLLoss",
        "MSELoss",
        "L1Loss",
        "SmoothL1Loss",
        "BCELoss",
        "BCEWithLogitsLoss",
    ):
        t, s = getattr(torch.nn, name)(), getattr(nn, name)()
        assert repr(s) == repr(t) and s.reduction == t.reduction == "mean"
    ce, tce = nn.CrossEntropyLoss(), torch.nn.CrossEntropyLoss()
    assert (ce.ignore_index, ce.label_smoothing) == (tce.ignore_index, tce.label_smoothing)
    assert nn.SmoothL1Loss().beta == torch.nn.SmoothL1Loss().beta


def test_validation():
    with pytest.raises(ValueError, match="'avg' is not a valid value for reduction"):
        nn.MSELoss(reduction="avg")
    with pytest.raises(ValueError, match="reduction"):
        nn.CrossEntropyLoss(reduction="batchmean")
    with pytest.raises(ValueError, match=r"label_smoothing must be a number in \[0, 1\], got 1.5"):
        nn.CrossEntropyLoss(label_smoothing=1.5)
    with pytest.raises(ValueError, match="beta must be a non-negative"):
        nn.SmoothL1Loss(beta=-1.0)
    with pytest.raises(TypeError, match="ignore_index"):
        nn.NLLLoss(ignore_index=1.5)
    with pytest.raises(TypeError, match="weight"):
        nn.BCELoss(weight=[1.0, 2.0])


@pytest.mark.parametrize(
    ("name", "args"),
    [
        # Tied scores with the default margin 0: the hinge is exactly at 0.
        ("MarginRankingLoss", lambda m: (m.zeros(3), m.zeros(3), m.ones(3))),
        # margin - x == 0 for the -1 targets.
        ("HingeEmbeddingLoss", lambda m: (m.ones(2), -m.ones(2))),
    ],
)
def test_margin_losses_pass_the_gradient_at_the_hinge_as_torch(name, args):
    # torch's clamp_min(x, 0) passes the gradient where x == 0 (relu would stop it, and tied
    # scores at initialisation would never train).
    import torch

    import spx

    grads = []
    for m in (torch, spx):
        first, *rest = args(m)
        first.requires_grad_(True)
        getattr(m.nn, name)()(first, *rest).backward()
        grads.append(np.asarray(first.grad.tolist()))
    assert np.abs(grads[0]).sum() > 0  # the case does sit on the hinge
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)
