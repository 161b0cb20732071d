"""spx.compile: a fused torch-style step gives torch's numbers and recompiles only when needed."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx._compile import sharing
from spx.nn import functional as F
from tests._torch_utils import assert_params_match, copy_torch_weights

torch = pytest.importorskip("torch")


def _pair(seed=0):
    torch.manual_seed(seed)
    t = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    s = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 4))
    copy_torch_weights(t, s)
    return t, s


class _TorchMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(6, 16), torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


class _FunctionalMLP(nn.Module):
    """_TorchMLP with the layers applied through nn.functional, so the torch-flow checks of
    spx.compile below exercise autograd, compile and the optimizer, not the layer classes."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 16), nn.Linear(16, 4)

    def forward(self, x):
        h = F.gelu(F.linear(x, self.fc1.weight, self.fc1.bias))
        return F.linear(h, self.fc2.weight, self.fc2.bias)


def _functional_pair(seed=0):
    torch.manual_seed(seed)
    t, s = _TorchMLP(), _FunctionalMLP()
    copy_torch_weights(t, s)
    return t, s


def _batches(n, seed=0):
    rng = np.random.default_rng(seed)
    return [
        (rng.standard_normal((8, 6)).astype(np.float32), rng.integers(0, 4, 8).astype(np.int32))
        for _ in range(n)
    ]


@spx.compile
def _train_step(model, opt, x, y):
    opt.zero_grad()
    loss = spx.backward(lambda m: F.cross_entropy(m(x), y), model)
    nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt.step()
    return loss


def test_compiled_adamw_training_matches_torch():
    t, s = _pair()
    topt = torch.optim.AdamW(t.parameters(), lr=1e-2)
    sopt = spx.optim.AdamW(s.parameters(), lr=1e-2)
    for x, y in _batches(6):
        topt.zero_grad()
        tl = torch.nn.functional.cross_entropy(t(torch.from_numpy(x)), torch.from_numpy(y).long())
        tl.backward()
        torch.nn.utils.clip_grad_norm_(t.parameters(), 0.5)
        topt.step()
        sl = _train_step(s, sopt, jnp.asarray(x), jnp.asarray(y))
        np.testing.assert_allclose(float(sl), tl.item(), rtol=1e-5)
    assert_params_match(t, s, rtol=1e-5, atol=1e-6)
    # Optimizer state was written back in torch's layout.
    ref = topt.state_dict()["state"][0]
    got = sopt.state_dict()["state"][0]
    np.testing.assert_allclose(
        np.asarray(got["exp_avg"]), ref["exp_avg"].numpy(), rtol=1e-5, atol=1e-7
    )
    assert float(got["step"]) == float(ref["step"]) == 6


def test_recompiles_only_on_structure_shape_or_mode_change():
    _, s = _pair()
    opt = spx.optim.SGD(s.parameters(), lr=0.1, momentum=0.9)
    step = spx.compile(_train_step.fn)
    ((x, y),) = _batches(1)
    for _ in range(4):
        step(s, opt, jnp.asarray(x), jnp.asarray(y))
    # One program for the first step (no grads or optimizer state yet), one for the rest.
    assert step.trace_count == 2
    for g in opt.param_groups:  # an lr change is a new value, not a new program
        g["lr"] = 0.05
    step(s, opt, jnp.asarray(x), jnp.asarray(y))
    assert step.trace_count == 2
    s.eval()
    step(s, opt, jnp.asarray(x), jnp.asarray(y))
    assert step.trace_count == 3
    s.train()
    step(s, opt, jnp.asarray(x), jnp.asarray(y))
    assert step.trace_count == 3
    step(s, opt, jnp.asarray(x[:4]), jnp.asarray(y[:4]))  # new shape: jax retraces the program
    assert np.isfinite(float(step(s, opt, jnp.asarray(x), jnp.asarray(y))))


def test_lr_from_scheduler_takes_effect_without_recompiling():
    t, s = _pair()
    topt = torch.optim.SGD(t.parameters(), lr=0.5)
    tsched = torch.optim.lr_scheduler.StepLR(topt, step_size=1, gamma=0.5)
    sopt = spx.optim.SGD(s.parameters(), lr=0.5)
    ssched = spx.optim.lr_scheduler.StepLR(sopt, step_size=1, gamma=0.5)
    step = spx.compile(_train_step.fn)
    for x, y in _batches(4, seed=1):
        topt.zero_grad()
        torch.nn.functional.cross_entropy(
            t(torch.from_numpy(x)), torch.from_numpy(y).long()
        ).backward()
        torch.nn.utils.clip_grad_norm_(t.parameters(), 0.5)
        topt.step()
        tsched.step()
        step(s, sopt, jnp.asarray(x), jnp.asarray(y))
        ssched.step()
    assert_params_match(t, s, rtol=1e-5, atol=1e-6)
    assert step.trace_count == 2


