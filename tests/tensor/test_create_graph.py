"""create_graph=True against torch: second derivatives, Hessian-vector products, a gradient's
norm differentiated after backward(create_graph=True), accumulation of recorded gradients, and
a WGAN-GP critic trained with a gradient penalty, eagerly and inside spx.compile."""

import numpy as np
import pytest

import spx
from spx._tensor import program
from tests.tensor._parity import assert_same

torch = pytest.importorskip("torch")


def _both(fn):
    got, want = fn(spx), fn(torch)
    assert_same(got, want, rtol=1e-5, atol=1e-6)
    return got


def test_second_derivative_and_hessian_vector_product():
    def fn(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (g,) = lib.autograd.grad((x**3).sum(), x, create_graph=True)
        assert g.requires_grad
        (h,) = lib.autograd.grad(g.sum(), x)
        w = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        (gw,) = lib.autograd.grad((w.sin() * w.exp()).sum(), w, create_graph=True)
        (hv,) = lib.autograd.grad((gw * lib.tensor([1.0, 0.0, 2.0])).sum(), w)
        return g.detach(), h, hv

    _both(fn)


def test_backward_create_graph_then_the_gradient_norm_backward():
    def fn(lib):
        w = lib.tensor([[0.1, -0.2], [0.05, 0.3]], requires_grad=True)
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
        ((x @ w).tanh() ** 2).sum().backward(create_graph=True)
        first = w.grad.detach().clone()
        assert w.grad.requires_grad
        penalty = w.grad.pow(2).sum()
        w.grad = None
        penalty.backward()
        return first, w.grad

    _both(fn)


def test_recorded_gradients_accumulate_out_of_place():
    def fn(lib):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        (w**2).sum().backward(create_graph=True)
        old = w.grad
        (w**3).sum().backward(create_graph=True)
        assert w.grad is not old and w.grad.requires_grad
        (g2,) = lib.autograd.grad(w.grad.sum(), w)
        return old.detach(), w.grad.detach(), g2

    _both(fn)


def _critic(lib):
    lib.manual_seed(0)
    d = lib.nn.Sequential(lib.nn.Linear(4, 16), lib.nn.Tanh(), lib.nn.Linear(16, 1))
    with lib.no_grad():
        for i, p in enumerate(d.parameters()):
            values = np.linspace(-0.5, 0.5, p.numel()).reshape(tuple(p.shape)) * (i + 1)
            p.copy_(lib.tensor(values.astype(np.float32)))
    return d, lib.optim.Adam(d.parameters(), lr=1e-2)


def _wgan_gp_step(lib, critic, opt, real, fake, alpha):
    opt.zero_grad()
    interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    d_out = critic(interp)
    grads = lib.autograd.grad(
        outputs=d_out, inputs=interp, grad_outputs=lib.ones_like(d_out), create_graph=True,
        retain_graph=True,
    )[0]  # fmt: skip
    penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean()
    loss = critic(fake).mean() - critic(real).mean() + 10 * penalty
    loss.backward()
    opt.step()
    return loss


def test_wgan_gp_critic_training_matches_torch_eager_and_compiled():
    rng = np.random.default_rng(0)
    batches = [
        (rng.standard_normal((8, 4)), rng.standard_normal((8, 4)), rng.random((8, 1)))
        for _ in range(5)
    ]
    tc, topt = _critic(torch)
    ec, eopt = _critic(spx)
    cc, copt = _critic(spx)
    compiled = spx.compile(lambda c, o, r, f, a: _wgan_gp_step(spx, c, o, r, f, a))
    for i, batch in enumerate(batches):
        r, f, a = (b.astype(np.float32) for b in batch)
        want = _wgan_gp_step(torch, tc, topt, *(torch.tensor(v) for v in (r, f, a))).item()
        before = len(program._PROGRAMS)
        eager = _wgan_gp_step(spx, ec, eopt, *(spx.tensor(v) for v in (r, f, a))).item()
        if i > 0:  # the double backward compiles once, like any backward
            assert len(program._PROGRAMS) == before
        comp = compiled(cc, copt, *(spx.tensor(v) for v in (r, f, a))).item()
        np.testing.assert_allclose([eager, comp], [want, want], rtol=1e-5)
    for p, q, t in zip(ec.parameters(), cc.parameters(), tc.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(q.detach().numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-6)


def test_create_graph_with_hooks_or_retained_tensors_raises():
    w = spx.tensor([1.0, 2.0], requires_grad=True)
    y = w * 2
    handle = y.register_hook(lambda g: g)
    with pytest.raises(NotImplementedError, match="hooks"):
        spx.autograd.grad((y**2).sum(), w, create_graph=True)
    handle.remove()
    v = spx.tensor([1.0, 2.0], requires_grad=True)
    u = v * 3
    u.retain_grad()
    with pytest.raises(NotImplementedError, match="retain_grad"):
        (u**2).sum().backward(create_graph=True)


def test_leaves_made_from_pending_results_are_differentiated_as_leaves():
    # n = a.detach().requires_grad_() while a is not computed yet: n's value comes from the
    # same program as a's history (the program failed with None values before).
    def fn(lib):
        loc = lib.tensor([0.3, -1.0], requires_grad=True)
        scale = lib.tensor([1.5, 0.7], requires_grad=True)
        a = loc / scale.pow(2)
        n = a.detach().requires_grad_()
        (n * n).sum().backward(retain_graph=True)
        first = n.grad.clone()
        n.grad = None
        (g,) = lib.autograd.grad((n**3).sum(), [n], create_graph=True)
        ((n * g).sum() + (a * 2).sum()).backward()
        return first, n.grad, loc.grad, scale.grad

    _both(fn)


def test_leaves_off_the_second_order_path_keep_grad_none():
    # The penalty's graph reaches a and b (and x) but not c: torch leaves c.grad None, and so
    # an optimizer with weight decay leaves c alone (a zero .grad would decay it).
    def fn(lib):
        a = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
        b = lib.nn.Parameter(lib.tensor([3.0, 4.0]))
        c = lib.nn.Parameter(lib.tensor([0.5, 0.5]))
        x = lib.tensor([1.0, -1.0], requires_grad=True)
        y = (a * x**2).sum() + (b * x).sum() + c.sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (g**2).sum().backward(retain_graph=True)
        assert c.grad is None
        unused = lib.autograd.grad((g**3).sum(), [a, c], allow_unused=True, retain_graph=True)
        assert unused[1] is None
        with pytest.raises(RuntimeError, match="not have been used in the graph"):
            lib.autograd.grad((g**3).sum(), c)
        lib.optim.SGD([a, b, c], lr=0.1, weight_decay=0.5).step()
        return a.grad, b.grad, x.grad, unused[0], a.detach(), c.detach()

    _both(fn)


def test_the_recorded_grad_differentiated_into_its_own_leaf():
    # x.grad (recorded by backward(create_graph=True)) is itself differentiated, and the new
    # gradient is added to it: the .grad accumulated into is computed in the same backward.
    def fn(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        (x * x * x).sum().backward(create_graph=True)
        x.grad.sum().backward()
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        (w * w).sum().backward(create_graph=True)
        (w * w.sin()).sum().backward(create_graph=True)
        w.grad.pow(2).sum().backward()
        return x.grad.detach(), w.grad.detach()

    _both(fn)
