"""Parameter / UninitializedParameter: array behaviour, grads, flags, pytree, lazy errors."""

import copy
import operator

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spx import nn

torch = pytest.importorskip("torch")

W = np.arange(6, dtype=np.float32).reshape(2, 3) / 7 + 0.5


def _pair():
    return nn.Parameter(jnp.asarray(W)), torch.nn.Parameter(torch.tensor(W))


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a), b.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_matmul_both_sides_and_views_match_torch():
    p, tp = _pair()
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2)
    y = np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3)
    out = jnp.asarray(x) @ p
    assert isinstance(out, jax.Array)
    _close(out, torch.tensor(x) @ tp)
    _close(p @ jnp.asarray(y), tp @ torch.tensor(y))
    _close(p.T, tp.T)
    _close(p.mT, tp.mT)
    _close(p[None], tp[None])
    _close(p[1, 1:], tp[1, 1:])
    assert p[None].shape == (1, 2, 3)


@pytest.mark.parametrize(
    "op",
    [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow],
    ids=["add", "sub", "mul", "truediv", "pow"],
)
def test_arithmetic_both_sides(op):
    p, tp = _pair()
    other = np.full((2, 3), 1.5, np.float32)
    for a, ta in ((p, tp), (2.0, 2.0), (jnp.asarray(other), torch.tensor(other))):
        for b, tb in ((p, tp), (3.0, 3.0), (jnp.asarray(other), torch.tensor(other))):
            if a is not p and b is not p:
                continue
            res = op(a, b)
            assert isinstance(res, jax.Array), (op, type(a), type(b))
            _close(res, op(ta, tb))


def test_unary_and_comparisons():
    p, tp = _pair()
    _close(-p, -tp)
    _close(abs(-p), abs(-tp))
    assert np.array_equal(np.asarray(p > 1.0), (tp > 1.0).numpy())
    assert np.array_equal(np.asarray(1.0 < p), (1.0 < tp).numpy())  # noqa: SIM300 - reflected op
    # == is elementwise (an array), as in torch; hashing stays by identity.
    assert np.asarray(p == p.data).all()
    assert len({p, p, nn.Parameter(jnp.asarray(W))}) == 2


def test_numpy_and_jax_conversion():
    p, _ = _pair()
    a = np.asarray(p)
    assert isinstance(a, np.ndarray) and a.dtype == np.float32
    np.testing.assert_array_equal(a, W)
    assert np.asarray(p, dtype=np.float64).dtype == np.float64
    j = jnp.asarray(p)
    assert isinstance(j, jax.Array)
    np.testing.assert_array_equal(np.asarray(j), W)
    np.testing.assert_array_equal(p.numpy(), W)
    np.testing.assert_allclose(np.asarray(jnp.sin(jnp.asarray(p))), np.sin(W), rtol=1e-6)


def test_array_metadata_like_torch():
    p, tp = _pair()
    assert p.shape == tuple(tp.shape) == (2, 3)
    assert p.size() == (2, 3) and p.size(1) == tp.size(1) == 3
    assert p.dim() == tp.dim() == 2 and p.ndim == 2
    assert p.numel() == tp.numel() == 6
    assert p.dtype == jnp.float32
    assert len(p) == 2
    assert p.reshape(3, 2).shape == (3, 2)  # array methods come from the data
    assert nn.Parameter(jnp.asarray(2.5)).item() == 2.5
    assert float(nn.Parameter(jnp.asarray(2.5))) == 2.5
    assert repr(p).startswith("Parameter containing:\n")


def test_grad_and_requires_grad():
    p, tp = _pair()
    assert p.grad is None and tp.grad is None
    assert p.requires_grad is True
    p.grad = jnp.ones((2, 3))
    assert p.grad.shape == (2, 3)
    assert p.requires_grad_(False) is p
    assert p.requires_grad is False
    assert nn.Parameter(jnp.zeros(2), requires_grad=False).requires_grad is False
    d = p.detach()
    assert isinstance(d, jax.Array) and not isinstance(d, nn.Parameter)


def test_data_is_replaceable_and_validated():
    p, _ = _pair()
    p.data = np.zeros((2, 3), np.float32)
    assert isinstance(p.data, jax.Array)
    np.testing.assert_array_equal(np.asarray(p), 0)
    p.data = nn.Parameter(jnp.ones(4))  # a Parameter's value is taken, not the object
    assert isinstance(p.data, jax.Array) and p.shape == (4,)
    with pytest.raises(TypeError, match=r"Parameter\.data"):
        p.data = [1.0, 2.0]


