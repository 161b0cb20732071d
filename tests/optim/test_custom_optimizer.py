"""A torch-style ``Optimizer`` subclass (its own ``step()``, state kept in ``self.state[p]``)
works as in torch: eagerly and inside ``spx.compile``, where its in-place state updates must be
kept from call to call."""

import jax.numpy as jnp
import numpy as np
import pytest

import spx
from tests.optim._parity import set_grads, twin_params

torch = pytest.importorskip("torch")


class TorchHeavyBall(torch.optim.Optimizer):
    """The reference: heavy-ball momentum written as torch tutorials write optimizers."""

    def __init__(self, params, lr=0.1, momentum=0.9):
        super().__init__(params, {"lr": lr, "momentum": momentum})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]  # a defaultdict(dict): {} the first time
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = p.grad.clone()
                else:
                    state["momentum_buffer"].mul_(group["momentum"]).add_(p.grad)
                p.add_(state["momentum_buffer"], alpha=-group["lr"])


class HeavyBall(spx.optim.Optimizer):
    """The same optimizer ported line by line to spx (arrays are replaced, not mutated)."""

    def __init__(self, params, lr=0.1, momentum=0.9):
        super().__init__(params, {"lr": lr, "momentum": momentum})

    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = p.grad
                else:
                    state["momentum_buffer"] = state["momentum_buffer"] * group["momentum"] + p.grad
                p.data = p.data - group["lr"] * state["momentum_buffer"]


def _check_close(torch_params, spx_params, torch_opt, spx_opt, where):
    for i, (tp, sp) in enumerate(zip(torch_params, spx_params, strict=True)):
        np.testing.assert_allclose(
            np.asarray(sp.data), tp.detach().numpy(), rtol=1e-5, atol=1e-6,
            err_msg=f"param {i} {where}",
        )  # fmt: skip
        np.testing.assert_allclose(
            np.asarray(spx_opt.state[sp]["momentum_buffer"]),
            torch_opt.state[tp]["momentum_buffer"].numpy(), rtol=1e-5, atol=1e-6,
            err_msg=f"momentum buffer {i} {where}",
        )  # fmt: skip


def test_state_is_a_defaultdict_as_in_torch():
    _, spx_params = twin_params()
    opt = HeavyBall(spx_params)
    assert opt.state[spx_params[0]] == {}  # torch: no KeyError for a parameter without state
    # A read like that must not break a built-in optimizer's next step either.
    adam = spx.optim.Adam(spx_params)
    assert adam.state[spx_params[0]] == {}
    for p in spx_params:
        p.grad = jnp.ones_like(p.data)
    adam.step()
    assert set(adam.state[spx_params[0]]) == {"step", "exp_avg", "exp_avg_sq"}


@pytest.mark.parametrize("compiled", [False, True])
def test_torch_style_step_matches_torch(compiled):
    torch_params, spx_params = twin_params()
    torch_opt, spx_opt = TorchHeavyBall(torch_params), HeavyBall(spx_params)

    def step(opt):
        opt.step()

    run = spx.compile(step) if compiled else step
    rng = np.random.default_rng(0)
    for i in range(5):
        set_grads(torch_params, spx_params, rng)
        torch_opt.step()
        run(spx_opt)
        # Before the fix, the compiled momentum buffer stayed at its first value.
        _check_close(torch_params, spx_params, torch_opt, spx_opt, f"after step {i}")


def test_torch_style_step_in_a_full_compiled_training_step():
    torch.manual_seed(0)
    t_model = torch.nn.Linear(3, 2)
    model = spx.nn.Linear(3, 2)
    model.load_state_dict({k: v.detach().numpy() for k, v in t_model.state_dict().items()})
    t_opt, opt = TorchHeavyBall(t_model.parameters()), HeavyBall(model.parameters())
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)

    @spx.compile
    def train_step(model, opt, x):
        opt.zero_grad()
        loss = spx.backward(lambda m: (m(x) ** 2).mean(), model)
        opt.step()
        return loss

    for i in range(4):
        t_opt.zero_grad()
        t_loss = (t_model(torch.tensor(x)) ** 2).mean()
        t_loss.backward()
        t_opt.step()
        loss = train_step(model, opt, jnp.asarray(x))
        np.testing.assert_allclose(float(loss), t_loss.item(), rtol=1e-5, err_msg=f"step {i}")
    np.testing.assert_allclose(
        np.asarray(model.weight.data), t_model.weight.detach().numpy(), rtol=1e-5, atol=1e-6
    )
