"""Linear / LazyLinear / Identity / Bilinear against torch.nn: values, grads, init, lazy init."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.nn import functional as F
from tests.nn._parity import check_module, copy_weights

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-5, 1e-6


def _check_parity(t_layer, s_layer, *x_nps):
    """Outputs and grads w.r.t. every input and parameter match torch (both autograd forms)."""
    copy_weights(t_layer, s_layer)
    assert [(k, tuple(v.shape)) for k, v in s_layer.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in t_layer.state_dict().items()
    ]
    check_module(t_layer, s_layer, x_nps, rtol=RTOL, atol=ATOL)


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(bias):
    torch.manual_seed(0)
    t_layer, s_layer = torch.nn.Linear(5, 4, bias=bias), nn.Linear(5, 4, bias=bias)
    assert repr(s_layer) == repr(t_layer)
    _check_parity(t_layer, s_layer, _x(3, 5))
    _check_parity(t_layer, s_layer, _x(2, 3, 5))  # any leading dims
    _check_parity(t_layer, s_layer, _x(5))  # unbatched


def test_linear_default_init_statistics():
    spx.manual_seed(0)
    layer = nn.Linear(256, 128)
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    # kaiming_uniform_(a=sqrt(5)) on (out, in) is U(-1/sqrt(in), 1/sqrt(in)); bias the same.
    bound = 1 / math.sqrt(256)
    assert w.shape == (128, 256) and b.shape == (128,)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.03 * bound
    assert abs(w.mean()) < 0.02 * bound
    t_w = torch.nn.Linear(256, 128).weight.detach().numpy()
    assert abs(w.std() - t_w.std()) < 0.03 * bound
    spx.manual_seed(0)
    again = nn.Linear(256, 128)
    np.testing.assert_array_equal(again.weight.detach().numpy(), w)  # seeded: reproducible
    assert not np.array_equal(nn.Linear(256, 128).weight.detach().numpy(), w)


def test_linear_dtype_and_validation():
    layer = nn.Linear(3, 2, dtype=jnp.bfloat16)
    assert layer.weight.dtype == jnp.bfloat16 and layer.bias.dtype == jnp.bfloat16
    # torch: TypeError for a non-integer size, an error for a negative one.
    for bad, error in ((-1, ValueError), (2.5, TypeError), (True, TypeError), ("3", TypeError)):
        with pytest.raises(error, match=rf"in_features must be .*got .*{bad!r}"):
            nn.Linear(bad, 2)
        with pytest.raises(error, match="out_features"):
            nn.Linear(2, bad)


def test_wrong_input_width_names_both_widths():
    layer = nn.Linear(5, 4)
    with pytest.raises(RuntimeError, match=r"3 features.*in_features=5"):
        layer(jnp.ones((2, 3)))
    with pytest.raises(RuntimeError, match="scalar"):
        layer(jnp.asarray(1.0))


@pytest.mark.parametrize("make", [lambda: nn.Linear(None, 4), lambda: nn.LazyLinear(4)])
def test_deferred_init_materializes_the_same_parameter_objects(make):
    layer = make()
    weight, bias = layer.weight, layer.bias
    params_before = list(layer.parameters())  # e.g. what an optimizer captured
    assert layer.has_uninitialized_params()
    with pytest.raises(RuntimeError, match="first forward"):
        _ = layer.weight.shape
    with pytest.raises(RuntimeError, match="first forward"):
        np.asarray(layer.weight)
    t_sd = torch.nn.LazyLinear(4).state_dict()
    assert list(layer.state_dict()) == list(t_sd) == ["weight", "bias"]
    assert isinstance(layer.state_dict()["weight"], nn.UninitializedParameter)

    y = layer(jnp.ones((2, 5)))
    assert y.shape == (2, 4)
    assert layer.weight is weight and layer.bias is bias
    assert all(a is b for a, b in zip(layer.parameters(), params_before, strict=True))
    assert type(weight) is nn.Parameter and weight.shape == (4, 5) and bias.shape == (4,)
    assert layer.in_features == 5 and not layer.has_uninitialized_params()
    bound = 1 / math.sqrt(5)
    w, b = weight.detach().numpy(), bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert w.std() > 0
    with pytest.raises(RuntimeError, match="in_features=5"):
        layer(jnp.ones((2, 6)))
    torch.manual_seed(0)
    _check_parity(torch.nn.Linear(5, 4), layer, _x(3, 5))


def test_lazy_linear_without_bias():
    layer = nn.LazyLinear(3, bias=False)
    assert layer.bias is None and list(layer.state_dict()) == ["weight"]
    assert layer(jnp.ones((1, 7))).shape == (1, 3)
    assert layer.weight.shape == (3, 7)


def test_lazy_linear_loaded_from_a_checkpoint_runs():
    layer = nn.LazyLinear(3)
    layer.load_state_dict({"weight": np.ones((3, 5), np.float32), "bias": np.zeros(3, np.float32)})
    assert layer.weight.shape == (3, 5)
    assert layer(jnp.ones((2, 5))).shape == (2, 3)


def test_linear_in_jit_and_grad():
    layer = nn.Linear(4, 2)
    x = jnp.ones((3, 4))
    with spx.no_grad():
        eager = layer(x).numpy()
    np.testing.assert_allclose(np.asarray(jax.jit(lambda m, x: m(x))(layer, x)), eager, rtol=1e-6)
    g = jax.grad(lambda m: jnp.asarray(m(x).sum()))(layer)
    assert type(g) is nn.Linear and g.weight.shape == (2, 4)
    np.testing.assert_allclose(g.bias.detach().numpy(), 3.0)
    # torch flow on the same layer.
    layer(x).sum().backward()
    np.testing.assert_allclose(layer.bias.grad.numpy(), 3.0)
    np.testing.assert_allclose(layer.weight.grad.numpy(), g.weight.detach().numpy())


def test_identity_returns_its_input_and_ignores_arguments():
    layer = nn.Identity(54, unused="argument")
    x = jnp.ones((2, 3))
    assert layer(x) is x
    t = spx.ones(2, 3, requires_grad=True)
    assert layer(t) is t
    assert repr(layer) == repr(torch.nn.Identity(54)) == "Identity()"
    assert list(layer.state_dict()) == []


@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_matches_torch(bias):
    torch.manual_seed(0)
    t_layer, s_layer = torch.nn.Bilinear(3, 4, 2, bias=bias), nn.Bilinear(3, 4, 2, bias=bias)
    assert repr(s_layer) == repr(t_layer)
    _check_parity(t_layer, s_layer, _x(5, 3), _x(5, 4, seed=1))
    bound = 1 / math.sqrt(3)
    assert np.abs(nn.Bilinear(3, 4, 2).weight.detach().numpy()).max() <= bound


@pytest.mark.parametrize(
    ("name", "args", "inputs"),
    [
        ("Linear", (3, 2), [(1, 3)]),
        ("Bilinear", (2, 2, 2), [(1, 2), (1, 2)]),
        ("Conv1d", (3, 2, 1), [(1, 3, 4)]),
        ("Embedding", (4, 2), None),
    ],
)
def test_weight_set_to_none_gives_a_clear_type_error_like_torch(name, args, inputs):
    # Before: "'NoneType' object has no attribute 'is_uninitialized'" (or a jnp.array error).
    t_layer, layer = getattr(torch.nn, name)(*args), getattr(nn, name)(*args)
    t_layer.weight = None
    layer.weight = None
    if inputs is None:
        t_in, s_in = [torch.tensor([1])], [jnp.array([1])]
    else:
        t_in = [torch.ones(s) for s in inputs]
        s_in = [jnp.ones(s) for s in inputs]
    with pytest.raises(TypeError):
        t_layer(*t_in)
    with pytest.raises(TypeError, match=rf"{name}\.weight is None.*nn\.Parameter"):
        layer(*s_in)


def test_functional_linear_refuses_a_none_weight_like_torch():
    with pytest.raises(TypeError):
        torch.nn.functional.linear(torch.ones(1, 3), None)
    with pytest.raises(TypeError, match=r"linear\(\): argument 'weight' must be an array"):
        F.linear(jnp.ones((1, 3)), None)