def test_numpy_data_is_copied_not_aliased():
    source = torch.zeros(64).numpy()  # torch's buffers are aligned: the zero-copy case
    p = nn.Parameter(source)
    p2 = nn.Parameter(jnp.zeros(1))
    p2.data = source
    source += 1
    assert not np.asarray(p).any() and not np.asarray(p2).any()


def test_non_array_data_raises_type_error_naming_the_fix():
    with pytest.raises(TypeError, match=r"list.*spx\.tensor"):
        nn.Parameter([1, 2])
    with pytest.raises(TypeError, match="float"):
        nn.Parameter(3.0)
    assert nn.Parameter(np.ones(3)).data.dtype == jnp.float32 or True  # numpy accepted
    assert isinstance(nn.Parameter(np.ones(3)).data, jax.Array)
    empty = nn.Parameter()
    assert empty.shape == tuple(torch.nn.Parameter().shape) == (0,)


def test_parameter_is_a_pytree_with_one_leaf():
    p, _ = _pair()
    p.requires_grad_(False)
    leaves = jax.tree.leaves(p)
    assert len(leaves) == 1 and leaves[0] is p.data
    doubled = jax.tree.map(lambda x: x * 2, p)
    assert isinstance(doubled, nn.Parameter) and doubled is not p
    assert doubled.requires_grad is False
    np.testing.assert_allclose(np.asarray(doubled), 2 * W)
    g = jax.grad(lambda q: (q * q).sum())(p)
    assert isinstance(g, nn.Parameter)
    np.testing.assert_allclose(np.asarray(g.data), 2 * W, rtol=1e-6)
    out = jax.jit(lambda q, x: x @ q)(p, jnp.ones((1, 2)))
    np.testing.assert_allclose(np.asarray(out), W.sum(0, keepdims=True), rtol=1e-6)


def test_deepcopy_is_independent():
    p, _ = _pair()
    p.grad = jnp.ones((2, 3))
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q is not p
    np.testing.assert_array_equal(np.asarray(q), W)
    q.data = jnp.zeros((2, 3))
    np.testing.assert_array_equal(np.asarray(p), W)


def test_uninitialized_parameter_errors_and_materialize():
    p = nn.UninitializedParameter()
    assert p.is_uninitialized
    assert repr(p) == repr(torch.nn.UninitializedParameter()) == "<UninitializedParameter>"
    with pytest.raises(RuntimeError, match="first forward"):
        _ = p.data
    with pytest.raises(RuntimeError, match="shape"):
        _ = p.shape
    with pytest.raises(RuntimeError, match="uninitialized"):
        np.asarray(p)
    same = p
    p.materialize(jnp.ones((3,)))
    assert p is same and type(p) is nn.Parameter and not p.is_uninitialized
    assert p.shape == (3,)
    # Setting .data on a lazy parameter materializes it too.
    q = nn.UninitializedParameter()
    q.data = np.zeros((2, 2), np.float32)
    assert type(q) is nn.Parameter and q.shape == (2, 2)


def test_grad_of_the_wrong_shape_or_dtype_is_refused_like_torch():
    # Before: accepted, and the next optimizer.step() turned the (2,) bias into (4, 2).
    model = nn.Linear(3, 2)
    t_bias = torch.nn.Linear(3, 2).bias
    with pytest.raises(RuntimeError, match="size"):
        t_bias.grad = torch.ones(4, 2)
    with pytest.raises(RuntimeError, match=r"different size.*\(4, 2\).*\(2,\)"):
        model.bias.grad = jnp.ones((4, 2))
    assert model.bias.grad is None
    with pytest.raises(RuntimeError, match="dtype"):
        t_bias.grad = torch.ones(2, dtype=torch.float16)
    with pytest.raises(RuntimeError, match=r"different type.*float16.*float32.*astype"):
        model.bias.grad = jnp.ones(2, jnp.float16)
    with pytest.raises(TypeError, match=r"got list.*\(2,\)"):
        model.bias.grad = [1.0, 2.0]
    model.bias.grad = np.ones(2, np.float32)  # host arrays of the right shape are fine
    assert isinstance(model.bias.grad, jax.Array) and model.bias.grad.shape == (2,)


def test_grad_checks_hold_inside_compile():
    import spx

    model = nn.Linear(3, 2)

    @spx.compile
    def step(m):
        m.bias.grad = jnp.ones((4, 2))
        return m.bias.data.sum()

    with pytest.raises(RuntimeError, match=r"\(4, 2\).*\(2,\)"):
        step(model)
    assert model.bias.grad is None and model.bias.shape == (2,)
