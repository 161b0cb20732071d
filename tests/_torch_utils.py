"""Helpers shared by parity tests: copy torch weights into spx modules and compare."""

from __future__ import annotations

import numpy as np


def copy_torch_weights(torch_module, spx_module) -> None:
    """Load a torch module's state_dict into an spx module (strict: names must match)."""
    spx_module.load_state_dict(
        {k: v.detach().cpu().numpy() for k, v in torch_module.state_dict().items()}
    )


def assert_grads_match(torch_module, spx_module, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Every parameter's .grad equal between a torch module and an spx module."""
    spx_params = dict(spx_module.named_parameters())
    for name, p in torch_module.named_parameters():
        assert spx_params[name].grad is not None, f"no spx grad for {name}"
        np.testing.assert_allclose(
            np.asarray(spx_params[name].grad), p.grad.numpy(), rtol=rtol, atol=atol, err_msg=name
        )


def assert_params_match(torch_module, spx_module, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    spx_params = dict(spx_module.named_parameters())
    for name, p in torch_module.named_parameters():
        np.testing.assert_allclose(
            np.asarray(spx_params[name].data),
            p.detach().numpy(),
            rtol=rtol,
            atol=atol,
            err_msg=name,
        )
