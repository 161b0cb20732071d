"""parameters_to_vector / vector_to_parameters against torch.nn.utils."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.nn.utils import parameters_to_vector, vector_to_parameters
from tests.nn._parity import host

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
    t_vec = torch.nn.utils.parameters_to_vector(t.parameters())
    got = parameters_to_vector(p for p in sps)  # generators work, as in torch
    assert isinstance(got, spx.Tensor) and got.shape == (26,)
    np.testing.assert_array_equal(host(got), t_vec.detach().numpy())
    # Differentiable, as torch's: a loss of the vector backpropagates into every parameter.
    w = np.linspace(-1, 1, 26, dtype=np.float32)
    (t_vec * torch.from_numpy(w)).pow(2).sum().backward()
    assert got.requires_grad
    (got * spx.tensor(w)).pow(2).sum().backward()
    for tp, sp in zip(t.parameters(), sps, strict=True):
        np.testing.assert_allclose(sp.grad.numpy(), tp.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_vector_to_parameters_matches_torch():
    t, sps = _pair()
    vec = np.random.default_rng(0).standard_normal(27).astype(np.float32)  # tail ignored
    torch.nn.utils.vector_to_parameters(torch.from_numpy(vec), t.parameters())
    aliases = [sp.detach() for sp in sps]
    vector_to_parameters(jnp.asarray(vec), sps)
    for tp, sp, alias in zip(t.parameters(), sps, aliases, strict=True):
        assert sp.shape == tuple(tp.shape) and sp.requires_grad and sp.is_leaf
        np.testing.assert_array_equal(np.asarray(sp.data), tp.detach().numpy())
        np.testing.assert_array_equal(alias.numpy(), tp.detach().numpy())  # written in place


def test_round_trip_and_dtype_follows_vec():
    _, sps = _pair()
    with spx.no_grad():
        vec = parameters_to_vector(sps)
        vector_to_parameters(vec.to(spx.bfloat16), sps)
        assert all(p.dtype == jnp.bfloat16 for p in sps)  # torch also takes vec's dtype
        np.testing.assert_allclose(
            parameters_to_vector(sps).float().numpy(), vec.to(spx.bfloat16).float().numpy()
        )


def test_single_parameter():
    p = nn.Parameter(jnp.arange(6.0).reshape(2, 3))
    with spx.no_grad():
        np.testing.assert_array_equal(parameters_to_vector(p).numpy(), np.arange(6.0))
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
