"""Tensor.register_post_accumulate_grad_hook against torch: the hook gets the leaf after its
.grad has been accumulated (each backward), torch's optimizer-in-backward idiom (a per-parameter
optimizer stepped in the hook) trains step for step as torch's, eager and inside spx.compile;
the hook runs under no_grad; removal; torch's errors."""

import numpy as np
import pytest

import spx
from tests._torch_utils import copy_torch_weights
from tests.tensor._parity import assert_same, data

torch = pytest.importorskip("torch")


def test_hook_sees_the_accumulated_grad_after_every_backward():
    def fn(lib):
        w = lib.tensor(data((3, 2)), requires_grad=True)
        x = lib.tensor(data((4, 3), 1))
        seen = []
        w.register_post_accumulate_grad_hook(lambda p: seen.append((p is w, p.grad.clone())))
        (x @ w).sum().backward()
        (x @ w).tanh().sum().backward()
        assert [s[0] for s in seen] == [True, True]
        return [s[1] for s in seen]

    assert_same(fn(spx), fn(torch), rtol=1e-5, atol=1e-6)


def test_the_docstring_sgd_update_and_remove():
    def fn(lib):
        v = lib.tensor([0.0, 0.0, 0.0], requires_grad=True)
        h = v.register_post_accumulate_grad_hook(lambda p: p.add_(p.grad, alpha=-0.01))
        v.backward(lib.tensor([1.0, 2.0, 3.0]))
        h.remove()
        v.backward(lib.tensor([1.0, 2.0, 3.0]))  # no hook: v keeps its value
        return v.detach(), v.grad

    assert_same(fn(spx), fn(torch))


def test_hook_runs_under_no_grad():
    def fn(lib):
        w = lib.ones(2, requires_grad=True)
        modes = []
        w.register_post_accumulate_grad_hook(lambda p: modes.append(lib.is_grad_enabled()))
        (w * 3).sum().backward()
        return modes

    assert fn(spx) == fn(torch) == [False]


def test_autograd_grad_runs_no_post_accumulate_hook():
    def fn(lib):
        w = lib.ones(2, requires_grad=True)
        calls = []
        w.register_post_accumulate_grad_hook(lambda p: calls.append(1))
        lib.autograd.grad((w * 3).sum(), w)
        return calls

    assert fn(spx) == fn(torch) == []


def _net(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 8), lib.nn.Tanh(), lib.nn.Linear(8, 2))


@pytest.mark.parametrize("compiled", [False, True])
def test_optimizer_in_backward_trains_as_torch(compiled):
    # torch's tutorial "How to save memory by fusing the optimizer step into the backward pass".
    # The optimizers are an argument of the step: spx.compile carries the state of the objects
    # it is given (a closure's optimizers would leak traced values).
    def setup(lib, model):
        params = list(model.parameters())
        opts = [lib.optim.Adam([p], lr=0.05) for p in params]
        index = {id(p): i for i, p in enumerate(params)}

        def hook(p):
            opts[index[id(p)]].step()
            opts[index[id(p)]].zero_grad()

        for p in params:
            p.register_post_accumulate_grad_hook(hook)
        return opts

    tmodel, model = _net(torch), _net(spx)
    copy_torch_weights(tmodel, model)
    topts, opts = setup(torch, tmodel), setup(spx, model)

    def step(model, opts, x, y):
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        return loss

    run = spx.compile(step) if compiled else step
    rng = np.random.default_rng(0)
    for _ in range(4):
        xb = rng.standard_normal((6, 3)).astype(np.float32)
        yb = rng.standard_normal((6, 2)).astype(np.float32)
        want = step(tmodel, topts, torch.tensor(xb), torch.tensor(yb))
        got = run(model, opts, spx.tensor(xb), spx.tensor(yb))
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
    for name, p in tmodel.named_parameters():
        q = dict(model.named_parameters())[name]
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6)
        assert q.grad is None and p.grad is None  # zero_grad() in the hook set them to None


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda lib: lib.ones(2), "cannot register a hook on a tensor that doesn't require"),
        (
            lambda lib: lib.ones(2, requires_grad=True) * 2,
            "post accumulate grad hooks cannot be registered on non-leaf tensors",
        ),
    ],
)
def test_errors_as_torch(make, message):
    for lib in (torch, spx):
        with pytest.raises(RuntimeError, match=message):
            make(lib).register_post_accumulate_grad_hook(lambda p: None)


def test_a_hook_returning_a_value_raises_as_torchs():
    for lib in (torch, spx):
        v = lib.zeros(2, requires_grad=True)
        v.register_post_accumulate_grad_hook(lambda p: 1)
        with pytest.raises(TypeError):
            v.sum().backward()
