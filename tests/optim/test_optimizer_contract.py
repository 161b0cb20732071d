"""The Optimizer base contract as the concrete optimizers use it: state_dict snapshots survive
later (donating) steps, loading never aliases the caller's arrays, a JSON-shaped state_dict
(string keys, lists) loads, mismatched state_dicts are rejected."""

import json

import jax.numpy as jnp
import numpy as np
import pytest

import spx
from tests.optim._parity import (
    assert_match,
    set_grads,
    to_numpy_state_dict,
    twin_params,
)

torch = pytest.importorskip("torch")


def _stepped_adam(steps: int = 3):
    torch_params, spx_params = twin_params()
    torch_opt = torch.optim.Adam(torch_params, lr=1e-2, amsgrad=True)
    spx_opt = spx.optim.Adam(spx_params, lr=1e-2, amsgrad=True)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        set_grads(torch_params, spx_params, rng)
        torch_opt.step()
        spx_opt.step()
    return torch_opt, spx_opt, torch_params, spx_params, rng


def test_state_dict_is_a_snapshot_that_survives_later_steps():
    _, spx_opt, _, spx_params, rng = _stepped_adam()
    saved = spx_opt.state_dict()
    before = np.asarray(saved["state"][0]["exp_avg"]).copy()
    for p in spx_params:
        p.grad = jnp.asarray(rng.standard_normal(p.shape), jnp.float32)
    spx_opt.step()  # donates the live state buffers
    np.testing.assert_array_equal(np.asarray(saved["state"][0]["exp_avg"]), before)
    assert not np.array_equal(np.asarray(spx_opt.state[spx_params[0]]["exp_avg"]), before)


def test_load_state_dict_does_not_alias_the_source():
    _, spx_opt, _, spx_params, rng = _stepped_adam()
    clone_params = [spx.nn.Parameter(jnp.array(p.data)) for p in spx_params]
    clone = spx.optim.Adam(clone_params, lr=1e-2, amsgrad=True)
    clone.load_state_dict(spx_opt.state_dict())
    for _ in range(2):
        grads = [jnp.asarray(rng.standard_normal(p.shape), jnp.float32) for p in spx_params]
        for opt, params in ((spx_opt, spx_params), (clone, clone_params)):
            for p, g in zip(params, grads, strict=True):
                p.grad = g
            opt.step()
    for a, b in zip(spx_params, clone_params, strict=True):
        np.testing.assert_array_equal(np.asarray(a.data), np.asarray(b.data))


def test_json_shaped_state_dict_loads_and_continues_like_torch():
    # What a safetensors + JSON checkpoint gives back: string indices, betas as a list.
    torch_opt, _, torch_params, _, rng = _stepped_adam()
    saved = to_numpy_state_dict(torch_opt.state_dict())
    saved["param_groups"] = json.loads(json.dumps(saved["param_groups"]))
    saved["state"] = {str(k): v for k, v in saved["state"].items()}
    params = [spx.nn.Parameter(jnp.asarray(p.detach().numpy().copy())) for p in torch_params]
    spx_opt = spx.optim.Adam(params, lr=1e-2, amsgrad=True)
    spx_opt.load_state_dict(saved)
    assert spx_opt.state[params[0]]["step"].dtype == jnp.float32
    for i in range(3):
        set_grads(torch_params, params, rng)
        torch_opt.step()
        spx_opt.step()
        assert_match(torch_opt, spx_opt, torch_params, params, f"after resumed step {i}")


def test_load_state_dict_rejects_a_different_layout():
    _, spx_opt, _, _, _ = _stepped_adam(steps=1)
    saved = spx_opt.state_dict()
    other = spx.optim.Adam([spx.nn.Parameter(jnp.zeros(2))])
    with pytest.raises(ValueError, match="doesn't match the size"):
        other.load_state_dict(saved)
    with pytest.raises(ValueError, match="parameter groups"):
        other.load_state_dict({"state": {}, "param_groups": []})


