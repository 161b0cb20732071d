"""The optimizers under compilation: ``opt.step()`` traced inside ``jax.jit`` with traced
hyperparameters, inside ``spx.compile`` with a scheduler, and eager steps whose lr / momentum /
betas a scheduler changes every step without recompiling the update."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx.optim import lr_scheduler
from tests.optim._parity import assert_match, set_grads, twin_params

torch = pytest.importorskip("torch")


def _jitted_step(opt, params):
    """``opt.step()`` as a pure function of arrays; the objects are restored after tracing."""

    def step(datas, grads, states, hparams):
        group = opt.param_groups[0]
        saved = {k: group[k] for k in hparams}
        try:
            for p, d, g in zip(params, datas, grads, strict=True):
                p.data, p.grad = d, g
            opt.state = {p: s for p, s in zip(params, states, strict=True) if s is not None}
            group.update(hparams)
            opt.step()
            return [p.data for p in params], [opt.state.get(p) for p in params]
        finally:
            group.update(saved)

    return jax.jit(step)


@pytest.mark.parametrize(
    ("name", "kwargs", "traced"),
    [
        ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01), ("lr", "dampening")),
        ("Adam", dict(lr=1e-2, amsgrad=True, weight_decay=0.01), ("lr", "betas", "eps")),
        ("RMSprop", dict(lr=1e-2, centered=True, alpha=0.75), ("lr", "alpha")),
        ("Adagrad", dict(lr=0.1, lr_decay=0.01), ("lr", "lr_decay")),
    ],
)
def test_step_inside_jax_jit_with_traced_hyperparameters(name, kwargs, traced):
    torch_params, spx_params = twin_params()
    torch_opt = getattr(torch.optim, name)(torch_params, **kwargs)
    spx_opt = getattr(spx.optim, name)(spx_params, **kwargs)
    step = _jitted_step(spx_opt, spx_params)
    datas = [p.data for p in spx_params]
    states = [spx_opt.state.get(p) for p in spx_params]
    rng = np.random.default_rng(0)
    for i in range(20):
        set_grads(torch_params, spx_params, rng)
        torch_opt.param_groups[0]["lr"] = kwargs["lr"] * (1 + i) / 20  # a hand-made schedule
        hparams = {k: torch_opt.param_groups[0][k] for k in traced}
        datas, states = step(datas, [p.grad for p in spx_params], states, hparams)
        torch_opt.step()
        for p, d, s in zip(spx_params, datas, states, strict=True):
            p.data = d
            spx_opt.state[p] = s
        assert_match(torch_opt, spx_opt, torch_params, spx_params, f"after step {i + 1}")
    # One program per state layout: the first step creates the state (Adagrad's constructor
    # already did), then a single program serves every step and every lr.
    assert step._cache_size() == (1 if name == "Adagrad" else 2)


class _CountingSGD(spx.optim.SGD):
    traces = 0

    def _update(self, *args):
        type(self).traces += 1
        return super()._update(*args)


class _CountingAdam(spx.optim.Adam):
    traces = 0

    def _update(self, *args):
        type(self).traces += 1
        return super()._update(*args)


class _CountingRMSprop(spx.optim.RMSprop):
    traces = 0

    def _update(self, *args):
        type(self).traces += 1
        return super()._update(*args)


@pytest.mark.parametrize(
    ("spx_cls", "torch_name", "kwargs", "make_scheduler", "expected_traces"),
    [
        # SGD traces twice: the first momentum step starts the buffer (torch: buf = grad).
        (_CountingSGD, "SGD", dict(lr=0.1, momentum=0.9), lambda o, L: L.StepLR(o, 3), 2),
        # OneCycleLR rewrites lr and betas[0] every step ...
        (
            _CountingAdam,
            "Adam",
            dict(lr=1e-2),
            lambda o, L: L.OneCycleLR(o, max_lr=0.02, total_steps=20),
            1,
        ),
        # ... and lr and momentum for RMSprop.
        (
            _CountingRMSprop,
            "RMSprop",
            dict(lr=1e-3, momentum=0.9, alpha=0.75),
            lambda o, L: L.OneCycleLR(o, max_lr=2e-3, total_steps=20),
            1,
        ),
    ],
)
def test_scheduler_changes_do_not_recompile(
    spx_cls, torch_name, kwargs, make_scheduler, expected_traces
):
    torch_params, spx_params = twin_params()
    torch_opt = getattr(torch.optim, torch_name)(torch_params, **kwargs)
    spx_opt = spx_cls(spx_params, **kwargs)
    torch_sched = make_scheduler(torch_opt, torch.optim.lr_scheduler)
    spx_sched = make_scheduler(spx_opt, lr_scheduler)
    spx_cls.traces = 0
    rng = np.random.default_rng(0)
    for i in range(19):
        set_grads(torch_params, spx_params, rng)
        torch_opt.step()
        spx_opt.step()
        torch_sched.step()
        spx_sched.step()
        assert spx_sched.get_last_lr() == torch_sched.get_last_lr()
        assert_match(torch_opt, spx_opt, torch_params, spx_params, f"after step {i + 1}")
    assert spx_cls.traces == expected_traces
    ((compiled, _record),) = spx_opt._compiled.values()
    assert compiled._cache_size() == expected_traces


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("SGD", dict(lr=0.05, momentum=0.9)),
        ("Adam", dict(lr=1e-2)),
        ("RMSprop", dict(lr=1e-3, momentum=0.5, alpha=0.75)),
    ],
)
def test_spx_compile_with_one_cycle_matches_torch(name, kwargs):
    torch_params, spx_params = twin_params()
    torch_opt = getattr(torch.optim, name)(torch_params, **kwargs)
    spx_opt = getattr(spx.optim, name)(spx_params, **kwargs)
    torch_sched = torch.optim.lr_scheduler.OneCycleLR(torch_opt, max_lr=0.02, total_steps=20)
    spx_sched = lr_scheduler.OneCycleLR(spx_opt, max_lr=0.02, total_steps=20)

    @spx.compile
    def step(opt, grads):
        for p, g in zip(spx_params, grads, strict=True):
            p.grad = g
        opt.step()

    rng = np.random.default_rng(0)
    for i in range(19):
        set_grads(torch_params, spx_params, rng)
        step(spx_opt, [p.grad for p in spx_params])
        torch_opt.step()
        torch_sched.step()
        spx_sched.step()
        for p, tp in zip(spx_params, torch_params, strict=True):
            np.testing.assert_allclose(
                np.asarray(p.data), tp.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=str(i)
            )
    assert step.trace_count == 2  # without state, then with it; never for a new lr


def test_traced_switch_without_a_concrete_value_explains():
    # momentum decides RMSprop's state layout; traced from the start it was never seen.
    params = [spx.nn.Parameter(jnp.ones(3))]
    opt = spx.optim.RMSprop(params, momentum=0.9)

    @jax.jit
    def step(momentum, grad):
        opt.param_groups[0]["momentum"] = momentum
        params[0].grad = grad
        opt.step()

    with pytest.raises(TypeError, match="never seen concretely"):
        step(0.9, jnp.ones(3))


def _twin_loss(params, x):
    # The same expression for torch and spx tensors: tensor methods only.
    return sum(((p * x).tanh() ** 2).mean() for p in params)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("SGD", dict(lr=0.05, momentum=0.9)),
        ("Adam", dict(lr=1e-2)),
        ("RMSprop", dict(lr=1e-3, momentum=0.5, alpha=0.75)),
    ],
)
def test_loss_backward_with_one_cycle_matches_torch(name, kwargs, compiled):
    # torch's loop renamed: zero_grad, loss.backward(), step, scheduler step; each step's
    # loss, parameters and grads equal torch's, eager and inside spx.compile.
    torch_params, spx_params = twin_params()
    torch_opt = getattr(torch.optim, name)(torch_params, **kwargs)
    spx_opt = getattr(spx.optim, name)(spx_params, **kwargs)
    torch_sched = torch.optim.lr_scheduler.OneCycleLR(torch_opt, max_lr=0.02, total_steps=20)
    spx_sched = lr_scheduler.OneCycleLR(spx_opt, max_lr=0.02, total_steps=20)

    def step(opt, x):
        opt.zero_grad()
        loss = _twin_loss(spx_params, x)
        loss.backward()
        opt.step()
        return loss

    step = spx.compile(step) if compiled else step
    rng = np.random.default_rng(0)
    for i in range(19):
        x = float(rng.uniform(0.5, 2.0))
        torch_opt.zero_grad()
        torch_loss = _twin_loss(torch_params, x)
        torch_loss.backward()
        torch_opt.step()
        loss = step(spx_opt, spx.tensor(x))
        torch_sched.step()
        spx_sched.step()
        np.testing.assert_allclose(loss.item(), torch_loss.item(), rtol=1e-5, err_msg=str(i))
        assert_match(torch_opt, spx_opt, torch_params, spx_params, f"after step {i + 1}")
        for p, tp in zip(spx_params, torch_params, strict=True):
            np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-6)
    if compiled:
        assert step.trace_count == 2  # without state, then with it; never for a new lr
