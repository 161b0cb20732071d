"""spx.amp.GradScaler against torch.amp.GradScaler("cpu"): parameters, scale and skipped steps."""

import numpy as np
import pytest

import spx
from tests._torch_utils import assert_params_match, copy_torch_weights

torch = pytest.importorskip("torch")


def _loop(lib, model, steps, blow_up, clip=False, **scaler_kwargs):
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = lib.amp.GradScaler("cpu", **scaler_kwargs)
    rng = np.random.default_rng(0)
    scales, results = [], []
    for i in range(steps):
        x = lib.tensor(rng.standard_normal((4, 3)).astype(np.float32))
        loss = model(x).pow(2).mean()
        if i in blow_up:
            loss = loss * float("inf")  # an overflow: the step must be skipped
        opt.zero_grad()
        scaler.scale(loss).backward()
        if clip:
            scaler.unscale_(opt)
            lib.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        results.append(scaler.step(opt))
        scaler.update()
        scales.append(scaler.get_scale())
    return scales, scaler.state_dict()


@pytest.mark.parametrize("clip", [False, True])
def test_training_with_overflows_matches_torch(clip):
    torch.manual_seed(0)
    t = torch.nn.Linear(3, 2)
    s = spx.nn.Linear(3, 2)
    copy_torch_weights(t, s)
    kwargs = dict(init_scale=2.0**10, growth_interval=2)
    t_scales, t_state = _loop(torch, t, 7, blow_up={2, 3}, clip=clip, **kwargs)
    s_scales, s_state = _loop(spx, s, 7, blow_up={2, 3}, clip=clip, **kwargs)
    assert s_scales == t_scales  # halved twice, then doubled every 2 good steps
    assert s_state == {k: (v.item() if hasattr(v, "item") else v) for k, v in t_state.items()}
    assert_params_match(t, s, rtol=1e-5, atol=1e-6)


def test_disabled_scaler_is_a_pass_through_and_cuda_without_gpu_disables():
    model = spx.nn.Linear(2, 1)
    scaler = spx.amp.GradScaler("cpu", enabled=False)
    loss = model(spx.ones(1, 2)).sum()
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    if not spx.cuda.is_available():
        with pytest.warns(UserWarning, match="no GPU"):
            assert not spx.cuda.amp.GradScaler().is_enabled()


def test_misuse_is_refused_as_in_torch():
    model = spx.nn.Linear(2, 1)
    opt = spx.optim.SGD(model.parameters(), lr=0.1)
    scaler = spx.amp.GradScaler("cpu")
    with pytest.raises(RuntimeError, match=r"did not use scaler\.scale"):
        scaler.step(opt)
    scaler.scale(model(spx.ones(1, 2)).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    scaler.update()
    with pytest.raises(AssertionError, match="growth factor"):  # torch's kind
        spx.amp.GradScaler("cpu", growth_factor=0.5)
    untouched = spx.optim.SGD(spx.nn.Linear(2, 1).parameters(), lr=0.1)
    with pytest.raises(AssertionError, match="No inf checks"):
        scaler.scale(model(spx.ones(1, 2)).sum())
        scaler.step(untouched)  # no parameter of it has a grad
    state = scaler.state_dict()
    other = spx.amp.GradScaler("cpu")
    other.load_state_dict(state)
    assert other.state_dict() == state


@pytest.mark.parametrize("unscale_first", [False, True])
def test_enabled_scaler_inside_a_compiled_step_raises_with_the_fix(unscale_first):
    # Its skip/scale decisions run on the host per step; traced once they would be wrong.
    model = spx.nn.Linear(2, 1)
    opt = spx.optim.SGD(model.parameters(), lr=0.1)
    scaler = spx.amp.GradScaler("cpu")

    @spx.compile
    def step(x):
        opt.zero_grad()
        scaler.scale(model(x).sum()).backward()
        if unscale_first:
            scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()

    with pytest.raises(RuntimeError, match=r"Run the scaled step without spx\.compile"):
        step(spx.ones(1, 2))
    weight = model.weight.detach().numpy().copy()
    step_off = spx.compile(lambda x: _disabled_step(model, opt, x))
    step_off(spx.ones(1, 2))  # a disabled scaler is a pass-through there too
    assert not np.allclose(model.weight.detach().numpy(), weight)


def _disabled_step(model, opt, x):
    scaler = spx.amp.GradScaler("cpu", enabled=False)
    opt.zero_grad()
    scaler.scale(model(x).sum()).backward()
    scaler.step(opt)
    scaler.update()
