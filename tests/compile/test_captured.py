"""spx.compile on a step that names its model and optimizer (closure, global, ``self``)
instead of taking them as arguments, the way torch scripts write ``@torch.compile`` steps."""

import copy
import functools

import numpy as np
import pytest

import spx
from spx import nn
from spx._compile.captured import Captured
from tests._torch_utils import assert_params_match, copy_torch_weights

torch = pytest.importorskip("torch")

STEP_SOURCE = """
def step(x, y):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    return loss
"""


def _pair(seed=0):
    torch.manual_seed(seed)
    t = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    s = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 2))
    copy_torch_weights(t, s)
    return t, s


def _batches(n, seed=0):
    rng = np.random.default_rng(seed)
    return [
        (rng.standard_normal((8, 6)).astype(np.float32), rng.standard_normal((8, 2)).astype("f4"))
        for _ in range(n)
    ]


def _torch_steps(t, batches):
    opt = torch.optim.SGD(t.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = ((t(torch.tensor(x)) - torch.tensor(y)) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _check(step, t, s, batches):
    want = _torch_steps(t, batches)
    got = [float(step(spx.tensor(x), spx.tensor(y))) for x, y in batches]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert_params_match(t, s, rtol=1e-5, atol=1e-6)
    assert step.trace_count <= 2  # no grads / momentum, then with: no retrace per call


def test_closure_over_model_and_optimizer_matches_torch():
    t, s = _pair()
    opt = spx.optim.SGD(s.parameters(), lr=0.1, momentum=0.9)
    model = s

    @spx.compile
    def step(x, y):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    _check(step, t, s, _batches(4))
    assert s[0].weight.grad is not None  # p.grad written back, as after torch's step


def test_globals_are_bound_and_a_rebound_global_is_followed():
    t, s = _pair()
    namespace = {"model": s, "opt": spx.optim.SGD(s.parameters(), lr=0.1, momentum=0.9)}
    exec(STEP_SOURCE, namespace)
    step = spx.compile(namespace["step"])
    _check(step, t, s, _batches(4))
    # `model = Net(); opt = ...` again (a new run in a notebook): the step trains the new pair.
    t2, s2 = _pair(seed=1)
    frozen = s[0].weight.detach().numpy().copy()
    namespace["model"] = s2
    namespace["opt"] = spx.optim.SGD(s2.parameters(), lr=0.1, momentum=0.9)
    want = _torch_steps(t2, _batches(3, seed=1))
    got = [float(step(spx.tensor(x), spx.tensor(y))) for x, y in _batches(3, seed=1)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert_params_match(t2, s2, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(s[0].weight.detach().numpy(), frozen)


def test_bound_method_of_a_module_binds_self():
    t, s = _pair()

    class Trained(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def fit(self, opt, x, y):
            opt.zero_grad()
            loss = ((self.net(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

    opt = spx.optim.SGD(s.parameters(), lr=0.1, momentum=0.9)
    step = spx.compile(Trained(s).fit)
    want = _torch_steps(t, _batches(3))
    got = [float(step(opt, spx.tensor(x), spx.tensor(y))) for x, y in _batches(3)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert_params_match(t, s, rtol=1e-5, atol=1e-6)


def test_closure_over_a_leaf_tensor_that_requires_grad():
    w = spx.zeros(3, requires_grad=True)
    tw = torch.zeros(3, requires_grad=True)
    x = np.array([1.0, 2.0, 3.0], np.float32)

    @spx.compile
    def step(x):
        loss = ((w * x).sum() - 1.0) ** 2
        loss.backward()
        with spx.no_grad():
            w.sub_(0.05 * w.grad)
            w.grad = None
        return loss

    for _ in range(3):
        loss = ((tw * torch.tensor(x)).sum() - 1.0) ** 2
        loss.backward()
        with torch.no_grad():
            tw.sub_(0.05 * tw.grad)
            tw.grad = None
        np.testing.assert_allclose(float(step(spx.tensor(x))), loss.item(), rtol=1e-5)
    np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), rtol=1e-5)


def test_state_reached_through_a_plain_objects_attributes_is_bound():
    # torch.compile steps written as a trainer's method or over an agent object: the step names
    # ``trainer.model``; its parameters must be inputs of the program.
    t, s = _pair()

    class Trainer:
        def __init__(self):
            self.model = s
            self.opt = spx.optim.SGD(s.parameters(), lr=0.1, momentum=0.9)

        def step(self, x, y):
            self.opt.zero_grad()
            loss = ((self.model(x) - y) ** 2).mean()
            loss.backward()
            self.opt.step()
            return loss

    _check(spx.compile(Trainer().step), t, s, _batches(3))


def test_class_attributes_and_dict_entries_are_bound():
    t, s = _pair()

    class Config:  # a class used as a namespace, and a dict of models
        model = s

    opts = {"main": spx.optim.SGD(s.parameters(), lr=0.1, momentum=0.9)}

    @spx.compile
    def step(x, y):
        opts["main"].zero_grad()
        loss = ((Config.model(x) - y) ** 2).mean()
        loss.backward()
        opts["main"].step()
        return loss

    _check(step, t, s, _batches(3))


def test_a_target_network_read_through_an_attribute_sees_later_updates():
    # DQN's shape: the step only reads agent.target; a sync outside the step must be seen.
    class Agent:
        def __init__(self):
            self.net, self.target = nn.Linear(3, 1), nn.Linear(3, 1)
            self.opt = spx.optim.SGD(self.net.parameters(), lr=0.1)

    agent = Agent()

    @spx.compile
    def step(x):
        agent.opt.zero_grad()
        with spx.no_grad():
            goal = agent.target(x)
        loss = ((agent.net(x) - goal) ** 2).mean()
        loss.backward()
        agent.opt.step()
        return loss

    x = spx.tensor(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))
    step(x)
    agent.target.load_state_dict(agent.net.state_dict())
    with spx.no_grad():
        want = ((agent.net(x) - agent.target(x)) ** 2).mean().item()
    assert want == 0.0
    assert float(step(x)) == want
    # A rebound attribute is followed like a rebound global.
    agent.target = nn.Linear(3, 1)
    with spx.no_grad():
        want = ((agent.net(x) - agent.target(x)) ** 2).mean().item()
    np.testing.assert_allclose(float(step(x)), want, rtol=1e-6)


def test_state_the_scan_cannot_reach_raises_with_the_fix():
    _, s = _pair()
    nets = [s]  # list entries: not names, attributes or dict keys the step names
    opts = [spx.optim.SGD(s.parameters(), lr=0.1)]

    @spx.compile
    def train(x, y):
        opts[0].zero_grad()
        loss = ((nets[0](x) - y) ** 2).mean()
        loss.backward()
        opts[0].step()
        return loss

    @spx.compile
    def evaluate(x):  # only reads it: its values would silently become constants
        return nets[0](x).sum()

    ((x, y),) = _batches(1)
    before = [p.detach().numpy().copy() for p in s.parameters()]
    with pytest.raises(RuntimeError, match=r"changed the .* of a .*\n.*pass the model"):
        train(spx.tensor(x), spx.tensor(y))
    # The trace's placeholders are not left in the model or the optimizer: both still work.
    for p, b in zip(s.parameters(), before, strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), b)
        assert p.grad is None
    opts[0].zero_grad()
    ((s(spx.tensor(x)) - spx.tensor(y)) ** 2).mean().backward()
    opts[0].step()
    with pytest.raises(RuntimeError, match=r"parameter '(weight|bias)' of a Linear .*\n.*pass the"):
        evaluate(spx.tensor(x))
    copies = [copy.deepcopy(s)]  # (a deep copy, made without Module.__init__, is seen too)
    with pytest.raises(RuntimeError, match=r"parameter '(weight|bias)' of a Linear"):
        spx.compile(lambda x: copies[0](x).sum())(spx.tensor(x))
    np.testing.assert_allclose(  # passed as an argument, the same model works
        float(spx.compile(lambda m, x: m(x).sum())(nets[0], spx.tensor(x))),
        float(nets[0](spx.tensor(x)).sum()),
        rtol=1e-6,
    )


def test_captured_finds_names_in_nested_functions_and_skips_the_rest():
    model = nn.Linear(2, 1)
    plain = 3.0
    frozen_leaf = spx.zeros(2)  # no requires_grad: an input, not state

    def fn(x):
        return (lambda z: model(z) * plain + frozen_leaf.sum())(x)

    captured = Captured(fn)
    assert captured.scan() == (model,)
    assert captured.same()


HELPER_SOURCE = """
def target_value(x):
    return target(x)


def step(x):
    opt.zero_grad()
    loss = ((net(x) - target_value(x).detach()) ** 2).mean()
    loss.backward()
    opt.step()
    return loss
"""


def test_state_named_by_a_helper_function_is_bound():
    # `target` is used only through a helper of the user's: its parameters must be inputs of
    # the program, not constants (a later in-place update of the target must be seen).
    namespace = {"net": nn.Linear(3, 1), "target": nn.Linear(3, 1)}
    namespace["opt"] = spx.optim.SGD(namespace["net"].parameters(), lr=0.1)
    exec(HELPER_SOURCE, namespace)
    step, net, target = spx.compile(namespace["step"]), namespace["net"], namespace["target"]
    x = spx.tensor(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))
    step(x)
    with spx.no_grad():  # a Polyak update of the target, outside the step
        for pt, pn in zip(target.parameters(), net.parameters(), strict=True):
            pt.mul_(0.5).add_(pn, alpha=0.5)
        want = ((net(x) - target(x)) ** 2).mean().item()
    np.testing.assert_allclose(float(step(x)), want, rtol=1e-6)


def test_partial_step_binds_its_arguments():
    t, s = _pair()
    opt = spx.optim.SGD(s.parameters(), lr=0.1, momentum=0.9)

    def fit(model, opt, x, y, scale):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean() * scale
        loss.backward()
        opt.step()
        return loss

    step = spx.compile(functools.partial(fit, s, opt, scale=1.0))
    _check(step, t, s, _batches(3))


def test_replacing_the_object_a_model_is_read_through_is_followed():
    # k-fold with pre-built folds: the step reads ``self.state.model``; swapping ``state`` must
    # switch models even though the old state object still holds its old model.
    class State:
        def __init__(self):
            self.model = nn.Linear(3, 1)

    folds = [State(), State()]

    class Evaluator:
        def ev(self, x):
            with spx.no_grad():
                return self.state.model(x).sum()

    e = Evaluator()
    e.state = folds[0]
    step = spx.compile(e.ev)
    x = spx.tensor(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))
    for fold in (0, 1, 0):
        e.state = folds[fold]
        with spx.no_grad():
            want = float(folds[fold].model(x).sum())
        np.testing.assert_allclose(float(step(x)), want, rtol=1e-6)
    # The same for a dict entry replaced by another dict, and a rebound global object.
    nets = {"all": {"m": folds[0].model}}

    @spx.compile
    def read(x):
        with spx.no_grad():
            return nets["all"]["m"](x).sum()

    read(x)
    nets["all"] = {"m": folds[1].model}
    with spx.no_grad():
        want = float(folds[1].model(x).sum())
    np.testing.assert_allclose(float(read(x)), want, rtol=1e-6)


def test_a_model_reached_through_a_method_or_a_property_is_bound():
    class Agent:
        def __init__(self):
            self._net = nn.Linear(3, 1)

        @property
        def net(self):
            return self._net

        def value(self, x):
            return self.net(x)

        def ev(self, x):
            with spx.no_grad():
                return self.value(x).sum()

    agent = Agent()
    step = spx.compile(agent.ev)
    x = spx.tensor(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))
    step(x)
    with spx.no_grad():
        agent._net.weight.mul_(2.0)  # a later update, outside the step, must be seen
        want = float(agent._net(x).sum())
    np.testing.assert_allclose(float(step(x)), want, rtol=1e-6)


def test_a_model_of_another_thread_read_as_a_constant_raises():
    import threading

    model = nn.Linear(3, 1)  # built on this thread, compiled and called on a worker
    models = [model]
    x = spx.ones(2, 3)
    errors: list[BaseException] = []

    def worker():
        try:
            spx.compile(lambda x: models[0](x).sum())(x)
        except RuntimeError as e:
            errors.append(e)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert len(errors) == 1 and "parameter" in str(errors[0]) and "of a Linear" in str(errors[0])
