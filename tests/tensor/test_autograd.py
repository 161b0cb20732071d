"""Autograd of spx.Tensor against torch: backward/.grad accumulation, retain_graph,
gradient=, autograd.grad (non-leaf inputs, allow_unused), grad modes, hooks, and in-place
updates and views inside the graph."""

import numpy as np
import pytest

import spx
from tests.tensor._parity import assert_same, data

torch = pytest.importorskip("torch")

W0 = data((3, 2))
X0 = data((4, 3), 1)


def _leaves(lib):
    return lib.tensor(W0, requires_grad=True), lib.tensor(X0)


def _both(fn):
    """fn(lib) for torch and spx; the results compared."""
    got, want = fn(spx), fn(torch)
    assert_same(got, want, rtol=1e-5, atol=1e-6)
    return got


def test_backward_accumulates_into_leaves():
    def fn(lib):
        w, x = _leaves(lib)
        b = lib.zeros(2, requires_grad=True)
        loss = ((x @ w + b).tanh() ** 2).mean()
        loss.backward()
        first = (w.grad.clone(), b.grad.clone())
        loss2 = ((x @ w + b).sigmoid()).sum()
        loss2.backward()  # a second graph: accumulates
        return first, (w.grad, b.grad), loss.detach()

    _both(fn)


def test_second_backward_needs_retain_graph():
    for lib in (torch, spx):
        w, x = _leaves(lib)
        loss = (x @ w).exp().sum()
        loss.backward(retain_graph=True)
        loss.backward()  # allowed once more: the graph was retained
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()
    _both(lambda lib: _twice(lib))


def _twice(lib):
    w, x = _leaves(lib)
    loss = (x @ w).exp().sum()
    loss.backward(retain_graph=True)
    loss.backward()
    return w.grad


def test_shared_subgraph_freed_after_backward():
    for lib in (torch, spx):
        w, x = _leaves(lib)
        h = (x @ w).sigmoid()
        (h.sum()).backward()
        with pytest.raises(RuntimeError, match="second time"):
            (h * 2).sum().backward()


def test_grad_can_be_reset_and_zeroed():
    def fn(lib):
        w, x = _leaves(lib)
        (x @ w).sum().backward()
        w.grad = None
        (x @ w).pow(2).sum().backward()
        g1 = w.grad.clone()
        w.grad.zero_()
        (x @ w).sum().backward()
        return g1, w.grad

    _both(fn)


@pytest.mark.parametrize("shape", [(4, 2), (2,)], ids=str)
def test_gradient_argument_for_non_scalar(shape):
    def fn(lib):
        w, x = _leaves(lib)
        y = x @ w if len(shape) == 2 else (x @ w).sum(0)
        y.backward(gradient=lib.tensor(data(shape, 5)))
        return w.grad

    _both(fn)


def test_non_scalar_backward_errors():
    for lib in (torch, spx):
        w, x = _leaves(lib)
        with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
            (x @ w).backward()
        with pytest.raises(RuntimeError, match="Mismatch in shape"):
            (x @ w).backward(lib.ones(2, 4))
        with pytest.raises(RuntimeError, match="does not require grad"):
            lib.ones(2).sum().backward()


def test_backward_inputs_restricts_accumulation():
    def fn(lib):
        w, x = _leaves(lib)
        b = lib.ones(2, requires_grad=True)
        (x @ w + b).sum().backward(inputs=[b])
        return w.grad, b.grad

    _both(fn)


def test_autograd_backward_function():
    def fn(lib):
        w, x = _leaves(lib)
        y1, y2 = (x @ w).sum(), (x @ w).pow(2)
        lib.autograd.backward([y1, y2], [None, lib.ones(4, 2)])
        return w.grad

    _both(fn)


def test_autograd_grad_leaf_and_non_leaf():
    def fn(lib):
        w, x = _leaves(lib)
        b = lib.zeros(2, requires_grad=True)
        h = (x @ w).tanh()
        loss = (h**2).sum() + (b * h).sum()
        (gh,) = lib.autograd.grad(loss, h, retain_graph=True)
        gw, gb = lib.autograd.grad(loss, [w, b])
        assert w.grad is None and b.grad is None  # grad() does not accumulate
        return gh, gw, gb

    _both(fn)


