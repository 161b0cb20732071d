"""spx.compile: a fused torch-style step gives torch's numbers and recompiles only when needed."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.nn import functional as F
from tests._torch_utils import assert_params_match, copy_torch_weights

torch = pytest.importorskip("torch")


def _pair(seed=0):
    torch.manual_seed(seed)
    t = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    s = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 4))
    copy_torch_weights(t, s)
    return t, s


def _batches(n, seed=0):
    rng = np.random.default_rng(seed)
    return [
        (rng.standard_normal((8, 6)).astype(np.float32), rng.integers(0, 4, 8).astype(np.int32))
        for _ in range(n)
    ]


@spx.compile
def _train_step(model, opt, x, y):
    opt.zero_grad()
    loss = spx.backward(lambda m: F.cross_entropy(m(x), y), model)
    nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt.step()
    return loss


def test_compiled_adamw_training_matches_torch():
    t, s = _pair()
    topt = torch.optim.AdamW(t.parameters(), lr=1e-2)
    sopt = spx.optim.AdamW(s.parameters(), lr=1e-2)
    for x, y in _batches(6):
        topt.zero_grad()
        tl = torch.nn.functional.cross_entropy(t(torch.from_numpy(x)), torch.from_numpy(y).long())
        tl.backward()
        torch.nn.utils.clip_grad_norm_(t.parameters(), 0.5)
        topt.step()
        sl = _train_step(s, sopt, jnp.asarray(x), jnp.asarray(y))
        np.testing.assert_allclose(float(sl), tl.item(), rtol=1e-5)
    assert_params_match(t, s, rtol=1e-5, atol=1e-6)
    # Optimizer state was written back in torch's layout.
    ref = topt.state_dict()["state"][0]
    got = sopt.state_dict()["state"][0]
    np.testing.assert_allclose(
        np.asarray(got["exp_avg"]), ref["exp_avg"].numpy(), rtol=1e-5, atol=1e-7
    )
    assert float(got["step"]) == float(ref["step"]) == 6


def test_recompiles_only_on_structure_shape_or_mode_change():
    _, s = _pair()
    opt = spx.optim.SGD(s.parameters(), lr=0.1, momentum=0.9)
    step = spx.compile(_train_step.fn)
    ((x, y),) = _batches(1)
    for _ in range(4):
        step(s, opt, jnp.asarray(x), jnp.asarray(y))
    # One program for the first step (no grads or optimizer state yet), one for the rest.
    assert step.trace_count == 2
    for g in opt.param_groups:  # an lr change is a new value, not a new program
        g["lr"] = 0.05
    step(s, opt, jnp.asarray(x), jnp.asarray(y))
    assert step.trace_count == 2
    s.eval()
    step(s, opt, jnp.asarray(x), jnp.asarray(y))
    assert step.trace_count == 3
    s.train()
    step(s, opt, jnp.asarray(x), jnp.asarray(y))
    assert step.trace_count == 3
    step(s, opt, jnp.asarray(x[:4]), jnp.asarray(y[:4]))  # new shape: jax retraces the program
    assert np.isfinite(float(step(s, opt, jnp.asarray(x), jnp.asarray(y))))


def test_lr_from_scheduler_takes_effect_without_recompiling():
    t, s = _pair()
    topt = torch.optim.SGD(t.parameters(), lr=0.5)
    tsched = torch.optim.lr_scheduler.StepLR(topt, step_size=1, gamma=0.5)
    sopt = spx.optim.SGD(s.parameters(), lr=0.5)
    ssched = spx.optim.lr_scheduler.StepLR(sopt, step_size=1, gamma=0.5)
    step = spx.compile(_train_step.fn)
    for x, y in _batches(4, seed=1):
        topt.zero_grad()
        torch.nn.functional.cross_entropy(
            t(torch.from_numpy(x)), torch.from_numpy(y).long()
        ).backward()
        torch.nn.utils.clip_grad_norm_(t.parameters(), 0.5)
        topt.step()
        tsched.step()
        step(s, sopt, jnp.asarray(x), jnp.asarray(y))
        ssched.step()
    assert_params_match(t, s, rtol=1e-5, atol=1e-6)
    assert step.trace_count == 2


class _Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.5)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(self.drop(self.fc(x)))


def test_dropout_masks_are_fresh_each_call_and_reproducible():
    @spx.compile
    def forward(model, x):
        return model(x)

    x = jnp.ones((16, 4))
    spx.manual_seed(3)
    m = _Noisy()
    a, b = forward(m, x), forward(m, x)
    assert not np.allclose(np.asarray(a), np.asarray(b))
    spx.manual_seed(3)
    m2 = _Noisy()
    np.testing.assert_array_equal(np.asarray(forward(m2, x)), np.asarray(a))
    np.testing.assert_array_equal(np.asarray(forward(m2, x)), np.asarray(b))


def test_buffers_are_written_back_like_eager():
    x = jnp.asarray(np.random.default_rng(0).standard_normal((16, 4)), jnp.float32)
    spx.manual_seed(1)
    eager = _Noisy()
    for _ in range(3):
        eager(x)
    spx.manual_seed(1)
    compiled_model = _Noisy()
    step = spx.compile(lambda m, x: m(x).sum())
    for _ in range(3):
        step(compiled_model, x)
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(
            np.asarray(getattr(compiled_model.bn, name)),
            np.asarray(getattr(eager.bn, name)),
            rtol=1e-5,
            atol=1e-6,
        )
    assert int(compiled_model.bn.num_batches_tracked) == 3


def test_lazy_linear_materializes_under_compile():
    model = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.Linear(3, 1))
    w = model[0].weight
    opt = spx.optim.SGD(model.parameters(), lr=0.1)

    @spx.compile
    def step(model, opt, x):
        opt.zero_grad()
        loss = spx.backward(lambda m: m(x).mean(), model)
        opt.step()
        return loss

    for _ in range(3):
        step(model, opt, jnp.ones((2, 5)))
    assert model[0].weight is w and w.shape == (3, 5) and not w.is_uninitialized
    assert isinstance(w.data, jax.Array)


def test_returning_a_module_is_a_clear_error():
    _, s = _pair()
    with pytest.raises(TypeError, match="return arrays"):
        spx.compile(lambda m: m)(s)
    # The failed trace left real arrays behind, not tracers.
    assert isinstance(s[0].weight.data, jax.Array)
    assert not isinstance(s[0].weight.data, jax.core.Tracer)


def test_unhashable_static_argument_is_a_clear_error():
    _, s = _pair()
    with pytest.raises(TypeError, match="neither an array nor hashable"):
        spx.compile(lambda m, cfg: m(jnp.ones((1, 6))).sum())(s, {1, 2})


def test_static_int_argument_recompiles_per_value():
    _, s = _pair()
    f = spx.compile(lambda m, n: m(jnp.ones((n, 6))).sum())
    assert f(s, 2).shape == () and f(s, 3).shape == ()
    f(s, 2)
    assert f.trace_count == 2
