"""Normalization against torch: outputs, input/weight/bias gradients, and batch norm's running
statistics (torch updates them in place; spx returns them from batch_norm_with_stats)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
import spx.nn.functional as F

from ._reference import assert_close, check_against_torch, randn, torch

TF = torch.nn.functional

# Normalizations reduce over up to a few dozen elements in a different order than torch and
# the normalized values are O(1), so allow a few ulps absolute on top of rtol.
ATOL = 1e-5


@pytest.mark.parametrize("shape", [(4, 6), (2, 3, 4, 5)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(shape, affine):
    rng = np.random.default_rng(0)
    x = randn(rng, *shape, scale=3.0) + 1.0
    norm = shape[-2:] if len(shape) > 2 else shape[-1:]
    if affine:
        w, b = randn(rng, *norm), randn(rng, *norm)
        check_against_torch(
            lambda x, w, b: F.layer_norm(x, norm, w, b),
            lambda x, w, b: TF.layer_norm(x, norm, w, b),
            [x, w, b],
            atol=ATOL,
        )
    else:
        check_against_torch(
            lambda x: F.layer_norm(x, norm, eps=1e-3),
            lambda x: TF.layer_norm(x, norm, eps=1e-3),
            [x],
            atol=ATOL,
        )


def test_layer_norm_int_shape_and_bf16_keeps_dtype():
    x = jnp.arange(8.0).reshape(2, 4).astype(jnp.bfloat16)
    y = F.layer_norm(x, 4)
    assert y.dtype == jnp.bfloat16
    ref = TF.layer_norm(torch.arange(8.0).reshape(2, 4), (4,))
    assert_close(y.float(), ref, rtol=1e-2, atol=1e-2)  # bf16 has 8 mantissa bits


def test_layer_norm_bad_shape():
    with pytest.raises(RuntimeError, match=r"normalized_shape=\[5\]"):
        F.layer_norm(jnp.ones((3, 4)), (5,))


@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm(eps):
    rng = np.random.default_rng(1)
    x, w = randn(rng, 3, 4, 8), randn(rng, 8)
    check_against_torch(
        lambda x, w: F.rms_norm(x, (8,), w, eps),
        lambda x, w: TF.rms_norm(x, (8,), w, eps),
        [x, w],
        atol=ATOL,
    )
    check_against_torch(
        lambda x: F.rms_norm(x, (4, 8)), lambda x: TF.rms_norm(x, (4, 8)), [x], atol=ATOL
    )


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_rms_norm_default_eps_of_half_inputs_is_torchs(dtype):
    # torch computes a half input's norm in float32 with float32's eps; the half type's own eps
    # (2**-7 for bfloat16) would change the result of small activations by ~30%.
    x = (randn(np.random.default_rng(2), 4, 8) * 0.1).astype(np.float32)
    expected = TF.rms_norm(torch.tensor(x).to(getattr(torch, dtype)), (8,)).float().numpy()
    got = F.rms_norm(jnp.asarray(x, getattr(jnp, dtype)), (8,))
    assert got.dtype == getattr(jnp, dtype)
    np.testing.assert_allclose(np.asarray(got, np.float32), expected, rtol=1e-2, atol=1e-2)
    module = spx.nn.RMSNorm(8).to(getattr(spx, dtype))
    out = module(spx.tensor(x).to(getattr(spx, dtype))).detach().float().numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5), (2, 3, 4, 4)])
def test_batch_norm_training_output_and_gradients(shape):
    rng = np.random.default_rng(2)
    x, w, b = randn(rng, *shape, scale=2.0) + 0.5, randn(rng, 3), randn(rng, 3)
    check_against_torch(
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True),
        [x, w, b],
        atol=ATOL,
    )


def test_batch_norm_eval_uses_running_stats():
    rng = np.random.default_rng(3)
    x, w, b = randn(rng, 4, 3, 5), randn(rng, 3), randn(rng, 3)
    rm, rv = randn(rng, 3), np.abs(randn(rng, 3)) + 0.5
    check_against_torch(
        lambda x, w, b: F.batch_norm(x, jnp.asarray(rm), jnp.asarray(rv), w, b, eps=1e-3),
        lambda x, w, b: TF.batch_norm(x, torch.tensor(rm), torch.tensor(rv), w, b, eps=1e-3),
        [x, w, b],
        atol=ATOL,
    )


def test_batch_norm_with_stats_matches_torch_in_place_update():
    rng = np.random.default_rng(4)
    x = randn(rng, 6, 3, 4, scale=2.0) + 1.0
    rm, rv = randn(rng, 3), np.abs(randn(rng, 3)) + 0.5
    t_rm, t_rv = torch.tensor(rm), torch.tensor(rv)
    ref = TF.batch_norm(torch.tensor(x), t_rm, t_rv, training=True, momentum=0.3)
    # Under jit, as a BatchNorm module runs it inside a compiled step.
    step = jax.jit(
        lambda x, rm, rv: F.batch_norm_with_stats(x, rm, rv, training=True, momentum=0.3)
    )
    res = step(jnp.asarray(x), jnp.asarray(rm), jnp.asarray(rv))
    assert_close(res.output, ref, atol=ATOL)
    assert_close(res.running_mean, t_rm)
    assert_close(res.running_var, t_rv)  # updated with the unbiased batch variance
    # The plain form updates Tensor running stats in place, as torch does.
    s_rm, s_rv = spx.tensor(rm), spx.tensor(rv)
    out = F.batch_norm(spx.tensor(x), s_rm, s_rv, training=True, momentum=0.3)
    assert isinstance(out, spx.Tensor) and out.shape == x.shape
    assert_close(out, ref, atol=ATOL)
    assert_close(s_rm, t_rm)
    assert_close(s_rv, t_rv)
    # Arrays cannot change: they are read and left alone.
    j_rm = jnp.asarray(rm)
    F.batch_norm(jnp.asarray(x), j_rm, jnp.asarray(rv), training=True)
    assert_close(j_rm, rm)
    # Eval returns the stats unchanged.
    ev = F.batch_norm_with_stats(jnp.asarray(x), jnp.asarray(rm), jnp.asarray(rv))
    assert_close(ev.running_mean, rm)
    assert_close(ev.running_var, rv)


def test_batch_norm_running_stats_do_not_carry_gradient():
    x = jnp.arange(12.0).reshape(4, 3)

    def f(x):
        return jnp.sum(F.batch_norm_with_stats(x, jnp.zeros(3), jnp.ones(3), training=True)[1])

    assert_close(jax.grad(f)(x), np.zeros((4, 3)))


def test_batch_norm_errors():
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(jnp.ones((1, 4)), None, None, training=True)
    with pytest.raises(RuntimeError, match="training=False"):
        F.batch_norm(jnp.ones((2, 4)), None, None)
    with pytest.raises(RuntimeError, match=r"running_mean must have shape \(4,\)"):
        F.batch_norm(jnp.ones((2, 4)), jnp.zeros(3), jnp.ones(3))


@pytest.mark.parametrize("groups", [1, 2, 6])
def test_group_norm(groups):
    rng = np.random.default_rng(5)
    x, w, b = randn(rng, 2, 6, 3, 4, scale=2.0), randn(rng, 6), randn(rng, 6)
    check_against_torch(
        lambda x, w, b: F.group_norm(x, groups, w, b),
        lambda x, w, b: TF.group_norm(x, groups, w, b),
        [x, w, b],
        atol=ATOL,
    )


def test_group_norm_indivisible_channels():
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(jnp.ones((2, 4, 3)), 3)


def test_instance_norm():
    rng = np.random.default_rng(6)
    x, w, b = randn(rng, 2, 3, 5, 4), randn(rng, 3), randn(rng, 3)
    check_against_torch(
        lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
        lambda x, w, b: TF.instance_norm(x, weight=w, bias=b),
        [x, w, b],
        atol=ATOL,
    )
    rm, rv = randn(rng, 3), np.abs(randn(rng, 3)) + 0.5
    check_against_torch(
        lambda x: F.instance_norm(x, jnp.asarray(rm), jnp.asarray(rv), use_input_stats=False),
        lambda x: TF.instance_norm(x, torch.tensor(rm), torch.tensor(rv), use_input_stats=False),
        [x],
        atol=ATOL,
    )


@pytest.mark.parametrize(("p", "dim"), [(2.0, 1), (1.0, -1), (3.0, 0), (float("inf"), 1)])
def test_normalize(p, dim):
    rng = np.random.default_rng(7)
    x = randn(rng, 3, 4, 5)
    check_against_torch(
        lambda x: F.normalize(x, p, dim), lambda x: TF.normalize(x, p, dim), [x], atol=ATOL
    )


def test_normalize_zero_vector_is_zero():
    assert_close(F.normalize(jnp.zeros((2, 3))), np.zeros((2, 3)))


@pytest.mark.parametrize("momentum", [0.1, 0.5])
def test_instance_norm_updates_given_running_stats_in_place_as_torch(momentum):
    x = randn(np.random.default_rng(3), 2, 3, 5)
    stats = []
    for m in (torch, spx):
        rm, rv = m.zeros(3), m.ones(3)
        out = m.nn.functional.instance_norm(m.tensor(x), rm, rv, momentum=momentum)
        stats.append((rm.tolist(), rv.tolist(), np.asarray(out.tolist())))
    np.testing.assert_allclose(stats[1][0], stats[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stats[1][1], stats[0][1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stats[1][2], stats[0][2], rtol=1e-4, atol=1e-5)