@pytest.mark.parametrize("how", ["grad", "backward_inputs"])
def test_gradient_wrt_a_tensor_and_its_ancestor(how):
    def fn(lib):
        w = lib.ones(2, requires_grad=True)
        h = w * 3
        loss = (h**2).sum() + w.sum()  # dloss/dw = 18 + 1 through both paths; dloss/dh = 6
        if how == "grad":
            return lib.autograd.grad(loss, [w, h])
        loss.backward(inputs=[w, h])
        return (w.grad,)

    got, want = fn(spx), fn(torch)
    assert_same(got, want)


def test_backward_inputs_non_leaf():
    def fn(lib):
        w, x = _leaves(lib)
        h = x @ w
        (h.exp()).sum().backward(inputs=[h])
        return h.grad if lib is torch else h._grad, w.grad

    _both(fn)


def test_autograd_grad_of_an_intermediate_then_backward():
    def fn(lib):
        w, x = _leaves(lib)
        h = x @ w
        loss = h.exp().sum()
        (gh,) = lib.autograd.grad(loss, h, retain_graph=True)
        loss.backward()
        return gh, w.grad

    _both(fn)


def test_autograd_grad_outputs_and_many_outputs():
    def fn(lib):
        w, x = _leaves(lib)
        y = x @ w
        z = w.sin().sum()
        return lib.autograd.grad([y, z], [w], grad_outputs=[lib.ones(4, 2) * 0.5, None])

    _both(fn)


def test_autograd_grad_allow_unused():
    def fn(lib):
        w, x = _leaves(lib)
        unused = lib.ones(3, requires_grad=True)
        loss = (x @ w).sum()
        with pytest.raises(RuntimeError, match="allow_unused=True"):
            lib.autograd.grad(loss, [w, unused], retain_graph=True)
        gw, gu = lib.autograd.grad(loss, [w, unused], allow_unused=True, retain_graph=True)
        assert gu is None
        gw2, gu2 = lib.autograd.grad(loss, [w, unused], allow_unused=True, materialize_grads=True)
        return gw, gw2, gu2

    _both(fn)


def test_autograd_grad_errors():
    for lib in (torch, spx):
        w, x = _leaves(lib)
        with pytest.raises(RuntimeError, match="does not require grad"):
            lib.autograd.grad((x @ w).sum(), x)


def test_no_grad_stops_recording():
    for lib in (torch, spx):
        w, x = _leaves(lib)
        with lib.no_grad():
            y = x @ w
            assert not lib.is_grad_enabled()
            with lib.enable_grad():
                z = x @ w
                assert lib.is_grad_enabled()
        assert not y.requires_grad and y.grad_fn is None and y.is_leaf
        assert z.requires_grad and z.grad_fn is not None
        assert lib.is_grad_enabled()


def test_no_grad_decorator_and_set_grad_enabled():
    for lib in (torch, spx):
        w, x = _leaves(lib)

        @lib.no_grad()
        def f(x=x, w=w):
            return x @ w

        assert not f().requires_grad
        lib.set_grad_enabled(False)
        try:
            assert not (x @ w).requires_grad and not lib.is_grad_enabled()
        finally:
            lib.set_grad_enabled(True)
        with lib.set_grad_enabled(False):
            assert not (x @ w).requires_grad
        assert lib.is_grad_enabled()
        with lib.set_grad_enabled(True):
            assert (x @ w).requires_grad

        @lib.enable_grad()
        def g(x=x, w=w):
            return x @ w

        with lib.no_grad():
            assert g().requires_grad


def test_inference_mode():
    for lib in (torch, spx):
        w, x = _leaves(lib)
        with lib.inference_mode():
            y = x @ w
            assert not lib.is_grad_enabled()
            assert lib.is_inference_mode_enabled()
        assert not y.requires_grad
        with lib.inference_mode(False):
            assert (x @ w).requires_grad
        assert not lib.is_inference_mode_enabled()


def test_grad_mode_is_restored_after_an_exception():
    for lib in (torch, spx):
        with pytest.raises(ValueError), lib.no_grad():
            raise ValueError
        assert lib.is_grad_enabled()


def test_requires_grad_rules():
    for lib in (torch, spx):
        w, x = _leaves(lib)
        y = x @ w
        assert w.is_leaf and w.requires_grad and w.grad_fn is None
        assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
        assert not (y > 0).requires_grad  # comparisons give bools: no grad
        assert not y.argmax().requires_grad
        assert not x.requires_grad and x.is_leaf
        assert x.requires_grad_() is x and x.requires_grad
        with pytest.raises(RuntimeError, match="floating point"):
            lib.tensor([1, 2]).requires_grad_()
        with pytest.raises(RuntimeError, match="leaf variables"):
            y.requires_grad_(False)
        x.requires_grad = False
        assert not x.requires_grad


