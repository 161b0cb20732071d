"""OneCycleLR against torch: cos and linear anneal, three phases, momentum cycling of SGD's
momentum and Adam's betas[0], per-group max_lr, epochs x steps_per_epoch, state_dict, errors."""

import pytest

from spx.optim import lr_scheduler
from tests.optim.lr_scheduler._schedules import (
    check_state_dict_round_trip,
    compare_schedules,
    twin_optimizers,
)

torch = pytest.importorskip("torch")
# torch warns when its scheduler steps without an optimizer step; the lr values are what count.
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)`")


@pytest.mark.parametrize(
    ("name", "opt_kwargs"),
    [("SGD", dict(momentum=0.9)), ("SGD", {}), ("Adam", {}), ("RMSprop", dict(momentum=0.5))],
)
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(max_lr=1.0, total_steps=25),
        dict(max_lr=[0.5, 2.0], total_steps=25, anneal_strategy="linear", pct_start=0.4),
        dict(max_lr=1.0, epochs=5, steps_per_epoch=5, three_phase=True),
        dict(max_lr=1.0, total_steps=25, base_momentum=[0.8, 0.7], max_momentum=0.99),
    ],
    ids=["cos", "linear-per-group", "three-phase", "momentum-range"],
)
def test_lr_and_momentum_match_torch(name, opt_kwargs, kwargs):
    # compare_schedules also checks group["momentum"] / group["betas"] after every step.
    compare_schedules(lambda opt, L: L.OneCycleLR(opt, **kwargs), steps=24, name=name, **opt_kwargs)


def test_without_cycle_momentum_leaves_momentum():
    _, opt = twin_optimizers("SGD", momentum=0.9)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10, cycle_momentum=False)
    sched.step()
    assert opt.param_groups[0]["momentum"] == 0.9


def test_state_dict_round_trip():
    check_state_dict_round_trip(
        lambda opt, L: L.OneCycleLR(opt, max_lr=1.0, total_steps=25), name="Adam", more=15
    )


def test_stepping_past_total_steps_raises():
    torch_opt, spx_opt = twin_optimizers()
    torch_sched = torch.optim.lr_scheduler.OneCycleLR(torch_opt, max_lr=1.0, total_steps=3)
    spx_sched = lr_scheduler.OneCycleLR(spx_opt, max_lr=1.0, total_steps=3)
    for _ in range(3):
        torch_sched.step()
        spx_sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times"):
        torch_sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times"):
        spx_sched.step()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(max_lr=1.0), "You must define either total_steps OR"),
        (dict(max_lr=1.0, total_steps=0), "Expected positive integer total_steps"),
        (dict(max_lr=1.0, epochs=2, steps_per_epoch=-1), "Expected positive integer steps_per"),
        (dict(max_lr=1.0, total_steps=5, pct_start=1.5), "Expected float between 0 and 1"),
        (dict(max_lr=1.0, total_steps=5, anneal_strategy="exp"), "anneal_strategy must be one"),
        (dict(max_lr=[1.0], total_steps=5), "max_lr must have the same length"),
    ],
)
def test_invalid_arguments_raise_like_torch(kwargs, match):
    torch_opt, spx_opt = twin_optimizers()
    with pytest.raises(ValueError, match=match):
        torch.optim.lr_scheduler.OneCycleLR(torch_opt, **kwargs)
    with pytest.raises(ValueError, match=match):
        lr_scheduler.OneCycleLR(spx_opt, **kwargs)


def test_cycle_momentum_needs_momentum_or_betas():
    torch_opt, spx_opt = twin_optimizers("Adagrad")
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        torch.optim.lr_scheduler.OneCycleLR(torch_opt, max_lr=1.0, total_steps=5)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        lr_scheduler.OneCycleLR(spx_opt, max_lr=1.0, total_steps=5)
