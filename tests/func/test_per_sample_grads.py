"""torch.func's per-sample-gradients tutorial, ported by the rename, against torch's numbers."""

import numpy as np
import pytest

import spx
from spx import nn
from spx.func import functional_call, grad, vmap
from spx.nn import functional as F
from tests._torch_utils import copy_torch_weights

torch = pytest.importorskip("torch")


def _net(lib):
    class SimpleCNN(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = lib.nn.Conv2d(1, 4, 3)
            self.fc1 = lib.nn.Linear(4 * 3 * 3, 10)

        def forward(self, x):
            x = lib.nn.functional.relu(self.conv1(x))
            x = lib.nn.functional.max_pool2d(x, 2)
            return self.fc1(x.flatten(1))

    return SimpleCNN()


def _data(n=6, seed=0):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((n, 1, 8, 8)).astype(np.float32)
    targets = rng.integers(0, 10, size=n)
    return data, targets


def _tutorial(lib, model, data, targets):
    """The tutorial's code, written once for both libraries."""
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        batch = sample.unsqueeze(0)
        targets = target.unsqueeze(0)
        predictions = lib.func.functional_call(model, (params, buffers), (batch,))
        return lib.nn.functional.cross_entropy(predictions, targets)

    ft_compute_grad = lib.func.grad(compute_loss)
    ft_compute_sample_grad = lib.func.vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
    return ft_compute_sample_grad(params, buffers, data, targets)


def test_per_sample_grads_of_a_cnn_match_torch():
    torch.manual_seed(0)
    t_model = _net(torch)
    model = _net(spx)
    copy_torch_weights(t_model, model)
    data, targets = _data()
    t_grads = _tutorial(torch, t_model, torch.tensor(data), torch.tensor(targets))
    grads = _tutorial(spx, model, spx.tensor(data), spx.tensor(targets))
    assert list(grads) == list(t_grads)  # torch's key order, not JAX's sorted one
    for name, g in grads.items():
        assert isinstance(g, spx.Tensor)
        assert tuple(g.shape) == tuple(t_grads[name].shape)
        np.testing.assert_allclose(
            np.asarray(g), t_grads[name].numpy(), rtol=1e-4, atol=1e-5, err_msg=name
        )


def test_per_sample_grads_equal_one_backward_per_sample():
    # The definition: sample i's gradient is what loss.backward() on sample i alone gives.
    torch.manual_seed(1)
    t_model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    copy_torch_weights(t_model, model)
    rng = np.random.default_rng(1)
    x = spx.tensor(rng.standard_normal((4, 5)).astype(np.float32))
    y = spx.tensor(rng.integers(0, 3, size=4))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        return F.cross_entropy(functional_call(model, p, (xi[None],)), yi[None])

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(4):
        model.zero_grad()
        F.cross_entropy(model(x[i : i + 1]), y[i : i + 1]).backward()
        for name, p in model.named_parameters():
            np.testing.assert_allclose(
                np.asarray(per_sample[name][i]), np.asarray(p.grad), rtol=1e-5, atol=1e-6
            )
    # The module kept its own parameters (functional_call put them back).
    assert all(isinstance(p, nn.Parameter) for p in model.parameters())


def test_per_sample_grads_under_spx_compile_free_jax_jit():
    # The transforms are JAX's: the whole per-sample computation jits as one program.
    import jax

    model = nn.Linear(3, 2)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi):
        return functional_call(model, p, (xi,)).pow(2).sum()

    x = spx.randn(5, 3)
    eager = vmap(grad(loss), in_dims=(None, 0))(params, x)
    jitted = jax.jit(lambda p, xs: vmap(grad(loss), in_dims=(None, 0))(p, xs))(params, x)
    for name in eager:
        np.testing.assert_allclose(np.asarray(jitted[name]), np.asarray(eager[name]), rtol=1e-6)
