"""ReduceLROnPlateau against torch: the same metric sequences in every mode, patience,
cooldown, per-group min_lr, eps; state_dict round trip; validation."""

import copy

import numpy as np
import pytest

from spx.optim import lr_scheduler
from tests.optim.lr_scheduler._schedules import compare_schedules, same, twin_optimizers

torch = pytest.importorskip("torch")
# torch warns when its scheduler steps without an optimizer step; the lr values are what count.
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)`")

# Improves, plateaus, improves a little (below / above the threshold), plateaus again.
METRICS = [1.0, 0.9, 0.9, 0.9, 0.9, 0.89995, 0.8, 0.8, 0.8, 0.8, 0.8, 0.7, 0.7, 0.7] * 2
NOISY = list(np.random.default_rng(0).standard_normal(30).cumsum() * 0.1)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(patience=2),
        dict(mode="max", patience=1, factor=0.5),
        dict(threshold_mode="abs", threshold=0.05, patience=1, cooldown=2),
        dict(mode="max", threshold_mode="abs", patience=0, min_lr=[0.01, 0.02]),
        dict(patience=0, factor=0.5, min_lr=0.029, eps=1e-3),
    ],
    ids=["min-rel", "max-rel", "min-abs-cooldown", "max-abs-min-lrs", "eps"],
)
@pytest.mark.parametrize("metrics", [METRICS, NOISY], ids=["plateaus", "random-walk"])
def test_lr_sequence_matches_torch(kwargs, metrics):
    compare_schedules(
        lambda opt, L: L.ReduceLROnPlateau(opt, **kwargs), steps=len(metrics), metrics=metrics
    )


def test_state_dict_round_trip():
    torch_opt, spx_opt = twin_optimizers()
    torch_sched = torch.optim.lr_scheduler.ReduceLROnPlateau(torch_opt, patience=1, cooldown=1)
    spx_sched = lr_scheduler.ReduceLROnPlateau(spx_opt, patience=1, cooldown=1)
    for m in METRICS[:9]:
        torch_sched.step(m)
        spx_sched.step(m)
    saved = spx_sched.state_dict()
    assert set(saved) == set(torch_sched.state_dict())
    resumed_opt = twin_optimizers()[1]
    resumed_opt.load_state_dict(spx_opt.state_dict())
    resumed = lr_scheduler.ReduceLROnPlateau(resumed_opt)
    resumed.load_state_dict(copy.deepcopy(saved))
    for m in METRICS[9:]:
        torch_sched.step(m)
        resumed.step(m)
        assert same(resumed.get_last_lr(), torch_sched.get_last_lr())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(factor=1.0), "Factor should be < 1.0"),
        (dict(mode="lowest"), "mode lowest is unknown"),
        (dict(threshold_mode="pct"), "threshold mode pct is unknown"),
        (dict(min_lr=[0.1]), "expected 2 min_lrs"),
    ],
)
def test_invalid_arguments_raise_like_torch(kwargs, match):
    torch_opt, spx_opt = twin_optimizers()
    with pytest.raises(ValueError, match=match):
        torch.optim.lr_scheduler.ReduceLROnPlateau(torch_opt, **kwargs)
    with pytest.raises(ValueError, match=match):
        lr_scheduler.ReduceLROnPlateau(spx_opt, **kwargs)
