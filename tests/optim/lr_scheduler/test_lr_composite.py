"""SequentialLR and ChainedScheduler against torch: milestones, nested children, state_dict
round trip, validation."""

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


def _warmup_cosine(opt, L):
    warmup = L.LinearLR(opt, start_factor=0.1, total_iters=4)
    cosine = L.CosineAnnealingLR(opt, T_max=10, eta_min=1e-3)
    return L.SequentialLR(opt, [warmup, cosine], milestones=[4])


def _three_phases(opt, L):
    return L.SequentialLR(
        opt,
        [
            L.LinearLR(opt, start_factor=0.5, total_iters=3),
            L.ExponentialLR(opt, gamma=0.8),
            L.StepLR(opt, step_size=2, gamma=0.5),
        ],
        milestones=[3, 9],
    )


def _chained(opt, L):
    return L.ChainedScheduler(
        [L.LinearLR(opt, start_factor=0.2, total_iters=5), L.ExponentialLR(opt, gamma=0.9)]
    )


SCHEDULES = {"warmup-cosine": _warmup_cosine, "three": _three_phases, "chained": _chained}


@pytest.mark.parametrize("name", ["SGD", "Adam"])
@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_lr_sequence_matches_torch(schedule, name):
    compare_schedules(SCHEDULES[schedule], name=name)


def test_sequential_of_one_cycle_matches_torch():
    compare_schedules(
        lambda opt, L: L.SequentialLR(
            opt,
            [L.OneCycleLR(opt, max_lr=1.0, total_steps=10), L.ExponentialLR(opt, gamma=0.7)],
            milestones=[8],
        ),
        steps=20,
        momentum=0.9,
    )


@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_state_dict_round_trip(schedule):
    check_state_dict_round_trip(SCHEDULES[schedule])


def test_state_dict_nests_children():
    _, opt = twin_optimizers()
    saved = _warmup_cosine(opt, lr_scheduler).state_dict()
    assert [set(s) for s in saved["_schedulers"]] == [
        set(s)
        for s in _warmup_cosine(twin_optimizers()[0], torch.optim.lr_scheduler).state_dict()[
            "_schedulers"
        ]
    ]


def test_validation_like_torch():
    torch_opt, spx_opt = twin_optimizers()
    other_torch, other_spx = twin_optimizers()
    cases = [
        (lambda o, L: L.SequentialLR(o, [L.StepLR(o, 2), L.StepLR(o, 3)], milestones=[]),
         "number of milestones"),
        (lambda o, L: L.SequentialLR(o, [L.ReduceLROnPlateau(o)], milestones=[]),
         "does not support `ReduceLROnPlateau`"),
        (lambda o, L: L.SequentialLR(o, [], milestones=[]), "expects at least one scheduler"),
        (lambda o, L: L.ChainedScheduler([]), "expects at least one scheduler"),
    ]  # fmt: skip
    for make, match in cases:
        with pytest.raises(ValueError, match=match):
            make(torch_opt, torch.optim.lr_scheduler)
        with pytest.raises(ValueError, match=match):
            make(spx_opt, lr_scheduler)
    with pytest.raises(ValueError, match="same optimizer"):
        torch.optim.lr_scheduler.SequentialLR(
            torch_opt, [torch.optim.lr_scheduler.StepLR(other_torch, 2)], milestones=[]
        )
    with pytest.raises(ValueError, match="same optimizer"):
        lr_scheduler.SequentialLR(spx_opt, [lr_scheduler.StepLR(other_spx, 2)], milestones=[])
