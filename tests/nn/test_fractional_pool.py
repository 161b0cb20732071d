"""Fractional max pooling (functional and modules) vs torch, given torch's random samples."""

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

SHAPES = {2: (2, 3, 11, 13), 3: (2, 2, 7, 8, 9)}
CASES = [
    (2, dict(kernel_size=2, output_size=(5, 6))),
    (2, dict(kernel_size=3, output_size=4)),  # overlapping windows share maxima
    (2, dict(kernel_size=(2, 3), output_ratio=(0.5, 0.7))),
    (2, dict(kernel_size=1, output_size=(11, 13))),  # every position, in order
    (2, dict(kernel_size=(3, 2), output_size=(1, 12))),  # one window: starts at L - k
    (2, dict(kernel_size=2, output_size=(10, 12))),  # the largest output that fits
    (3, dict(kernel_size=2, output_size=(3, 4, 5))),
    (3, dict(kernel_size=(2, 3, 2), output_ratio=0.5)),
    (3, dict(kernel_size=3, output_size=(4, 1, 5))),
]


def _samples(n, c, nd, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).random((n, c, nd)).astype(dtype)


def _both(nd, kwargs, x_np, samples, cot_seed=1):
    """(output, indices, input grad) of spx and torch for loss sum(out * cot)."""
    x, xt = spx.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    out, idx = getattr(F, f"fractional_max_pool{nd}d")(
        x, return_indices=True, _random_samples=spx.tensor(samples), **kwargs
    )
    out_t, idx_t = getattr(TF, f"fractional_max_pool{nd}d")(
        xt, return_indices=True, _random_samples=torch.tensor(samples), **kwargs
    )
    cot = np.random.default_rng(cot_seed).standard_normal(tuple(out_t.shape)).astype(np.float32)
    (out * spx.tensor(cot)).sum().backward()
    (out_t * torch.tensor(cot)).sum().backward()
    return (out, idx, x.grad), (out_t, idx_t, xt.grad)


