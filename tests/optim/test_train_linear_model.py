"""End to end: a small two-layer nn.Linear model trained with MSE for 20 steps, torch grads from
autograd and spx grads from jax.grad over the Module, or from ``loss.backward()`` as in torch;
every optimizer, parameters equal torch's all the way."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from tests._torch_utils import assert_params_match

torch = pytest.importorskip("torch")


class SpxNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(5, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(self.fc1(x).tanh())


class TorchNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(5, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


def _jax_grad(spx_model, x, y):
    """Grads from jax.grad over the Module, set on the parameters."""
    grad_fn = jax.jit(jax.grad(lambda m, x, y: jnp.mean((m(x) - y) ** 2)))
    grads = dict(grad_fn(spx_model, jnp.asarray(x), jnp.asarray(y)).named_parameters())
    for pname, p in spx_model.named_parameters():
        p.grad = grads[pname].data


def _loss_backward(spx_model, x, y):
    """torch's line, renamed."""
    spx.nn.functional.mse_loss(spx_model(spx.tensor(x)), spx.tensor(y)).backward()


@pytest.mark.parametrize(
    "grads",
    [
        pytest.param(_jax_grad, id="jax.grad"),
        pytest.param(
            _loss_backward,
            id="loss.backward",
        ),
    ],
)
@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)),
        ("Adam", dict(lr=1e-2, amsgrad=True)),
        ("AdamW", dict(lr=1e-2, weight_decay=0.1)),
        ("RMSprop", dict(lr=1e-3, centered=True)),
        ("Adagrad", dict(lr=0.1, lr_decay=1e-2)),
    ],
)
def test_training_matches_torch(name, kwargs, grads):
    torch.manual_seed(0)
    torch_model = TorchNet()
    spx_model = SpxNet()
    # Copies: nn.Module.load_state_dict may keep a zero-copy view of a numpy array, and
    # tensor.numpy() shares torch's memory, which torch's optimizer updates in place.
    spx_model.load_state_dict({k: v.numpy().copy() for k, v in torch_model.state_dict().items()})
    torch_opt = getattr(torch.optim, name)(torch_model.parameters(), **kwargs)
    spx_opt = getattr(spx.optim, name)(spx_model.parameters(), **kwargs)

    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 5)).astype(np.float32)
    y = rng.standard_normal((16, 3)).astype(np.float32)
    for _ in range(20):
        torch_opt.zero_grad()
        torch.nn.functional.mse_loss(torch_model(torch.tensor(x)), torch.tensor(y)).backward()
        torch_opt.step()

        spx_opt.zero_grad()
        grads(spx_model, x, y)
        spx_opt.step()
        assert_params_match(torch_model, spx_model, rtol=1e-5, atol=1e-6)
