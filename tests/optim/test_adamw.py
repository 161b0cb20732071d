"""spx.optim.AdamW against torch.optim.AdamW: decoupled decay over 20 steps, AMSGrad, maximize,
groups, state_dict layout (incl. decoupled_weight_decay=True) and round trip, validation."""

import jax.numpy as jnp
import pytest

import spx
from tests.optim._parity import (
    assert_state_dict_layout,
    check_state_dict_round_trip,
    run_parity,
)

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    ("kwargs", "groups"),
    [
        (dict(lr=1e-2), [{}, {"weight_decay": 0.2, "lr": 2e-2, "betas": (0.85, 0.995)}]),
        (dict(lr=1e-2, amsgrad=True, maximize=True, weight_decay=0.1), None),
    ],
    ids=["defaults-groups", "amsgrad-maximize"],
)
def test_matches_torch(kwargs, groups):
    torch_opt, spx_opt, _, _ = run_parity(torch.optim.AdamW, spx.optim.AdamW, kwargs, groups=groups)
    assert_state_dict_layout(torch_opt, spx_opt)


def test_state_dict_round_trip():
    check_state_dict_round_trip(torch.optim.AdamW, spx.optim.AdamW, dict(lr=1e-2))


def test_defaults_match_torch():
    torch_group = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))]).param_groups[0]
    spx_group = spx.optim.AdamW([spx.nn.Parameter(jnp.zeros(2))]).param_groups[0]
    assert spx_group["weight_decay"] == 0.01
    assert spx_group["decoupled_weight_decay"] is True
    assert {k: v for k, v in spx_group.items() if k != "params"} == {
        k: v for k, v in torch_group.items() if k != "params"
    }


def test_is_an_adam():
    assert issubclass(spx.optim.AdamW, spx.optim.Adam)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(lr=-1), "Invalid learning rate: -1"),
        (dict(betas=(0.9, 1.5)), "Invalid beta parameter at index 1: 1.5"),
        (dict(weight_decay=-0.01), "Invalid weight_decay value: -0.01"),
    ],
)
def test_invalid_hyperparameters_raise_like_torch(kwargs, match):
    with pytest.raises(ValueError, match=match):
        torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))], **kwargs)
    with pytest.raises(ValueError, match=match):
        spx.optim.AdamW([spx.nn.Parameter(jnp.zeros(2))], **kwargs)
