"""spx.optim.RMSprop against torch.optim.RMSprop: 20 steps of params and step/square_avg/
momentum_buffer/grad_avg, centered, momentum, weight decay, maximize, groups, state_dict."""

import jax.numpy as jnp
import pytest

import spx
from tests.optim._parity import (
    assert_state_dict_layout,
    check_state_dict_round_trip,
    run_parity,
)

torch = pytest.importorskip("torch")

# torch computes the coefficient 1 - alpha in float64 and rounds it once; here alpha is a
# traced float32 (so an lr/momentum schedule never recompiles) and 1 - float32(0.99) is 1e-6
# off. square_avg agrees to ~1e-6 relative; with momentum 0.9 the parameter steps are ~10x
# the plain ones and the parameters agree to ~2e-6 absolute after 20 steps. With an alpha that
# float32 represents exactly (0.75) the agreement is ~2e-7, i.e. the rule itself is exact.
MOMENTUM_ATOL = 3e-6


@pytest.mark.parametrize(
    ("kwargs", "groups", "atol"),
    [
        (
            dict(lr=1e-2),
            [{}, {"alpha": 0.9, "eps": 1e-6, "weight_decay": 0.1, "lr": 3e-3}],
            1e-6,
        ),
        (dict(lr=1e-2, centered=True), None, 1e-6),
        (dict(lr=1e-2, momentum=0.9), None, MOMENTUM_ATOL),
        (dict(lr=1e-2, momentum=0.9, alpha=0.75, centered=True), None, 1e-6),
        (
            dict(lr=1e-2, centered=True, momentum=0.5, weight_decay=0.05, maximize=True),
            None,
            MOMENTUM_ATOL,
        ),
    ],
    ids=["plain-groups", "centered", "momentum", "centered-momentum-exact-alpha", "all"],
)
def test_matches_torch(kwargs, groups, atol):
    torch_opt, spx_opt, _, _ = run_parity(
        torch.optim.RMSprop, spx.optim.RMSprop, kwargs, groups=groups, atol=atol
    )
    assert_state_dict_layout(torch_opt, spx_opt)


def test_params_without_grad_are_skipped():
    run_parity(
        torch.optim.RMSprop,
        spx.optim.RMSprop,
        dict(lr=1e-2, centered=True),
        skip=lambda step, i: (step + i) % 3 == 0,
    )


def test_state_dict_round_trip():
    check_state_dict_round_trip(
        torch.optim.RMSprop,
        spx.optim.RMSprop,
        dict(lr=1e-2, momentum=0.9, centered=True),
        atol=MOMENTUM_ATOL,
    )


def test_defaults_match_torch():
    torch_group = torch.optim.RMSprop([torch.nn.Parameter(torch.zeros(2))]).param_groups[0]
    spx_group = spx.optim.RMSprop([spx.nn.Parameter(jnp.zeros(2))]).param_groups[0]
    assert {k: v for k, v in spx_group.items() if k != "params"} == {
        k: v for k, v in torch_group.items() if k != "params"
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(lr=-1), "Invalid learning rate: -1"),
        (dict(eps=-1.0), "Invalid epsilon value: -1.0"),
        (dict(momentum=-0.9), "Invalid momentum value: -0.9"),
        (dict(weight_decay=-1), "Invalid weight_decay value: -1"),
        (dict(alpha=-0.5), "Invalid alpha value: -0.5"),
    ],
)
def test_invalid_hyperparameters_raise_like_torch(kwargs, match):
    with pytest.raises(ValueError, match=match):
        torch.optim.RMSprop([torch.nn.Parameter(torch.zeros(2))], **kwargs)
    with pytest.raises(ValueError, match=match):
        spx.optim.RMSprop([spx.nn.Parameter(jnp.zeros(2))], **kwargs)