class _Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.5)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(self.drop(self.fc(x)))


def test_dropout_masks_are_fresh_each_call_and_reproducible():
    @spx.compile
    def forward(model, x):
        return model(x)

    x = jnp.ones((16, 4))
    spx.manual_seed(3)
    m = _Noisy()
    # (results of a compiled forward require grad, as torch.compile's: detach for numpy)
    a, b = forward(m, x).detach(), forward(m, x).detach()
    assert not np.allclose(np.asarray(a), np.asarray(b))
    spx.manual_seed(3)
    m2 = _Noisy()
    np.testing.assert_array_equal(np.asarray(forward(m2, x).detach()), np.asarray(a))
    np.testing.assert_array_equal(np.asarray(forward(m2, x).detach()), np.asarray(b))


def test_buffers_are_written_back_like_eager():
    x = jnp.asarray(np.random.default_rng(0).standard_normal((16, 4)), jnp.float32)
    spx.manual_seed(1)
    eager = _Noisy()
    for _ in range(3):
        eager(x)
    spx.manual_seed(1)
    compiled_model = _Noisy()
    step = spx.compile(lambda m, x: m(x).sum())
    for _ in range(3):
        step(compiled_model, x)
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(
            np.asarray(getattr(compiled_model.bn, name)),
            np.asarray(getattr(eager.bn, name)),
            rtol=1e-5,
            atol=1e-6,
        )
    assert int(compiled_model.bn.num_batches_tracked) == 3


def test_lazy_linear_materializes_under_compile():
    model = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.Linear(3, 1))
    w = model[0].weight
    opt = spx.optim.SGD(model.parameters(), lr=0.1)

    @spx.compile
    def step(model, opt, x):
        opt.zero_grad()
        loss = spx.backward(lambda m: m(x).mean(), model)
        opt.step()
        return loss

    for _ in range(3):
        step(model, opt, jnp.ones((2, 5)))
    assert model[0].weight is w and w.shape == (3, 5) and not w.is_uninitialized
    assert isinstance(w.data, spx.Tensor) and not isinstance(w._data, jax.core.Tracer)


def test_returning_a_module_is_a_clear_error():
    _, s = _pair()
    with pytest.raises(TypeError, match="return arrays"):
        spx.compile(lambda m: m)(s)
    # The failed trace left real arrays behind, not tracers.
    assert isinstance(s[0].weight._data, jax.Array)
    assert not isinstance(s[0].weight._data, jax.core.Tracer)


def test_unhashable_static_argument_is_a_clear_error():
    _, s = _pair()
    with pytest.raises(TypeError, match="neither an array nor hashable"):
        spx.compile(lambda m, cfg: m(jnp.ones((1, 6))).sum())(s, {1, 2})


def test_static_int_argument_recompiles_per_value():
    _, s = _pair()
    f = spx.compile(lambda m, n: m(jnp.ones((n, 6))).sum())
    assert f(s, 2).shape == () and f(s, 3).shape == ()
    f(s, 2)
    assert f.trace_count == 2


def _adamw_pair():
    t, s = _pair(1)
    return (
        t,
        s,
        torch.optim.AdamW(t.parameters(), lr=1e-2),
        spx.optim.AdamW(s.parameters(), lr=1e-2),
    )


def _torch_step(t, topt, x, y):
    topt.zero_grad()
    loss = torch.nn.functional.cross_entropy(t(torch.from_numpy(x)), torch.from_numpy(y).long())
    loss.backward()
    torch.nn.utils.clip_grad_norm_(t.parameters(), 0.5)
    topt.step()


def _program(fn):
    program = fn._plan.last[0]
    return program, fn._plan.binding


