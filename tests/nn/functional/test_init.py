"""spx.nn.init: torch's gains and fans, in-place contract on Parameters (shape/dtype kept, same
object returned), distribution statistics equal to the formulas torch documents (bounds
computed by hand here), orthogonality, deterministic seeding, and the error messages."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx.nn import Parameter, init

from ._reference import assert_close, torch

SHAPE = (256, 512)  # 131k samples: sample std is within ~0.5% of the true std
FAN_IN, FAN_OUT = 512, 256


def _param(shape=SHAPE, dtype=jnp.float32):
    return Parameter(jnp.zeros(shape, dtype))


@pytest.mark.parametrize(
    ("name", "param"),
    [("linear", None), ("conv2d", None), ("conv_transpose3d", None), ("sigmoid", None),
     ("tanh", None), ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
     ("leaky_relu", 3), ("selu", None)],
)  # fmt: skip
def test_calculate_gain_matches_torch(name, param):
    assert init.calculate_gain(name, param) == pytest.approx(
        torch.nn.init.calculate_gain(name, param)
    )


def test_calculate_gain_rejects_unknown():
    with pytest.raises(ValueError, match="Unsupported nonlinearity 'swish'"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="negative_slope"):
        init.calculate_gain("leaky_relu", True)


@pytest.mark.parametrize("shape", [(3, 4), (8, 4, 3, 3), (5, 2, 7), (6, 3, 2, 2, 2)])
def test_fan_in_and_fan_out_match_torch(shape):
    ref = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    assert init._calculate_fan_in_and_fan_out(_param(shape)) == ref
    assert init._calculate_fan_in_and_fan_out(shape) == ref


def test_fans_need_two_dims():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(_param((5,)))


def _check_uniform(values, bound):
    v = np.asarray(values, np.float64)
    assert v.min() >= -bound and v.max() <= bound
    assert v.max() > 0.99 * bound and v.min() < -0.99 * bound
    assert abs(v.mean()) < 0.01 * bound
    assert v.std() == pytest.approx(bound / math.sqrt(3), rel=0.01)


def _check_normal(values, std, mean=0.0):
    v = np.asarray(values, np.float64)
    assert abs(v.mean() - mean) < 0.01 * std
    assert v.std() == pytest.approx(std, rel=0.01)


def test_in_place_contract_returns_same_object_and_keeps_shape_dtype():
    for dtype in (jnp.float32, jnp.bfloat16):
        p = _param((4, 6), dtype)
        assert init.kaiming_uniform_(p, a=math.sqrt(5)) is p
        assert p.data.shape == (4, 6) and p.data.dtype == dtype
        assert np.any(p.data.float().numpy() != 0)


def test_uniform_and_normal():
    p = init.uniform_(_param(), -0.3, 0.7)
    v = np.asarray(p.data)
    assert v.min() >= -0.3 and v.max() <= 0.7
    assert v.mean() == pytest.approx(0.2, abs=0.005)
    _check_normal(init.normal_(_param(), 1.5, 0.2).data, 0.2, 1.5)


def test_trunc_normal_matches_truncated_gaussian_moments():
    mean, std, a, b = 0.5, 2.0, -1.0, 3.0
    v = np.asarray(init.trunc_normal_(_param(), mean, std, a, b).data, np.float64)
    assert v.min() >= a and v.max() <= b
    # Moments of N(mean, std^2) truncated to [a, b], by hand.
    al, be = (a - mean) / std, (b - mean) / std
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    Z = cdf(be) - cdf(al)
    t_mean = mean + std * (pdf(al) - pdf(be)) / Z
    t_var = std**2 * (1 + (al * pdf(al) - be * pdf(be)) / Z - ((pdf(al) - pdf(be)) / Z) ** 2)
    assert v.mean() == pytest.approx(t_mean, abs=0.01 * std)
    assert v.std() == pytest.approx(math.sqrt(t_var), rel=0.01)


@pytest.mark.parametrize("gain", [1.0, 2.0])
def test_xavier(gain):
    bound = gain * math.sqrt(6.0 / (FAN_IN + FAN_OUT))
    _check_uniform(init.xavier_uniform_(_param(), gain).data, bound)
    _check_normal(
        init.xavier_normal_(_param(), gain).data, gain * math.sqrt(2.0 / (FAN_IN + FAN_OUT))
    )


@pytest.mark.parametrize(
    ("a", "mode", "nonlinearity", "gain"),
    [(0, "fan_in", "leaky_relu", math.sqrt(2.0)), (math.sqrt(5), "fan_in", "leaky_relu",
     math.sqrt(2.0 / 6)), (0, "fan_out", "relu", math.sqrt(2.0)), (0, "fan_in", "linear", 1.0)],
)  # fmt: skip
def test_kaiming(a, mode, nonlinearity, gain):
    fan = FAN_IN if mode == "fan_in" else FAN_OUT
    _check_uniform(
        init.kaiming_uniform_(_param(), a, mode, nonlinearity).data, gain * math.sqrt(3.0 / fan)
    )
    _check_normal(init.kaiming_normal_(_param(), a, mode, nonlinearity).data, gain / math.sqrt(fan))


def test_kaiming_conv_weight_uses_receptive_field():
    p = init.kaiming_uniform_(_param((64, 16, 3, 3)), a=math.sqrt(5))
    bound = math.sqrt(2.0 / 6) * math.sqrt(3.0 / (16 * 9))  # torch's Conv2d default
    v = np.asarray(p.data)
    assert v.min() >= -bound and v.max() <= bound and v.max() > 0.98 * bound


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5), (8, 2, 3, 3)])
def test_orthogonal(shape):
    w = np.asarray(init.orthogonal_(_param(shape), gain=2.0).data, np.float64)
    m = w.reshape(shape[0], -1) / 2.0
    small = min(m.shape)
    gram = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-5)


def test_fills_match_torch():
    for shape in [(3, 5), (2, 3, 4)]:
        assert_close(init.constant_(_param(shape), 0.3).data, np.full(shape, 0.3))
        assert_close(init.ones_(_param(shape)).data, np.ones(shape))
        assert_close(init.zeros_(init.ones_(_param(shape))).data, np.zeros(shape))
    assert_close(init.eye_(_param((3, 5))).data, torch.nn.init.eye_(torch.empty(3, 5)))
    for shape, groups in [((4, 4, 3, 3), 1), ((6, 2, 3, 3, 3), 2), ((4, 3, 5), 2)]:
        ref = torch.nn.init.dirac_(torch.empty(shape), groups)
        assert_close(init.dirac_(_param(shape), groups).data, ref)


def test_seeding_is_reproducible_and_generator_key_overrides():
    spx.manual_seed(42)
    a = np.asarray(init.normal_(_param((8, 8))).data)
    b = np.asarray(init.normal_(_param((8, 8))).data)
    spx.manual_seed(42)
    assert_close(init.normal_(_param((8, 8))).data, a)
    assert not np.array_equal(a, b)  # successive draws differ
    key = jax.random.key(3)
    c = init.kaiming_uniform_(_param((8, 8)), generator=key).data
    assert_close(init.kaiming_uniform_(_param((8, 8)), generator=key).data, c)


def test_out_of_place_forms():
    w = init.kaiming_uniform(
        (16, 8), a=math.sqrt(5), dtype=jnp.bfloat16, generator=jax.random.key(0)
    )
    assert w.shape == (16, 8) and w.dtype == jnp.bfloat16
    assert init.orthogonal((3, 7)).shape == (3, 7)
    assert init.trunc_normal(5, std=0.02).shape == (5,)


def test_errors_explain_the_fix():
    with pytest.raises(
        TypeError, match=r"(?s)jax\.Array.*Parameter.*init\.xavier_uniform\(w\.shape"
    ):
        init.xavier_uniform_(jnp.zeros((3, 3)))
    with pytest.raises(TypeError, match=r"init\.normal_\(param"):
        init.normal(_param((3, 3)))
    with pytest.raises(TypeError, match="PRNG key"):
        init.uniform_(_param((3, 3)), generator=torch.Generator())
    with pytest.raises(ValueError, match="fan_in"):
        init.kaiming_normal_(_param((3, 3)), mode="fan_avg")
    with pytest.raises(ValueError, match="2 or more"):
        init.orthogonal_(_param((3,)))
    with pytest.warns(UserWarning, match="zero-element"):
        init.kaiming_uniform_(_param((0, 3)))
