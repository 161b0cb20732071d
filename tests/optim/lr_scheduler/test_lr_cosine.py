"""CosineAnnealingLR against torch: the recursive, unclamped form over several periods,
eta_min, chaining with another scheduler, resuming with last_epoch, state_dict."""

import pytest

from spx.optim import lr_scheduler
from tests.optim.lr_scheduler._schedules import (
    assert_groups_match,
    check_state_dict_round_trip,
    compare_schedules,
    same,
    twin_optimizers,
)

torch = pytest.importorskip("torch")
# torch warns when its scheduler steps without an optimizer step; the lr values are what count.
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)`")


def test_documented_values_are_not_clamped():
    _, opt = twin_optimizers(lrs=[1.0])
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    lrs = []
    for _ in range(6):
        lrs.append(sched.get_last_lr()[0])
        sched.step()
    assert lrs == pytest.approx([1, 0.853553, 0.5, 0.146447, 0, 0.146447], abs=1e-6)


@pytest.mark.parametrize("name", ["SGD", "Adam"])
@pytest.mark.parametrize(("T_max", "eta_min"), [(4, 0.0), (7, 1e-3)])
def test_lr_sequence_matches_torch(name, T_max, eta_min):
    compare_schedules(
        lambda opt, L: L.CosineAnnealingLR(opt, T_max=T_max, eta_min=eta_min), name=name
    )


def test_chained_with_a_step_decay_matches_torch():
    # Recursive schedulers compose when both are stepped each epoch.
    torch_opt, spx_opt = twin_optimizers()
    torch_scheds = [
        torch.optim.lr_scheduler.CosineAnnealingLR(torch_opt, T_max=5),
        torch.optim.lr_scheduler.StepLR(torch_opt, step_size=4, gamma=0.5),
    ]
    spx_scheds = [
        lr_scheduler.CosineAnnealingLR(spx_opt, T_max=5),
        lr_scheduler.StepLR(spx_opt, step_size=4, gamma=0.5),
    ]
    for _ in range(22):
        for t, s in zip(torch_scheds, spx_scheds, strict=True):
            t.step()
            s.step()
        assert_groups_match(torch_opt, spx_opt)


def test_resume_with_last_epoch_matches_torch():
    torch_opt, spx_opt = twin_optimizers()
    for opt in (torch_opt, spx_opt):
        for group in opt.param_groups:
            group["initial_lr"] = group["lr"]
    torch_sched = torch.optim.lr_scheduler.CosineAnnealingLR(torch_opt, T_max=6, last_epoch=3)
    spx_sched = lr_scheduler.CosineAnnealingLR(spx_opt, T_max=6, last_epoch=3)
    for _ in range(10):
        assert same(spx_sched.get_last_lr(), torch_sched.get_last_lr())
        torch_sched.step()
        spx_sched.step()


def test_state_dict_round_trip():
    check_state_dict_round_trip(lambda opt, L: L.CosineAnnealingLR(opt, T_max=5, eta_min=0.01))
