"""Tensor.register_hook against torch: hooks on leaves see each backward's own gradient (not
the accumulated .grad), hooks on results of operations observe or replace the gradient that
flows on to their inputs (nested, chained, on one output of a multi-output op, with
retain_grad, on the loss itself), autograd.grad's captures of hooked inputs, backward(inputs=),
retain_graph, and hooks inside spx.compile."""

import numpy as np
import pytest

import spx
from tests._torch_utils import copy_torch_weights
from tests.tensor._parity import assert_same, data

torch = pytest.importorskip("torch")

W0 = data((3, 2))
X0 = data((4, 3), 1)


def _both(fn):
    """fn(lib) for torch and spx; the results compared."""
    got, want = fn(spx), fn(torch)
    assert_same(got, want, rtol=1e-5, atol=1e-6)
    return got


def _leaves(lib):
    return lib.tensor(W0, requires_grad=True), lib.tensor(X0)


def test_leaf_hook_sees_each_backwards_gradient_not_the_accumulated_grad():
    # spx gave the hook the sum with the old .grad, and added a replaced gradient to itself
    # (330 where torch has 60 below).
    def fn(lib):
        w, x = _leaves(lib)
        seen = []
        w.register_hook(lambda g: seen.append(g.clone()))
        (x @ w).sum().backward()
        (x @ w).tanh().sum().backward()
        v = lib.ones(2, requires_grad=True)
        v.register_hook(lambda g: g * 10)
        (v * 3).sum().backward()
        (v * 3).sum().backward()
        return seen, w.grad, v.grad

    _, _, v_grad = _both(fn)
    assert v_grad.tolist() == [60.0, 60.0]


def test_result_hook_observes_the_gradient_of_an_intermediate():
    # Grad-CAM's way of reading a feature map's gradient.
    def fn(lib):
        lib.manual_seed(0)
        conv = lib.nn.Conv2d(2, 3, 3, padding=1)
        head = lib.nn.Linear(3 * 5 * 5, 4)
        if lib is spx:
            copy_torch_weights(tconv, conv)
            copy_torch_weights(thead, head)
        x = lib.tensor(data((2, 2, 5, 5), 3))
        grads = []
        feats = conv(x).relu()
        feats.register_hook(grads.append)
        score = head(feats.flatten(1))[:, 1].sum()
        score.backward()
        return grads, conv.weight.grad

    torch.manual_seed(0)
    tconv, thead = torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.Linear(75, 4)
    grads, _ = _both(fn)
    assert len(grads) == 1 and isinstance(grads[0], spx.Tensor) and grads[0].shape == (2, 3, 5, 5)


def test_result_hook_replaces_the_gradient_that_flows_on():
    def fn(lib):
        w, x = _leaves(lib)
        h = x @ w
        h.register_hook(lambda g: g.clamp(-0.1, 0.1))
        loss = (h.tanh() ** 2).sum() + h.sum()
        loss.backward()
        return w.grad

    _both(fn)


def test_nested_and_chained_hooks():
    def fn(lib):
        w, x = _leaves(lib)
        y = x @ w
        y.register_hook(lambda g: g * 100)
        z = y.exp()
        z.register_hook(lambda g: g + 1)
        z.register_hook(lambda g: g * 2)  # runs after the first, on its result
        (z.sum() + y.sum()).backward()
        return w.grad

    _both(fn)


def test_hook_on_one_output_of_a_multi_output_op():
    def fn(lib):
        w, x = _leaves(lib)
        a, b = (x @ w).chunk(2, dim=1)
        a.register_hook(lambda g: g * 7)
        (a * 3 + b * 5).sum().backward()
        return w.grad

    _both(fn)


def test_removed_hook_and_observer_returning_none():
    def fn(lib):
        w, x = _leaves(lib)
        y = x @ w
        handle = y.register_hook(lambda g: g * 100)
        seen = []
        y.register_hook(lambda g: seen.append(g.sum().item()))
        handle.remove()
        (y * 3).sum().backward()
        return w.grad, seen

    _both(fn)


def test_retain_grad_sees_the_hooked_gradient():
    def fn(lib):
        w, x = _leaves(lib)
        y = x @ w
        y.retain_grad()
        y.register_hook(lambda g: g * 100)
        (y * 3).sum().backward()
        first = (y.grad.clone(), w.grad.clone())
        u = x @ w
        u.register_hook(lambda g: g * 2)
        u.retain_grad()  # registered after the hook: still sees the hooked gradient
        (u * u).sum().backward()
        return first, u.grad, w.grad

    _both(fn)


def test_hook_on_the_loss():
    def fn(lib):
        w, x = _leaves(lib)
        loss = (x @ w).sum()
        loss.register_hook(lambda g: g * 2)
        loss.backward()
        return w.grad

    _both(fn)


