"""LazyBatchNorm1d/2d/3d and LazyInstanceNorm1d/2d/3d against torch.nn's lazy norms."""

import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from tests.nn._parity import assert_close, host

torch = pytest.importorskip("torch")

CASES = [
    ("LazyBatchNorm1d", (6, 3)),
    ("LazyBatchNorm1d", (4, 3, 5)),
    ("LazyBatchNorm2d", (2, 3, 4, 5)),
    ("LazyBatchNorm3d", (2, 3, 2, 3, 4)),
    ("LazyInstanceNorm1d", (2, 3, 5)),
    ("LazyInstanceNorm2d", (2, 3, 4, 5)),
    ("LazyInstanceNorm3d", (2, 3, 2, 3, 4)),
]


def _step(layer, x, cot, lib):
    """One forward and backward; returns the output and the input's gradient."""
    xt = lib.tensor(x, requires_grad=True)
    y = layer(xt)
    (y * lib.tensor(cot)).sum().backward()
    return y, xt.grad


@pytest.mark.parametrize(("name", "shape"), CASES, ids=[f"{n}{s}" for n, s in CASES])
@pytest.mark.parametrize(
    "kwargs",
    [{}, dict(affine=False), dict(track_running_stats=False, momentum=None), dict(bias=False)],
    ids=str,
)
def test_matches_torch_through_training_and_eval(name, shape, kwargs):
    s_layer, t_layer = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    assert repr(s_layer) == repr(t_layer)  # num_features=0 before the first call, as torch
    assert list(s_layer.state_dict()) == list(t_layer.state_dict())
    s_params = list(s_layer.parameters())  # an optimizer built now holds these objects
    rng = np.random.default_rng(0)
    for step in range(2):
        x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
        cot = rng.standard_normal(shape).astype(np.float32)
        y, gx = _step(s_layer, x, cot, spx)
        yt, gxt = _step(t_layer, x, cot, torch)
        assert_close(y, yt, 1e-5, 2e-5, f"output, step {step}")
        assert_close(gx, gxt, 1e-4, 2e-5, f"input gradient, step {step}")
    assert s_layer.num_features == t_layer.num_features == 3
    assert list(s_layer.parameters()) == s_params and all(p is q for p, q in zip(
        s_layer.parameters(), s_params, strict=True))  # fmt: skip
    for (k, v), (kt, vt) in zip(
        s_layer.state_dict().items(), t_layer.state_dict().items(), strict=True
    ):
        assert k == kt and tuple(v.shape) == tuple(vt.shape), (k, kt)
        assert_close(v, vt.float(), 1e-5, 1e-5, k)
    s_grads = dict(s_layer.named_parameters())
    for n, p in t_layer.named_parameters():
        assert_close(s_grads[n].grad, p.grad, 1e-5, 2e-5, f".grad of {n}")
    s_layer.eval(), t_layer.eval()
    x = rng.standard_normal(shape).astype(np.float32)
    with spx.no_grad(), torch.no_grad():
        assert_close(s_layer(spx.tensor(x)), t_layer(torch.tensor(x)), 1e-5, 2e-5, "eval")


def test_lazy_instance_norm_defaults_are_torchs():
    for name in ("LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"):
        s, t = getattr(nn, name)(), getattr(torch.nn, name)()
        assert (s.affine, s.track_running_stats) == (t.affine, t.track_running_stats)
        assert (s.affine, s.track_running_stats) == (True, True)
    assert nn.InstanceNorm1d(3).affine is False  # the eager default stays torch's


def test_unbatched_instance_norm_infers_the_channel_dim():
    # torch reads dim 1 of an unbatched (C, L) input (L) and then rejects it; spx reads C.
    layer = nn.LazyInstanceNorm1d()
    x = np.random.default_rng(1).standard_normal((3, 7)).astype(np.float32)
    y = layer(x)
    assert layer.num_features == 3 and layer.weight.shape == (3,)
    ref = torch.nn.InstanceNorm1d(3, affine=True, track_running_stats=True)
    assert_close(y, ref(torch.tensor(x)), 1e-5, 2e-5)
    assert_close(layer.running_mean, ref.running_mean, 1e-5, 1e-6)


def test_load_state_dict_sizes_a_lazy_layer_before_its_first_call():
    trained = torch.nn.BatchNorm2d(4)
    trained.train()
    trained(torch.randn(3, 4, 5, 5) * 3 + 2)
    for kind in (nn.LazyBatchNorm2d, nn.BatchNorm2d):  # nn.BatchNorm2d(None) is lazy too
        layer = kind() if kind is nn.LazyBatchNorm2d else kind(None)
        weight = layer.weight
        state = {k: v.numpy() for k, v in trained.state_dict().items()}
        missing, unexpected = layer.load_state_dict(state)
        assert not missing and not unexpected
        assert layer.num_features == 4 and layer.weight is weight
        assert int(layer.num_batches_tracked) == 1
        x = np.random.default_rng(2).standard_normal((2, 4, 3, 3)).astype(np.float32)
        layer.eval(), trained.eval()
        with spx.no_grad(), torch.no_grad():
            assert_close(layer(x), trained(torch.tensor(x)), 1e-5, 1e-5)


def test_module_to_before_the_first_call_sets_the_statistics_dtype():
    layer = nn.LazyBatchNorm1d().to(jnp.bfloat16)
    layer(jnp.ones((4, 3), jnp.bfloat16))
    assert layer.running_mean.dtype == jnp.bfloat16 and layer.weight.dtype == jnp.bfloat16
    assert layer.running_mean.shape == (3,)


