"""cross_entropy / nll_loss / linear_cross_entropy against torch: index and probability
targets, (C), (N, C) and K-dim inputs, weights, ignore_index, label smoothing, reductions,
logit (and soft-target, class-weight) gradients, errors, and use under jit."""

from __future__ import annotations

import jax
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
C = 5
# Shapes of the logits; the class dim is 1 (0 for the unbatched case).
SHAPES = [(6, C), (C,), (3, C, 4), (2, C, 3, 2)]


def _targets(rng, shape, ignore_index=-100, n_ignored=2):
    tshape = shape[1:] if len(shape) == 1 else (shape[0], *shape[2:])
    t = rng.integers(0, C, tshape).astype(np.int64)
    flat = t.reshape(-1)
    if flat.size > 1:
        flat[rng.choice(flat.size, min(n_ignored, flat.size - 1), replace=False)] = ignore_index
    return t


def _ce(**kw):
    """cross_entropy in both libraries, every reduction concatenated (see all_reductions)."""

    def spx_fn(x, t, *w, reduction):
        return F.cross_entropy(x, t, *(w or (None,)), reduction=reduction, **kw)

    def torch_fn(x, t, *w, reduction):
        return TF.cross_entropy(x, torch.as_tensor(t), *(w or (None,)), reduction=reduction, **kw)

    return all_reductions(spx_fn, cat), all_reductions(torch_fn, torch.cat)


# Every shape with the plain and the fully-loaded (smoothing + weights) configuration, and the
# two mixed ones on the K-dim shape.
CASES = [(s, ls, w) for s in SHAPES for ls, w in ((0.0, False), (0.2, True))] + [
    ((3, C, 4), 0.2, False),
    ((3, C, 4), 0.0, True),
]


@pytest.mark.parametrize(("shape", "smoothing", "weighted"), CASES, ids=str)
def test_cross_entropy_index_targets(shape, smoothing, weighted):
    rng = np.random.default_rng(0)
    x = randn(rng, *shape, scale=2.0)
    t = _targets(rng, shape)
    args = [x, t] + ([np.abs(randn(rng, C)) + 0.1] if weighted else [])
    spx_fn, torch_fn = _ce(label_smoothing=smoothing)
    # torch has no derivative for the class weights of nll_loss: compare logit gradients only.
    check_against_torch(spx_fn, torch_fn, args, diff=[0])


def test_cross_entropy_custom_ignore_index_is_a_real_class():
    rng = np.random.default_rng(1)
    x = randn(rng, 8, C)
    t = rng.integers(0, C, 8)
    t[:3] = 2
    for smoothing in (0.0, 0.1):
        spx_fn, torch_fn = _ce(ignore_index=2, label_smoothing=smoothing)
        check_against_torch(spx_fn, torch_fn, [x, t], diff=[0])


def test_cross_entropy_all_ignored_mean_is_nan_like_torch():
    x = jnp.ones((3, C))
    t = jnp.full((3,), -100)
    assert np.isnan(float(F.cross_entropy(x, t)))
    assert np.isnan(float(TF.cross_entropy(torch.ones(3, C), torch.full((3,), -100))))
    assert float(F.cross_entropy(x, t, reduction="sum")) == 0.0


PROB_CASES = [((6, C), 0.0, False), ((6, C), 0.3, True), ((C,), 0.3, False), ((C,), 0.0, True),
              ((3, C, 4), 0.0, False), ((3, C, 4), 0.3, True)]  # fmt: skip


@pytest.mark.parametrize(("shape", "smoothing", "weighted"), PROB_CASES, ids=str)
def test_cross_entropy_probability_targets(shape, smoothing, weighted):
    rng = np.random.default_rng(2)
    x = randn(rng, *shape, scale=2.0)
    cdim = 0 if len(shape) == 1 else 1
    p = softmax_np(randn(rng, *shape), axis=cdim)
    args = [x, p] + ([np.abs(randn(rng, C)) + 0.1] if weighted else [])
    spx_fn, torch_fn = _ce(label_smoothing=smoothing)
    # Logits, soft targets and class weights are all differentiable here, in torch too.
    check_against_torch(spx_fn, torch_fn, args)