def test_every_donated_buffer_is_updated_in_place():
    """jax pairs donated inputs with outputs by shape and dtype, in order; the state must come
    back in the order it went in, or XLA copies parameters and moments on every step."""
    _, s, _, sopt = _adamw_pair()
    for x, y in _batches(3):
        _train_step(s, sopt, jnp.asarray(x), jnp.asarray(y))
    program, binding = _program(_train_step)
    flat = binding.read_flat()
    live = sharing.strip([flat[i] for i in program.live], program.in_shared)
    x, y = (jnp.asarray(a) for a in _batches(1)[0])
    compiled = program.jitted.lower(
        live[: program.donated],
        live[program.donated :],
        [flat[i] for i in program.constant],
        binding.read_hparams(),
        [x, y],
    ).compile()
    header = compiled.as_text().split("\n", 1)[0]
    aliases = dict(
        (int(o), int(i)) for o, i in re.findall(r"\{(\d+)\}: \((\d+), \{\}, may-alias\)", header)
    )
    n_donated = len(jax.tree_util.tree_leaves(live[: program.donated]))
    assert n_donated == 4 + 2 * 4 + 1  # params, Adam moments, one shared step
    assert aliases == {k: k for k in range(n_donated)}


def test_a_lockstep_group_shares_one_step_array_through_the_program():
    t, s, topt, sopt = _adamw_pair()
    for x, y in _batches(4):
        _torch_step(t, topt, x, y)
        _train_step(s, sopt, jnp.asarray(x), jnp.asarray(y))
    steps = [sopt.state[p]["step"] for p in s.parameters()]
    assert all(st is steps[0] for st in steps) and float(steps[0]) == 4.0
    program, _ = _program(_train_step)
    assert len(program.in_shared) == len(steps) - 1  # the step enters the program once
    assert _train_step.trace_count == 2  # first step (no state yet), then the steady state
    assert_params_match(t, s, rtol=1e-5, atol=1e-6)
    # state_dict hands out torch's layout: one step per parameter, each its own array.
    sd = sopt.state_dict()["state"]
    assert sd[0]["step"] is not sd[1]["step"] and float(sd[1]["step"]) == 4.0


def test_partial_steps_after_lockstep_steps_keep_every_step_count():
    """Parameters that sit a step out keep their (shared) step; eager and compiled."""
    tw = [torch.nn.Parameter(torch.ones(3) * (i + 1)) for i in range(3)]
    sw = [spx.nn.Parameter(jnp.ones(3) * (i + 1)) for i in range(3)]
    topt, sopt = torch.optim.Adam(tw, lr=0.1), spx.optim.Adam(sw, lr=0.1)

    @spx.compile
    def compiled_step(opt):
        opt.step()

    plan = [((0, 1, 2), True), ((0, 1, 2), True), ((0,), True), ((1,), False), ((0, 1, 2), True)]
    for i, (active, compiled) in enumerate(plan):
        for k in range(3):
            tw[k].grad = torch.full((3,), 0.5 + k + i) if k in active else None
            sw[k].grad = jnp.full((3,), 0.5 + k + i) if k in active else None
        topt.step()
        compiled_step(sopt) if compiled else sopt.step()
    for t, s in zip(tw, sw, strict=True):
        np.testing.assert_allclose(np.asarray(s.data), t.detach().numpy(), rtol=1e-6)
        assert float(sopt.state[s]["step"]) == float(topt.state[t]["step"])
    assert [float(sopt.state[s]["step"]) for s in sw] == [4.0, 4.0, 3.0]


def test_state_the_user_replaces_or_shares_between_calls_still_steps_correctly():
    tw = [torch.nn.Parameter(torch.tensor([1.0, -2.0, 3.0]) * (i + 1)) for i in range(3)]
    sw = [spx.nn.Parameter(jnp.asarray([1.0, -2.0, 3.0]) * (i + 1)) for i in range(3)]
    topt, sopt = torch.optim.Adam(tw, lr=0.1), spx.optim.Adam(sw, lr=0.1)

    def loss(a, b, c, x):
        return ((a * x) ** 2).sum() + (b * x).sum() ** 2 + (c**2 * x).sum()

    @spx.compile
    def step(a, b, c, opt, x):
        opt.zero_grad()
        spx.backward(lambda a, b, c: loss(a, b, c, x), a, b, c)
        opt.step()

    def both_step(i):
        x = np.full(3, 0.5 + i, np.float32)
        topt.zero_grad()
        loss(*tw, torch.from_numpy(x)).backward()
        topt.step()
        step(*sw, sopt, jnp.asarray(x))

    for i in range(3):
        both_step(i)
    # Make two moments the same array (by value: torch's equivalent is a copy). The program
    # in use takes each array once; XLA refuses it before running and a new one steps.
    topt.state[tw[2]]["exp_avg"] = topt.state[tw[0]]["exp_avg"].clone()
    sopt.state[sw[2]]["exp_avg"] = sopt.state[sw[0]]["exp_avg"]
    both_step(3)
    # Replace one parameter's step: the group's step is no longer one array.
    topt.state[tw[1]]["step"] = torch.tensor(2.0)
    sopt.state[sw[1]]["step"] = jnp.asarray(2.0)
    both_step(4)
    both_step(5)
    for t, s in zip(tw, sw, strict=True):
        np.testing.assert_allclose(np.asarray(s.data), t.detach().numpy(), rtol=1e-6)
        # exp_avg_sq differs by ~1.3e-5 relative in eager spx too: 1 - beta2 in float32.
        for key in ("exp_avg", "exp_avg_sq", "step"):
            np.testing.assert_allclose(
                np.asarray(sopt.state[s][key]), topt.state[t][key].numpy(), rtol=2e-5, atol=1e-7
            )


