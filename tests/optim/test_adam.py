"""spx.optim.Adam against torch.optim.Adam: 20 steps of params and step/exp_avg/exp_avg_sq/
max_exp_avg_sq, L2 and decoupled decay, AMSGrad, maximize, groups, state_dict, validation."""

import jax.numpy as jnp
import numpy as np
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
        # Defaults; other groups vary betas, eps and the L2 weight decay.
        (
            dict(lr=1e-2),
            [{}, {"betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1, "lr": 3e-2}],
        ),
        (dict(lr=1e-2, amsgrad=True, weight_decay=0.05, maximize=True), None),
        (dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True), None),
    ],
    ids=["defaults-groups", "amsgrad-l2-maximize", "decoupled"],
)
def test_matches_torch(kwargs, groups):
    torch_opt, spx_opt, _, _ = run_parity(torch.optim.Adam, spx.optim.Adam, kwargs, groups=groups)
    assert_state_dict_layout(torch_opt, spx_opt)


def test_params_without_grad_are_skipped():
    # A skipped param keeps its state and its own step count (bias corrections per param).
    run_parity(
        torch.optim.Adam,
        spx.optim.Adam,
        dict(lr=1e-2, amsgrad=True),
        skip=lambda step, i: (step + i) % 3 == 0,
    )


def test_state_dict_round_trip():
    check_state_dict_round_trip(
        torch.optim.Adam, spx.optim.Adam, dict(lr=1e-2, amsgrad=True, weight_decay=0.01)
    )


def test_defaults_match_torch():
    torch_group = torch.optim.Adam([torch.nn.Parameter(torch.zeros(2))]).param_groups[0]
    spx_group = spx.optim.Adam([spx.nn.Parameter(jnp.zeros(2))]).param_groups[0]
    assert {k: v for k, v in spx_group.items() if k != "params"} == {
        k: v for k, v in torch_group.items() if k != "params"
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(lr=-1), "Invalid learning rate: -1"),
        (dict(eps=-1e-8), "Invalid epsilon value: -1e-08"),
        (dict(betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
        (dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
        (dict(weight_decay=-0.5), "Invalid weight_decay value: -0.5"),
    ],
)
def test_invalid_hyperparameters_raise_like_torch(kwargs, match):
    with pytest.raises(ValueError, match=match):
        torch.optim.Adam([torch.nn.Parameter(torch.zeros(2))], **kwargs)
    with pytest.raises(ValueError, match=match):
        spx.optim.Adam([spx.nn.Parameter(jnp.zeros(2))], **kwargs)


def test_non_parameter_params_raise_type_error():
    with pytest.raises(TypeError, match=r"spx\.nn\.Parameter"):
        spx.optim.Adam([{"params": [jnp.zeros(2)]}])


def test_partial_steps_keep_per_parameter_step_counts_like_torch():
    """A parameter without a grad skips a step; afterwards the group's steps differ and the
    bias corrections must be per parameter (torch's semantics), eagerly and compiled."""
    torch = pytest.importorskip("torch")
    tw = [torch.nn.Parameter(torch.ones(3) * (i + 1)) for i in range(2)]
    topt = torch.optim.Adam(tw, lr=0.1)
    sw = [spx.nn.Parameter(jnp.ones(3) * (i + 1)) for i in range(2)]
    sopt = spx.optim.Adam(sw, lr=0.1)

    @spx.compile
    def compiled_step(opt):
        opt.step()

    for i, active in enumerate([(0, 1), (0,), (0, 1), (0, 1)]):
        for k in range(2):
            tw[k].grad = torch.full((3,), 0.5 + k + i) if k in active else None
            sw[k].grad = jnp.full((3,), 0.5 + k + i) if k in active else None
        topt.step()
        if i < 2:
            sopt.step()
        else:
            compiled_step(sopt)
    for t, s in zip(tw, sw, strict=True):
        np.testing.assert_allclose(np.asarray(s.data), t.detach().numpy(), rtol=1e-6)
    assert float(sopt.state[sw[1]]["step"]) == 3.0 and float(sopt.state[sw[0]]["step"]) == 4.0