def _assert_matches(nd, kwargs, x_np, samples):
    (out, idx, g), (out_t, idx_t, g_t) = _both(nd, kwargs, x_np, samples)
    assert idx.dtype == spx.int32  # torch's int64; JAX runs with 64-bit types off
    assert tuple(out.shape) == tuple(out_t.shape)
    np.testing.assert_array_equal(host(idx), idx_t.numpy())
    np.testing.assert_array_equal(host(out), out_t.detach().numpy())
    # Overlapping windows add gradients in a different order: an ulp apart at most.
    np.testing.assert_allclose(host(g), g_t.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(("nd", "kwargs"), CASES, ids=[f"{n}d-{k}" for n, k in CASES])
def test_matches_torch_given_its_samples(nd, kwargs):
    x_np = np.random.default_rng(nd).standard_normal(SHAPES[nd]).astype(np.float32)
    shape = SHAPES[nd]
    _assert_matches(nd, kwargs, x_np, _samples(shape[0], shape[1], nd))
    # Unbatched; extra sample rows are ignored, as in torch.
    _assert_matches(nd, kwargs, x_np[0], _samples(3, shape[1], nd, seed=5))


def test_with_indices_names_always_return_the_pair():
    x_np = np.random.default_rng(0).standard_normal((2, 3, 9, 9)).astype(np.float32)
    s = _samples(2, 3, 2)
    out, idx = F.fractional_max_pool2d_with_indices(x_np, 2, 4, _random_samples=s)
    out_t, idx_t = TF.fractional_max_pool2d_with_indices(
        torch.tensor(x_np), 2, 4, _random_samples=torch.tensor(s)
    )
    np.testing.assert_array_equal(host(idx), idx_t.numpy())
    x3 = x_np.reshape(2, 3, 3, 3, 9)
    s3 = _samples(2, 3, 3)
    out, idx = F.fractional_max_pool3d_with_indices(x3, 1, (2, 2, 4), _random_samples=s3)
    out_t, idx_t = TF.fractional_max_pool3d_with_indices(
        torch.tensor(x3), 1, (2, 2, 4), _random_samples=torch.tensor(s3)
    )
    np.testing.assert_array_equal(host(idx), idx_t.numpy())
    np.testing.assert_array_equal(host(out), out_t.numpy())
    assert not isinstance(F.fractional_max_pool2d(x_np, 2, 4, _random_samples=s), tuple)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_windows_are_torchs(dtype):
    # torch computes the window starts in the input's dtype, rounding every operation; long
    # rows make float32 arithmetic pick other windows.
    t_dtype = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(0)
    width = 2100 if dtype == "float16" else 257
    xt = torch.randn(1, 300, 2, width, generator=gen).to(t_dtype)
    st = torch.rand(1, 300, 2, generator=gen).to(t_dtype)
    st[0, :50] = 0.0
    st[0, 50:100, 0] = torch.linspace(0, 0.999, 50).to(t_dtype)
    size = (2, width - 1)
    out_t, idx_t = TF.fractional_max_pool2d(xt, 1, size, return_indices=True, _random_samples=st)
    x = spx.tensor(xt.float().numpy()).to(getattr(spx, dtype))
    s = spx.tensor(st.float().numpy()).to(getattr(spx, dtype))
    out, idx = F.fractional_max_pool2d(x, 1, size, return_indices=True, _random_samples=s)
    np.testing.assert_array_equal(host(idx), idx_t.numpy())
    np.testing.assert_array_equal(host(out.float()), out_t.float().numpy())


def test_ties_nan_and_infinities_pick_torchs_element():
    rng = np.random.default_rng(0)
    x = rng.integers(-2, 3, (2, 2, 9, 9)).astype(np.float32)  # many ties
    x[0, 0, :4, :4] = -np.inf  # windows of -inf only: their first element
    x[0, 1, 0, 0] = x[0, 1, 1, 1] = np.nan  # two NaNs in one window: torch takes the last
    x[1, 0, 4, 4] = np.inf
    s = _samples(2, 2, 2, seed=3)
    for kwargs in (dict(kernel_size=2, output_size=5), dict(kernel_size=3, output_size=4)):
        out, idx = F.fractional_max_pool2d(x, return_indices=True, _random_samples=s, **kwargs)
        out_t, idx_t = TF.fractional_max_pool2d(
            torch.tensor(x), return_indices=True, _random_samples=torch.tensor(s), **kwargs
        )
        np.testing.assert_array_equal(host(idx), idx_t.numpy())
        np.testing.assert_array_equal(host(out), out_t.numpy())  # NaN == NaN here


@pytest.mark.parametrize("nd", [2, 3])
def test_module_state_dict_and_forward_match_torch(nd):
    shape = SHAPES[nd]
    samples = _samples(shape[0], shape[1], nd, seed=7)
    kwargs = dict(kernel_size=2, output_ratio=0.5, return_indices=True)
    t_layer = getattr(torch.nn, f"FractionalMaxPool{nd}d")(
        _random_samples=torch.tensor(samples), **kwargs
    )
    layer = getattr(nn, f"FractionalMaxPool{nd}d")(_random_samples=spx.tensor(samples), **kwargs)
    assert repr(layer) == repr(t_layer)
    assert layer.kernel_size == t_layer.kernel_size
    assert layer.output_ratio == t_layer.output_ratio and layer.output_size is None
    sd, sd_t = layer.state_dict(), t_layer.state_dict()
    assert list(sd) == list(sd_t) == ["_random_samples"]
    assert tuple(sd["_random_samples"].shape) == tuple(sd_t["_random_samples"].shape)
    # torch's state_dict loads as is, and then decides the windows.
    fresh = getattr(nn, f"FractionalMaxPool{nd}d")(
        _random_samples=spx.zeros(samples.shape), **kwargs
    )
    fresh.load_state_dict({k: v.numpy() for k, v in sd_t.items()})
    x_np = np.random.default_rng(nd).standard_normal(shape).astype(np.float32)
    x, xt = spx.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    (out, idx), (out_t, idx_t) = fresh(x), t_layer(xt)
    np.testing.assert_array_equal(host(idx), idx_t.numpy())
    np.testing.assert_array_equal(host(out), out_t.detach().numpy())
    out.sum().backward()
    out_t.sum().backward()
    assert_close(x.grad, xt.grad, 1e-6, 1e-7)
    # Without samples the module has no state, as torch's.
    assert not getattr(nn, f"FractionalMaxPool{nd}d")(2, output_size=2).state_dict()


def test_drawn_samples_follow_the_generator():
    x = spx.randn(4, 3, 12, 12)
    spx.manual_seed(0)
    a, ia = F.fractional_max_pool2d(x, 2, output_size=6, return_indices=True)
    spx.manual_seed(0)
    b = F.fractional_max_pool2d(x, 2, output_size=6)
    np.testing.assert_array_equal(host(a), host(b))
    assert a.shape == (4, 3, 6, 6)
    # Every output is its window's max: the value at its index.
    flat = host(x).reshape(4, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, host(ia).reshape(4, 3, -1), 2),
                                  host(a).reshape(4, 3, -1))  # fmt: skip
    # The module draws fresh samples per call; key= gives reproducible ones.
    pool = nn.FractionalMaxPool2d(2, output_size=5, return_indices=True)  # steps 2 or 3
    draws = {host(pool(x)[1]).tobytes() for _ in range(4)}
    assert len(draws) > 1
    k = jax.random.key(3)
    np.testing.assert_array_equal(
        host(F.fractional_max_pool3d(x[:, :, :6].reshape(4, 3, 6, 6, 2), 1, (3, 3, 1), key=k)),
        host(F.fractional_max_pool3d(x[:, :, :6].reshape(4, 3, 6, 6, 2), 1, (3, 3, 1), key=k)),
    )


