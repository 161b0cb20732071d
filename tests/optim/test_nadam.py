"""spx.optim.NAdam against torch.optim.NAdam: 20 steps of params and
step/mu_product/exp_avg/exp_avg_sq, weight decay, maximize, groups, skipped params, state_dict,
inside spx.compile."""

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
        (dict(lr=1e-2, weight_decay=0.1), None),
        (dict(lr=1e-2, betas=(0.8, 0.99), eps=1e-3, maximize=True), None),
        (dict(lr=1e-2), [{}, {"lr": 3e-3, "weight_decay": 0.05, "betas": (0.5, 0.9)}]),
        (dict(lr=1e-2, foreach=True), None),
        (dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True), None),
        (dict(lr=1e-2, momentum_decay=0.05, weight_decay=0.01), None),
    ],
    ids=[
        "defaults",
        "weight-decay",
        "betas-eps-maximize",
        "groups",
        "foreach",
        "decoupled-weight-decay",
        "momentum-decay",
    ],
)
def test_matches_torch(kwargs, groups):
    torch_opt, spx_opt, _, _ = run_parity(torch.optim.NAdam, spx.optim.NAdam, kwargs, groups=groups)
    assert_state_dict_layout(torch_opt, spx_opt)


def test_params_without_grad_are_skipped():
    run_parity(
        torch.optim.NAdam,
        spx.optim.NAdam,
        dict(lr=1e-2, weight_decay=0.01),
        skip=lambda step, i: (step + i) % 3 == 0,
    )


def test_state_dict_round_trip():
    check_state_dict_round_trip(torch.optim.NAdam, spx.optim.NAdam, dict(lr=1e-2))


def test_inside_spx_compile():
    check_compiled_matches_torch("NAdam", dict(lr=1e-2, weight_decay=0.01))


def test_defaults_match_torch():
    torch_group = torch.optim.NAdam([torch.nn.Parameter(torch.zeros(2))]).param_groups[0]
    spx_group = spx.optim.NAdam([spx.nn.Parameter(jnp.zeros(2))]).param_groups[0]
    assert {k: v for k, v in spx_group.items() if k != "params"} == {
        k: v for k, v in torch_group.items() if k != "params"
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(lr=-1), "Invalid learning rate: -1"),
        (dict(eps=-1.0), "Invalid epsilon value: -1.0"),
        (dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
        (dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
        (dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ],
)
def test_invalid_hyperparameters_raise_like_torch(kwargs, match):
    with pytest.raises(ValueError, match=match):
        torch.optim.NAdam([torch.nn.Parameter(torch.zeros(2))], **kwargs)
    with pytest.raises(ValueError, match=match):
        spx.optim.NAdam([spx.nn.Parameter(jnp.zeros(2))], **kwargs)


def test_invalid_momentum_decay_raises_like_torch():
    with pytest.raises(ValueError, match=r"Invalid momentum_decay value: -0\.1"):
        torch.optim.NAdam([torch.nn.Parameter(torch.zeros(2))], momentum_decay=-0.1)
    with pytest.raises(ValueError, match=r"Invalid momentum_decay value: -0\.1"):
        spx.optim.NAdam([spx.nn.Parameter(jnp.zeros(2))], momentum_decay=-0.1)
