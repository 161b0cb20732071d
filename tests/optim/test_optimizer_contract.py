"""The Optimizer base contract as the concrete optimizers use it: state_dict snapshots survive
later (donating) steps, loading never aliases the caller's arrays, a JSON-shaped state_dict
(string keys, lists) loads, mismatched state_dicts are rejected."""

import json

import jax.numpy as jnp
import numpy as np
import pytest

import spx
from tests.optim._parity import (
    assert_match,
    set_grads,
    to_numpy_state_dict,
    twin_params,
)

torch = pytest.importorskip("torch")


def _stepped_adam(steps: int = 3):
    torch_params, spx_params = twin_params()
    torch_opt = torch.optim.Adam(torch_params, lr=1e-2, amsgrad=True)
    spx_opt = spx.optim.Adam(spx_params, lr=1e-2, amsgrad=True)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        set_grads(torch_params, spx_params, rng)
        torch_opt.step()
        spx_opt.step()
    return torch_opt, spx_opt, torch_params, spx_params, rng


def test_state_dict_is_a_snapshot_that_survives_later_steps():
    _, spx_opt, _, spx_params, rng = _stepped_adam()
    saved = spx_opt.state_dict()
    before = np.asarray(saved["state"][0]["exp_avg"]).copy()
    for p in spx_params:
        p.grad = jnp.asarray(rng.standard_normal(p.shape), jnp.float32)
    spx_opt.step()  # donates the live state buffers
    np.testing.assert_array_equal(np.asarray(saved["state"][0]["exp_avg"]), before)
    assert not np.array_equal(np.asarray(spx_opt.state[spx_params[0]]["exp_avg"]), before)


def test_load_state_dict_does_not_alias_the_source():
    _, spx_opt, _, spx_params, rng = _stepped_adam()
    clone_params = [spx.nn.Parameter(jnp.array(p.data)) for p in spx_params]
    clone = spx.optim.Adam(clone_params, lr=1e-2, amsgrad=True)
    clone.load_state_dict(spx_opt.state_dict())
    for _ in range(2):
        grads = [jnp.asarray(rng.standard_normal(p.shape), jnp.float32) for p in spx_params]
        for opt, params in ((spx_opt, spx_params), (clone, clone_params)):
            for p, g in zip(params, grads, strict=True):
                p.grad = g
            opt.step()
    for a, b in zip(spx_params, clone_params, strict=True):
        np.testing.assert_array_equal(np.asarray(a.data), np.asarray(b.data))


def test_json_shaped_state_dict_loads_and_continues_like_torch():
    # What a safetensors + JSON checkpoint gives back: string indices, betas as a list.
    torch_opt, _, torch_params, _, rng = _stepped_adam()
    saved = to_numpy_state_dict(torch_opt.state_dict())
    saved["param_groups"] = json.loads(json.dumps(saved["param_groups"]))
    saved["state"] = {str(k): v for k, v in saved["state"].items()}
    params = [spx.nn.Parameter(jnp.asarray(p.detach().numpy().copy())) for p in torch_params]
    spx_opt = spx.optim.Adam(params, lr=1e-2, amsgrad=True)
    spx_opt.load_state_dict(saved)
    assert spx_opt.state[params[0]]["step"].dtype == jnp.float32
    for i in range(3):
        set_grads(torch_params, params, rng)
        torch_opt.step()
        spx_opt.step()
        assert_match(torch_opt, spx_opt, torch_params, params, f"after resumed step {i}")


def test_load_state_dict_rejects_a_different_layout():
    _, spx_opt, _, _, _ = _stepped_adam(steps=1)
    saved = spx_opt.state_dict()
    other = spx.optim.Adam([spx.nn.Parameter(jnp.zeros(2))])
    with pytest.raises(ValueError, match="doesn't match the size"):
        other.load_state_dict(saved)
    with pytest.raises(ValueError, match="parameter groups"):
        other.load_state_dict({"state": {}, "param_groups": []})
