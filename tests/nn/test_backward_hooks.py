"""Module.register_full_backward_hook / register_full_backward_pre_hook against torch: what the
hooks see (grad_input with zeros for tensor inputs without grad and None for non-tensors,
grad_output with None for outputs without gradient), replacing gradients, the no-input-grad
case, autograd.grad, removal and prepend order, torch's errors, and a compiled training loop."""

import warnings

import numpy as np
import pytest

import spx
from tests._torch_utils import copy_torch_weights
from tests.tensor._parity import assert_same

torch = pytest.importorskip("torch")


def _np(x):
    if x is None:
        return None
    if isinstance(x, tuple | list):
        return [_np(v) for v in x]
    return x.detach().clone()


def _both(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = fn(spx), fn(torch)
    assert_same(got, want, rtol=1e-5, atol=1e-6)
    return got


def _two_outputs(lib):
    class M(lib.nn.Module):
        def forward(self, x, y, k):
            return x * 2, y * 3

    return M()


def test_hooks_see_torchs_grad_input_and_grad_output():
    def fn(lib):
        mod, log = _two_outputs(lib), []
        mod.register_full_backward_hook(lambda m, gi, go: log.append((_np(gi), _np(go))))
        mod.register_full_backward_pre_hook(lambda m, go: log.append(_np(go)))
        x, y = lib.ones(2, requires_grad=True), lib.ones(2)
        a, _ = mod(x, y, 5)
        a.sum().backward()  # y needs no grad: zeros in grad_input; k: None
        x, y = lib.ones(2), lib.ones(2, requires_grad=True)
        _, b = mod(x, y, 5)
        b.sum().backward()  # the first output needs no grad: None in grad_output
        return log

    log = _both(fn)
    assert log[1][0][2] is None and log[1][1][1] is None


def _net(lib):
    net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
    with lib.no_grad():
        for p in net.parameters():
            n = p.numel()
            p.copy_(lib.tensor(np.linspace(-1, 1, n).reshape(tuple(p.shape)).astype(np.float32)))
    return net


def test_replaced_gradients_flow_on_to_the_layers_before():
    def fn(lib):
        net, log = _net(lib), []
        net[0].register_full_backward_hook(lambda m, gi, go: log.append((_np(gi), _np(go))))
        net[1].register_full_backward_hook(lambda m, gi, go: (gi[0] * 0.5,))
        net[2].register_full_backward_pre_hook(lambda m, go: (go[0] + 1,))
        x = lib.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 6, requires_grad=True)
        net(x).pow(2).sum().backward()
        return log, x.grad, [p.grad for p in net.parameters()]

    _both(fn)


def test_no_input_requires_grad_runs_the_hook_with_none_and_warns():
    def fn(lib):
        lin, log = lib.nn.Linear(2, 2), []
        lin.register_full_backward_hook(lambda m, gi, go: log.append((gi, _np(go))))
        with pytest.warns(UserWarning, match="no inputs require gradients"):
            lin(lib.ones(1, 2)).sum().backward()
        return log

    assert _both(fn)[0][0] == (None,)
    lin = spx.nn.Linear(2, 2)
    lin.register_full_backward_hook(lambda m, gi, go: (spx.ones(1, 2),))
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="should always return None"):
        lin(spx.ones(1, 2)).sum().backward()


def test_autograd_grad_removal_and_prepend():
    def fn(lib):
        lin, order = lib.nn.Linear(2, 2), []
        with lib.no_grad():
            lin.weight.copy_(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
        lin.register_full_backward_hook(lambda m, gi, go: order.append("a") or (gi[0] * 10,))
        lin.register_full_backward_hook(lambda m, gi, go: order.append("b"), prepend=True)
        gone = lin.register_full_backward_pre_hook(lambda m, go: order.append("x"))
        gone.remove()
        x = lib.ones(1, 2, requires_grad=True)
        (g,) = lib.autograd.grad(lin(x).sum(), x)
        assert order == ["b", "a"]
        return g

    _both(fn)


def test_wrong_number_of_gradients_raises_torchs_errors():
    lin = spx.nn.Linear(2, 2)
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 2, but expected 1"):
        lin(spx.ones(1, 2, requires_grad=True)).sum().backward()
    lin = spx.nn.Linear(2, 2)
    lin.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_output, got 2, but expected 1"):
        lin(spx.ones(1, 2, requires_grad=True)).sum().backward()
    with pytest.raises(TypeError, match="must be callable"):
        lin.register_full_backward_hook(None)


@pytest.mark.parametrize("compiled", [False, True])
def test_gradient_scaling_hook_in_a_training_loop(compiled):
    """A hook that halves the gradient entering a block, trained eagerly and in spx.compile."""
    tnet, net = _net(torch), _net(spx)
    copy_torch_weights(tnet, net)
    for n in (tnet, net):
        n[1].register_full_backward_hook(lambda m, gi, go: (gi[0] * 0.5,))
    topt = torch.optim.SGD(tnet.parameters(), lr=0.3)
    opt = spx.optim.SGD(net.parameters(), lr=0.3)

    def step(net, opt, x, y):
        opt.zero_grad()
        loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    run = spx.compile(step) if compiled else step
    rng = np.random.default_rng(1)
    for _ in range(4):
        xb = rng.standard_normal((5, 3)).astype(np.float32)
        yb = rng.standard_normal((5, 2)).astype(np.float32)
        want = step(tnet, topt, torch.tensor(xb), torch.tensor(yb))
        got = run(net, opt, spx.tensor(xb), spx.tensor(yb))
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
    for (name, p), q in zip(tnet.named_parameters(), net.parameters(), strict=True):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, err_msg=name)
