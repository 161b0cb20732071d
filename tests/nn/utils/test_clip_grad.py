"""clip_grad_norm_ / clip_grad_value_ / get_total_norm against torch.nn.utils, eager and jitted."""

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.nn import Parameter
from spx.nn.utils import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (4,), (2, 3, 2)]
RTOL, ATOL = 1e-5, 1e-6


def _grads(seed: int = 0, scale: float = 1.0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * scale).astype(np.float32) for s in SHAPES]


def _pair(grads: list[np.ndarray | None]) -> tuple[list, list]:
    """The same grads on torch parameters and on spx Parameters (None = no grad)."""
    tps, sps = [], []
    for s, g in zip(SHAPES, grads, strict=True):
        tp = torch.nn.Parameter(torch.zeros(s))
        sp = Parameter(jnp.zeros(s))
        if g is not None:
            tp.grad = torch.from_numpy(g.copy())
            sp.grad = jnp.asarray(g)
        tps.append(tp)
        sps.append(sp)
    return tps, sps


def _assert_grads_equal(tps, sps) -> None:
    for tp, sp in zip(tps, sps, strict=True):
        if tp.grad is None:
            assert sp.grad is None
        else:
            np.testing.assert_allclose(np.asarray(sp.grad), tp.grad.numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, "inf", 3.0])
@pytest.mark.parametrize("max_norm", [0.5, 1e4])  # below the norm (clips) and above (no-op)
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    tps, sps = _pair(_grads())
    grads = [p.grad for p in sps]
    t_norm = torch.nn.utils.clip_grad_norm_(tps, max_norm, norm_type=norm_type)
    s_norm = clip_grad_norm_(sps, max_norm, norm_type=norm_type)
    assert isinstance(s_norm, spx.Tensor) and s_norm.shape == ()
    np.testing.assert_allclose(s_norm.numpy(), t_norm.numpy(), rtol=RTOL, atol=ATOL)
    _assert_grads_equal(tps, sps)
    # In place, as torch: the same .grad tensors hold the clipped values.
    assert all(p.grad is g for p, g in zip(sps, grads, strict=True))


def test_clip_applies_only_when_norm_exceeds_max():
    _, sps = _pair(_grads())
    before = [np.asarray(p.grad) for p in sps]
    norm = float(clip_grad_norm_(sps, 1e4))
    for b, p in zip(before, sps, strict=True):
        np.testing.assert_array_equal(np.asarray(p.grad), b)  # coefficient clamped to exactly 1
    clip_grad_norm_(sps, 1.0)
    assert norm > 1.0
    np.testing.assert_allclose(float(get_total_norm([p.grad for p in sps])), 1.0, rtol=1e-5)


def test_skips_params_without_grad_and_accepts_generators():
    grads = _grads(1)
    grads[1] = None
    tps, sps = _pair(grads)
    t_norm = torch.nn.utils.clip_grad_norm_((p for p in tps), 0.3)
    s_norm = clip_grad_norm_((p for p in sps), 0.3)
    np.testing.assert_allclose(np.asarray(s_norm), t_norm.numpy(), rtol=RTOL)
    _assert_grads_equal(tps, sps)


def test_single_parameter():
    tps, sps = _pair(_grads(2))
    t_norm = torch.nn.utils.clip_grad_norm_(tps[0], 0.1)
    s_norm = clip_grad_norm_(sps[0], 0.1)
    np.testing.assert_allclose(np.asarray(s_norm), t_norm.numpy(), rtol=RTOL)
    _assert_grads_equal(tps[:1], sps[:1])


def test_no_grads_gives_zero_norm_and_empty_generator_warns():
    assert float(clip_grad_norm_([Parameter(jnp.ones(3))], 1.0)) == 0.0
    with pytest.warns(UserWarning, match="empty generator"):
        assert float(clip_grad_norm_((p for p in []), 1.0)) == 0.0


def test_nonfinite_norm():
    grads = _grads(3)
    grads[0][0, 0] = np.nan
    tps, sps = _pair(grads)
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(sps, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError):
        torch.nn.utils.clip_grad_norm_(tps, 1.0, error_if_nonfinite=True)
    # Without the flag both scale by the nan norm, as torch does.
    t_norm = torch.nn.utils.clip_grad_norm_(tps, 1.0)
    s_norm = clip_grad_norm_(sps, 1.0)
    assert np.isnan(float(s_norm)) and torch.isnan(t_norm)
    _assert_grads_equal(tps, sps)


def test_nonfinite_check_under_jit_raises_runtime_error():
    p = Parameter(jnp.zeros(2))

    @jax.jit
    def step(g):
        p.grad = g
        norm = clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
        p.grad = None
        return norm

    np.testing.assert_allclose(float(step(jnp.array([3.0, 4.0]))), 5.0)
    with pytest.raises(RuntimeError, match="non-finite"):
        jax.block_until_ready(step(jnp.array([jnp.inf, 1.0])))


