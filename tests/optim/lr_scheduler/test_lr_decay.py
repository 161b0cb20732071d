"""StepLR, MultiStepLR, ExponentialLR, LinearLR, ConstantLR, PolynomialLR against torch: lr
sequences over 25 steps on two param groups (SGD and Adam), closed-form step(epoch), state_dict
round trip, validation."""

import pytest

from spx.optim import lr_scheduler
from tests.optim.lr_scheduler._schedules import (
    check_state_dict_round_trip,
    compare_schedules,
    same,
    twin_optimizers,
)

torch = pytest.importorskip("torch")
# torch warns when its scheduler steps without an optimizer step; the lr values are what count.
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)`")

SCHEDULES = {
    "StepLR": lambda opt, L: L.StepLR(opt, step_size=3, gamma=0.5),
    "MultiStepLR": lambda opt, L: L.MultiStepLR(opt, milestones=[2, 5, 5, 11], gamma=0.3),
    "ExponentialLR": lambda opt, L: L.ExponentialLR(opt, gamma=0.9),
    "LinearLR": lambda opt, L: L.LinearLR(opt),
    "LinearLR-down": lambda opt, L: L.LinearLR(
        opt, start_factor=1.0, end_factor=0.1, total_iters=7
    ),
    "ConstantLR": lambda opt, L: L.ConstantLR(opt, factor=0.5, total_iters=4),
    "PolynomialLR": lambda opt, L: L.PolynomialLR(opt, total_iters=10, power=0.9),
    "PolynomialLR-square": lambda opt, L: L.PolynomialLR(opt, total_iters=30, power=2.0),
}


@pytest.mark.parametrize("name", ["SGD", "Adam"])
@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_lr_sequence_matches_torch(schedule, name):
    compare_schedules(SCHEDULES[schedule], name=name)


def test_step_lr_documented_values():
    _, opt = twin_optimizers(lrs=[1.0])
    sched = lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    lrs = []
    for _ in range(5):
        lrs.append(sched.get_last_lr()[0])
        sched.step()
    assert lrs == [1, 1, 0.5, 0.5, 0.25]


@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_state_dict_round_trip(schedule):
    check_state_dict_round_trip(SCHEDULES[schedule])


@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_step_with_epoch_uses_the_closed_form(schedule):
    torch_opt, spx_opt = twin_optimizers()
    torch_sched = SCHEDULES[schedule](torch_opt, torch.optim.lr_scheduler)
    spx_sched = SCHEDULES[schedule](spx_opt, lr_scheduler)
    for epoch in (4, 9, 2):
        with pytest.warns(UserWarning):
            torch_sched.step(epoch)
        with pytest.warns(UserWarning, match="epoch parameter"):
            spx_sched.step(epoch)
        assert same(spx_sched.get_last_lr(), torch_sched.get_last_lr())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [(dict(start_factor=0), "Starting multiplicative factor"), (dict(end_factor=1.5), "Ending")],
)
def test_linear_lr_validation(kwargs, match):
    torch_opt, spx_opt = twin_optimizers()
    with pytest.raises(ValueError, match=match):
        torch.optim.lr_scheduler.LinearLR(torch_opt, **kwargs)
    with pytest.raises(ValueError, match=match):
        lr_scheduler.LinearLR(spx_opt, **kwargs)
