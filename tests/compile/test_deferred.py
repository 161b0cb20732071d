"""An LR scheduler stepped inside a compiled step runs after each call, as torch's does per
step (its Python would otherwise run once, while the step is traced)."""

import numpy as np
import pytest

import spx
from tests._torch_utils import assert_params_match, copy_torch_weights

torch = pytest.importorskip("torch")

SCHEDULERS = {
    "StepLR": lambda lib, opt: lib.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5),
    "OneCycleLR": lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=0.2, total_steps=8
    ),
    "SequentialLR": lambda lib, opt: lib.optim.lr_scheduler.SequentialLR(
        opt,
        [
            lib.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=2),
            lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.7),
        ],
        milestones=[2],
    ),
    "CosineAnnealingWarmRestarts": lambda lib, opt: (
        lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3)
    ),
}


def _pair():
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    s = spx.nn.Sequential(spx.nn.Linear(4, 8), spx.nn.Tanh(), spx.nn.Linear(8, 1))
    copy_torch_weights(t, s)
    return t, s


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_stepped_inside_a_compiled_step_follows_torch(name):
    t, s = _pair()
    t_opt = torch.optim.SGD(t.parameters(), lr=0.1, momentum=0.9)
    s_opt = spx.optim.SGD(s.parameters(), lr=0.1, momentum=0.9)
    t_sched, s_sched = SCHEDULERS[name](torch, t_opt), SCHEDULERS[name](spx, s_opt)

    @spx.compile
    def step(x, y):
        s_opt.zero_grad()
        loss = ((s(x) - y) ** 2).mean()
        loss.backward()
        s_opt.step()
        s_sched.step()
        return loss

    rng = np.random.default_rng(0)
    for _ in range(7):
        x, y = rng.standard_normal((6, 4), np.float32), rng.standard_normal((6, 1), np.float32)
        t_opt.zero_grad()
        t_loss = ((t(torch.tensor(x)) - torch.tensor(y)) ** 2).mean()
        t_loss.backward()
        t_opt.step()
        t_sched.step()
        s_loss = step(spx.tensor(x), spx.tensor(y))
        np.testing.assert_allclose(float(s_loss), t_loss.item(), rtol=1e-5)
        assert s_sched.get_last_lr() == pytest.approx(t_sched.get_last_lr(), rel=1e-6)
        assert s_opt.param_groups[0]["lr"] == pytest.approx(t_opt.param_groups[0]["lr"])
        assert s_sched.last_epoch == t_sched.last_epoch
    assert_params_match(t, s, rtol=1e-5, atol=1e-6)
    assert step.trace_count <= 2  # the lr is fed in each call, not traced in


@pytest.mark.parametrize(
    "misuse,match",
    [
        ("scheduler before optimizer", r"Call optimizer.step\(\) first"),
        ("get_last_lr inside", r"Read it after the call"),
    ],
)
def test_scheduler_misuse_in_a_compiled_step_raises_with_the_fix(misuse, match):
    _, s = _pair()
    opt = spx.optim.SGD(s.parameters(), lr=0.1)
    sched = spx.optim.lr_scheduler.StepLR(opt, step_size=1)

    @spx.compile
    def step(x):
        opt.zero_grad()
        s(x).sum().backward()
        if misuse == "scheduler before optimizer":
            sched.step()
            opt.step()
            return None
        opt.step()
        sched.step()
        return sched.get_last_lr()[0]  # a trace-time constant: refused

    with pytest.raises(RuntimeError, match=match):
        step(spx.ones(2, 4))


def test_plateau_with_a_metric_computed_in_the_step_raises_with_the_fix():
    _, s = _pair()
    opt = spx.optim.SGD(s.parameters(), lr=0.1)
    sched = spx.optim.lr_scheduler.ReduceLROnPlateau(opt)

    @spx.compile
    def step(x):
        opt.zero_grad()
        loss = s(x).sum()
        loss.backward()
        opt.step()
        sched.step(loss)
        return loss

    with pytest.raises(TypeError, match=r"Return the value from the step and call step\(\)"):
        step(spx.ones(2, 4))


FOLD_STEP = """
def step(x, y):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    sched.step()
    return loss
"""


def test_a_new_model_optimizer_and_scheduler_per_fold_are_the_ones_stepped():
    # Cross-validation: model, opt and sched rebuilt per fold under the same global names.
    # The program traced in fold 1 must not step fold 1's scheduler in fold 2.
    namespace = {}
    exec(FOLD_STEP, namespace)
    step = spx.compile(namespace["step"])
    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((6, 4), np.float32), rng.standard_normal((6, 1), np.float32))]
    for _fold in range(2):
        t, s = _pair()
        t_opt = torch.optim.SGD(t.parameters(), lr=0.1)
        t_sched = torch.optim.lr_scheduler.StepLR(t_opt, step_size=1, gamma=0.5)
        namespace["model"] = s
        namespace["opt"] = spx.optim.SGD(s.parameters(), lr=0.1)
        namespace["sched"] = spx.optim.lr_scheduler.StepLR(namespace["opt"], 1, gamma=0.5)
        for x, y in batches * 3:
            t_opt.zero_grad()
            t_loss = ((t(torch.tensor(x)) - torch.tensor(y)) ** 2).mean()
            t_loss.backward()
            t_opt.step()
            t_sched.step()
            np.testing.assert_allclose(
                float(step(spx.tensor(x), spx.tensor(y))), t_loss.item(), rtol=1e-5
            )
        assert namespace["sched"].last_epoch == t_sched.last_epoch == 3
        assert namespace["opt"].param_groups[0]["lr"] == pytest.approx(0.0125)