def _adam_state_of_linear(named: bool = False):
    model = spx.nn.Linear(4, 3)
    opt = spx.optim.Adam(model.named_parameters() if named else model.parameters(), lr=1e-2)
    for p in model.parameters():
        p.grad = jnp.ones_like(p.data)
    opt.step()
    return model, opt.state_dict()


def test_named_parameters_give_param_names_like_torch():
    t_model = torch.nn.Linear(4, 3)
    t_opt = torch.optim.Adam(t_model.named_parameters())
    model, saved = _adam_state_of_linear(named=True)
    t_names = t_opt.state_dict()["param_groups"][0]["param_names"]
    assert saved["param_groups"][0]["param_names"] == t_names == ["weight", "bias"]
    with pytest.raises(ValueError, match="with/without names"):
        spx.optim.SGD([("weight", model.weight), model.bias], lr=0.1)
    # The names appear in load_state_dict's errors.
    saved["state"][0]["exp_avg"] = np.zeros((4, 3), np.float32)
    with pytest.raises(ValueError, match=r"parameter 0 \('weight'\) of shape \(3, 4\)"):
        spx.optim.Adam(model.named_parameters()).load_state_dict(saved)


def test_load_state_dict_refuses_state_of_the_wrong_shape():
    # Before: accepted, and the next step() turned the (3,) bias into (3, 4).
    _, saved = _adam_state_of_linear()
    saved["state"][1]["exp_avg"] = np.zeros((3, 4), np.float32)
    fresh = spx.nn.Linear(4, 3)
    opt = spx.optim.Adam(fresh.parameters(), lr=1e-2)
    with pytest.raises(ValueError, match=r"parameter 1 of shape \(3,\).*'exp_avg'.*\(3, 4\)"):
        opt.load_state_dict(saved)
    assert not opt.state  # nothing was loaded
    for p in fresh.parameters():
        p.grad = jnp.ones_like(p.data)
    opt.step()
    assert fresh.bias.shape == (3,)


def test_load_state_dict_refuses_state_of_another_optimizer_or_dtype():
    model, saved = _adam_state_of_linear()
    state = {"state": saved["state"]}
    momentum_sgd = spx.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match=r"parameter 0: the state lacks 'momentum_buffer'"):
        momentum_sgd.load_state_dict(
            {**state, "param_groups": momentum_sgd.state_dict()["param_groups"]}
        )
    plain_sgd = spx.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(
        ValueError, match=r"has 'step', 'exp_avg', 'exp_avg_sq', which SGD does not"
    ):
        plain_sgd.load_state_dict({**state, "param_groups": plain_sgd.state_dict()["param_groups"]})
    amsgrad = spx.optim.Adam(model.parameters(), amsgrad=True)
    with pytest.raises(ValueError, match=r"lacks 'max_exp_avg_sq'"):
        amsgrad.load_state_dict({**state, "param_groups": amsgrad.state_dict()["param_groups"]})
    saved["state"][0]["exp_avg_sq"] = np.zeros((3, 4), np.int32)
    with pytest.raises(ValueError, match=r"'exp_avg_sq' has dtype int32, but a floating array"):
        spx.optim.Adam(model.parameters()).load_state_dict(saved)


def test_load_state_dict_checks_against_the_saved_hyperparameters():
    # A state dict saved with momentum brings its momentum: the buffers then fit.
    torch_params, spx_params = twin_params()
    t_opt = torch.optim.SGD(torch_params, lr=0.1, momentum=0.9)
    rng = np.random.default_rng(1)
    set_grads(torch_params, spx_params, rng)
    t_opt.step()
    opt = spx.optim.SGD(spx_params, lr=0.1)  # no momentum yet
    opt.load_state_dict(to_numpy_state_dict(t_opt.state_dict()))
    assert opt.param_groups[0]["momentum"] == 0.9
    assert set(opt.state[spx_params[0]]) == {"momentum_buffer"}