def test_under_jit_and_compile():
    x_np = np.random.default_rng(5).standard_normal((2, 3, 10, 10)).astype(np.float32)
    s = _samples(2, 3, 2, seed=9)
    out_t = TF.fractional_max_pool2d(torch.tensor(x_np), 3, 4, _random_samples=torch.tensor(s))

    def pool(x, s):
        return jnp.asarray(F.fractional_max_pool2d(x, 3, 4, _random_samples=s))

    np.testing.assert_array_equal(np.asarray(jax.jit(pool)(x_np, s)), out_t.numpy())
    g = jax.jit(jax.grad(lambda x: (pool(x, s) ** 2).sum()))(jnp.asarray(x_np))
    xt = torch.tensor(x_np, requires_grad=True)
    (TF.fractional_max_pool2d(xt, 3, 4, _random_samples=torch.tensor(s)) ** 2).sum().backward()
    np.testing.assert_allclose(np.asarray(g), xt.grad.numpy(), rtol=1e-6)

    fixed = nn.FractionalMaxPool2d(3, output_size=4, _random_samples=spx.tensor(s))
    step = spx.compile(lambda m, x: m(x))
    np.testing.assert_array_equal(host(step(fixed, spx.tensor(x_np))), out_t.numpy())
    drawn = nn.FractionalMaxPool2d(3, output_size=4)
    a, b = step(drawn, spx.tensor(x_np)), step(drawn, spx.tensor(x_np))
    assert not np.array_equal(host(a), host(b))  # fresh samples each compiled call


def test_pool_then_unpool():
    x_np = np.random.default_rng(6).standard_normal((2, 3, 9, 9)).astype(np.float32)
    s = _samples(2, 3, 2)
    out, idx = F.fractional_max_pool2d(x_np, 2, 5, return_indices=True, _random_samples=s)
    out_t, idx_t = TF.fractional_max_pool2d(
        torch.tensor(x_np), 2, 5, return_indices=True, _random_samples=torch.tensor(s)
    )
    y = F.max_unpool2d(out, idx, 2, output_size=(9, 9))
    np.testing.assert_array_equal(host(y), TF.max_unpool2d(out_t, idx_t, 2, output_size=(9, 9)))