def test_without_donation_old_arrays_stay_readable_and_numbers_match():
    t, s, topt, sopt = _adamw_pair()
    step = spx.compile(_train_step.fn, donate=False)
    kept = jnp.asarray(s[0].weight.detach())  # the weight's array itself, not a copy
    assert kept is s[0].weight._data
    alias = s[0].weight.data  # torch's detached alias: shows later updates
    before = np.asarray(kept).copy()
    for x, y in _batches(3):
        _torch_step(t, topt, x, y)
        step(s, sopt, jnp.asarray(x), jnp.asarray(y))
    np.testing.assert_array_equal(np.asarray(kept), before)  # still alive, unchanged
    assert_params_match(t, s, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(alias.numpy(), s[0].weight.detach().numpy())


def _loss_backward_step(model, opt, x, y):
    # torch's training step with the import renamed.
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt.step()
    return loss


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize(
    "make",
    [
        pytest.param(_pair, id="nn-layers"),
        pytest.param(_functional_pair, id="functional"),
    ],
)
def test_loss_backward_training_matches_torch_step_by_step(make, compiled):
    t, s = make()
    topt = torch.optim.AdamW(t.parameters(), lr=1e-2)
    sopt = spx.optim.AdamW(s.parameters(), lr=1e-2)
    step = spx.compile(_loss_backward_step) if compiled else _loss_backward_step
    for i, (x, y) in enumerate(_batches(6)):
        topt.zero_grad()
        tl = torch.nn.functional.cross_entropy(t(torch.from_numpy(x)), torch.from_numpy(y).long())
        tl.backward()
        torch.nn.utils.clip_grad_norm_(t.parameters(), 0.5)
        topt.step()
        sl = step(s, sopt, spx.from_numpy(x), spx.from_numpy(y).long())
        assert isinstance(sl, spx.Tensor)
        np.testing.assert_allclose(sl.item(), tl.item(), rtol=1e-5, err_msg=f"step {i}")
        assert_params_match(t, s, rtol=1e-5, atol=1e-6)
        for (name, tp), sp in zip(t.named_parameters(), s.parameters(), strict=True):
            # As in torch, .grad holds the step's (clipped) gradients afterwards.
            np.testing.assert_allclose(
                sp.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"{name} {i}"
            )
    if compiled:
        assert step.trace_count == 2  # no grads or optimizer state yet, then the steady state


def test_values_recorded_before_a_donating_step_keep_the_old_numbers():
    # torch computes `c = w.clone()` at once; spx records it, and the compiled step donates
    # the weight's array: the recorded values must be computed before, from the old array.
    _, s, _, sopt = _adamw_pair()
    for x, y in _batches(2):
        _train_step(s, sopt, jnp.asarray(x), jnp.asarray(y))  # steady state: donates
    w = s[0].weight
    before = w.detach().numpy().copy()
    clone, doubled, alias = w.detach().clone(), w.detach() * 2, w.data
    for x, y in _batches(2, seed=1):
        _train_step(s, sopt, jnp.asarray(x), jnp.asarray(y))
    np.testing.assert_array_equal(clone.numpy(), before)
    np.testing.assert_array_equal(doubled.numpy(), before * 2)
    assert not np.array_equal(alias.numpy(), before)  # the alias shows the update ...
    np.testing.assert_array_equal(alias.numpy(), w.detach().numpy())  # ... like torch's


def test_in_place_writes_to_tensor_arguments_reach_the_caller():
    t, s, topt, sopt = _adamw_pair()

    @spx.compile
    def step(model, opt, x, y, total, seen):
        loss = _train_step.fn(model, opt, x, y)
        total.add_(loss.detach())  # a running sum, as torch scripts keep one
        seen += 1
        return loss

    total, counts = spx.zeros(()), spx.zeros(3)
    seen = counts[1:]  # a view: the write goes through to counts
    alias = total.detach()
    losses = []
    for x, y in _batches(3):
        _torch_step(t, topt, x, y)
        losses.append(step(s, sopt, spx.from_numpy(x), spx.from_numpy(y), total, seen).item())
    np.testing.assert_allclose(total.item(), sum(losses), rtol=1e-6)
    assert alias.item() == total.item()
    assert counts.tolist() == [0.0, 3.0, 3.0]
    assert_params_match(t, s, rtol=1e-5, atol=1e-6)
    assert step.trace_count == 2


def test_an_argument_with_autograd_history_is_a_clear_error():
    _, s = _pair()
    h = s[0].weight.sum()  # requires grad: computed from a Parameter outside the step
    f = spx.compile(lambda m, h: m(jnp.ones((2, 6))).sum() * h)
    with pytest.raises(TypeError, match=r"autograd history.*t\.detach\(\)"):
        f(s, h)


def test_a_call_with_other_objects_or_roles_is_not_taken_for_the_last_one():
    """Repeated calls skip re-planning; a call with another model, or with a tensor that began
    or stopped requiring grad, still binds what it was given (a hand-computed reference)."""

    @spx.compile
    def step(w, x):
        loss = (w * x).sum()
        if w.requires_grad:
            loss.backward()
        return loss

    x = spx.tensor([1.0, 2.0, 3.0])
    a, b = spx.tensor([1.0, 1.0, 1.0]), spx.tensor([2.0, 0.0, 1.0])
    assert step(a, x).item() == 6.0  # a: an array input (no grad)
    assert step(b, x).item() == 5.0  # another tensor in the same place
    b.requires_grad_()  # now trainable state: backward reaches its .grad
    assert step(b, x).item() == 5.0
    assert b.grad.tolist() == [1.0, 2.0, 3.0]
    b.requires_grad_(False)  # an input again: no new gradient
    b.grad = None
    assert step(b, x).item() == 5.0
    assert b.grad is None

    class Mine(spx.Tensor):  # a Tensor subclass: state only while it requires grad, too
        pass

    c = Mine([2.0, 0.0, 1.0])
    c.requires_grad_()
    step(c, x)
    c.requires_grad_(False)
    c.grad = None
    assert step(c, x).item() == 5.0
    assert c.grad is None

    _, s1 = _pair(0)
    _, s2 = _pair(1)
    o1, o2 = (spx.optim.SGD(m.parameters(), lr=0.1) for m in (s1, s2))
    ((xs, ys),) = _batches(1)
    before1 = s1[0].weight.detach().numpy().copy()
    before2 = s2[0].weight.detach().numpy().copy()
    train = spx.compile(_train_step.fn)
    train(s1, o1, jnp.asarray(xs), jnp.asarray(ys))
    after1 = s1[0].weight.detach().numpy().copy()
    train(s2, o2, jnp.asarray(xs), jnp.asarray(ys))  # the second model steps, not the first
    np.testing.assert_array_equal(s1[0].weight.detach().numpy(), after1)
    assert not np.array_equal(after1, before1)
    assert not np.array_equal(s2[0].weight.detach().numpy(), before2)


def test_returning_state_tensors_returns_their_values_after_the_step():
    # `return model.weight.grad, bn.running_mean` returned the values from before the first
    # step on every call (the restore after tracing wrote old values into the same objects).
    torch.manual_seed(0)
    t_lin, t_bn = torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2)
    lin, bn = nn.Linear(3, 2), nn.BatchNorm1d(2)
    copy_torch_weights(t_lin, lin)
    t_opt = torch.optim.SGD(t_lin.parameters(), lr=0.1)
    opt = spx.optim.SGD(lin.parameters(), lr=0.1)

    @spx.compile
    def step(lin, bn, opt, x):
        opt.zero_grad()
        (bn(lin(x)) * spx.tensor([[1.0, -2.0]])).tanh().sum().backward()
        opt.step()
        return lin.weight.grad, bn.running_mean, lin.weight.detach()  # an alias of state too

    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.normal(size=(4, 3)).astype(np.float32)
        g, rm, w = step(lin, bn, opt, spx.tensor(x))
        t_opt.zero_grad()
        (t_bn(t_lin(torch.tensor(x))) * torch.tensor([[1.0, -2.0]])).tanh().sum().backward()
        t_opt.step()
        np.testing.assert_allclose(g.numpy(), t_lin.weight.grad.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(rm.numpy(), t_bn.running_mean.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(
            w.numpy(force=True), t_lin.weight.detach().numpy(), rtol=1e-5, atol=1e-6
        )
