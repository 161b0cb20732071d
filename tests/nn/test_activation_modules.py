"""Activation modules against torch.nn: outputs, input (and PReLU weight) grads, repr."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.nn.modules import activation as A  # the extra activations are not in spx.nn's map yet
from tests.nn._parity import check_module

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-5, 1e-6
# Away from the kinks (0, ±lambd, ±3, clip bounds), where a one-ulp difference flips a branch.
X = (np.random.default_rng(0).standard_normal((4, 6)) * 3 + 0.013).astype(np.float32)
COT = 1  # seed of the output weights

CASES = [
    ("ReLU", ()), ("ReLU", (True,)), ("GELU", ()), ("GELU", ("tanh",)), ("SiLU", ()),
    ("Tanh", ()), ("Sigmoid", ()), ("Softmax", (1,)), ("Softmax", (0,)), ("LogSoftmax", (-1,)),
    ("LeakyReLU", ()), ("LeakyReLU", (0.2, True)), ("ELU", ()), ("ELU", (0.5,)),
    ("Softplus", ()), ("Softplus", (2, 3)), ("Mish", ()),
    # extras beyond the core list
    ("Hardtanh", ()), ("Hardtanh", (-2.0, 2.5)), ("ReLU6", ()), ("SELU", ()), ("CELU", (0.7,)),
    ("Hardswish", ()), ("Hardsigmoid", ()), ("Softsign", ()), ("LogSigmoid", ()),
    ("Tanhshrink", ()), ("Softshrink", (0.6,)), ("Hardshrink", ()), ("Threshold", (0.1, -1.0)),
    ("Softmin", (1,)),
]  # fmt: skip


def _spx(name):
    return getattr(nn, name, None) or getattr(A, name)


def _compare(t_layer, s_layer, x_np, cot):
    # torch's inplace=True variants need a non-leaf input.
    return check_module(t_layer, s_layer, [x_np], rtol=RTOL, atol=ATOL, param_atol=1e-5,
                        clone_input=True, cot_seed=cot)  # fmt: skip


@pytest.mark.parametrize(("name", "args"), CASES, ids=lambda v: str(v))
def test_activation_matches_torch(name, args):
    t_layer = getattr(torch.nn, name)(*args)
    s_layer = _spx(name)(*args)
    assert repr(s_layer) == repr(t_layer)
    assert list(s_layer.state_dict()) == list(t_layer.state_dict()) == []
    _compare(t_layer, s_layer, X, COT)


@pytest.mark.parametrize("num_parameters", [1, 6])
def test_prelu_matches_torch_including_weight_grad(num_parameters):
    t_layer = torch.nn.PReLU(num_parameters, init=0.3)
    s_layer = A.PReLU(num_parameters, init=0.3)
    with torch.no_grad():
        t_layer.weight.copy_(torch.linspace(0.1, 0.6, num_parameters))
    s_layer.load_state_dict({k: v.detach().numpy() for k, v in t_layer.state_dict().items()})
    assert repr(s_layer) == repr(t_layer)
    assert list(s_layer.state_dict()) == ["weight"] and s_layer.weight.shape == (num_parameters,)
    _compare(t_layer, s_layer, X, COT)  # the weight's .grad too


def test_glu_halves_the_dim_like_torch():
    t_layer, s_layer = torch.nn.GLU(dim=1), A.GLU(dim=1)
    assert repr(s_layer) == repr(t_layer)
    _compare(t_layer, s_layer, X, COT)


def test_softmax_without_dim_warns_like_torch():
    with pytest.warns(UserWarning, match="Implicit dimension"):
        y = nn.Softmax()(jnp.asarray(X))
    with pytest.warns(UserWarning, match="Implicit dimension"):
        yt = torch.nn.Softmax()(torch.tensor(X))
    np.testing.assert_allclose(y.numpy(), yt.numpy(), rtol=RTOL, atol=ATOL)


def test_constructor_validation():
    with pytest.raises(ValueError, match="approximate"):
        nn.GELU("fast")
    with pytest.raises(TypeError, match="dim"):
        nn.Softmax(dim=1.5)
    with pytest.raises(ValueError, match="max_val"):
        A.Hardtanh(1.0, -1.0)
    with pytest.raises(ValueError, match="num_parameters"):
        A.PReLU(0)


def test_activation_inside_jit_and_a_sequential():
    model = nn.Sequential(nn.ReLU(), nn.GELU(), nn.Softmax(dim=-1))
    out = jax.jit(lambda m, x: m(x))(model, jnp.asarray(X))
    ref = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.GELU(), torch.nn.Softmax(dim=-1))
    np.testing.assert_allclose(np.asarray(out), ref(torch.tensor(X)).numpy(), rtol=RTOL, atol=ATOL)


INPLACE = [
    ("F.relu(x, inplace=True)", lambda m, x: m.nn.functional.relu(x, inplace=True)),
    ("F.relu(x, True)", lambda m, x: m.nn.functional.relu(x, True)),
    ("F.hardtanh(x, -0.5, 0.5, True)", lambda m, x: m.nn.functional.hardtanh(x, -0.5, 0.5, True)),
    ("F.threshold(x, 0, 9, True)", lambda m, x: m.nn.functional.threshold(x, 0.0, 9.0, True)),
    ("ReLU", lambda m, x: m.nn.ReLU(inplace=True)(x)),
    ("ReLU6", lambda m, x: m.nn.ReLU6(inplace=True)(x)),
    ("LeakyReLU", lambda m, x: m.nn.LeakyReLU(0.1, inplace=True)(x)),
    ("ELU", lambda m, x: m.nn.ELU(inplace=True)(x)),
    ("CELU", lambda m, x: m.nn.CELU(inplace=True)(x)),
    ("SELU", lambda m, x: m.nn.SELU(inplace=True)(x)),
    ("SiLU", lambda m, x: m.nn.SiLU(inplace=True)(x)),
    ("Mish", lambda m, x: m.nn.Mish(inplace=True)(x)),
    ("Hardswish", lambda m, x: m.nn.Hardswish(inplace=True)(x)),
    ("Hardsigmoid", lambda m, x: m.nn.Hardsigmoid(inplace=True)(x)),
    ("Hardtanh", lambda m, x: m.nn.Hardtanh(inplace=True)(x)),
    ("Threshold", lambda m, x: m.nn.Threshold(0.5, -3.0, inplace=True)(x)),
    ("RReLU eval", lambda m, x: m.nn.RReLU(inplace=True).eval()(x)),
    ("Dropout eval", lambda m, x: m.nn.Dropout(0.5, inplace=True).eval()(x)),
]


@pytest.mark.parametrize("fn", [c[1] for c in INPLACE], ids=[c[0] for c in INPLACE])
def test_inplace_true_writes_into_the_input_as_torch(fn):
    # torch's inplace=True changes the input tensor (and every view of it) and returns it.
    import torch

    results = []
    for m in (torch, spx):
        base = m.tensor([[-1.0, 2.0, 0.3], [4.0, -5.0, 0.7]])
        row = base[0]
        out = fn(m, row)
        assert out is row
        results.append(base.tolist())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)


def test_inplace_true_on_a_leaf_that_requires_grad_raises_as_torch():
    import torch

    for m in (torch, spx):
        with pytest.raises(RuntimeError):
            m.nn.ReLU(inplace=True)(m.tensor([-1.0, 2.0], requires_grad=True))
        x = m.tensor([-1.0, 2.0], requires_grad=True)
        h = x * 2
        m.nn.ReLU(inplace=True)(h).sum().backward()
        assert x.grad.tolist() == [0.0, 2.0]