def test_grad_of_non_leaf_warns():
    for lib in (torch, spx):
        w, x = _leaves(lib)
        y = x @ w
        y.sum().backward()
        with pytest.warns(UserWarning, match="not a leaf"):
            assert y.grad is None


def test_retain_grad_keeps_and_accumulates_non_leaf_grads():
    def fn(lib):
        w, x = _leaves(lib)
        b = lib.zeros(2, requires_grad=True)
        h = x @ w + b
        h.retain_grad()
        a = h.tanh()
        a.retain_grad()
        loss = (a**2).mean()
        loss.retain_grad()
        loss.backward(retain_graph=True)
        first = (h.grad.clone(), a.grad.clone(), loss.grad.clone(), w.grad.clone())
        loss.backward()  # accumulates into the retained grads as into the leaves'
        flags = lib.tensor([h.retains_grad, w.retains_grad, x.retains_grad])
        return first, (h.grad, a.grad, loss.grad, w.grad), flags

    _both(fn)


def test_retain_grad_follows_views_in_place_writes_and_autograd_grad():
    def fn(lib):
        w, x = _leaves(lib)
        h = x @ w
        h.retain_grad()
        v = h.view(-1)
        (v * v).sum().backward()  # the gradient reaches h through its view
        g = (x @ w) * 3
        g.retain_grad()
        g.mul_(2)  # retained: the gradient with respect to the value after the write
        (g * g).sum().backward()
        k = (x @ w).exp()
        k.retain_grad()
        (dw,) = lib.autograd.grad((k * x.sum(1, keepdim=True)).sum(), w)
        return h.grad, g.grad, k.grad, dw

    _both(fn)


def test_retain_grad_with_inputs_reaches_only_what_torchs_engine_reaches():
    def fn(lib):
        w, x = _leaves(lib)
        w2 = w * 1.0
        y = x @ w2
        y.retain_grad()
        y.retain_grad()  # twice: nothing more happens
        assert y.float() is y  # an op returning self keeps the flag
        (dy,) = lib.autograd.grad((y * y).sum(), [y], retain_graph=True)  # y is the input
        first = y.grad.clone()
        lib.autograd.grad((y * y).sum(), [y])  # and accumulates there
        u = x @ w2
        u.retain_grad()
        v = u * 3
        lib.autograd.grad((v * v).sum(), [v])  # stops at v: u is never reached
        a = x @ w2
        a.retain_grad()
        (a * 2).sum().backward(inputs=[w2])  # w2 is a non-leaf input; a lies between
        b, w3 = x @ w, w * 1.0
        b.retain_grad()
        (b.sum() * w3.sum()).backward(inputs=[w3])  # b is not on the way to w3
        return dy, first, y.grad, u.grad is None, a.grad, b.grad is None

    _both(fn)


def test_retain_grad_on_leaves_and_constants():
    for lib in (torch, spx):
        w, x = _leaves(lib)
        w.retain_grad()  # a leaf: nothing to do
        assert not w.retains_grad
        with pytest.raises(RuntimeError, match="requires_grad=False"):
            x.retain_grad()


def test_assigned_grad_checks():
    w = spx.ones(2, requires_grad=True)
    w.grad = spx.full((2,), 3.0)
    assert w.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="different size"):
        w.grad = spx.ones(3)
    with pytest.raises(RuntimeError, match="different type"):
        w.grad = spx.ones(2, dtype=spx.float16)


def test_register_hook_on_leaf():
    def fn(lib):
        w, x = _leaves(lib)
        seen = []
        handle = w.register_hook(lambda g: seen.append(g.clone()) or g * 2)
        (x @ w).sum().backward()
        handle.remove()
        (x @ w).sum().backward()
        return seen[0], w.grad

    _both(fn)


def test_fan_out_and_reuse():
    def fn(lib):
        w, x = _leaves(lib)
        h = x @ w
        loss = (h * h).sum() + h.sum() * w.sum() + (w.t() @ w).trace()
        loss.backward()
        return w.grad

    _both(fn)


def test_integer_paths_carry_no_gradient():
    def fn(lib):
        w, x = _leaves(lib)
        idx = (x @ w).argmax(1)
        loss = (x @ w).gather(1, idx.unsqueeze(1)).sum() + idx.float().sum()
        loss.backward()
        return w.grad

    _both(fn)


