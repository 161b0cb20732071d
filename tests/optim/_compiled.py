"""Helper of the optimizer tests: an optimizer stepped inside ``spx.compile`` against torch,
with a scheduler changing the lr every step (which must not retrace)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import spx
from spx.optim import lr_scheduler
from tests.optim._parity import assert_match, set_grads, twin_params

torch = pytest.importorskip("torch")


def check_compiled_matches_torch(name: str, kwargs: dict[str, Any], steps: int = 12) -> None:
    """``opt.step()`` inside ``spx.compile`` with a StepLR equals torch's; two traces at most."""
    torch_params, spx_params = twin_params()
    torch_opt = getattr(torch.optim, name)(torch_params, **kwargs)
    spx_opt = getattr(spx.optim, name)(spx_params, **kwargs)
    torch_sched = torch.optim.lr_scheduler.StepLR(torch_opt, step_size=2, gamma=0.7)
    spx_sched = lr_scheduler.StepLR(spx_opt, step_size=2, gamma=0.7)

    @spx.compile
    def step(opt, grads):
        for p, g in zip(spx_params, grads, strict=True):
            p.grad = g
        opt.step()

    rng = np.random.default_rng(0)
    for i in range(steps):
        set_grads(torch_params, spx_params, rng)
        step(spx_opt, [p.grad for p in spx_params])
        torch_opt.step()
        torch_sched.step()
        spx_sched.step()
        assert_match(torch_opt, spx_opt, torch_params, spx_params, f"compiled step {i + 1}")
    assert step.trace_count <= 2  # without state, then with it; never for a new lr
