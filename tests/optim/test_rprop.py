"""spx.optim.Rprop against torch.optim.Rprop: 20 steps of params and step/prev/step_size,
etas, step-size bounds, maximize, groups, skipped params, state_dict, inside spx.compile."""

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
        (dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2)), None),
        (dict(lr=0.02, maximize=True), None),
        (dict(lr=0.01), [{}, {"lr": 0.03, "etas": (0.4, 1.1), "step_sizes": (1e-4, 0.05)}]),
        (dict(foreach=True), None),
    ],
    ids=["defaults", "etas-step-sizes", "maximize", "groups", "foreach"],
)
def test_matches_torch(kwargs, groups):
    torch_opt, spx_opt, _, _ = run_parity(torch.optim.Rprop, spx.optim.Rprop, kwargs, groups=groups)
    assert_state_dict_layout(torch_opt, spx_opt)


def test_params_without_grad_are_skipped():
    run_parity(
        torch.optim.Rprop,
        spx.optim.Rprop,
        dict(lr=0.02),
        skip=lambda step, i: (step + i) % 3 == 0,
    )


def test_state_dict_round_trip():
    check_state_dict_round_trip(torch.optim.Rprop, spx.optim.Rprop, dict(lr=0.02))


def test_inside_spx_compile():
    check_compiled_matches_torch("Rprop", dict(lr=0.02, step_sizes=(1e-4, 0.1)))


def test_defaults_match_torch():
    torch_group = torch.optim.Rprop([torch.nn.Parameter(torch.zeros(2))]).param_groups[0]
    spx_group = spx.optim.Rprop([spx.nn.Parameter(jnp.zeros(2))]).param_groups[0]
    assert {k: v for k, v in spx_group.items() if k != "params"} == {
        k: v for k, v in torch_group.items() if k != "params"
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(lr=-1), "Invalid learning rate: -1"),
        (dict(etas=(1.0, 1.2)), "Invalid eta values: 1.0, 1.2"),
        (dict(etas=(0.0, 1.2)), "Invalid eta values: 0.0, 1.2"),
        (dict(etas=(0.5, 0.9)), "Invalid eta values: 0.5, 0.9"),
    ],
)
def test_invalid_hyperparameters_raise_like_torch(kwargs, match):
    with pytest.raises(ValueError, match=match):
        torch.optim.Rprop([torch.nn.Parameter(torch.zeros(2))], **kwargs)
    with pytest.raises(ValueError, match=match):
        spx.optim.Rprop([spx.nn.Parameter(jnp.zeros(2))], **kwargs)