def test_autograd_grad_runs_hooks_and_captures_as_torch():
    def fn(lib):
        w, x = _leaves(lib)
        w.register_hook(lambda g: g * 10)
        y = x @ w
        y.register_hook(lambda g: g * 100)
        (gw,) = lib.autograd.grad((y * 3).sum(), w, retain_graph=True)
        # y alone: torch stops at y and captures after its hooks
        (gy,) = lib.autograd.grad((y * 3).sum(), y, retain_graph=True)
        # y and w: the backward goes on through y, so y's gradient is captured before its
        # hooks (torch's engine), while w's gradient went through them
        gy2, gw2 = lib.autograd.grad((y * 3).sum(), [y, w])
        return gw, gy, gy2, gw2, w.grad

    assert _both(fn)[-1] is None  # autograd.grad adds to no .grad


def test_backward_with_inputs_runs_the_inputs_hooks():
    def fn(lib):
        w, x = _leaves(lib)
        y = x @ w
        y.register_hook(lambda g: g * 100)
        (y * 3).sum().backward(inputs=[y])
        return y.grad, w.grad

    _both(fn)


def test_retain_graph_runs_hooks_every_backward_and_frees_the_graph_after():
    def fn(lib):
        w, x = _leaves(lib)
        y = x @ w
        calls = []
        y.register_hook(lambda g: calls.append(1) or g * 2)
        loss = (y * y).sum()
        loss.backward(retain_graph=True)
        loss.backward()
        with pytest.raises(RuntimeError, match="second time"):
            loss.backward()
        return w.grad, len(calls)

    _both(fn)


def test_hook_that_changes_the_shape_raises():
    w, x = _leaves(spx)
    y = x @ w
    y.register_hook(lambda g: g.sum())
    with pytest.raises(RuntimeError, match="changed the size"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        spx.ones(2).register_hook(lambda g: g)
    with pytest.raises(TypeError, match="callable"):
        spx.ones(2, requires_grad=True).register_hook(3)


def _clipped(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.nn.Linear(3, 8)
            self.fc2 = lib.nn.Linear(8, 2)

        def forward(self, x):
            h = self.fc1(x).tanh()
            if h.requires_grad:
                h.register_hook(lambda g: g.clamp(-0.05, 0.05))
            return self.fc2(h)

    return M()


@pytest.mark.parametrize("compiled", [False, True])
def test_hooks_in_a_training_loop_eager_and_compiled(compiled):
    tmodel = _clipped(torch)
    model = _clipped(spx)
    copy_torch_weights(tmodel, model)
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.5)
    opt = spx.optim.SGD(model.parameters(), lr=0.5)

    def step(model, opt, x, y):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    run = spx.compile(step) if compiled else step
    rng = np.random.default_rng(0)
    for _ in range(4):
        xb = rng.standard_normal((6, 3)).astype(np.float32)
        yb = rng.standard_normal((6, 2)).astype(np.float32)
        want = step(tmodel, topt, torch.tensor(xb), torch.tensor(yb))
        got = run(model, opt, spx.tensor(xb), spx.tensor(yb))
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
    for name, p in tmodel.named_parameters():
        np.testing.assert_allclose(
            dict(model.named_parameters())[name].detach().numpy(),
            p.detach().numpy(),
            rtol=1e-5,
            atol=1e-6,
        )


def test_hooks_inside_the_functional_spx_backward_are_refused_with_the_way_that_works():
    model = spx.nn.Linear(2, 2)

    def loss_fn(m):
        h = m(spx.ones(3, 2))
        h.register_hook(lambda g: g * 0)
        return h.sum()

    with pytest.raises(RuntimeError, match=r"loss.backward\(\)"):
        spx.backward(loss_fn, model)


def test_a_hook_that_changes_the_gradient_in_place_and_returns_none():
    # torch's clipping idiom: ``p.register_hook(lambda g: g.clamp_(-c, c))`` written as a
    # function returning None; the gradient is the tensor the hook wrote to.
    def fn(lib):
        def times_ten(g):
            g.mul_(10)

        def clip(g):
            g.clamp_(-0.1, 0.1)

        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.register_hook(times_ten)
        (y * y).sum().backward()
        m = lib.nn.Linear(2, 1)
        for p in m.parameters():
            p.register_hook(clip)
        m(lib.ones(3, 2)).sum().backward()
        z = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        z.register_hook(clip)
        (gz,) = lib.autograd.grad((z * z).sum(), z)
        return x.grad, y.grad, m.weight.grad, m.bias.grad, gz

    _both(fn)


def test_a_retained_gradient_with_two_hooks_is_added_once():
    def fn(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        y.retain_grad()
        y.register_hook(lambda g: g * 2)
        y.register_hook(lambda g: None)
        (y * 2).sum().backward()
        return y.grad, x.grad

    _both(fn)
