"""spx.optim.ASGD against torch.optim.ASGD: 20 steps of params and step/eta/mu/ax, averaging
after t0, weight decay, maximize, groups, skipped params, state_dict, inside spx.compile."""

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
        (dict(lr=0.05, lambd=1e-2, alpha=0.6, t0=5, weight_decay=0.1), None),
        (dict(lr=0.02, t0=3, maximize=True), None),
        (dict(lr=0.01, t0=4), [{}, {"lr": 0.03, "lambd": 1e-3, "t0": 10, "weight_decay": 0.05}]),
        (dict(lr=0.02, t0=2, foreach=True), None),
    ],
    ids=["defaults", "averaging-weight-decay", "maximize", "groups", "foreach"],
)
def test_matches_torch(kwargs, groups):
    torch_opt, spx_opt, _, _ = run_parity(torch.optim.ASGD, spx.optim.ASGD, kwargs, groups=groups)
    assert_state_dict_layout(torch_opt, spx_opt)


def test_params_without_grad_are_skipped():
    run_parity(
        torch.optim.ASGD,
        spx.optim.ASGD,
        dict(lr=0.02, t0=4, weight_decay=0.01),
        skip=lambda step, i: (step + i) % 3 == 0,
    )


def test_state_dict_round_trip():
    check_state_dict_round_trip(torch.optim.ASGD, spx.optim.ASGD, dict(lr=0.02, t0=2))


def test_inside_spx_compile():
    check_compiled_matches_torch("ASGD", dict(lr=0.05, t0=4, weight_decay=0.01))


def test_defaults_match_torch():
    torch_group = torch.optim.ASGD([torch.nn.Parameter(torch.zeros(2))]).param_groups[0]
    spx_group = spx.optim.ASGD([spx.nn.Parameter(jnp.zeros(2))]).param_groups[0]
    assert {k: v for k, v in spx_group.items() if k != "params"} == {
        k: v for k, v in torch_group.items() if k != "params"
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(lr=-1), "Invalid learning rate: -1"),
        (dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ],
)
def test_invalid_hyperparameters_raise_like_torch(kwargs, match):
    with pytest.raises(ValueError, match=match):
        torch.optim.ASGD([torch.nn.Parameter(torch.zeros(2))], **kwargs)
    with pytest.raises(ValueError, match=match):
        spx.optim.ASGD([spx.nn.Parameter(jnp.zeros(2))], **kwargs)
