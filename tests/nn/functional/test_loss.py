"""Regression / binary / KL losses against torch: every reduction, weights, outputs and input
(and weight / target where torch differentiates them) gradients."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import spx.nn.functional as F

from ._reference import (
    all_reductions,
    assert_close,
    cat,
    check_against_torch,
    log_softmax_np,
    randn,
    softmax_np,
    torch,
)

TF = torch.nn.functional


def _both(name, **kw):
    """``name`` from spx and torch, every reduction concatenated into one output."""
    return (
        all_reductions(lambda *a, **r: getattr(F, name)(*a, **kw, **r), cat),
        all_reductions(lambda *a, **r: getattr(TF, name)(*a, **kw, **r), torch.cat),
    )


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss"])
def test_mse_and_l1(name):
    rng = np.random.default_rng(0)
    x, y, w = randn(rng, 4, 5), randn(rng, 4, 5), np.abs(randn(rng, 4, 5))
    check_against_torch(*_both(name), [x, y])
    ours, theirs = _both(name)
    check_against_torch(
        lambda x, y, w: ours(x, y, weight=w), lambda x, y, w: theirs(x, y, weight=w), [x, y, w]
    )


def test_broadcasting_target_warns_like_torch():
    rng = np.random.default_rng(1)
    x, y = randn(rng, 4, 5), randn(rng, 5)
    with pytest.warns(UserWarning, match="different to the input size"):
        ours = F.mse_loss(jnp.asarray(x), jnp.asarray(y))
    with pytest.warns(UserWarning):
        ref = TF.mse_loss(torch.tensor(x), torch.tensor(y))
    assert_close(ours, ref)


@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, 2.0])
def test_smooth_l1(beta):
    rng = np.random.default_rng(2)
    x, y = randn(rng, 6, 5, scale=2.0), randn(rng, 6, 5)
    y[0] = x[0]  # ties: beta=0 is torch's L1 loss, whose slope there is 0
    check_against_torch(*_both("smooth_l1_loss", beta=beta), [x, y])


@pytest.mark.parametrize("delta", [0.5, 1.0, 2.0])
def test_huber(delta):
    rng = np.random.default_rng(3)
    x, y, w = randn(rng, 6, 5, scale=2.0), randn(rng, 6, 5), np.abs(randn(rng, 6, 5))
    check_against_torch(*_both("huber_loss", delta=delta), [x, y])
    ours, theirs = _both("huber_loss", delta=delta)
    check_against_torch(
        lambda x, y, w: ours(x, y, weight=w), lambda x, y, w: theirs(x, y, weight=w), [x, y, w]
    )


def test_binary_cross_entropy():
    rng = np.random.default_rng(4)
    x = 1 / (1 + np.exp(-randn(rng, 4, 6, scale=2.0)))
    y = rng.uniform(size=(4, 6)).astype(np.float32)
    w = np.abs(randn(rng, 6))  # broadcast along the last dim
    check_against_torch(*_both("binary_cross_entropy"), [x, y])
    # torch does not differentiate the weight here: compare input and target gradients.
    check_against_torch(*_both("binary_cross_entropy"), [x, y, w], diff=[0, 1])


def test_binary_cross_entropy_saturated_probabilities_have_torch_finite_gradients():
    x = np.array([0.0, 1.0, 0.0, 1.0, 0.5], np.float32)
    y = np.array([0.0, 1.0, 1.0, 0.0, 1.0], np.float32)
    out = check_against_torch(
        lambda x, y: F.binary_cross_entropy(x, y, reduction="none"),
        lambda x, y: TF.binary_cross_entropy(x, y, reduction="none"),
        [x, y],
        diff=[0],
    )
    assert_close(out, [0.0, 0.0, 100.0, 100.0, np.log(2)])


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("pos_weighted", [False, True])
def test_bce_with_logits(weighted, pos_weighted):
    rng = np.random.default_rng(5)
    x, y = randn(rng, 4, 6, scale=3.0), rng.uniform(size=(4, 6)).astype(np.float32)
    w = np.abs(randn(rng, 4, 6)) if weighted else None
    pw = np.abs(randn(rng, 6)) + 0.5 if pos_weighted else None
    ours, theirs = _both("binary_cross_entropy_with_logits")

    def bind(fn, lib):
        extra = [None if a is None else lib(a) for a in (w, pw)]
        return lambda x, y: fn(x, y, extra[0], pos_weight=extra[1])

    # torch does not differentiate weight / pos_weight here: compare input and target grads.
    check_against_torch(bind(ours, jnp.asarray), bind(theirs, torch.tensor), [x, y])


def test_bce_size_mismatch_is_value_error():
    with pytest.raises(ValueError, match="target size"):
        F.binary_cross_entropy(jnp.ones((2, 3)) * 0.5, jnp.ones(3))
    with pytest.raises(ValueError, match="same as"):
        F.binary_cross_entropy_with_logits(jnp.ones((2, 3)), jnp.ones(3))


@pytest.mark.filterwarnings("ignore:.*reduction.*mean")
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(log_target):
    rng = np.random.default_rng(6)
    x = log_softmax_np(randn(rng, 4, 5), axis=1)
    t = softmax_np(randn(rng, 4, 5), axis=1)
    t[0, 0] = 0.0  # exercises 0 * log 0 = 0
    if log_target:
        t = np.log(t + 1e-3).astype(np.float32)

    def every_reduction(fn, cat):
        # "batchmean" on top of the three usual reductions, all in one compiled check.
        return lambda x, t: cat(
            [all_reductions(fn, cat)(x, t), fn(x, t, reduction="batchmean").reshape(-1)]
        )

    check_against_torch(
        every_reduction(lambda *a, **r: F.kl_div(*a, log_target=log_target, **r), cat),
        every_reduction(lambda *a, **r: TF.kl_div(*a, log_target=log_target, **r), torch.cat),
        [x, t],
        diff=[0],
    )


def test_kl_div_mean_warns():
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(jnp.zeros(3), jnp.ones(3))


def test_soft_margin_and_margin_ranking():
    rng = np.random.default_rng(7)
    x, x2 = randn(rng, 8), randn(rng, 8)
    y = np.where(rng.uniform(size=8) > 0.5, 1.0, -1.0).astype(np.float32)
    ours, theirs = _both("soft_margin_loss")
    check_against_torch(lambda x: ours(x, jnp.asarray(y)), lambda x: theirs(x, torch.tensor(y)),
                        [x])  # fmt: skip
    ours, theirs = _both("margin_ranking_loss", margin=0.3)
    check_against_torch(lambda a, b: ours(a, b, jnp.asarray(y)),
                        lambda a, b: theirs(a, b, torch.tensor(y)), [x, x2])  # fmt: skip


def test_bad_reduction_and_beta():
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.mse_loss(jnp.ones(2), jnp.ones(2), reduction="average")
    with pytest.raises(ValueError, match="beta"):
        F.smooth_l1_loss(jnp.ones(2), jnp.ones(2), beta=-1.0)
    with pytest.raises(ValueError, match="same size"):
        F.l1_loss(jnp.ones(2), jnp.ones(2), weight=jnp.ones(3))
