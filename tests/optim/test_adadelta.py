"""spx.optim.Adadelta against torch.optim.Adadelta: 20 steps of params and
step/square_avg/acc_delta, weight decay, maximize, groups, skipped params, state_dict, inside
spx.compile."""

import jax.numpy as jnp
import pytest

import spx
from tests.optim._compiled import check_compiled_matches_torch
from tests.optim._parity import assert_state_dict_layout, check_state_dict_round_trip, run_parity

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    ("kwargs", "groups"),
    [
        (dict(), None),
        (dict(lr=0.5, weight_decay=0.1), None),
        (dict(lr=0.3, rho=0.5, eps=1e-3, maximize=True), None),
        (dict(lr=0.5), [{}, {"lr": 0.2, "weight_decay": 0.05, "rho": 0.8}]),
        (dict(foreach=True), None),
    ],
    ids=["defaults", "weight-decay", "rho-eps-maximize", "groups", "foreach"],
)
def test_matches_torch(kwargs, groups):
    torch_opt, spx_opt, _, _ = run_parity(
        torch.optim.Adadelta, spx.optim.Adadelta, kwargs, groups=groups
    )
    assert_state_dict_layout(torch_opt, spx_opt)


def test_params_without_grad_are_skipped():
    run_parity(
        torch.optim.Adadelta,
        spx.optim.Adadelta,
        dict(weight_decay=0.01),
        skip=lambda step, i: (step + i) % 3 == 0,
    )


def test_state_dict_round_trip():
    check_state_dict_round_trip(torch.optim.Adadelta, spx.optim.Adadelta, dict(lr=0.5))


def test_inside_spx_compile():
    check_compiled_matches_torch("Adadelta", dict(lr=0.5, weight_decay=0.01))


def test_defaults_match_torch():
    torch_group = torch.optim.Adadelta([torch.nn.Parameter(torch.zeros(2))]).param_groups[0]
    spx_group = spx.optim.Adadelta([spx.nn.Parameter(jnp.zeros(2))]).param_groups[0]
    assert {k: v for k, v in spx_group.items() if k != "params"} == {
        k: v for k, v in torch_group.items() if k != "params"
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(lr=-1), "Invalid learning rate: -1"),
        (dict(rho=1.5), "Invalid rho value: 1.5"),
        (dict(rho=-0.1), "Invalid rho value: -0.1"),
        (dict(eps=-1.0), "Invalid epsilon value: -1.0"),
        (dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ],
)
def test_invalid_hyperparameters_raise_like_torch(kwargs, match):
    with pytest.raises(ValueError, match=match):
        torch.optim.Adadelta([torch.nn.Parameter(torch.zeros(2))], **kwargs)
    with pytest.raises(ValueError, match=match):
        spx.optim.Adadelta([spx.nn.Parameter(jnp.zeros(2))], **kwargs)
