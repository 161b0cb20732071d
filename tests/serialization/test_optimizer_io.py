"""save_optimizer / load_optimizer: Optimizer.state_dict() round-trips exactly (types included),
training resumes identically, and torch's optimizer state layout survives too."""

from __future__ import annotations

import json
import math
import struct

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.optim import Adam
from spx.optim.optimizer import Optimizer
from spx.serialization import load_optimizer, save, save_optimizer

torch = pytest.importorskip("torch")


def assert_same_tree(got, expected, where="state_dict"):
    """Equal structure, Python types, dict order and array bits (arrays: any array type)."""
    if isinstance(expected, spx.Tensor | jax.Array | np.ndarray | torch.Tensor):
        expected = expected.numpy() if isinstance(expected, torch.Tensor) else np.asarray(expected)
        assert isinstance(got, spx.Tensor), where  # load_optimizer returns Tensors, as torch
        assert got.dtype == expected.dtype and got.shape == expected.shape, where
        assert np.asarray(got).tobytes() == expected.tobytes(), where
        return
    assert type(got) is type(expected), f"{where}: {type(got)} != {type(expected)}"
    if isinstance(expected, dict):
        assert list(got) == list(expected), where
        for k in expected:
            assert_same_tree(got[k], expected[k], f"{where}[{k!r}]")
    elif isinstance(expected, list | tuple):
        assert len(got) == len(expected), where
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert_same_tree(g, e, f"{where}[{i}]")
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(got), where
    else:
        assert got == expected, where


class Counting(Optimizer):
    """A tiny optimizer whose state mixes arrays with plain Python values."""

    def __init__(self, params, lr=0.1, betas=(0.5, 0.25), schedule=("cos", 3, None)):
        super().__init__(params, {"lr": lr, "betas": betas, "schedule": schedule, "tag": None})

    def _init_state(self, param, group):
        return {"step": jnp.zeros((), jnp.float32), "buf": jnp.zeros_like(param)}

    def _update(self, params, grads, states, hparams):
        pairs = list(zip(params, grads, states, strict=True))
        new_states = [{"step": s["step"] + 1, "buf": s["buf"] + g} for _, g, s in pairs]
        return [p - hparams["lr"] * g for p, g, _ in pairs], new_states


def test_state_dict_with_python_values_round_trips_exactly(tmp_path):
    model = nn.Linear(3, 2)
    opt = Counting([{"params": [model.weight]}, {"params": [model.bias], "lr": float("nan")}])
    for p in model.parameters():
        p.grad = spx.ones_like(p)
    opt.step()
    sd = opt.state_dict()
    sd["state"][1]["count"] = 7  # non-array state (torch keeps e.g. LBFGS counters as ints)
    sd["state"][1]["history"] = [1.5, None, (True, "x")]
    sd["param_groups"][0]["eps"] = float("-inf")
    sd["param_groups"][0]["lr_tensor"] = jnp.asarray(0.3, jnp.bfloat16)

    path = tmp_path / "optim.safetensors"
    save_optimizer(sd, path)
    back = load_optimizer(path)
    assert_same_tree(back, sd)
    assert type(back["param_groups"][0]["betas"]) is tuple
    assert list(back["state"]) == [0, 1]  # int keys again