def test_empty_outputs_and_batches():
    x = np.ones((2, 3, 7, 9), np.float32)
    for args in [dict(output_size=(0, 3)), dict(output_ratio=(0.1, 0.1))]:
        out, idx = F.fractional_max_pool2d(x, 2, return_indices=True, **args)
        out_t = TF.fractional_max_pool2d(torch.tensor(x), 2, **args)
        assert tuple(out.shape) == tuple(idx.shape) == tuple(out_t.shape)
    assert F.fractional_max_pool2d(x[:0], 2, 3).shape == (0, 3, 3, 3)


S2 = (2, 3, 7, 9)
S3 = (2, 3, 5, 6, 7)
# (nd, input shape, kwargs, samples shape or None for valid ones, error, spx's message)
ERRORS = [
    (2, S2, dict(kernel_size=2), None, ValueError, "either an output_size or an output_ratio"),
    (2, S2, dict(kernel_size=3, output_size=(6, 3)), None, RuntimeError,
     "pool height 3 too large relative to input height 7 .* at most 5"),
    (2, S2, dict(kernel_size=3, output_size=(3, 8)), None, RuntimeError, "pool width 3"),
    (2, S2, dict(kernel_size=2, output_ratio=(1.5, 0.5)), None, RuntimeError, "pool height"),
    (2, S2, dict(kernel_size=2, output_ratio=(0.5, 0.5, 0.5)), None, ValueError,
     "output_ratio to be a single number or a tuple of 2"),
    (2, S2, dict(kernel_size=(2, 2, 2), output_size=3), None, RuntimeError,
     "kernel_size must either be a single int or a tuple of 2"),
    (2, S2, dict(kernel_size=2, output_size=(3, 3, 3)), None, RuntimeError,
     "output_size must either be a single int or a tuple of 2"),
    (2, S2, dict(kernel_size=2.0, output_size=3), None, TypeError, "kernel_size must be an int"),
    (2, S2, dict(kernel_size=2, output_size=(-1, 3)), None, RuntimeError, "non-negative"),
    (2, (1, 2, 3, 7, 9), dict(kernel_size=2, output_size=3), None, RuntimeError,
     r"3-D \(unbatched\) or 4-D \(batched\) input, got shape \(1, 2, 3, 7, 9\)"),
    (2, (2, 0, 7, 9), dict(kernel_size=2, output_size=3), (2, 0, 2), RuntimeError,
     "dimension 1 being empty"),
    (2, S2, dict(kernel_size=2, output_size=3), (1, 3, 2), RuntimeError,
     "size\\(0\\) no less than the input batch size 2"),
    (2, S2, dict(kernel_size=2, output_size=3), (2, 4, 2), RuntimeError,
     "size\\(1\\) equal to the input channel size 3"),
    (2, S2, dict(kernel_size=2, output_size=3), (2, 3, 3), RuntimeError,
     "size\\(2\\) equal to 2; got 3"),
    (2, S2, dict(kernel_size=2, output_size=3), (2, 3), RuntimeError, "3 dimensions"),
    (3, S3, dict(kernel_size=2, output_size=(4, 4, 4)), None, RuntimeError,
     "pool time 2 too large relative to input time 5"),  # 3-D windows must fit strictly
    (3, S3, dict(kernel_size=2, output_size=(3, 4, 6)), None, RuntimeError, "pool width 2"),
    (3, S3, dict(kernel_size=2, output_size=(3, 5, 5)), None, RuntimeError, "pool height 2"),
    (3, S3[1:][:3], dict(kernel_size=2, output_size=2), None, RuntimeError,
     "4-D \\(unbatched\\) or 5-D"),
    (3, S3, dict(kernel_size=2, output_size=2), (2, 3, 2), RuntimeError, "equal to 3; got 2"),
]  # fmt: skip