# -- in-place updates and views inside the graph --------------------------------------------

GRAPH_EDITS = [
    ("setitem_zero_row", lambda lib, w, x: _set(x @ w, 0, 0.0)),
    ("setitem_from_leaf", lambda lib, w, x: _set(x @ w, (slice(None), 1), w[0].sum() * 2)),
    ("setitem_mask", lambda lib, w, x: _set(x @ w, (x @ w) > 0, 1.0)),
    ("view_add_", lambda lib, w, x: _apply(x @ w, lambda y: y.t().add_(w.sum()))),
    ("row_mul_", lambda lib, w, x: _apply(x @ w, lambda y: y[1].mul_(3))),
    ("narrow_piece_", lambda lib, w, x: _apply(x @ w, lambda y: y.narrow(0, 2, 2).exp_())),
    ("view_minus1_", lambda lib, w, x: _apply(x @ w, lambda y: y.view(-1)[::3].zero_())),
    ("chained_inplace", lambda lib, w, x: (x @ w).mul_(2).add_(1).tanh_()),
    ("inplace_on_clone_of_leaf", lambda lib, w, x: _apply(w.clone(), lambda y: y[0].fill_(7))),
    ("copy_into_slice", lambda lib, w, x: _apply(x @ w, lambda y: y[:2].copy_(w[:2] * 5))),
    ("unsqueeze_expand_sum", lambda lib, w, x: (x @ w).unsqueeze(0).expand(3, 4, 2).sum(0)),
    ("diagonal_view_", lambda lib, w, x: _apply(x @ w.t().t(), lambda y: y.diagonal().mul_(0))),
]


def _set(y, index, value):
    y[index] = value
    return y


def _apply(y, edit):
    edit(y)
    return y


@pytest.mark.parametrize("edit", [g[1] for g in GRAPH_EDITS], ids=[g[0] for g in GRAPH_EDITS])
def test_views_and_inplace_in_the_graph(edit):
    def fn(lib):
        w, x = _leaves(lib)
        y = edit(lib, w, x)
        loss = (y * lib.tensor(data(tuple(y.shape), 9))).sum()
        loss.backward()
        return y.detach(), w.grad

    _both(fn)


def test_y_times_one_then_setitem_then_backward():
    def fn(lib):
        x = lib.ones(4, requires_grad=True)
        y = x * 1
        y[0] = 0
        y.sum().backward()
        return x.grad

    assert _both(fn).tolist() == [0.0, 1.0, 1.0, 1.0]


def test_backward_twice_through_a_view_write():
    def fn(lib):
        w, x = _leaves(lib)
        y = x @ w
        y[0] = w[1] * 3
        loss = y.pow(2).sum()
        loss.backward(retain_graph=True)
        loss.backward()
        return w.grad

    _both(fn)


def test_optimizer_style_update_under_no_grad():
    def fn(lib):
        w, x = _leaves(lib)
        for _ in range(3):
            loss = (x @ w).tanh().sum()
            loss.backward()
            with lib.no_grad():
                w -= 0.1 * w.grad
                w.grad.zero_()
        return w.detach(), loss.detach()

    _both(fn)


def test_gradient_accumulation_over_micro_batches():
    def fn(lib):
        w, _ = _leaves(lib)
        for k in range(3):
            xb = lib.tensor(data((2, 3), 20 + k))
            ((xb @ w).relu().sum() / 3).backward()
        return w.grad

    _both(fn)


def test_value_of_loss_survives_backward():
    for lib in (torch, spx):
        w, x = _leaves(lib)
        loss = (x @ w).sum()
        loss.backward()
        assert abs(loss.item() - float((X0 @ W0).sum())) < 1e-4


def test_grad_fn_names_follow_torch():
    for lib in (torch, spx):
        x = lib.ones(2, requires_grad=True)
        names = [f.name() for f in ((x * 2).grad_fn, x.sum().grad_fn, x.exp().grad_fn)]
        assert names == ["MulBackward0", "SumBackward0", "ExpBackward0"]
        assert repr(x * 2).endswith("grad_fn=<MulBackward0>)")


