"""spx.optim.SGD against torch.optim.SGD: 20 steps of params and momentum buffers, groups,
skipped params, momentum switched on and off, state_dict layout and round trip, validation."""

import jax.numpy as jnp
import numpy as np
import pytest

import spx
from tests.optim._parity import (
    assert_match,
    assert_state_dict_layout,
    check_state_dict_round_trip,
    groups_of,
    run_parity,
    set_grads,
    twin_params,
)

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    ("kwargs", "groups"),
    [
        # Plain SGD; the second group adds weight decay (same compiled rule, other numbers).
        (dict(lr=0.1), [{}, {"lr": 0.05, "weight_decay": 0.1}]),
        # Momentum: undampened, dampened, with weight decay.
        (
            dict(lr=0.05, momentum=0.9),
            [{}, {"momentum": 0.5, "dampening": 0.3, "weight_decay": 0.1}],
        ),
        (dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01, maximize=True), None),
    ],
    ids=["plain", "momentum-dampening", "nesterov-maximize"],
)
def test_matches_torch(kwargs, groups):
    torch_opt, spx_opt, _, _ = run_parity(torch.optim.SGD, spx.optim.SGD, kwargs, groups=groups)
    assert_state_dict_layout(torch_opt, spx_opt)


def test_without_momentum_keeps_no_state():
    torch_opt, spx_opt, _, _ = run_parity(torch.optim.SGD, spx.optim.SGD, dict(lr=0.1), steps=2)
    assert torch_opt.state_dict()["state"] == {}
    assert spx_opt.state_dict()["state"] == {}


def test_params_without_grad_are_skipped():
    # Param i has no grad on the steps where (step + i) % 3 == 0: no update, no new state.
    run_parity(
        torch.optim.SGD,
        spx.optim.SGD,
        dict(lr=0.05, momentum=0.9, dampening=0.1),
        skip=lambda step, i: (step + i) % 3 == 0,
    )


def test_momentum_switched_on_and_off_midway():
    # torch tests `momentum != 0` on every step: a buffer starts when momentum becomes nonzero
    # and is left untouched while momentum is 0.
    groups = [{"momentum": 0.9}, {"momentum": 0}]
    torch_params, spx_params = twin_params()
    torch_opt = torch.optim.SGD(groups_of(torch_params, groups), lr=0.05, dampening=0.2)
    spx_opt = spx.optim.SGD(groups_of(spx_params, groups), lr=0.05, dampening=0.2)
    rng = np.random.default_rng(3)
    for step in range(20):
        if step in (6, 13):
            for opt in (torch_opt, spx_opt):
                first, second = opt.param_groups
                first["momentum"], second["momentum"] = second["momentum"], first["momentum"]
        set_grads(torch_params, spx_params, rng)
        torch_opt.step()
        spx_opt.step()
        assert_match(torch_opt, spx_opt, torch_params, spx_params, f"after step {step + 1}")


def test_state_dict_round_trip():
    check_state_dict_round_trip(
        torch.optim.SGD,
        spx.optim.SGD,
        dict(lr=0.05, momentum=0.9, dampening=0.1),
        groups=[{}, {"lr": 0.01, "nesterov": True, "dampening": 0}],
    )


def test_defaults_match_torch():
    p = torch.nn.Parameter(torch.zeros(2))
    torch_group = torch.optim.SGD([p]).param_groups[0]
    spx_group = spx.optim.SGD([spx.nn.Parameter(jnp.zeros(2))]).param_groups[0]
    assert {k: v for k, v in spx_group.items() if k != "params"} == {
        k: v for k, v in torch_group.items() if k != "params"
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(lr=-1), "Invalid learning rate: -1"),
        (dict(momentum=-0.5), "Invalid momentum value: -0.5"),
        (dict(weight_decay=-1e-4), "Invalid weight_decay value: -0.0001"),
        (dict(nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
        (
            dict(momentum=0.9, dampening=0.1, nesterov=True),
            "Nesterov momentum requires a momentum and zero dampening",
        ),
    ],
)
def test_invalid_hyperparameters_raise_like_torch(kwargs, match):
    with pytest.raises(ValueError, match=match):
        torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], **kwargs)
    with pytest.raises(ValueError, match=match):
        spx.optim.SGD([spx.nn.Parameter(jnp.zeros(2))], **kwargs)


def test_invalid_group_override_raises():
    with pytest.raises(ValueError, match=r"Invalid learning rate: -0\.1"):
        spx.optim.SGD([{"params": [spx.nn.Parameter(jnp.zeros(2))], "lr": -0.1}], lr=0.1)


def test_non_parameter_params_raise_type_error():
    with pytest.raises(TypeError):
        torch.optim.SGD([[1.0, 2.0]], lr=0.1)
    with pytest.raises(TypeError, match=r"spx\.nn\.Parameter"):
        spx.optim.SGD([jnp.zeros(2)], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Parameters"):
        spx.optim.SGD(spx.nn.Parameter(jnp.zeros(2)), lr=0.1)
