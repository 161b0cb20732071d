"""BatchNorm1d/2d against torch.nn: train/eval outputs, grads, running statistics, state_dict."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from tests.nn._parity import host

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-5, 1e-5


def _x(*shape, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 2 + 1).astype(np.float32)


def _pair(cls, *args, **kwargs):
    t_layer = getattr(torch.nn, cls)(*args, **kwargs)
    s_layer = getattr(nn, cls)(*args, **kwargs)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in t_layer.parameters():
            p.copy_(torch.randn(p.shape))
    s_layer.load_state_dict({k: v.detach().numpy() for k, v in t_layer.state_dict().items()})
    return t_layer, s_layer


def _assert_state_equal(t_layer, s_layer):
    t_sd, s_sd = t_layer.state_dict(), s_layer.state_dict()
    assert list(s_sd) == list(t_sd)
    for k, v in t_sd.items():
        np.testing.assert_allclose(np.asarray(s_sd[k]), v.numpy(), rtol=RTOL, atol=ATOL, err_msg=k)


@jax.jit
def _step(m, x, cot):
    """Output, grads and the module after the forward (its new running statistics)."""

    def f(m, x):
        return jnp.asarray(m(x)), m

    y, vjp, m_after = jax.vjp(f, m, x, has_aux=True)
    return y, *vjp(cot), m_after


def _check_step(t_layer, s_layer, x_np):
    """One forward/backward in the current mode: output, all grads and buffers match torch.

    Under JAX transforms first (``jax.vjp`` of the module returns the traced module with its
    new buffers, the real module is untouched), then the torch flow on the real module: a
    Tensor input, ``loss.backward()`` into ``.grad``, buffers updated in place.
    """
    t_layer.zero_grad()
    xt = torch.tensor(x_np, requires_grad=True)
    yt = t_layer(xt)
    cot = np.random.default_rng(1).standard_normal(tuple(yt.shape)).astype(np.float32)
    (yt * torch.tensor(cot)).sum().backward()

    y, g_m, g_x, after = _step(s_layer, jnp.asarray(x_np), jnp.asarray(cot))
    np.testing.assert_allclose(np.asarray(y), yt.detach().numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(np.asarray(g_x), xt.grad.numpy(), rtol=RTOL, atol=ATOL)
    grads = dict(g_m.named_parameters())
    for name, p in t_layer.named_parameters():
        np.testing.assert_allclose(
            host(grads[name]), p.grad.numpy(), rtol=RTOL, atol=ATOL, err_msg=name
        )
    _assert_state_equal(t_layer, after)

    s_layer.zero_grad()
    x = spx.tensor(x_np, requires_grad=True)
    y = s_layer(x)
    (y * spx.tensor(cot)).sum().backward()
    np.testing.assert_allclose(host(y), yt.detach().numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=RTOL, atol=ATOL)
    for name, p in t_layer.named_parameters():
        np.testing.assert_allclose(
            getattr(s_layer, name).grad.numpy(), p.grad.numpy(), rtol=RTOL, atol=ATOL,
            err_msg=name,
        )  # fmt: skip
    _assert_state_equal(t_layer, s_layer)


CASES = [
    ("BatchNorm1d", (3,), {}, (8, 3)),
    ("BatchNorm1d", (3,), {"momentum": None, "affine": False, "eps": 1e-3}, (4, 3, 5)),
    ("BatchNorm2d", (3,), {"momentum": 0.3}, (4, 3, 2, 3)),
    ("BatchNorm2d", (3,), {"momentum": None, "bias": False}, (2, 3, 3, 3)),
]


@pytest.mark.parametrize(("cls", "args", "kwargs", "shape"), CASES)
def test_training_steps_then_eval_match_torch(cls, args, kwargs, shape):
    t_layer, s_layer = _pair(cls, *args, **kwargs)
    assert repr(s_layer) == repr(t_layer)
    _assert_state_equal(t_layer, s_layer)
    for step in range(3):  # different batches: running stats, num_batches_tracked, momentum
        _check_step(t_layer, s_layer, _x(*shape, seed=step))
        _assert_state_equal(t_layer, s_layer)
    assert int(s_layer.num_batches_tracked) == 3
    t_layer.eval()
    s_layer.eval()
    _check_step(t_layer, s_layer, _x(*shape, seed=10))  # running stats, no update
    _assert_state_equal(t_layer, s_layer)


def test_cumulative_average_with_momentum_none():
    layer = nn.BatchNorm1d(2, momentum=None)
    batches = [_x(5, 2, seed=s) for s in range(4)]
    for b in batches:
        layer(jnp.asarray(b))
    np.testing.assert_allclose(
        np.asarray(layer.running_mean), np.mean([b.mean(0) for b in batches], 0), rtol=1e-5
    )
    unbiased = np.mean([b.var(0, ddof=1) for b in batches], 0)
    # running_var starts at 1 and the first factor is 1/1, so the 1 drops out of the average.
    np.testing.assert_allclose(np.asarray(layer.running_var), unbiased, rtol=1e-5)


def test_no_running_stats_uses_batch_statistics_in_eval():
    t_layer, s_layer = _pair("BatchNorm1d", 3, track_running_stats=False)
    assert repr(s_layer) == repr(t_layer)
    assert s_layer.running_mean is None and s_layer.num_batches_tracked is None
    assert list(s_layer.state_dict()) == list(t_layer.state_dict()) == ["weight", "bias"]
    t_layer.eval()
    s_layer.eval()
    _check_step(t_layer, s_layer, _x(6, 3))


def test_state_dict_layout_and_int64_checkpoint():
    t_layer, s_layer = _pair("BatchNorm2d", 4)
    sd = s_layer.state_dict()
    assert [(k, tuple(v.shape)) for k, v in sd.items()] == [
        (k, tuple(v.shape)) for k, v in t_layer.state_dict().items()
    ]
    assert list(sd) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    # Deviation (documented): int32, since JAX's 64-bit mode is off; torch's int64 loads.
    assert sd["num_batches_tracked"].dtype == jnp.int32
    t_layer.num_batches_tracked.fill_(7)
    s_layer.load_state_dict({k: v.numpy() for k, v in t_layer.state_dict().items()})
    assert int(s_layer.num_batches_tracked) == 7
    assert s_layer.num_batches_tracked.dtype == jnp.int32
    assert dict(s_layer.named_buffers()).keys() == dict(t_layer.named_buffers()).keys()


def test_default_init_and_reset():
    layer = nn.BatchNorm1d(3)
    np.testing.assert_array_equal(layer.weight.detach().numpy(), 1.0)
    np.testing.assert_array_equal(layer.bias.detach().numpy(), 0.0)
    running_mean = layer.running_mean
    aliases = layer.state_dict()
    layer(jnp.asarray(_x(4, 3)))
    assert np.asarray(layer.running_mean).any()
    # Updated in place, as torch: the same buffer object, and earlier aliases see the values.
    assert layer.running_mean is running_mean
    np.testing.assert_array_equal(np.asarray(aliases["running_mean"]), running_mean.numpy())
    assert int(aliases["num_batches_tracked"]) == 1
    layer.reset_running_stats()
    assert layer.running_mean is running_mean
    np.testing.assert_array_equal(np.asarray(layer.running_mean), 0.0)
    np.testing.assert_array_equal(np.asarray(layer.running_var), 1.0)
    assert int(layer.num_batches_tracked) == 0


def test_input_validation():
    with pytest.raises(ValueError, match="2D or 3D"):
        nn.BatchNorm1d(3)(jnp.ones((2, 3, 4, 5)))
    with pytest.raises(ValueError, match="4D"):
        nn.BatchNorm2d(3)(jnp.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="num_features=3"):
        nn.BatchNorm1d(3)(jnp.ones((2, 4)))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3)(jnp.ones((1, 3)))
    with pytest.raises(ValueError, match="num_features"):
        nn.BatchNorm2d(0)
    # torch raises ValueError for the rank too
    with pytest.raises(ValueError):
        torch.nn.BatchNorm2d(3)(torch.ones(2, 3, 4))


def test_running_stats_flow_through_jit():
    t_layer, s_layer = _pair("BatchNorm1d", 3)
    x_np = _x(8, 3)

    # Functional style: return the module from the jitted function to get its new buffers.
    @jax.jit
    def step(m, x):
        y = m(x)
        return y, m

    _, updated = step(s_layer, jnp.asarray(x_np))
    t_layer(torch.tensor(x_np))
    _assert_state_equal(t_layer, updated)


def test_running_stats_and_grads_with_loss_backward():
    t_layer, s_layer = _pair("BatchNorm1d", 3)
    cot = np.random.default_rng(1).standard_normal((8, 3)).astype(np.float32)
    for seed in range(2):  # .grad accumulates across the two steps, as in torch
        x_np = _x(8, 3, seed=seed)
        (t_layer(torch.tensor(x_np)) * torch.tensor(cot)).sum().backward()
        (s_layer(spx.tensor(x_np)) * spx.tensor(cot)).sum().backward()
        _assert_state_equal(t_layer, s_layer)
        for name, p in t_layer.named_parameters():
            np.testing.assert_allclose(
                getattr(s_layer, name).grad.numpy(), p.grad.numpy(), rtol=RTOL, atol=ATOL
            )


def test_running_stats_flow_through_spx_backward():
    # The functional form: spx.backward fills .grad and the buffers see the forward's update.
    t_layer, s_layer = _pair("BatchNorm1d", 3)
    cot = np.random.default_rng(1).standard_normal((8, 3)).astype(np.float32)
    for seed in range(2):
        x_np = _x(8, 3, seed=seed)
        t_layer.zero_grad()
        (t_layer(torch.tensor(x_np)) * torch.tensor(cot)).sum().backward()
        s_layer.zero_grad()
        spx.backward(lambda m, x=x_np: (m(jnp.asarray(x)) * spx.tensor(cot)).sum(), s_layer)
        _assert_state_equal(t_layer, s_layer)
        for name, p in t_layer.named_parameters():
            np.testing.assert_allclose(
                np.asarray(getattr(s_layer, name).grad), p.grad.numpy(), rtol=RTOL, atol=ATOL
            )


def test_batchnorm3d_train_and_eval_match_torch():
    from spx.nn.modules.batchnorm import BatchNorm3d  # not in spx.nn's name map yet

    t_layer, s_layer = torch.nn.BatchNorm3d(2), BatchNorm3d(2)
    assert repr(s_layer) == repr(t_layer)
    x_np = _x(2, 2, 2, 2, 3)
    for mode in ("train", "eval"):
        getattr(t_layer, mode)()
        getattr(s_layer, mode)()
        _check_step(t_layer, s_layer, x_np)  # outputs, grads, running stats
        _assert_state_equal(t_layer, s_layer)
    with pytest.raises(ValueError, match="5D"):
        s_layer(jnp.ones((2, 2, 3)))


def test_state_dict_without_num_batches_tracked_loads_like_torch(tmp_path):
    # An old checkpoint (before torch added the counter). Before: "Missing key(s)".
    t_model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))
    t_model(torch.randn(8, 3))  # the counter is 1 now, in both models below
    old = {k: v.detach().numpy() for k, v in t_model.state_dict().items()}
    del old["1.num_batches_tracked"]
    t_fresh = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))
    t_fresh(torch.randn(8, 3))
    assert t_fresh.load_state_dict({k: torch.tensor(v) for k, v in old.items()}) == ([], [])

    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    model(jnp.ones((8, 3)))
    given = dict(old)
    assert model.load_state_dict(given) == ([], [])
    assert given == old  # the caller's dict is not modified (torch copies it too)
    assert int(model[1].num_batches_tracked) == int(t_fresh[1].num_batches_tracked) == 1
    np.testing.assert_allclose(np.asarray(model[1].running_mean), old["1.running_mean"])

    # Through a checkpoint file as well (a lazy mapping over the file).
    from spx.serialization import load_checkpoint, save

    save(old, tmp_path / "old.safetensors")
    assert load_checkpoint(
        nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)), tmp_path / "old.safetensors"
    ) == ([], [])


def test_other_missing_keys_are_still_reported():
    model = nn.BatchNorm1d(3)
    sd = {k: np.asarray(v) for k, v in model.state_dict().items() if k != "running_var"}
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "running_var"'):
        model.load_state_dict(sd)