def test_bfloat16_modules_record_autograd_like_float32_ones():
    """A bfloat16 model (``model.bfloat16()``) trains: its nn.functional ops require grad (numpy
    does not count bfloat16 as inexact; that once dropped every gradient silently)."""

    def fn(lib):
        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 2)
        model = lin if lib is torch else spx.nn.Linear(3, 2)
        if lib is spx:
            model.load_state_dict({k: v.detach().numpy() for k, v in lin.state_dict().items()})
        model = model.bfloat16()
        x = lib.tensor(X0[:, :3]).bfloat16()
        loss = lib.nn.functional.gelu(model(x)).float().pow(2).mean()
        loss.backward()
        return loss.detach(), model.weight.grad.float(), model.bias.grad.float()

    got, want = fn(spx), fn(torch)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=2e-2, atol=2e-2)


def test_complex_leaves_get_torchs_gradients_not_their_conjugates():
    # torch's convention is the conjugate of JAX's vjp; real losses and complex gradient=
    # both must give torch's numbers (they were conjugated before).
    z0 = np.array([1 + 2j, 3 - 1j, -0.5 + 0.25j], np.complex64)
    a0 = np.array([0.5 - 1j, 2 + 0.5j, 1j], np.complex64)
    v0 = np.array([1 + 1j, 2 - 3j, 0.5], np.complex64)
    results = {}
    for lib in (torch, spx):
        z = lib.tensor(z0, requires_grad=True)
        (z * z).abs().sum().backward()  # a real loss
        (z.conj() * lib.tensor(a0)).real.sum().backward()  # accumulates
        first = z.grad.numpy().copy()
        z = lib.tensor(z0, requires_grad=True)
        (z * lib.tensor(a0)).exp().backward(gradient=lib.tensor(v0))
        second = z.grad.numpy()
        z = lib.tensor(z0, requires_grad=True)
        (third,) = lib.autograd.grad((z * z).abs().sum(), [z])
        results[lib.__name__] = (first, second, third.numpy())
    for got, want in zip(results["spx"], results["torch"], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_complex_scalar_needs_an_explicit_gradient_as_in_torch():
    for lib in (torch, spx):
        z = lib.tensor(1 + 2j, requires_grad=True)
        with pytest.raises(RuntimeError, match="implicitly created only for real scalar"):
            (z * z).backward()
        with pytest.raises(RuntimeError, match="implicitly created only for real scalar"):
            lib.autograd.grad(z * z, [z])


def test_detached_values_of_a_graph_already_backpropagated():
    # Actor-critic (the advantage detached after the critic's backward) and truncated BPTT
    # (the LSTM state detached between chunks): the detached tensors are values; walking into
    # their freed history raised "backward through the graph a second time".
    def fn(lib):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        v = lib.tensor([0.5, 0.5], requires_grad=True)
        advantage = lib.tensor([3.0, 1.0]) - w * 2
        advantage.pow(2).mean().backward()
        (-(v * advantage.detach()).mean()).backward()
        lib.manual_seed(0)
        lstm = lib.nn.LSTM(3, 4)
        with lib.no_grad():
            for p in lstm.parameters():
                p.copy_(lib.tensor(np.linspace(-0.3, 0.3, p.numel()).reshape(tuple(p.shape))))
        x = lib.tensor(np.sin(np.arange(36.0)).reshape(6, 2, 3).astype(np.float32))
        hidden = (lib.zeros(1, 2, 4), lib.zeros(1, 2, 4))
        losses = []
        for i in range(0, 6, 2):
            hidden = tuple(h.detach() for h in hidden)
            lstm.zero_grad()
            out, hidden = lstm(x[i : i + 2], hidden)
            loss = out.pow(2).mean()
            loss.backward()
            losses.append(loss.detach())
        return w.grad, v.grad, losses, lstm.weight_hh_l0.grad

    _both(fn)


def test_a_result_used_both_detached_and_with_history_in_one_loss():
    # The detached use is a value, the other use carries the gradient (whichever the walk
    # meets first); and a GAN step: the discriminator's backward on fake.detach() must leave
    # the generator's graph for the generator's backward.
    def fn(lib):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (w * 0.3).tanh()
        ((y.detach() * y).sum() + (y * y.detach() * 2).sum()).backward()
        g = lib.tensor([[0.5, -0.25], [0.1, 0.2]], requires_grad=True)
        d = lib.tensor([0.3, -0.7], requires_grad=True)
        fake = (lib.tensor([[1.0, 2.0]]) @ g).sigmoid()
        (fake.detach() @ d).sum().backward()
        d_first = d.grad.clone()
        (fake @ d).sum().backward()
        return w.grad, d_first, d.grad, g.grad

    _both(fn)
