"""LambdaLR against torch: one lambda or one per group, state_dict of callable objects."""

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


class WarmupThenDecay:
    """A callable object: torch saves its __dict__ in the scheduler's state_dict."""

    def __init__(self, warmup: int) -> None:
        self.warmup = warmup

    def __call__(self, epoch: int) -> float:
        return (epoch + 1) / self.warmup if epoch < self.warmup else 0.9 ** (epoch - self.warmup)


def test_single_lambda_matches_torch():
    compare_schedules(lambda opt, L: L.LambdaLR(opt, lambda epoch: 0.95**epoch))


def test_lambda_per_group_matches_torch():
    compare_schedules(
        lambda opt, L: L.LambdaLR(opt, [WarmupThenDecay(5), lambda e: 1 / (1 + e)]), name="Adam"
    )


def test_state_dict_saves_callable_objects():
    check_state_dict_round_trip(lambda opt, L: L.LambdaLR(opt, [WarmupThenDecay(4)] * 2))
    _, opt = twin_optimizers()
    sched = lr_scheduler.LambdaLR(opt, [WarmupThenDecay(4), lambda e: 1.0])
    saved = sched.state_dict()
    assert saved["lr_lambdas"] == [{"warmup": 4}, None]
    fresh = lr_scheduler.LambdaLR(opt, [WarmupThenDecay(9), lambda e: 1.0])
    fresh.load_state_dict(saved)
    assert fresh.lr_lambdas[0].warmup == 4


def test_wrong_number_of_lambdas():
    torch_opt, spx_opt = twin_optimizers()
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas"):
        torch.optim.lr_scheduler.LambdaLR(torch_opt, [lambda e: 1.0])
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas"):
        lr_scheduler.LambdaLR(spx_opt, [lambda e: 1.0])