def test_optimizer_built_before_the_first_call_trains_the_lazy_parameters():
    layer = nn.LazyBatchNorm1d()
    opt = spx.optim.SGD(layer.parameters(), lr=0.5)
    t_layer = torch.nn.LazyBatchNorm1d()
    t_opt = torch.optim.SGD(t_layer.parameters(), lr=0.5)
    x = np.random.default_rng(3).standard_normal((8, 5)).astype(np.float32)
    target = np.random.default_rng(4).standard_normal((8, 5)).astype(np.float32)
    for _ in range(2):
        opt.zero_grad(), t_opt.zero_grad()
        ((layer(x) - spx.tensor(target)) ** 2).mean().backward()
        ((t_layer(torch.tensor(x)) - torch.tensor(target)) ** 2).mean().backward()
        opt.step(), t_opt.step()
    assert_close(layer.weight, t_layer.weight, 1e-5, 1e-6)
    assert_close(layer.bias, t_layer.bias, 1e-5, 1e-6)


COMPILED_CASES = [
    ("LazyBatchNorm1d", (6, 3)),
    ("LazyBatchNorm1d", (4, 3, 5)),
    ("LazyBatchNorm2d", (4, 3, 3, 3)),
    ("LazyBatchNorm3d", (2, 3, 2, 3, 2)),
    ("LazyInstanceNorm2d", (2, 3, 4, 5)),
]


@pytest.mark.parametrize(
    ("name", "shape"), COMPILED_CASES, ids=[f"{n}{s}" for n, s in COMPILED_CASES]
)
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "no_affine"])
@pytest.mark.parametrize("track", [True, False], ids=["track", "no_track"])
def test_first_call_inside_a_compiled_step_matches_torch(name, shape, affine, track):
    # spx.compile traces the step twice and restores the lazy parameters and the empty
    # statistics after the first trace: the second one must materialize them again.
    kwargs = dict(affine=affine, track_running_stats=track)
    layer, t_layer = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    params = list(layer.parameters())
    # Built before the first call (none without affine: torch refuses an empty list too).
    opt = spx.optim.SGD(params, lr=0.1) if params else None
    t_opt = torch.optim.SGD(t_layer.parameters(), lr=0.1) if params else None

    def step(x, layer, opt):
        if opt is not None:
            opt.zero_grad()
        loss = (layer(x) - x * 0.5).pow(2).mean()
        if opt is not None:
            loss.backward()
            opt.step()
        return loss

    compiled = spx.compile(lambda x: step(x, layer, opt))
    rng = np.random.default_rng(5)
    for i in range(3):
        x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
        loss, t_loss = compiled(spx.tensor(x)), step(torch.tensor(x), t_layer, t_opt)
        assert_close(loss, t_loss.detach(), 1e-5, 1e-6, f"loss, step {i}")
    # torch leaves num_features at 0 when the layer has no state to size (neither affine nor
    # tracking); spx records the channels of the first input in every case.
    assert layer.num_features == 3
    assert t_layer.num_features == (3 if affine or track else 0)
    assert all(p is q for p, q in zip(layer.parameters(), params, strict=True))
    state, t_state = layer.state_dict(), t_layer.state_dict()
    assert list(state) == list(t_state)
    for k, v in t_state.items():
        assert tuple(state[k].shape) == tuple(v.shape), k
        assert_close(state[k], v.float(), 1e-5, 1e-6, k)


def test_errors():
    with pytest.raises(ValueError, match=r"expected 2D or 3D input"):
        nn.LazyBatchNorm1d()(jnp.ones((2, 3, 4, 5)))
    layer = nn.LazyBatchNorm2d()
    layer(jnp.ones((2, 3, 4, 4)))
    with pytest.raises(ValueError, match=r"input has 5 channels .* num_features=3"):
        layer(jnp.ones((2, 5, 4, 4)))
    with pytest.raises(ValueError, match=r"expected 3D or 4D input"):
        nn.LazyInstanceNorm2d()(jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="momentum"):
        nn.LazyBatchNorm3d(momentum=2.0)
    with pytest.raises(RuntimeError, match="uninitialized"):
        host(nn.LazyBatchNorm1d().weight)


LAZY = [
    ("LazyLinear", (3,), (2, 5)),
    ("LazyConv1d", (4, 3), (2, 3, 8)),
    ("LazyConv2d", (4, 3), (2, 3, 8, 8)),
    ("LazyConv3d", (4, 3), (1, 3, 5, 5, 5)),
    ("LazyConvTranspose1d", (4, 3), (2, 3, 8)),
    ("LazyConvTranspose2d", (4, 3), (2, 3, 8, 8)),
    ("LazyConvTranspose3d", (4, 3), (1, 3, 5, 5, 5)),
    ("LazyBatchNorm1d", (), (4, 3)),
    ("LazyBatchNorm2d", (), (2, 3, 4, 4)),
    ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", (), (2, 3, 8)),
    ("LazyInstanceNorm2d", (), (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), (2, 3, 2, 2, 2)),
]


@pytest.mark.parametrize(("name", "args", "shape"), LAZY, ids=[c[0] for c in LAZY])
def test_a_lazy_module_becomes_torchs_plain_class_once_materialized(name, args, shape):
    # torch's cls_to_become: init code written as `if type(m) == nn.Linear:` must see it.
    import torch

    import spx

    classes = []
    for m in (torch, spx):
        layer = getattr(m.nn, name)(*args)
        assert type(layer).__name__ == name
        layer(m.ones(*shape))
        classes.append(type(layer))
    assert classes[1].__name__ == classes[0].__name__ == name.removeprefix("Lazy")
    assert classes[1] is getattr(spx.nn, name.removeprefix("Lazy"))
