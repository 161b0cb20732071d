"""spx.backward / spx.grad / spx.value_and_grad against torch autograd."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from tests._torch_utils import assert_grads_match, assert_params_match, copy_torch_weights

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


def _round_function(lib):
    """round() whose backward passes 3x the gradient (JAX's own derivative of round is 0),
    as an autograd.Function of ``lib`` (spx or torch)."""

    class _Round(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.round()

        @staticmethod
        def backward(ctx, g):
            return g * 3

    return _Round


_ROUND = {lib: _round_function(lib) for lib in (spx, torch)}


def _detached(lib, w):
    return (w * w.detach()).sum()


def _under_no_grad(lib, w):
    with lib.no_grad():
        c = w * 2 + w.sin()
    return (w * c).sum()


def _custom_function(lib, w):
    fn = _ROUND[lib]
    return (fn.apply(w * 1.3) * w).sum()


def _grad_mode_seen(lib, w):
    return w.sum() * float(lib.is_grad_enabled())


def _data_write(lib, w):
    y = w * 2
    y.data = y.data.round()  # the straight-through estimator: round forward, identity backward
    return (y * w).sum()


@pytest.mark.parametrize(
    "loss_fn", [_detached, _under_no_grad, _custom_function, _grad_mode_seen, _data_write]
)
@pytest.mark.parametrize("how", ["backward", "value_and_grad", "compiled backward"])
def test_functional_gradients_see_what_loss_backward_sees(loss_fn, how):
    # detach(), no_grad, autograd.Function's backward, grad mode and .data writes inside the
    # differentiated function shape the gradient as in torch's loss.backward(): JAX must not
    # differentiate through them (it did, silently: w * w.detach() gave 2w).
    w0 = np.array([1.0, 2.0, -0.7], np.float32)
    tw = torch.tensor(w0, requires_grad=True)
    loss_fn(torch, tw).backward()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(spx.tensor(w0))

    model = M()
    if how == "backward":
        spx.backward(lambda m: loss_fn(spx, m.w), model)
        got = model.w.grad
    elif how == "value_and_grad":
        _, g = spx.value_and_grad(lambda m: loss_fn(spx, m.w))(model)
        got = g.w
    else:
        step = spx.compile(lambda m: spx.backward(lambda m: loss_fn(spx, m.w), m))
        step(model)
        got = model.w.grad
    np.testing.assert_allclose(np.asarray(got.detach()), tw.grad.numpy(), rtol=1e-6)


def test_functional_gradients_still_allow_jnp_inside():
    # JAX differentiates fn, so raw jnp calls on parameters keep their gradient there.
    w0 = np.array([0.3, -1.2], np.float32)
    model = nn.Linear(2, 1)
    model.weight.data = spx.tensor(w0[None])
    spx.backward(lambda m: jnp.sin(m.weight).sum(), model)
    np.testing.assert_allclose(np.asarray(model.weight.grad), np.cos(w0)[None], rtol=1e-6)


def _write_then_loss(lib, m, x):
    # Writes to parameters inside the loss function: torch keeps them after backward().
    with lib.no_grad():
        m[2].bias.mul_(2)  # in place
    m[0].weight.data = m[0].weight.data * 0.5  # through .data
    return (m(x) ** 2).sum()


@pytest.mark.parametrize("compiled", [False, True])
def test_backward_keeps_parameter_writes_made_inside_fn(compiled):
    t, s = _mlps()
    x, _ = _data()
    _write_then_loss(torch, t, torch.from_numpy(x)).backward()

    def step(m, x):
        return spx.backward(lambda m: _write_then_loss(spx, m, x), m)

    (spx.compile(step) if compiled else step)(s, spx.from_numpy(x))
    assert_params_match(t, s, rtol=1e-6, atol=1e-7)
    assert_grads_match(t, s)


@pytest.mark.parametrize("compiled", [False, True])
def test_backward_runs_the_parameters_hooks_as_torch(compiled):
    # A hook on a parameter sees each backward's gradient and may replace it before it is
    # added to .grad, in torch's loss.backward() and here alike.
    seen = {"torch": [], "spx": []}
    t, s = _mlps()
    x, y = _data()
    t[0].weight.register_hook(lambda g: seen["torch"].append(g.shape) or g * 2)
    s[0].weight.register_hook(lambda g: seen["spx"].append(g.shape) or g * 2)

    def step(m):
        return spx.backward(lambda m: ((m(spx.tensor(x)) - spx.tensor(y)) ** 2).mean(), m)

    if compiled:
        step = spx.compile(step)
    for _ in range(2):
        ((t(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean().backward()
        step(s)
    assert_grads_match(t, s)
    # Inside spx.compile the hook runs while the step is traced, as documented.
    assert len(seen["torch"]) == 2 and (
        len(seen["spx"]) >= 1 if compiled else len(seen["spx"]) == 2
    )


def test_backward_refuses_module_backward_hooks_it_would_skip():
    _, s = _mlps()
    calls = []
    s[0].register_full_backward_hook(lambda mod, gi, go: calls.append(1))
    x, _ = _data()
    with pytest.raises(RuntimeError, match=r"register_full_backward_hook.*loss.backward\(\)"):
        spx.backward(lambda m: m(spx.tensor(x)).sum(), s)
    # The way that works: torch's loss.backward() runs it.
    s(spx.tensor(x)).sum().backward()
    assert calls == [1]


def _first_order_maml(lib, m, x, create_graph):
    (g,) = lib.autograd.grad((m(x) ** 2).mean(), [m.weight], create_graph=create_graph)
    return ((x @ (m.weight - 0.1 * g).T + m.bias) ** 2).mean()


@pytest.mark.parametrize("create_graph", [False, True])
def test_autograd_grad_inside_backward_is_a_constant_unless_create_graph(create_graph):
    # torch's autograd.grad without create_graph returns constants (first-order MAML); with
    # create_graph the second-order terms flow. JAX would differentiate through either.
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    torch.manual_seed(0)
    t = torch.nn.Linear(4, 1)
    s = nn.Linear(4, 1)
    copy_torch_weights(t, s)
    _first_order_maml(torch, t, torch.from_numpy(x), create_graph).backward()
    spx.backward(lambda m: _first_order_maml(spx, m, spx.tensor(x), create_graph), s)
    _, g = spx.value_and_grad(lambda m: _first_order_maml(spx, m, spx.tensor(x), create_graph))(s)
    np.testing.assert_allclose(np.asarray(s.weight.grad), t.weight.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(g.weight.detach()), t.weight.grad.numpy(), rtol=1e-5)


def test_backward_refuses_retain_grad_it_would_skip_and_runs_post_accumulate_hooks():
    _, s = _mlps()
    x, _ = _data()

    def retaining(m):
        h = m(spx.tensor(x))
        h.retain_grad()
        return h.sum()

    with pytest.raises(RuntimeError, match=r"retain_grad\(\).*loss.backward\(\)"):
        spx.backward(retaining, s)
    seen = []
    s[0].bias.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    spx.backward(lambda m: m(spx.tensor(x)).sum(), s)
    assert seen == [s[0].bias.grad.tolist()]


@pytest.mark.parametrize("zero", [False, True])
@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("form", ["loss.backward", "spx.backward"])
def test_grads_that_view_a_flat_buffer_are_added_into_it_as_torch(form, compiled, zero):
    # p.grad set to views of one flat buffer (manual gradient bucketing): torch's backward adds
    # into .grad in place, so the buffer holds the sums; spx replaced the views' values only.
    pair = dict(zip((torch, spx), _mlps(), strict=True))

    def run(lib):
        model = pair[lib]
        flat = lib.zeros(sum(p.numel() for p in model.parameters()))
        at = 0
        for p in model.parameters():
            p.grad = flat[at : at + p.numel()].view(p.shape)
            at += p.numel()
        opt = lib.optim.SGD(model.parameters(), lr=0.1)
        x, y = (lib.tensor(a) for a in _data())

        def step(x, y):
            if zero:  # zero_() keeps the views: written into the buffer too
                opt.zero_grad(set_to_none=False)
            loss_of = lambda m: ((m(x) - y) ** 2).mean()  # noqa: E731
            if lib is spx and form == "spx.backward":
                spx.backward(loss_of, model)
            else:
                loss_of(model).backward()
            opt.step()

        if lib is spx and compiled:
            step = spx.compile(step)
        for _ in range(2):
            step(x, y)
        return flat.detach().numpy(), [p.detach().numpy() for p in model.parameters()]

    (t_flat, t_params), (s_flat, s_params) = run(torch), run(spx)
    np.testing.assert_allclose(s_flat, t_flat, rtol=1e-5, atol=1e-7)
    for sp, tp in zip(s_params, t_params, strict=True):
        np.testing.assert_allclose(sp, tp, rtol=1e-5, atol=1e-7)
