"""spx.optim.Adagrad against torch.optim.Adagrad: 20 steps of params and step/sum, lr_decay,
initial_accumulator_value (torch's optimizer-wide quirk), eps, weight decay, maximize, groups,
the state created by the constructor, state_dict, validation."""

import jax.numpy as jnp
import pytest

import spx
from tests.optim._parity import (
    assert_state_dict_layout,
    check_state_dict_round_trip,
    groups_of,
    run_parity,
    twin_params,
)

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    ("kwargs", "groups"),
    [
        (
            dict(lr=0.1, initial_accumulator_value=0.1),
            # The group's own initial_accumulator_value is ignored for the state, as in torch.
            [{}, {"lr_decay": 0.1, "weight_decay": 0.1, "eps": 1e-6, "lr": 0.05}, {"lr": 0.2}],
        ),
        (dict(lr=0.1, lr_decay=0.05, maximize=True), [{}, {"initial_accumulator_value": 1.0}]),
    ],
    ids=["groups", "maximize-lr-decay"],
)
def test_matches_torch(kwargs, groups):
    torch_opt, spx_opt, _, _ = run_parity(
        torch.optim.Adagrad, spx.optim.Adagrad, kwargs, groups=groups
    )
    assert_state_dict_layout(torch_opt, spx_opt)


def test_state_exists_before_the_first_step():
    torch_params, spx_params = twin_params()
    torch_opt = torch.optim.Adagrad(torch_params, initial_accumulator_value=0.5)
    spx_opt = spx.optim.Adagrad(spx_params, initial_accumulator_value=0.5)
    assert_state_dict_layout(torch_opt, spx_opt)


def test_params_without_grad_are_skipped():
    run_parity(
        torch.optim.Adagrad,
        spx.optim.Adagrad,
        dict(lr=0.1, lr_decay=0.1),
        skip=lambda step, i: (step + i) % 3 == 0,
    )


def test_state_dict_round_trip():
    check_state_dict_round_trip(
        torch.optim.Adagrad,
        spx.optim.Adagrad,
        dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1),
        groups=[{}, {"lr": 0.05}],
    )


def test_defaults_match_torch():
    torch_params, spx_params = twin_params()
    torch_group = torch.optim.Adagrad(groups_of(torch_params, None)).param_groups[0]
    spx_group = spx.optim.Adagrad(groups_of(spx_params, None)).param_groups[0]
    assert {k: v for k, v in spx_group.items() if k != "params"} == {
        k: v for k, v in torch_group.items() if k != "params"
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(lr=-1), "Invalid learning rate: -1"),
        (dict(lr_decay=-0.1), "Invalid lr_decay value: -0.1"),
        (dict(weight_decay=-1), "Invalid weight_decay value: -1"),
        (dict(initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
        (dict(eps=-1e-10), "Invalid epsilon value: -1e-10"),
    ],
)
def test_invalid_hyperparameters_raise_like_torch(kwargs, match):
    with pytest.raises(ValueError, match=match):
        torch.optim.Adagrad([torch.nn.Parameter(torch.zeros(2))], **kwargs)
    with pytest.raises(ValueError, match=match):
        spx.optim.Adagrad([spx.nn.Parameter(jnp.zeros(2))], **kwargs)
