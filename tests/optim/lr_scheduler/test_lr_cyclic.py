"""CyclicLR and MultiplicativeLR against torch: lr (and momentum / betas[0]) sequences over 30
steps on two param groups, state_dict round trip, validation."""

import pytest

from spx.optim import lr_scheduler
from tests.optim.lr_scheduler._schedules import (
    check_state_dict_round_trip,
    compare_schedules,
    twin_optimizers,
)

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)`")


class _Halve:
    """A callable object: its __dict__ is saved in the state dict (a lambda is not)."""

    def __init__(self):
        self.factor = 0.5

    def __call__(self, x):
        return self.factor ** (x - 1)


SCHEDULES = {
    "triangular": lambda opt, L: L.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=4),
    "triangular2": lambda opt, L: L.CyclicLR(
        opt, base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=3, step_size_down=5, mode="triangular2"
    ),
    "exp_range": lambda opt, L: L.CyclicLR(
        opt, base_lr=0.01, max_lr=0.1, step_size_up=4, mode="exp_range", gamma=0.97
    ),
    "scale_fn": lambda opt, L: L.CyclicLR(
        opt, base_lr=0.01, max_lr=0.1, step_size_up=2, scale_fn=_Halve(), cycle_momentum=False
    ),
    "MultiplicativeLR": lambda opt, L: L.MultiplicativeLR(opt, lambda epoch: 0.9 + 0.001 * epoch),
    "MultiplicativeLR-list": lambda opt, L: L.MultiplicativeLR(
        opt, [lambda e: 0.95, lambda e: 0.8 if e % 3 == 0 else 1.0]
    ),
}


@pytest.mark.parametrize(("name", "kw"), [("SGD", dict(momentum=0.9)), ("Adam", {})])
@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_lr_sequence_matches_torch(schedule, name, kw):
    compare_schedules(SCHEDULES[schedule], steps=30, name=name, **kw)


@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_state_dict_round_trip(schedule):
    check_state_dict_round_trip(SCHEDULES[schedule], momentum=0.9)


def test_cyclic_state_dict_keeps_a_callable_objects_dict():
    _, spx_opt = twin_optimizers(momentum=0.9)
    sched = SCHEDULES["scale_fn"](spx_opt, lr_scheduler)
    state = sched.state_dict()
    assert state["_scale_fn_custom"] == {"factor": 0.5}
    assert "_scale_fn_ref" not in state


def test_cyclic_needs_momentum_to_cycle_it():
    torch_opt, spx_opt = twin_optimizers("Adagrad")
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        torch.optim.lr_scheduler.CyclicLR(torch_opt, 0.01, 0.1)
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        lr_scheduler.CyclicLR(spx_opt, 0.01, 0.1)


def test_cyclic_invalid_mode():
    _, spx_opt = twin_optimizers(momentum=0.9)
    with pytest.raises(ValueError, match="mode is invalid"):
        lr_scheduler.CyclicLR(spx_opt, 0.01, 0.1, mode="square")


def test_multiplicative_rejects_a_non_callable():
    torch_opt, spx_opt = twin_optimizers()
    with pytest.raises(TypeError, match="lr_lambda should be a function"):
        torch.optim.lr_scheduler.MultiplicativeLR(torch_opt, 0.9)
    with pytest.raises(TypeError, match="lr_lambda should be a function"):
        lr_scheduler.MultiplicativeLR(spx_opt, 0.9)