@pytest.mark.parametrize("shape", [(6, C), (C,), (2, C, 3, 2)])
def test_nll_loss(shape):
    rng = np.random.default_rng(3)
    logp = log_softmax_np(randn(rng, *shape), axis=0 if len(shape) == 1 else 1)
    t = _targets(rng, shape, ignore_index=1)
    w = np.abs(randn(rng, C)) + 0.1
    check_against_torch(
        all_reductions(lambda x, w, **r: F.nll_loss(x, jnp.asarray(t), w, ignore_index=1, **r),
                       cat),
        all_reductions(lambda x, w, **r: TF.nll_loss(x, torch.as_tensor(t), w, ignore_index=1, **r),
                       torch.cat),
        [logp, w],
        diff=[0],
    )  # fmt: skip


def test_legacy_size_average_and_reduce_flags():
    rng = np.random.default_rng(4)
    x, t = randn(rng, 4, C), rng.integers(0, C, 4)
    with pytest.warns(DeprecationWarning, match="reduction='sum'"):
        ours = F.cross_entropy(jnp.asarray(x), jnp.asarray(t), size_average=False)
    with pytest.warns(UserWarning):
        ref = TF.cross_entropy(torch.tensor(x), torch.as_tensor(t), size_average=False)
    assert_close(ours, ref)


def test_out_of_range_target_raises_eagerly_and_is_nan_under_jit():
    x, t = jnp.zeros((3, C)), jnp.array([0, 1, C])
    with pytest.raises(IndexError, match=f"target {C} is out of bounds"):
        F.cross_entropy(x, t)
    with pytest.raises(IndexError):
        F.cross_entropy(x, jnp.array([0, -1, 1]))
    assert np.isnan(float(jax.jit(lambda x, t: jnp.asarray(F.cross_entropy(x, t)))(x, t)))


def test_cross_entropy_under_jit_and_grad():
    rng = np.random.default_rng(5)
    x, t = randn(rng, 6, C), _targets(rng, (6, C))

    @jax.jit
    def loss_and_grad(x, t):
        return jax.value_and_grad(
            lambda x: jnp.asarray(F.cross_entropy(x, t, label_smoothing=0.1))
        )(x)

    loss, g = loss_and_grad(jnp.asarray(x), jnp.asarray(t))
    xt = torch.tensor(x, requires_grad=True)
    ref = TF.cross_entropy(xt, torch.as_tensor(t), label_smoothing=0.1)
    ref.backward()
    assert_close(loss, ref)
    assert_close(g, xt.grad)


def test_bf16_logits_return_bf16_loss():
    x = jnp.ones((4, C), jnp.bfloat16)
    loss = F.cross_entropy(x, jnp.array([0, 1, 2, 3]))
    assert loss.dtype == jnp.bfloat16
    assert_close(loss.float(), np.log(C), rtol=1e-2)


def test_cross_entropy_errors():
    x = jnp.zeros((4, C))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.cross_entropy(x, jnp.zeros(4, jnp.int32), reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(x, jnp.zeros(4, jnp.int32), label_smoothing=1.5)
    with pytest.raises(ValueError, match="batch_size"):
        F.cross_entropy(x, jnp.zeros(3, jnp.int32))
    with pytest.raises(RuntimeError, match="weight"):
        F.cross_entropy(x, jnp.zeros(4, jnp.int32), weight=jnp.ones(3))
    with pytest.raises(RuntimeError, match="probability targets"):
        F.cross_entropy(x, jnp.zeros((4, 3)))


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_linear_cross_entropy_matches_torch(smoothing):
    rng = np.random.default_rng(6)
    x, w, b = randn(rng, 6, 4), randn(rng, C, 4), randn(rng, C)
    t = _targets(rng, (6, C))
    check_against_torch(
        lambda x, w, b: F.linear_cross_entropy(
            x, w, jnp.asarray(t), linear_bias=b, label_smoothing=smoothing
        ),
        lambda x, w, b: TF.linear_cross_entropy(
            x, w, torch.as_tensor(t), linear_bias=b, label_smoothing=smoothing
        ),
        [x, w, b],
    )
