"""Helpers of the optimizer parity tests: twin parameters, identical grads, state comparison.

torch is the reference everywhere: a torch optimizer and an spx optimizer get the same initial
weights and, each step, the same gradients; parameters and every state tensor must agree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

from spx import nn

# Helpers of torch-reference tests: without torch the importing module is skipped.
torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-5, 1e-6
SHAPES = [(3, 4), (4,), (2, 3, 2)]


def twin_params(shapes=SHAPES, seed: int = 0) -> tuple[list[Any], list[nn.Parameter]]:
    """torch and spx parameters with the same initial values."""
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    torch_params = [torch.nn.Parameter(torch.tensor(x)) for x in init]
    spx_params = [nn.Parameter(jnp.asarray(x)) for x in init]
    return torch_params, spx_params


def groups_of(params: list[Any], overrides: list[dict] | None) -> list[Any]:
    """``params`` as one plain list, or one group per override dict (params split evenly)."""
    if overrides is None:
        return list(params)
    return [{"params": params[i :: len(overrides)], **o} for i, o in enumerate(overrides)]


def set_grads(torch_params, spx_params, rng, skip: Callable[[int], bool] = lambda i: False):
    """Give both twins the same random grad; params where ``skip(i)`` get ``None``."""
    for i, (tp, sp) in enumerate(zip(torch_params, spx_params, strict=True)):
        if skip(i):
            tp.grad, sp.grad = None, None
            continue
        g = rng.standard_normal(tuple(tp.shape)).astype(np.float32)
        tp.grad, sp.grad = torch.tensor(g), jnp.asarray(g)


def assert_match(
    torch_opt, spx_opt, torch_params, spx_params, where: str = "", atol: float = ATOL
) -> None:
    """Parameters and every state entry (same keys, same order) equal torch's."""
    for i, (tp, sp) in enumerate(zip(torch_params, spx_params, strict=True)):
        np.testing.assert_allclose(
            np.asarray(sp.data), tp.detach().numpy(), rtol=RTOL, atol=atol,
            err_msg=f"param {i} {where}",
        )  # fmt: skip
        t_state = torch_opt.state.get(tp, {})
        s_state = spx_opt.state.get(sp) or {}
        # (jax returns dicts sorted by key; state_dict() restores torch's order, checked there)
        assert set(s_state) == set(t_state), f"state keys of param {i} {where}"
        for key, value in t_state.items():
            assert s_state[key].shape == tuple(value.shape), f"{key} shape {where}"
            assert np.asarray(s_state[key]).dtype == value.numpy().dtype, f"{key} dtype {where}"
            np.testing.assert_allclose(
                np.asarray(s_state[key]), value.numpy(), rtol=RTOL, atol=atol,
                err_msg=f"state {key!r} of param {i} {where}",
            )  # fmt: skip


def run_parity(
    torch_cls: type,
    spx_cls: type,
    kwargs: dict[str, Any],
    *,
    groups: list[dict] | None = None,
    steps: int = 20,
    skip: Callable[[int, int], bool] = lambda step, i: False,
    seed: int = 0,
    atol: float = ATOL,
) -> tuple[Any, Any, list[Any], list[nn.Parameter]]:
    """Step a torch and an spx optimizer side by side, comparing after every step."""
    torch_params, spx_params = twin_params(seed=seed)
    torch_opt = torch_cls(groups_of(torch_params, groups), **kwargs)
    spx_opt = spx_cls(groups_of(spx_params, groups), **kwargs)
    rng = np.random.default_rng(seed + 1)
    for step in range(steps):
        set_grads(torch_params, spx_params, rng, lambda i, step=step: skip(step, i))
        torch_opt.step()
        spx_opt.step()
        where = f"after step {step + 1}"
        assert_match(torch_opt, spx_opt, torch_params, spx_params, where, atol)
    return torch_opt, spx_opt, torch_params, spx_params


def to_numpy_state_dict(torch_state_dict: dict[str, Any]) -> dict[str, Any]:
    """A torch optimizer state_dict with numpy arrays (what spx loads)."""
    return {
        "state": {
            k: {n: v.numpy() for n, v in s.items()} for k, s in torch_state_dict["state"].items()
        },
        "param_groups": [dict(g) for g in torch_state_dict["param_groups"]],
    }


def assert_state_dict_layout(torch_opt, spx_opt) -> None:
    """Same keys, param indices, group keys and values; state values allclose."""
    t_sd, s_sd = torch_opt.state_dict(), spx_opt.state_dict()
    assert list(s_sd) == list(t_sd)
    assert list(s_sd["state"]) == list(t_sd["state"])
    for idx, t_state in t_sd["state"].items():
        assert list(s_sd["state"][idx]) == list(t_state)
        for key, value in t_state.items():
            np.testing.assert_allclose(
                np.asarray(s_sd["state"][idx][key]), value.numpy(), rtol=RTOL, atol=ATOL
            )
    assert len(s_sd["param_groups"]) == len(t_sd["param_groups"])
    for s_group, t_group in zip(s_sd["param_groups"], t_sd["param_groups"], strict=True):
        assert set(s_group) == set(t_group)
        assert s_group == t_group


def check_state_dict_round_trip(
    torch_cls: type,
    spx_cls: type,
    kwargs: dict[str, Any],
    groups: list[dict] | None = None,
    atol: float = ATOL,
) -> None:
    """Layout equals torch's; a fresh spx optimizer loaded from torch's state continues alike."""
    torch_opt, spx_opt, torch_params, spx_params = run_parity(
        torch_cls, spx_cls, kwargs, groups=groups, steps=5, atol=atol
    )
    assert_state_dict_layout(torch_opt, spx_opt)
    # Load torch's own state_dict into a new spx optimizer over copies of the parameters.
    fresh = [nn.Parameter(jnp.asarray(tp.detach().numpy())) for tp in torch_params]
    resumed = spx_cls(groups_of(fresh, groups), **kwargs)
    resumed.load_state_dict(to_numpy_state_dict(torch_opt.state_dict()))
    # And spx's own state_dict into another, then keep stepping all of them together.
    again = [nn.Parameter(jnp.asarray(np.asarray(sp.data))) for sp in spx_params]
    reloaded = spx_cls(groups_of(again, groups), **kwargs)
    reloaded.load_state_dict(spx_opt.state_dict())
    rng = np.random.default_rng(7)
    for step in range(5):
        set_grads(torch_params, spx_params, rng)
        for mine in (fresh, again):
            for sp, tp in zip(mine, torch_params, strict=True):
                sp.grad = jnp.asarray(tp.grad.numpy())
        for opt in (torch_opt, spx_opt, resumed, reloaded):
            opt.step()
        for opt, params in ((spx_opt, spx_params), (resumed, fresh), (reloaded, again)):
            assert_match(torch_opt, opt, torch_params, params, f"resumed step {step}", atol)
