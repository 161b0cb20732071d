"""Parameter / UninitializedParameter: tensor behaviour, grads, flags, pytree, lazy errors."""

import copy
import operator

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from tests.nn._parity import host

torch = pytest.importorskip("torch")

W = np.arange(6, dtype=np.float32).reshape(2, 3) / 7 + 0.5


def _pair():
    return nn.Parameter(jnp.asarray(W)), torch.nn.Parameter(torch.tensor(W))


def _close(a, b):
    np.testing.assert_allclose(host(a), b.detach().numpy(), rtol=1e-6, atol=1e-6)


def _same_grad(res, tres, p, tp):
    """``res`` requires grad like torch's and backpropagates the same ``.grad`` into ``p``."""
    assert isinstance(res, spx.Tensor) and res.requires_grad is tres.requires_grad
    p.grad, tp.grad = None, None
    res.sum().backward()
    tres.sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_matmul_both_sides_and_views_match_torch():
    p, tp = _pair()
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2)
    y = np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3)
    for res, tres in (
        (spx.tensor(x) @ p, torch.tensor(x) @ tp),
        (p @ jnp.asarray(y), tp @ torch.tensor(y)),
        (p.T, tp.T),
        (p.mT, tp.mT),
        (p[None], tp[None]),
        (p[1, 1:], tp[1, 1:]),
    ):
        _close(res, tres)
        _same_grad(res, tres, p, tp)
    assert p[None].shape == (1, 2, 3)
    # A raw JAX op on a parameter would drop its gradient: it raises, naming the fix.
    with pytest.raises(RuntimeError, match="requires grad"):
        jnp.asarray(x) @ p


@pytest.mark.parametrize(
    "op",
    [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow],
    ids=["add", "sub", "mul", "truediv", "pow"],
)
def test_arithmetic_both_sides(op):
    p, tp = _pair()
    other = np.full((2, 3), 1.5, np.float32)
    for a, ta in ((p, tp), (2.0, 2.0), (spx.tensor(other), torch.tensor(other))):
        for b, tb in ((p, tp), (3.0, 3.0), (spx.tensor(other), torch.tensor(other))):
            if a is not p and b is not p:
                continue
            res, tres = op(a, b), op(ta, tb)
            _close(res, tres)
            _same_grad(res, tres, p, tp)
    # A jax array on the right is an input like any other.
    _close(op(p, jnp.asarray(other)), op(tp, torch.tensor(other)))


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
    p, tp = _pair()
    # As torch: a parameter that requires grad does not silently leave autograd.
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(p)
    with pytest.raises(RuntimeError, match="requires grad"):
        tp.numpy()
    with pytest.raises(RuntimeError, match="requires grad"):
        jnp.asarray(p)  # (jnp.sin(p) does not raise yet: tests/nn/test_tensor_gaps.py)
    a = np.asarray(p.detach())
    assert isinstance(a, np.ndarray) and a.dtype == np.float32
    np.testing.assert_array_equal(a, W)
    assert np.asarray(p.detach(), dtype=np.float64).dtype == np.float64
    j = jnp.asarray(p.detach())
    assert isinstance(j, jax.Array)
    np.testing.assert_array_equal(np.asarray(j), W)
    np.testing.assert_array_equal(p.detach().numpy(), W)
    np.testing.assert_allclose(np.asarray(jnp.sin(p.detach())), np.sin(W), rtol=1e-6)
    frozen = nn.Parameter(jnp.asarray(W), requires_grad=False)
    np.testing.assert_array_equal(np.asarray(frozen), W)
    np.testing.assert_array_equal(frozen.numpy(), W)


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
    assert isinstance(p.grad, spx.Tensor) and p.grad.shape == (2, 3)
    (p * 2).sum().backward()  # accumulates into the existing .grad, as torch
    np.testing.assert_array_equal(p.grad.numpy(), 3.0)
    d = p.detach()
    assert isinstance(d, spx.Tensor) and not isinstance(d, nn.Parameter)
    assert not d.requires_grad and d.is_leaf
    assert p.requires_grad_(False) is p
    assert p.requires_grad is False
    assert nn.Parameter(jnp.zeros(2), requires_grad=False).requires_grad is False


def test_data_is_replaceable_and_validated():
    p, _ = _pair()
    p.data = np.zeros((2, 3), np.float32)
    assert isinstance(p.data, spx.Tensor) and not isinstance(p.data, nn.Parameter)
    assert not p.data.requires_grad and p.requires_grad
    np.testing.assert_array_equal(p.data.numpy(), 0)
    p.data = nn.Parameter(jnp.ones(4))  # a Parameter's value is taken, not the object
    assert type(p.data) is spx.Tensor and p.shape == (4,)
    p.data.fill_(2.0)  # .data shares the parameter's storage, as in torch
    np.testing.assert_array_equal(p.detach().numpy(), 2.0)
    with pytest.raises(TypeError, match=r"Parameter\.data"):
        p.data = [1.0, 2.0]


def test_numpy_data_is_copied_not_aliased():
    source = torch.zeros(64).numpy()  # torch's buffers are aligned: the zero-copy case
    p = nn.Parameter(source)
    p2 = nn.Parameter(jnp.zeros(1))
    p2.data = source
    source += 1
    assert not p.detach().numpy().any() and not p2.detach().numpy().any()


def test_non_array_data_raises_type_error_naming_the_fix():
    with pytest.raises(TypeError, match=r"list.*spx\.tensor"):
        nn.Parameter([1, 2])
    with pytest.raises(TypeError, match="float"):
        nn.Parameter(3.0)
    assert isinstance(nn.Parameter(np.ones(3)).data, spx.Tensor)  # numpy accepted
    empty = nn.Parameter()
    assert empty.shape == tuple(torch.nn.Parameter().shape) == (0,)


def test_parameter_is_a_pytree_with_one_leaf():
    p, _ = _pair()
    p.requires_grad_(False)
    leaves = jax.tree.leaves(p)
    assert len(leaves) == 1 and isinstance(leaves[0], jax.Array)
    np.testing.assert_array_equal(np.asarray(leaves[0]), W)
    doubled = jax.tree.map(lambda x: x * 2, p)
    assert isinstance(doubled, nn.Parameter) and doubled is not p
    assert doubled.requires_grad is False
    np.testing.assert_allclose(np.asarray(doubled), 2 * W)
    g = jax.grad(lambda q: jnp.asarray((q * q).sum()))(p)
    assert isinstance(g, nn.Parameter)
    np.testing.assert_allclose(np.asarray(g.data), 2 * W, rtol=1e-6)
    out = jax.jit(lambda q, x: x @ q)(p, jnp.ones((1, 2)))
    np.testing.assert_allclose(np.asarray(out), W.sum(0, keepdims=True), rtol=1e-6)


def test_deepcopy_is_independent():
    p, _ = _pair()
    p.grad = jnp.ones((2, 3))
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q is not p and q.requires_grad
    np.testing.assert_array_equal(q.detach().numpy(), W)
    np.testing.assert_array_equal(q.grad.numpy(), 1.0)
    q.data = jnp.zeros((2, 3))
    with spx.no_grad():
        q.add_(1.0)
    np.testing.assert_array_equal(p.detach().numpy(), W)


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
    assert isinstance(model.bias.grad, spx.Tensor) and model.bias.grad.shape == (2,)


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
