"""CosineAnnealingWarmRestarts against torch: lr sequences over 30 steps (T_mult 1 and 2),
fractional step(epoch) as in an inner batch loop, state_dict round trip, validation."""

import pytest

from spx.optim import lr_scheduler
from tests.optim.lr_scheduler._schedules import (
    check_state_dict_round_trip,
    compare_schedules,
    same,
    twin_optimizers,
)

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)`")

SCHEDULES = {
    "T_mult-1": lambda opt, L: L.CosineAnnealingWarmRestarts(opt, T_0=5),
    "T_mult-2": lambda opt, L: L.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=1e-3),
}


@pytest.mark.parametrize("name", ["SGD", "Adam"])
@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_lr_sequence_matches_torch(schedule, name):
    compare_schedules(SCHEDULES[schedule], steps=30, name=name)


@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_state_dict_round_trip(schedule):
    check_state_dict_round_trip(SCHEDULES[schedule])


@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_fractional_epochs_match_torch(schedule):
    torch_opt, spx_opt = twin_optimizers()
    torch_sched = SCHEDULES[schedule](torch_opt, torch.optim.lr_scheduler)
    spx_sched = SCHEDULES[schedule](spx_opt, lr_scheduler)
    iters = 4
    for epoch in range(12):
        for i in range(iters):
            torch_sched.step(epoch + i / iters)
            spx_sched.step(epoch + i / iters)
            assert same(spx_sched.get_last_lr(), torch_sched.get_last_lr()), (epoch, i)
            assert spx_sched.last_epoch == torch_sched.last_epoch
            assert same(spx_sched.T_cur, torch_sched.T_cur)
            assert spx_sched.T_i == torch_sched.T_i


def test_interleaved_step_and_epoch_match_torch():
    torch_opt, spx_opt = twin_optimizers()
    make = SCHEDULES["T_mult-2"]
    torch_sched, spx_sched = make(torch_opt, torch.optim.lr_scheduler), make(spx_opt, lr_scheduler)
    for arg in [None, None, 7.5, None, 2, None, None, 20.25, None]:
        torch_sched.step(arg)
        spx_sched.step(arg)
        assert same(spx_sched.get_last_lr(), torch_sched.get_last_lr()), arg


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(T_0=0), "Expected positive integer T_0"),
        (dict(T_0=2.0), "Expected positive integer T_0"),
        (dict(T_0=2, T_mult=0), "Expected integer T_mult >= 1"),
        (dict(T_0=2, eta_min="0"), "Expected float or int eta_min"),
    ],
)
def test_validation_like_torch(kwargs, match):
    torch_opt, spx_opt = twin_optimizers()
    with pytest.raises(ValueError, match=match):
        torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(torch_opt, **kwargs)
    with pytest.raises(ValueError, match=match):
        lr_scheduler.CosineAnnealingWarmRestarts(spx_opt, **kwargs)


def test_negative_epoch_raises():
    _, spx_opt = twin_optimizers()
    sched = lr_scheduler.CosineAnnealingWarmRestarts(spx_opt, T_0=2)
    with pytest.raises(ValueError, match="Expected non-negative epoch"):
        sched.step(-1)
