"""LRScheduler's constructor and protocol against torch: initial_lr, the constructor's step,
resuming with last_epoch, get_last_lr/get_lr, the state_dict keys, errors."""

import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx.optim import lr_scheduler
from tests.optim.lr_scheduler._schedules import twin_optimizers

torch = pytest.importorskip("torch")
# torch warns when its scheduler steps without an optimizer step; the lr values are what count.
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)`")


def test_constructor_records_initial_lr_and_takes_one_step():
    torch_opt, spx_opt = twin_optimizers()
    torch_sched = torch.optim.lr_scheduler.StepLR(torch_opt, step_size=2)
    spx_sched = lr_scheduler.StepLR(spx_opt, step_size=2)
    for t_group, s_group in zip(torch_opt.param_groups, spx_opt.param_groups, strict=True):
        assert s_group["initial_lr"] == t_group["initial_lr"]
    assert spx_sched.last_epoch == torch_sched.last_epoch == 0
    assert spx_sched._step_count == torch_sched._step_count == 1
    assert spx_sched.base_lrs == torch_sched.base_lrs
    assert set(spx_sched.state_dict()) == set(torch_sched.state_dict())
    assert isinstance(spx_opt.param_groups[0]["lr"], float)


def test_initial_lr_is_kept_when_already_set():
    _, opt = twin_optimizers()
    opt.param_groups[0]["initial_lr"] = 0.5
    sched = lr_scheduler.ExponentialLR(opt, gamma=0.5)
    assert sched.base_lrs[0] == 0.5


def test_resuming_without_initial_lr_raises_key_error():
    torch_opt, spx_opt = twin_optimizers()
    with pytest.raises(KeyError, match="initial_lr"):
        torch.optim.lr_scheduler.StepLR(torch_opt, step_size=2, last_epoch=3)
    with pytest.raises(KeyError, match="initial_lr"):
        lr_scheduler.StepLR(spx_opt, step_size=2, last_epoch=3)


def test_not_an_optimizer_raises_type_error():
    with pytest.raises(TypeError, match="is not an Optimizer"):
        torch.optim.lr_scheduler.StepLR(object(), step_size=2)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        lr_scheduler.StepLR(object(), step_size=2)


def test_get_lr_outside_step_warns_like_torch():
    _, opt = twin_optimizers()
    sched = lr_scheduler.ExponentialLR(opt, gamma=0.5)
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()


def test_array_lr_stays_an_array_of_its_dtype():
    # A group lr given as an array keeps its type, so the compiled update keeps its signature.
    p = spx.nn.Parameter(jnp.zeros(2))
    opt = spx.optim.SGD([p], lr=jnp.asarray(0.1, jnp.float32))
    sched = lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    sched.step()
    assert isinstance(opt.param_groups[0]["lr"], jnp.ndarray)
    assert opt.param_groups[0]["lr"].dtype == jnp.float32
    np.testing.assert_allclose(float(opt.param_groups[0]["lr"]), 0.05, rtol=1e-6)


def test_legacy_alias():
    assert lr_scheduler._LRScheduler is lr_scheduler.LRScheduler
    assert issubclass(lr_scheduler.OneCycleLR, lr_scheduler.LRScheduler)