def _leaf_loss(w, b, x):
    # The same expression in torch and spx (tensor methods only).
    return ((x @ w + b).tanh() ** 2).mean() + 0.1 * (w * w).sum()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize(
    ("name", "kwargs"),
    [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=1e-2)), ("AdamW", dict(lr=1e-2))],
)
def test_plain_leaf_tensors_train_like_torch(name, kwargs, compiled):
    # torch.zeros(..., requires_grad=True) leaves, no Parameter and no Module: torch's
    # loss.backward() + optimizer flow, with spx.compile taking the leaves as arguments.
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((4, 3)).astype(np.float32)
    tw = torch.tensor(w0, requires_grad=True)
    tb = torch.zeros(3, requires_grad=True)
    sw = spx.tensor(w0, requires_grad=True)
    sb = spx.zeros(3, requires_grad=True)
    assert type(sw) is spx.Tensor and sw.is_leaf and sb.is_leaf
    topt = getattr(torch.optim, name)([tw, tb], **kwargs)
    sopt = getattr(spx.optim, name)([sw, sb], **kwargs)

    def step(w, b, opt, x):
        opt.zero_grad()
        loss = _leaf_loss(w, b, x)
        loss.backward()
        opt.step()
        return loss

    step = spx.compile(step) if compiled else step
    for i in range(5):
        x = rng.standard_normal((8, 4)).astype(np.float32)
        topt.zero_grad()
        tloss = _leaf_loss(tw, tb, torch.from_numpy(x))
        tloss.backward()
        topt.step()
        sloss = step(sw, sb, sopt, spx.from_numpy(x))
        np.testing.assert_allclose(sloss.item(), tloss.item(), rtol=1e-5, err_msg=str(i))
        for s, t in ((sw, tw), (sb, tb)):
            np.testing.assert_allclose(
                s.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=str(i)
            )
            np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)
    # The same objects were updated in place, and their state is keyed by them.
    assert [id(p) for p in sopt.state] == [id(sw), id(sb)]


def test_a_non_leaf_tensor_is_rejected_like_torch():
    w = spx.zeros(3, requires_grad=True)
    tw = torch.zeros(3, requires_grad=True)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        torch.optim.SGD([tw * 2], lr=0.1)
    with pytest.raises(ValueError, match=r"can't optimize a non-leaf Tensor.*detach"):
        spx.optim.SGD([w * 2], lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        spx.optim.SGD([jnp.zeros(3)], lr=0.1)


def test_state_dict_values_are_tensor_copies():
    _, spx_opt, _, spx_params, _ = _stepped_adam(steps=1)
    saved = spx_opt.state_dict()["state"][0]
    for key in ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
        assert isinstance(saved[key], spx.Tensor), key
        assert saved[key]._data is not spx_opt.state[spx_params[0]][key]


_OPTIMIZERS = [
    "SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "RMSprop", "Rprop",
    "ASGD",
]  # fmt: skip


@pytest.mark.parametrize("name", _OPTIMIZERS)
def test_every_optimizer_takes_plain_leaves_and_reloads_their_state_like_torch(name):
    # Adagrad's constructor and load_state_dict read a Parameter-only attribute of plain leaves.
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((4, 3)).astype(np.float32)
    tw, sw = torch.tensor(w0, requires_grad=True), spx.tensor(w0, requires_grad=True)
    kwargs = {} if name in ("Adadelta", "Rprop") else {"lr": 1e-2}
    topt = getattr(torch.optim, name)([tw], **kwargs)
    sopt = getattr(spx.optim, name)([sw], **kwargs)
    xs = [rng.standard_normal((8, 4)).astype(np.float32) for _ in range(5)]
    for i, x in enumerate(xs):
        if i == 3:  # a new optimizer resumes from the saved state, as after a restart
            saved_t, saved_s = topt.state_dict(), sopt.state_dict()
            topt = getattr(torch.optim, name)([tw], **kwargs)
            sopt = getattr(spx.optim, name)([sw], **kwargs)
            topt.load_state_dict(saved_t)
            sopt.load_state_dict(saved_s)
        for w, opt, lib in ((tw, topt, torch), (sw, sopt, spx)):
            opt.zero_grad()
            ((lib.from_numpy(x) @ w).tanh() ** 2).mean().backward()
            opt.step()
        np.testing.assert_allclose(
            sw.detach().numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=f"{name} {i}"
        )
