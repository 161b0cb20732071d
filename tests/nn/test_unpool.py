"""Max pooling with indices, adaptive max pooling with indices and max unpooling vs torch."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.nn import functional as F
from tests.nn._parity import assert_close, host

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _pool_both(s_fn, t_fn, x_np, cot_seed=1):
    """Outputs, indices and input gradients (loss sum(out * cot)) of spx and torch."""
    x = spx.tensor(x_np, requires_grad=True)
    xt = torch.tensor(x_np, requires_grad=True)
    out, idx = s_fn(x)
    out_t, idx_t = t_fn(xt)
    cot = np.random.default_rng(cot_seed).standard_normal(tuple(out_t.shape)).astype(np.float32)
    (out * spx.tensor(cot)).sum().backward()
    (out_t * torch.tensor(cot)).sum().backward()
    return (out, idx, x.grad), (out_t, idx_t, xt.grad)


def _assert_pool_matches(s_fn, t_fn, x_np):
    (out, idx, g), (out_t, idx_t, g_t) = _pool_both(s_fn, t_fn, x_np)
    assert idx.dtype == spx.int32  # torch's int64; JAX runs with 64-bit types off
    np.testing.assert_array_equal(host(idx), idx_t.numpy())
    np.testing.assert_array_equal(host(out), out_t.detach().numpy())
    # Gradients are sums where windows overlap: the order of those sums may differ by an ulp.
    np.testing.assert_allclose(host(g), g_t.numpy(), rtol=1e-6, atol=1e-7)


POOLS = [
    (1, dict(kernel_size=2)),
    (1, dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)),
    (1, dict(kernel_size=3, stride=2, padding=1, dilation=2)),
    (2, dict(kernel_size=2)),
    (2, dict(kernel_size=3, stride=2, padding=1)),
    (2, dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), dilation=(2, 1), ceil_mode=True)),
    (2, dict(kernel_size=3, stride=1)),  # overlapping windows share maxima
    (3, dict(kernel_size=2)),
    (3, dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (3, dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), dilation=(1, 1, 2))),
]
SHAPES = {1: (2, 3, 11), 2: (2, 3, 7, 9), 3: (2, 2, 5, 6, 7)}


@pytest.mark.parametrize(("nd", "kwargs"), POOLS, ids=[f"{n}d-{k}" for n, k in POOLS])
def test_max_pool_with_indices_matches_torch(nd, kwargs):
    x = np.random.default_rng(nd).standard_normal(SHAPES[nd]).astype(np.float32)
    name = f"max_pool{nd}d"
    _assert_pool_matches(
        lambda x: getattr(F, name)(x, return_indices=True, **kwargs),
        lambda x: getattr(TF, name)(x, return_indices=True, **kwargs),
        x,
    )
    # The *_with_indices names return the pair whatever return_indices says, as torch's.
    _assert_pool_matches(
        lambda x: getattr(F, f"{name}_with_indices")(x, **kwargs),
        lambda x: getattr(TF, f"{name}_with_indices")(x, **kwargs),
        x,
    )


def test_ties_nan_and_infinities_pick_torchs_element():
    rng = np.random.default_rng(0)
    x = rng.integers(-2, 3, (2, 2, 8, 8)).astype(np.float32)  # many ties
    x[0, 0, :3, :3] = -np.inf  # a window of -inf only: the first real element, not padding
    x[0, 1, 0, 0] = x[0, 1, 1, 1] = np.nan  # two NaNs in one window: torch takes the last
    x[1, 0, 4, 4] = np.inf
    for kwargs in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1)):
        out, idx = F.max_pool2d(x, return_indices=True, **kwargs)
        out_t, idx_t = TF.max_pool2d(torch.tensor(x), return_indices=True, **kwargs)
        np.testing.assert_array_equal(host(idx), idx_t.numpy())
        np.testing.assert_array_equal(host(out), out_t.numpy())  # NaN == NaN here


@pytest.mark.parametrize(
    ("nd", "size"),
    [(1, 4), (1, 5), (2, (3, 4)), (2, (7, None)), (3, (2, 3, 4)), (3, 1)],
    ids=str,
)
def test_adaptive_max_pool_with_indices_matches_torch(nd, size):
    x = np.random.default_rng(nd).standard_normal(SHAPES[nd]).astype(np.float32)
    name = f"adaptive_max_pool{nd}d"
    _assert_pool_matches(
        lambda x: getattr(F, name)(x, size, return_indices=True),
        lambda x: getattr(TF, name)(x, size, return_indices=True),
        x,
    )
    _assert_pool_matches(
        lambda x: getattr(F, f"{name}_with_indices")(x, size),
        lambda x: getattr(TF, f"{name}_with_indices")(x, size),
        x,
    )


UNPOOLS = [
    (1, dict(kernel_size=2), None),
    (1, dict(kernel_size=3, stride=2, padding=1), (11,)),
    (2, dict(kernel_size=2), (7, 9)),  # the pool dropped a row and a column
    (2, dict(kernel_size=3, stride=1), None),  # overlapping windows: repeated indices
    (2, dict(kernel_size=3, stride=2, padding=1), (2, 3, 7, 9)),  # (N, C, H, W) form
    (3, dict(kernel_size=2), (5, 6, 7)),
    (3, dict(kernel_size=(3, 2, 2), stride=(2, 2, 1), padding=(1, 0, 1)), None),
]


@pytest.mark.parametrize(("nd", "kwargs", "output_size"), UNPOOLS, ids=str)
def test_pool_then_unpool_matches_torch_with_gradients(nd, kwargs, output_size):
    x_np = np.random.default_rng(10 + nd).standard_normal(SHAPES[nd]).astype(np.float32)
    pool_t = getattr(torch.nn, f"MaxPool{nd}d")(return_indices=True, **kwargs)
    unpool_t = getattr(torch.nn, f"MaxUnpool{nd}d")(**kwargs)
    pool = getattr(nn, f"MaxPool{nd}d")(return_indices=True, **kwargs)
    unpool = getattr(nn, f"MaxUnpool{nd}d")(**kwargs)
    assert repr(pool) == repr(pool_t) and repr(unpool) == repr(unpool_t)
    x = spx.tensor(x_np, requires_grad=True)
    xt = torch.tensor(x_np, requires_grad=True)
    out, idx = pool(x)
    out_t, idx_t = pool_t(xt)
    y = unpool(out, idx, output_size=output_size)
    yt = unpool_t(out_t, idx_t, output_size=output_size)
    assert tuple(y.shape) == tuple(yt.shape)
    np.testing.assert_array_equal(host(y), yt.detach().numpy())
    # A loss that weighs every output position differently, through unpool and pool.
    cot = np.random.default_rng(1).standard_normal(tuple(yt.shape)).astype(np.float32)
    out.retain_grad()
    out_t.retain_grad()
    (y * spx.tensor(cot)).sum().backward()
    (yt * torch.tensor(cot)).sum().backward()
    assert_close(out.grad, out_t.grad, 1e-6, 1e-7, "gradient at the unpool's input")
    assert_close(x.grad, xt.grad, 1e-6, 1e-7, "gradient at the pool's input")


def test_unbatched_and_functional_forms():
    x_np = np.random.default_rng(3).standard_normal((3, 6, 8)).astype(np.float32)
    out, idx = F.max_pool2d(x_np, 2, return_indices=True)
    out_t, idx_t = TF.max_pool2d(torch.tensor(x_np), 2, return_indices=True)
    np.testing.assert_array_equal(host(idx), idx_t.numpy())
    y = F.max_unpool2d(out, idx, 2)
    np.testing.assert_array_equal(host(y), TF.max_unpool2d(out_t, idx_t, 2).numpy())
    # Indices from torch (int64 numpy) work as well.
    y = F.max_unpool2d(out, idx_t.numpy(), 2, output_size=(6, 8))
    assert y.shape == (3, 6, 8)


def test_adaptive_max_pool_modules_return_indices():
    x_np = np.random.default_rng(4).standard_normal((2, 3, 7, 9)).astype(np.float32)
    layer = nn.AdaptiveMaxPool2d((3, 4), return_indices=True)
    t_layer = torch.nn.AdaptiveMaxPool2d((3, 4), return_indices=True)
    assert repr(layer) == repr(t_layer) and layer.return_indices
    _assert_pool_matches(layer, t_layer, x_np)
    x1 = x_np.reshape(2, 3, 63)
    _assert_pool_matches(nn.AdaptiveMaxPool1d(5, True), torch.nn.AdaptiveMaxPool1d(5, True), x1)


def test_under_jit_and_compile():
    x = np.random.default_rng(5).standard_normal((2, 3, 8, 8)).astype(np.float32)

    def round_trip(x):
        out, idx = F.max_pool2d(x, 2, return_indices=True)
        return jnp.asarray(F.max_unpool2d(out, idx, 2))

    y = jax.jit(round_trip)(jnp.asarray(x))
    out_t, idx_t = TF.max_pool2d(torch.tensor(x), 2, return_indices=True)
    np.testing.assert_array_equal(np.asarray(y), TF.max_unpool2d(out_t, idx_t, 2).numpy())
    g = jax.grad(lambda x: (round_trip(x) ** 2).sum())(jnp.asarray(x))
    xt = torch.tensor(x, requires_grad=True)
    (TF.max_unpool2d(*TF.max_pool2d(xt, 2, return_indices=True), 2) ** 2).sum().backward()
    np.testing.assert_allclose(np.asarray(g), xt.grad.numpy(), rtol=1e-6)


def test_errors():
    out, idx = F.max_pool2d(np.ones((1, 1, 4, 4), np.float32), 2, return_indices=True)
    with pytest.raises(RuntimeError, match=r"invalid max index: 30 .* of size 4x4"):
        F.max_unpool2d(out, host(idx) + 20, 2)
    # torch raises the same kind; which bad index it names depends on its thread split.
    with pytest.raises(RuntimeError, match=r"invalid max index: (20|22|28|30) \(output volumes"):
        TF.max_unpool2d(torch.tensor(host(out)), torch.tensor(host(idx)).long() + 20, 2)
    with pytest.raises(
        ValueError, match=r'invalid output_size "\(7, 7\)" \(dim 0 must be between 2'
    ):
        F.max_unpool2d(out, idx, 2, output_size=(7, 7))
    with pytest.raises(ValueError, match="containing 2 or 4 elements, but it has a length of '1'"):
        F.max_unpool2d(out, idx, 2, output_size=(5,))
    with pytest.raises(RuntimeError, match="indices must be integers"):
        F.max_unpool2d(out, host(idx).astype(np.float32), 2)
    with pytest.raises(RuntimeError, match=r"indices of the input's shape \(1, 1, 2, 2\)"):
        F.max_unpool2d(out, host(idx)[..., :1], 2)
    with pytest.raises(ValueError, match="kernel_size"):
        nn.MaxUnpool2d((2, 2, 2))
    with pytest.raises(ValueError, match="padding"):
        nn.MaxUnpool3d(2, padding=-1)
    with pytest.raises(RuntimeError, match="half of effective kernel"):
        F.max_pool2d_with_indices(np.ones((1, 1, 5, 5), np.float32), 2, padding=2)
