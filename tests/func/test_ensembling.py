"""Model ensembling with ``stack_module_state`` + ``vmap`` (torch.func's tutorial), and errors."""

import copy

import numpy as np
import pytest

import spx
from spx import nn
from spx.func import functional_call, stack_module_state, vmap
from tests._torch_utils import copy_torch_weights

torch = pytest.importorskip("torch")


def _mlp_class(lib):
    class MLP(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.nn.Linear(6, 8)
            self.fc2 = lib.nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(lib.nn.functional.relu(self.fc1(x)))

    return MLP


# One class per library: stack_module_state wants models of one class.
_MLP = {"torch": _mlp_class(torch), "spx": _mlp_class(spx)}


def _mlp(lib):
    return _MLP[lib.__name__]()


def _models(n=4):
    torch.manual_seed(0)
    t_models = [_mlp(torch) for _ in range(n)]
    models = [_mlp(spx) for _ in range(n)]
    for t, s in zip(t_models, models, strict=True):
        copy_torch_weights(t, s)
    return t_models, models


def _ensemble(lib, models, x, in_dims):
    params, buffers = lib.func.stack_module_state(models)
    base = copy.deepcopy(models[0])

    def fmodel(params, buffers, x):
        return lib.func.functional_call(base, (params, buffers), (x,))

    return params, lib.func.vmap(fmodel, in_dims=in_dims)(params, buffers, x)


@pytest.mark.parametrize("same_minibatch", [True, False])
def test_ensemble_predictions_match_torch(same_minibatch):
    t_models, models = _models()
    rng = np.random.default_rng(0)
    if same_minibatch:
        x, in_dims = rng.standard_normal((5, 6)).astype(np.float32), (0, 0, None)
    else:
        x, in_dims = rng.standard_normal((4, 5, 6)).astype(np.float32), (0, 0, 0)
    t_params, t_out = _ensemble(torch, t_models, torch.tensor(x), in_dims)
    params, out = _ensemble(spx, models, spx.tensor(x), in_dims)
    assert tuple(out.shape) == tuple(t_out.shape) == (4, 5, 3)
    np.testing.assert_allclose(
        np.asarray(out.detach()), t_out.detach().numpy(), rtol=1e-5, atol=1e-6
    )
    # torch's result is connected to the stacked parameters; spx's requires grad as well, and a
    # backward through it raises instead of leaving the parameters silently without gradient.
    assert out.requires_grad and t_out.requires_grad
    with pytest.raises(RuntimeError, match="carry no spx autograd history"):
        out.sum().backward()
    assert list(params) == list(t_params) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    for name, p in params.items():
        assert p.requires_grad and p.is_leaf  # optimizable new leaves, as torch's
        np.testing.assert_array_equal(np.asarray(p.detach()), t_params[name].detach().numpy())


def test_stacked_state_includes_buffers_and_shares_nothing():
    models = [nn.BatchNorm1d(3) for _ in range(2)]
    for m in models:
        m.eval()
    params, buffers = stack_module_state(models)
    assert list(buffers) == ["running_mean", "running_var", "num_batches_tracked"]
    assert tuple(buffers["running_var"].shape) == (2, 3)
    assert not buffers["running_mean"].requires_grad
    with spx.no_grad():
        params["weight"].add_(1.0)
    np.testing.assert_array_equal(np.asarray(models[0].weight.detach()), np.ones(3))
    # eval-mode BatchNorm ensembles through vmap like any other model
    x = spx.randn(4, 3)
    out = vmap(lambda p, b, x: functional_call(models[0], (p, b), (x,)), in_dims=(0, 0, None))(
        params, buffers, x
    )
    np.testing.assert_allclose(
        np.asarray(out[0].detach()), np.asarray(x) / np.sqrt(1 + 1e-5) * 2, rtol=1e-5
    )


def test_stack_module_state_errors_are_torchs():
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        stack_module_state([])
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    b.eval()
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        stack_module_state([a, b])
    with pytest.raises(RuntimeError, match="same class"):
        stack_module_state([nn.Linear(2, 2), nn.Bilinear(2, 2, 2)])
    c = nn.Linear(2, 2)
    c.bias.requires_grad_(False)
    with pytest.raises(
        RuntimeError, match=r"Expected bias from each model to have the same \.requires_grad"
    ):
        stack_module_state([a, c])