@pytest.mark.parametrize("norm_type,max_norm", [(2.0, 0.5), (1.0, 1e4), (math.inf, 0.5)])
def test_clip_grad_norm_under_jit(norm_type, max_norm):
    grads = _grads(4)
    tps, _ = _pair(grads)
    params = [Parameter(jnp.zeros(s)) for s in SHAPES]

    @jax.jit
    def clip(gs):
        for p, g in zip(params, gs, strict=True):
            p.grad = g  # tracers, as spx.compile puts them there
        norm = clip_grad_norm_(params, max_norm, norm_type=norm_type)
        out = [p.grad for p in params]
        for p in params:
            p.grad = None  # leave no tracer behind
        return norm, out

    s_norm, s_grads = clip([jnp.asarray(g) for g in grads])
    t_norm = torch.nn.utils.clip_grad_norm_(tps, max_norm, norm_type=norm_type)
    np.testing.assert_allclose(np.asarray(s_norm), t_norm.numpy(), rtol=RTOL, atol=ATOL)
    for tp, g in zip(tps, s_grads, strict=True):
        np.testing.assert_allclose(np.asarray(g), tp.grad.numpy(), rtol=RTOL, atol=ATOL)


def test_bfloat16_grads_keep_dtype():
    g = np.random.default_rng(5).standard_normal((64,)).astype(np.float32) * 3
    tp = torch.nn.Parameter(torch.zeros(64, dtype=torch.bfloat16))
    tp.grad = torch.from_numpy(g).bfloat16()
    sp = Parameter(jnp.zeros(64, jnp.bfloat16))
    sp.grad = jnp.asarray(g).astype(jnp.bfloat16)
    t_norm = torch.nn.utils.clip_grad_norm_([tp], 1.0)
    s_norm = clip_grad_norm_([sp], 1.0)
    assert s_norm.dtype == jnp.bfloat16 and sp.grad.dtype == jnp.bfloat16
    # bf16 has 8 bits of mantissa: both round the same f32-accumulated norm, then the product.
    np.testing.assert_allclose(float(s_norm), float(t_norm), rtol=1e-2)
    np.testing.assert_allclose(
        sp.grad.float().numpy(), tp.grad.float().numpy(), rtol=1e-2, atol=1e-3
    )


def test_get_total_norm_and_clip_grads_with_norm_match_torch():
    tps, sps = _pair(_grads(6))
    for norm_type in (2.0, 1.0, math.inf, 0.5):
        t = torch.nn.utils.get_total_norm([p.grad for p in tps], norm_type)
        s = get_total_norm([p.grad for p in sps], norm_type)
        np.testing.assert_allclose(np.asarray(s), t.numpy(), rtol=RTOL)
    t = torch.nn.utils.get_total_norm([p.grad for p in tps])
    torch.nn.utils.clip_grads_with_norm_(tps, 0.7, t)
    clip_grads_with_norm_(sps, 0.7, get_total_norm([p.grad for p in sps]))
    _assert_grads_equal(tps, sps)


def test_clip_grad_value_matches_torch():
    grads = _grads(7)
    grads[2] = None
    tps, sps = _pair(grads)
    torch.nn.utils.clip_grad_value_(tps, 0.4)
    clip_grad_value_(sps, 0.4)
    _assert_grads_equal(tps, sps)


def test_clip_grad_value_under_jit():
    p = Parameter(jnp.zeros(3))

    @jax.jit
    def clip(g):
        p.grad = g
        clip_grad_value_(p, 1.0)
        out, p.grad = p.grad, None
        return out

    np.testing.assert_array_equal(np.asarray(clip(jnp.array([-3.0, 0.5, 2.0]))), [-1, 0.5, 1])


def test_after_loss_backward_on_a_model_matches_torch():
    # The torch flow end to end: backward, clip, and the clipped .grad of every parameter.
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    s = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    s.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    x = np.random.default_rng(9).standard_normal((16, 4)).astype(np.float32) * 5
    t(torch.tensor(x)).pow(2).sum().backward()
    s(spx.tensor(x)).pow(2).sum().backward()
    t_norm = torch.nn.utils.clip_grad_norm_(t.parameters(), 0.5)
    s_norm = clip_grad_norm_(s.parameters(), 0.5)
    assert float(t_norm) > 0.5  # the case that clips
    np.testing.assert_allclose(s_norm.numpy(), t_norm.numpy(), rtol=RTOL)
    for (name, tp), sp in zip(t.named_parameters(), s.parameters(), strict=True):
        np.testing.assert_allclose(
            sp.grad.numpy(), tp.grad.numpy(), rtol=RTOL, atol=ATOL, err_msg=name
        )
    torch.nn.utils.clip_grad_value_(t.parameters(), 1e-3)
    clip_grad_value_(s.parameters(), 1e-3)
    for tp, sp in zip(t.parameters(), s.parameters(), strict=True):
        np.testing.assert_allclose(sp.grad.numpy(), tp.grad.numpy(), rtol=RTOL, atol=ATOL)


def test_deprecated_alias_warns():
    _, sps = _pair(_grads(8))
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        clip_grad_norm(sps, 1.0)


def test_bad_inputs():
    with pytest.raises(TypeError, match="Parameter"):
        clip_grad_norm_([jnp.ones(3)], 1.0)
    with pytest.raises(TypeError, match="iterable"):
        clip_grad_norm_(3.0, 1.0)
    with pytest.raises(ValueError, match="norm_type"):
        clip_grad_norm_([Parameter(jnp.ones(3))], 1.0, norm_type="fro")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clip_grad_norm_([], 1.0)  # an empty list is fine; only empty generators warn