def test_adam_resumes_identically(tmp_path):
    def grads_for(model, step):
        for i, p in enumerate(model.parameters()):
            p.grad = jnp.sin(jnp.arange(p.numel(), dtype=jnp.float32) + step + i).reshape(p.shape)

    def make():
        model = nn.Linear(4, 3)
        groups = [{"params": [model.weight]}, {"params": [model.bias], "lr": 0.05}]
        return model, Adam(groups, lr=0.01, betas=(0.8, 0.95), amsgrad=True)

    model, opt = make()
    for step in range(3):
        grads_for(model, step)
        opt.step()
    save(model.state_dict(), tmp_path / "model.safetensors")
    save_optimizer(opt, tmp_path / "optim.safetensors")

    resumed_model, resumed = make()
    resumed_model.load_state_dict({k: np.asarray(v) for k, v in model.state_dict().items()})
    resumed.load_state_dict(load_optimizer(tmp_path / "optim.safetensors"))
    assert_same_tree(load_optimizer(tmp_path / "optim.safetensors"), opt.state_dict())
    assert resumed.param_groups[1]["betas"] == (0.8, 0.95)

    for step in range(3, 6):
        grads_for(model, step)
        grads_for(resumed_model, step)
        opt.step()
        resumed.step()
    for a, b in zip(model.parameters(), resumed_model.parameters(), strict=True):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_torch_adam_state_layout_round_trips(tmp_path):
    # torch's own optimizer state_dict, arrays as numpy: the layout spx mirrors.
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.99), amsgrad=True)
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    sd = opt.state_dict()
    as_numpy = {
        "state": {i: {k: v.numpy() for k, v in s.items()} for i, s in sd["state"].items()},
        "param_groups": sd["param_groups"],
    }
    path = tmp_path / "torch_adam.safetensors"
    save_optimizer(as_numpy, path)
    back = load_optimizer(path)
    assert_same_tree(back, sd)
    # The arrays are real safetensors tensors named by their place in the state dict.
    from safetensors import safe_open

    with safe_open(str(path), framework="np") as f:
        assert {"state.0.exp_avg", "state.1.max_exp_avg_sq"} <= set(f.keys())


def test_unsavable_entries_are_named(tmp_path):
    sd = {"state": {}, "param_groups": [{"lr": 0.1, "fn": print, "params": [0]}]}
    with pytest.raises(TypeError, match=r"'param_groups\.0\.fn'"):
        save_optimizer(sd, tmp_path / "o.safetensors")
    with pytest.raises(TypeError, match=r"state key must be an int, got str '0'"):
        save_optimizer({"state": {"0": {}}, "param_groups": []}, tmp_path / "o.safetensors")
    with pytest.raises(TypeError, match=r"optimizer or its state_dict"):
        save_optimizer({"weights": jnp.ones(1)}, tmp_path / "o.safetensors")
    assert list(tmp_path.iterdir()) == []


def _raw_file(path, metadata):
    raw = json.dumps({"__metadata__": metadata}).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)


def test_bad_optimizer_files(tmp_path):
    plain = tmp_path / "weights.safetensors"
    save({"w": jnp.ones(1)}, plain)
    with pytest.raises(ValueError, match=r"no optimizer state.*spx.serialization.load"):
        load_optimizer(plain)

    broken = tmp_path / "broken.safetensors"
    _raw_file(broken, {"spx.optimizer": '{"version": 1, "state": {'})
    with pytest.raises(ValueError, match=r"broken.safetensors.*corrupt"):
        load_optimizer(broken)

    dangling = tmp_path / "dangling.safetensors"
    state = {"0": {"exp_avg": {"__tensor__": "state.0.exp_avg"}}}
    _raw_file(
        dangling, {"spx.optimizer": json.dumps({"version": 1, "state": state, "param_groups": []})}
    )
    with pytest.raises(ValueError, match=r"'state.0.exp_avg'.*does not contain"):
        load_optimizer(dangling)

    newer = tmp_path / "newer.safetensors"
    _raw_file(
        newer, {"spx.optimizer": json.dumps({"version": 99, "state": {}, "param_groups": []})}
    )
    with pytest.raises(ValueError, match=r"newer spx"):
        load_optimizer(newer)

    truncated = tmp_path / "truncated.safetensors"
    save_optimizer({"state": {0: {"m": jnp.ones(100)}}, "param_groups": []}, truncated)
    truncated.write_bytes(truncated.read_bytes()[:-7])
    with pytest.raises(ValueError, match=r"truncated or corrupt"):
        load_optimizer(truncated)
