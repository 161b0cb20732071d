"""Flatten / Unflatten against torch.nn: shapes, values, grads, repr and errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn

torch = pytest.importorskip("torch")

X = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)


def _compare(t_layer, s_layer, x_np):
    assert repr(s_layer) == repr(t_layer)
    yt = t_layer(torch.tensor(x_np))
    y = s_layer(jnp.asarray(x_np))
    assert isinstance(y, spx.Tensor) and y.shape == tuple(yt.shape)
    np.testing.assert_array_equal(y.numpy(), yt.numpy())
    cot = np.random.default_rng(0).standard_normal(y.shape).astype(np.float32)
    g = jax.jit(jax.grad(lambda x: (jnp.asarray(s_layer(x)) * cot).sum()))(jnp.asarray(x_np))
    np.testing.assert_array_equal(np.asarray(g), cot.reshape(x_np.shape))
    # torch flow: a Tensor input that requires grad; the output is a view of it, as in torch.
    x = spx.tensor(x_np, requires_grad=True)
    (s_layer(x) * spx.tensor(cot)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), cot.reshape(x_np.shape))
    base = spx.tensor(x_np)
    view = s_layer(base)
    view.zero_()
    np.testing.assert_array_equal(base.numpy(), np.zeros_like(x_np))


@pytest.mark.parametrize(
    ("args", "x_shape"),
    [((), (2, 3, 4, 5)), ((0,), (2, 3, 4, 5)), ((1, 2), (2, 3, 4, 5)), ((-3, -2), (2, 3, 4, 5)),
     ((2, 2), (2, 3, 4, 5)), ((0, -1), (2, 3)), ((), (2, 1)), ((0,), ())],
)  # fmt: skip
def test_flatten_matches_torch(args, x_shape):
    x_np = np.arange(int(np.prod(x_shape)), dtype=np.float32).reshape(x_shape)
    if x_shape == ():
        x_np = np.asarray(3.0, np.float32)  # 0-d input becomes 1-d, as in torch
    _compare(torch.nn.Flatten(*args), nn.Flatten(*args), x_np)


@pytest.mark.parametrize(
    ("args", "x_shape"),
    [((1, (3, 1)), (2, 3, 4)), ((-1, (2, 2)), (2, 3, 4)), ((2, [2, -1]), (2, 3, 4)),
     ((0, (1, 2)), (2, 3)), ((-2, (-1, 1, 3)), (2, 3, 4))],
)  # fmt: skip
def test_unflatten_matches_torch(args, x_shape):
    x_np = np.arange(int(np.prod(x_shape)), dtype=np.float32).reshape(x_shape)
    _compare(torch.nn.Unflatten(*args), nn.Unflatten(*args), x_np)


def test_flatten_unflatten_round_trip_in_a_sequential():
    model = nn.Sequential(nn.Flatten(), nn.Unflatten(1, (3, 4, 5)))
    np.testing.assert_array_equal(model(jnp.asarray(X)).numpy(), X)
    assert list(model.state_dict()) == []


def test_flatten_errors():
    with pytest.raises(IndexError):
        torch.nn.Flatten(start_dim=2)(torch.ones(3, 4))
    with pytest.raises(IndexError, match=r"range of \[-2, 1\], but got 2"):
        nn.Flatten(start_dim=2)(jnp.ones((3, 4)))
    with pytest.raises(ValueError, match="cannot come after"):
        nn.Flatten(2, 1)
    with pytest.raises(ValueError, match="comes after"):
        nn.Flatten(-1, 0)(jnp.ones((2, 3)))
    with pytest.raises(TypeError, match="start_dim"):
        nn.Flatten(1.0)


def test_unflatten_errors():
    for bad in ((2, 2.0), 4, "24"):
        with pytest.raises(TypeError):
            torch.nn.Unflatten(1, bad)
        with pytest.raises(TypeError, match="unflattened_size"):
            nn.Unflatten(1, bad)
    with pytest.raises(ValueError, match=r"don't multiply up to the size of dim 1 \(3\)"):
        nn.Unflatten(1, (2, 2))(jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="at most one -1"):
        nn.Unflatten(1, (-1, -1))
    with pytest.raises(ValueError, match="can't be inferred"):
        nn.Unflatten(1, (-1, 2))(jnp.ones((2, 3)))
    with pytest.raises(IndexError):
        nn.Unflatten(3, (1, 1))(jnp.ones((2, 3)))
