"""spx.backward / spx.grad / spx.value_and_grad against torch autograd."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from tests._torch_utils import assert_grads_match, copy_torch_weights

torch = pytest.importorskip("torch")


def _mlps():
    t = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    s = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    copy_torch_weights(t, s)
    return t, s


def _data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((5, 4)).astype(np.float32), rng.standard_normal((5, 3)).astype(
        np.float32
    )


def test_backward_fills_grads_like_torch():
    t, s = _mlps()
    x, y = _data()
    tl = ((t(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean()
    tl.backward()
    sl = spx.backward(lambda m: ((m(spx.from_numpy(x)) - spx.from_numpy(y)) ** 2).mean(), s)
    np.testing.assert_allclose(float(sl), tl.item(), rtol=1e-6)
    assert_grads_match(t, s)


def test_backward_accumulates_like_torch():
    t, s = _mlps()
    x, y = _data()
    for _ in range(2):
        ((t(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean().backward()
        spx.backward(lambda m: ((m(spx.from_numpy(x)) - spx.from_numpy(y)) ** 2).mean(), s)
    assert_grads_match(t, s)


def test_loss_backward_fills_and_accumulates_like_torch():
    t, s = _mlps()
    x, y = _data()
    for _ in range(2):
        ((t(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean().backward()
        ((s(spx.from_numpy(x)) - spx.from_numpy(y)) ** 2).mean().backward()
        assert_grads_match(t, s)


def test_backward_skips_frozen_parameters_and_returns_aux():
    _, s = _mlps()
    s[0].weight.requires_grad_(False)
    x, _ = _data()
    loss, out = spx.backward(lambda m: (m(jnp.asarray(x)).sum(), m(jnp.asarray(x))), s)
    assert s[0].weight.grad is None
    assert s[0].bias.grad is not None
    assert out.shape == (5, 3)
    np.testing.assert_allclose(float(loss), float(out.sum()), rtol=1e-6)


def test_backward_rejects_non_scalar_and_no_module():
    _, s = _mlps()
    x, _ = _data()
    with pytest.raises(ValueError, match="scalar loss"):
        spx.backward(lambda m: m(jnp.asarray(x)), s)
    with pytest.raises(ValueError, match="nothing to differentiate"):
        spx.backward(lambda a: a.sum(), jnp.ones(3))


def test_backward_leaves_no_tracers_after_an_error():
    _, s = _mlps()
    before = s[0].weight.detach().numpy().copy()

    def bad(m):
        m(jnp.ones((2, 4)))
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        spx.backward(bad, s)
    assert isinstance(s[0].weight, spx.Tensor)
    assert not isinstance(s[0].weight._data, jax.core.Tracer)  # the raw value is concrete
    np.testing.assert_array_equal(s[0].weight.detach().numpy(), before)


def test_backward_materializes_lazy_linear():
    spx.manual_seed(0)
    model = nn.Sequential(nn.LazyLinear(4), nn.Tanh(), nn.Linear(4, 1))
    w = model[0].weight
    spx.backward(lambda m: m(jnp.ones((3, 5))).sum(), model)
    assert model[0].weight is w and w.shape == (4, 5)
    assert w.grad is not None and w.grad.shape == (4, 5)


def test_value_and_grad_is_module_shaped_and_matches_torch():
    t, s = _mlps()
    x, y = _data()
    ((t(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean().backward()
    _loss, g = spx.value_and_grad(lambda m, x: ((m(x) - spx.from_numpy(y)) ** 2).mean())(
        s, spx.from_numpy(x)
    )
    assert isinstance(g, nn.Sequential)
    for name, p in t.named_parameters():
        np.testing.assert_allclose(
            np.asarray(g.get_parameter(name).data), p.grad.numpy(), rtol=1e-5, atol=1e-6
        )
    # Functional: nothing was written into .grad.
    assert all(p.grad is None for p in s.parameters())
    g_only = spx.grad(lambda m: ((m(spx.from_numpy(x)) - spx.from_numpy(y)) ** 2).mean())(s)
    np.testing.assert_allclose(
        np.asarray(g_only[0].weight.data), np.asarray(g[0].weight.data), rtol=1e-6
    )


def test_value_and_grad_argnums_tuple_and_has_aux():
    _, s = _mlps()
    x, _ = _data()

    def f(m, x):
        out = m(x)
        return out.sum(), out

    (_loss, out), (gm, gx) = spx.value_and_grad(f, argnums=(0, 1), has_aux=True)(s, jnp.asarray(x))
    assert out.shape == (5, 3) and gx.shape == x.shape
    # d sum(W2 tanh(W1 x + b1) + b2) / d b2 = batch size
    np.testing.assert_allclose(np.asarray(gm[2].bias.data), np.full(3, 5.0), rtol=1e-6)
    with pytest.raises(ValueError, match="argnums"):
        spx.value_and_grad(f, argnums=3)(s, jnp.asarray(x))


def test_no_grad_is_a_noop_context():
    with spx.no_grad():
        assert spx.zeros(2).shape == (2,)


def test_value_and_grad_sums_the_gradient_of_tied_parameters():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 3)
            self.b = nn.Linear(3, 3)
            self.b.weight = self.a.weight  # tied, as torch allows

        def forward(self, x):
            return self.b(jnp.tanh(self.a(x))).sum()

    model = Tied()
    t = torch.nn.Module()
    t.a, t.b = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)
    t.b.weight = t.a.weight
    model.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    x = np.ones((2, 3), np.float32)
    t.b(torch.tanh(t.a(torch.from_numpy(x)))).sum().backward()
    _, g = spx.value_and_grad(lambda m: m(jnp.asarray(x)))(model)
    np.testing.assert_allclose(np.asarray(g.a.weight.data), t.a.weight.grad.numpy(), rtol=1e-5)
    assert g.a.weight is g.b.weight
    spx.backward(lambda m: m(jnp.asarray(x)), model)
    np.testing.assert_allclose(np.asarray(model.a.weight.grad), t.a.weight.grad.numpy(), rtol=1e-5)
