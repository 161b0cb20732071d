"""parameters_to_vector / vector_to_parameters against torch.nn.utils."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spx import nn
from spx.nn.utils import parameters_to_vector, vector_to_parameters

torch = pytest.importorskip("torch")


def _pair():
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    s1, s2 = nn.Linear(3, 4), nn.Linear(4, 2)
    sd = t.state_dict()
    s1.load_state_dict({k[2:]: v.numpy() for k, v in sd.items() if k.startswith("0.")})
    s2.load_state_dict({k[2:]: v.numpy() for k, v in sd.items() if k.startswith("1.")})
    return t, [*s1.parameters(), *s2.parameters()]


def test_parameters_to_vector_matches_torch():
    t, sps = _pair()
    expected = torch.nn.utils.parameters_to_vector(t.parameters()).detach().numpy()
    got = parameters_to_vector(p for p in sps)  # generators work, as in torch
    assert got.shape == (26,)
    np.testing.assert_array_equal(np.asarray(got), expected)


def test_vector_to_parameters_matches_torch():
    t, sps = _pair()
    vec = np.random.default_rng(0).standard_normal(27).astype(np.float32)  # tail ignored
    torch.nn.utils.vector_to_parameters(torch.from_numpy(vec), t.parameters())
    vector_to_parameters(jnp.asarray(vec), sps)
    for tp, sp in zip(t.parameters(), sps, strict=True):
        assert sp.shape == tuple(tp.shape)
        np.testing.assert_array_equal(np.asarray(sp.data), tp.detach().numpy())


def test_round_trip_and_dtype_follows_vec():
    _, sps = _pair()
    vec = parameters_to_vector(sps)
    vector_to_parameters(vec.astype(jnp.bfloat16), sps)
    assert all(p.dtype == jnp.bfloat16 for p in sps)  # torch also takes vec's dtype
    np.testing.assert_allclose(
        np.asarray(parameters_to_vector(sps).astype(jnp.float32)),
        np.asarray(vec.astype(jnp.bfloat16).astype(jnp.float32)),
    )


def test_single_parameter():
    p = nn.Parameter(jnp.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(np.asarray(parameters_to_vector(p)), np.arange(6.0))
    vector_to_parameters(jnp.zeros(6), p)
    assert p.shape == (2, 3) and float(p.sum()) == 0.0


def test_works_under_jit():
    layer = nn.Linear(3, 2)
    x = jnp.ones((4, 3))

    @jax.jit
    def forward_with(vec):
        old = [p.data for p in layer.parameters()]
        vector_to_parameters(vec, layer.parameters())
        out = layer(x)
        round_trip = parameters_to_vector(layer.parameters())
        for p, d in zip(layer.parameters(), old, strict=True):
            p.data = d  # leave no tracer behind
        return out, round_trip

    vec = jnp.arange(8.0)
    out, round_trip = forward_with(vec)
    np.testing.assert_array_equal(np.asarray(round_trip), np.arange(8.0))
    w, b = np.arange(6.0).reshape(2, 3), np.arange(6.0, 8.0)
    np.testing.assert_allclose(np.asarray(out), np.ones((4, 3)) @ w.T + b, rtol=1e-6)


def test_errors():
    _, sps = _pair()
    with pytest.raises(TypeError, match=r"jax\.Array"):
        vector_to_parameters([0.0] * 26, sps)
    with pytest.raises(RuntimeError, match="1-D"):
        vector_to_parameters(jnp.zeros((2, 13)), sps)
    with pytest.raises(RuntimeError, match="25 elements but the parameters hold 26"):
        vector_to_parameters(jnp.zeros(25), sps)
    with pytest.raises(TypeError, match="Parameter"):
        parameters_to_vector([jnp.zeros(3)])
    with pytest.raises(RuntimeError, match="no parameters"):
        parameters_to_vector([])
