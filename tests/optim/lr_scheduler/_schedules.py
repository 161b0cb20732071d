"""Helpers of the scheduler tests: twin optimizers and a side-by-side lr sequence check."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import pytest

import spx
from spx.optim import lr_scheduler

# Helpers of torch-reference tests: without torch the importing module is skipped.
torch = pytest.importorskip("torch")

LRS = [0.1, 0.03]  # two param groups with different lrs


def twin_optimizers(name: str = "SGD", lrs: list[float] = LRS, **kwargs: Any) -> tuple[Any, Any]:
    """A torch and an spx optimizer with one param group per lr (no grads: step() is a no-op)."""
    torch_opt = getattr(torch.optim, name)(
        [{"params": [torch.nn.Parameter(torch.zeros(2))], "lr": lr} for lr in lrs], **kwargs
    )
    spx_opt = getattr(spx.optim, name)(
        [{"params": [spx.nn.Parameter(jnp.zeros(2))], "lr": lr} for lr in lrs], **kwargs
    )
    return torch_opt, spx_opt


def same(a: Any, b: Any) -> bool:
    """Equal up to float rounding, elementwise through dicts, lists and tuples.

    pytest.approx refuses nested containers (OneCycleLR's ``_schedule_phases`` is a list of
    dicts), so containers are walked here and only the leaves are compared with approx.
    """
    if isinstance(b, dict):
        return isinstance(a, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in b)
    if isinstance(b, list | tuple):
        return (
            type(a) is type(b)
            and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(b, str | bool) or b is None:
        return a == b
    return a == pytest.approx(b, rel=1e-12, abs=1e-15)


def assert_groups_match(torch_opt, spx_opt, keys=("lr", "momentum", "betas")) -> None:
    for t_group, s_group in zip(torch_opt.param_groups, spx_opt.param_groups, strict=True):
        for key in keys:
            if key in t_group:
                assert same(s_group[key], t_group[key]), (key, s_group[key], t_group[key])


def compare_schedules(
    make: Callable[[Any, Any], Any],
    steps: int = 25,
    name: str = "SGD",
    metrics: list[float] | None = None,
    **opt_kwargs: Any,
) -> tuple[Any, Any]:
    """Build ``make(optimizer, lr_scheduler_module)`` on twin optimizers and step both.

    After construction and every step, ``get_last_lr()`` and the groups' lr / momentum / betas
    must equal torch's. ``metrics`` feeds ReduceLROnPlateau. Returns the two schedulers.
    """
    torch_opt, spx_opt = twin_optimizers(name, **opt_kwargs)
    torch_sched = make(torch_opt, torch.optim.lr_scheduler)
    spx_sched = make(spx_opt, lr_scheduler)
    assert same(spx_sched.get_last_lr(), torch_sched.get_last_lr())
    assert_groups_match(torch_opt, spx_opt)
    for i in range(steps):
        torch_opt.step()
        spx_opt.step()
        if metrics is None:
            torch_sched.step()
            spx_sched.step()
        else:
            torch_sched.step(metrics[i])
            spx_sched.step(metrics[i])
        assert same(spx_sched.get_last_lr(), torch_sched.get_last_lr()), f"step {i + 1}"
        assert_groups_match(torch_opt, spx_opt)
    return torch_sched, spx_sched


def check_state_dict_round_trip(
    make: Callable[[Any, Any], Any], name: str = "SGD", steps: int = 8, more: int = 12, **kw: Any
) -> None:
    """Keys equal torch's; a new scheduler loaded mid-way continues exactly like torch's."""
    torch_opt, spx_opt = twin_optimizers(name, **kw)
    torch_sched = make(torch_opt, torch.optim.lr_scheduler)
    spx_sched = make(spx_opt, lr_scheduler)
    for _ in range(steps):
        torch_sched.step()
        spx_sched.step()
    t_state, s_state = torch_sched.state_dict(), spx_sched.state_dict()
    assert set(s_state) == set(t_state)
    for key in t_state:
        if key not in ("_schedulers", "lr_lambdas"):
            assert same(s_state[key], t_state[key]), key
    # Resume as a torch script does: build both, then load the optimizer, then the scheduler.
    opt_state = copy.deepcopy(spx_opt.state_dict())
    _, resumed_opt = twin_optimizers(name, **kw)
    resumed = make(resumed_opt, lr_scheduler)
    resumed_opt.load_state_dict(opt_state)
    resumed.load_state_dict(copy.deepcopy(s_state))
    for i in range(more):
        torch_sched.step()
        resumed.step()
        assert same(resumed.get_last_lr(), torch_sched.get_last_lr()), f"resumed step {i + 1}"
        assert_groups_match(torch_opt, resumed_opt)