@pytest.mark.parametrize(("nd", "shape", "kwargs", "s_shape", "error", "match"), ERRORS, ids=str)
def test_errors_like_torch(nd, shape, kwargs, s_shape, error, match):
    x = np.zeros(shape, np.float32)
    n = shape[0] if len(shape) == nd + 2 else 1
    c = shape[1] if len(shape) == nd + 2 else shape[0]
    s = np.full(s_shape or (n, c, nd), 0.5, np.float32)
    with pytest.raises(error):
        getattr(TF, f"fractional_max_pool{nd}d")(
            torch.tensor(x), _random_samples=torch.tensor(s), **kwargs
        )
    with pytest.raises(error, match=match):
        getattr(F, f"fractional_max_pool{nd}d")(spx.tensor(x), _random_samples=s, **kwargs)


def test_input_and_sample_dtype_errors_like_torch():
    x, s = np.zeros((1, 2, 6, 6), np.float32), np.full((1, 2, 2), 0.5, np.float32)
    with pytest.raises(RuntimeError, match="same dtype"):
        TF.fractional_max_pool2d(torch.tensor(x), 2, 3, _random_samples=torch.tensor(s).half())
    with pytest.raises(RuntimeError, match=r"same dtype as input \(float32\), got float16"):
        F.fractional_max_pool2d(x, 2, 3, _random_samples=s.astype(np.float16))
    with pytest.raises(NotImplementedError):
        TF.fractional_max_pool2d(torch.zeros(1, 2, 6, 6, dtype=torch.long), 2, 3)
    with pytest.raises(NotImplementedError, match="floating point, got int32"):
        F.fractional_max_pool2d(x.astype(np.int32), 2, 3)


@pytest.mark.parametrize("nd", [2, 3])
def test_module_construction_errors_like_torch(nd):
    name = f"FractionalMaxPool{nd}d"
    cases = [
        (dict(), "either an output size, or a pooling ratio"),
        (dict(output_size=2, output_ratio=0.5), "only one of output_size and output_ratio"),
        (dict(output_ratio=1.0), r"between 0 and 1 \(got 1.0\)"),
        (dict(output_ratio=(0.5,) * (nd - 1) + (0,)), "between 0 and 1"),
    ]
    for kwargs, match in cases:
        with pytest.raises(ValueError):
            getattr(torch.nn, name)(2, **kwargs)
        with pytest.raises(ValueError, match=match):
            getattr(nn, name)(2, **kwargs)
    with pytest.raises(ValueError, match="kernel_size"):
        getattr(nn, name)(0, output_size=2)
    if nd == 3:
        with pytest.raises(ValueError):
            torch.nn.FractionalMaxPool3d((1, 0, 1), output_size=2)


def test_documented_differences_from_torch():
    x = np.random.default_rng(0).standard_normal((1, 2, 8, 8)).astype(np.float32)
    s = _samples(1, 2, 2)
    # torch 2.13's 2-D pool takes a zero kernel (returning -inf); spx rejects it.
    TF.fractional_max_pool2d(torch.tensor(x), 0, 3, _random_samples=torch.tensor(s))
    with pytest.raises(ValueError, match="kernel_size must be greater than 0"):
        F.fractional_max_pool2d(x, 0, 3, _random_samples=s)
    # torch's functional 2-D form fails on a plain-number ratio (len() of a float); spx takes
    # it as the module and the 3-D form do.
    with pytest.raises(TypeError):
        TF.fractional_max_pool2d(torch.tensor(x), 2, output_ratio=0.5)
    want = TF.fractional_max_pool2d(
        torch.tensor(x), 2, output_ratio=(0.5, 0.5), _random_samples=torch.tensor(s)
    )
    got = F.fractional_max_pool2d(x, 2, output_ratio=0.5, _random_samples=s)
    np.testing.assert_array_equal(host(got), want.numpy())
