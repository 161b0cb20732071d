"""F.interpolate, nn.Upsample and friends against torch: values, input gradients, errors.

Every mode x align_corners x up/down-sampling x size/scale_factor (integer and not, with and
without recompute_scale_factor) on 1-D, 2-D and 3-D spatial inputs; gradients through
``loss.backward()`` on Tensors and through ``jax.vjp`` (tests/nn/_parity.py).
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
import spx.nn.functional as F
from spx import nn
from tests.nn._parity import assert_close, check_module

torch = pytest.importorskip("torch")
TF = torch.nn.functional

# Weighted sums of a few float32 terms, summed in a different order than torch's kernels.
RTOL, ATOL = 1e-5, 1e-5

SPATIAL = {1: (7,), 2: (5, 6), 3: (3, 4, 5)}
MODES_BY_DIM = {
    1: ["nearest", "nearest-exact", "linear", "area"],
    2: ["nearest", "nearest-exact", "bilinear", "bicubic", "area"],
    3: ["nearest", "nearest-exact", "trilinear", "area"],
}
# (size, scale_factor, recompute_scale_factor) per spatial rank: up, down, mixed, non-integer.
RESIZES = {
    1: [(12, None, None), (3, None, None), (None, 2, None), (None, 0.5, None),
        (None, 1.7, None), (None, 1.7, True), (None, 0.45, False), (None, 1.3, None)],
    2: [((9, 4), None, None), (3, None, None), (None, 2, None), (None, (0.6, 1.5), None),
        (None, 1.7, True), (None, (2.3, 0.7), None), ((5, 6), None, None)],
    3: [((5, 2, 9), None, None), (None, 2, None), (None, (0.7, 1.5, 2.2), None),
        (None, 1.6, True)],
}  # fmt: skip


def _cases():
    for dim, modes in MODES_BY_DIM.items():
        for mode, resize in itertools.product(modes, RESIZES[dim]):
            corners = [None] if mode in ("nearest", "nearest-exact", "area") else [False, True]
            for ac in corners:
                yield dim, mode, ac, resize


class _Interp(torch.nn.Module):
    def __init__(self, fn, **kw):
        super().__init__()
        self.fn, self.kw = fn, kw

    def forward(self, x):
        return self.fn(x, **self.kw)


class _SInterp(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.kw = kw

    def forward(self, x):
        return F.interpolate(x, **self.kw)


@pytest.mark.parametrize("dim,mode,align_corners,resize", list(_cases()), ids=str)
def test_interpolate_matches_torch(dim, mode, align_corners, resize):
    size, scale_factor, recompute = resize
    kw = dict(size=size, scale_factor=scale_factor, mode=mode, align_corners=align_corners,
              recompute_scale_factor=recompute)  # fmt: skip
    x = np.random.default_rng(dim).standard_normal((2, 3, *SPATIAL[dim])).astype(np.float32)
    check_module(_Interp(TF.interpolate, **kw), _SInterp(**kw), [x], rtol=RTOL, atol=ATOL,
                 jax_form=mode != "area")  # fmt: skip


@pytest.mark.parametrize(
    "spatial,mode,scale",
    [((5, 6), "nearest", 1.1), ((5, 6), "nearest", 2.1), ((3, 4, 5), "nearest", 2.1),
     ((7,), "nearest", 2.1), ((5, 6), "bicubic", 1.1), ((5, 6), "bilinear", 1.1)],
)  # fmt: skip
def test_scale_factors_that_keep_or_double_the_size(spatial, mode, scale):
    # Such factors hit torch's shortcuts: its 2-D nearest kernel then ignores the factor (rows
    # copied or halved); its backward kernels take shortcuts its forward does not (3-D
    # nearest doubled, bicubic unchanged), so torch's gradient there disagrees with its own
    # forward. The reference: torch's forward values, and the gradient of that forward
    # (a linear map, read off column by column), which is what spx's backward computes.
    shape = (1, 1, *spatial)
    kw = dict(scale_factor=scale, mode=mode)
    if mode != "nearest":
        kw["align_corners"] = False
    x = np.random.default_rng(0).standard_normal(shape)
    want = TF.interpolate(torch.tensor(x), **kw)
    w = np.random.default_rng(1).standard_normal(tuple(want.shape))
    basis = np.eye(x.size).reshape(x.size, *shape)
    columns = [
        float((TF.interpolate(torch.tensor(e), **kw) * torch.tensor(w)).sum()) for e in basis
    ]
    t = spx.tensor(x.astype(np.float32), requires_grad=True)
    got = F.interpolate(t, **kw)
    (got * spx.tensor(w.astype(np.float32))).sum().backward()
    assert_close(got, want.float(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(t.grad.numpy().reshape(-1), columns, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic"])
@pytest.mark.parametrize("n_in", [3, 7, 10])
@pytest.mark.parametrize("n_out", [1, 2, 5, 11, 20, 31])
def test_index_math_over_many_sizes(mode, n_in, n_out):
    # Values only, on an arange input: a wrong row index shows as a whole-unit error.
    x = np.arange(n_in * n_in, dtype=np.float32).reshape(1, 1, n_in, n_in)
    for kw in (dict(size=(n_out, n_out)), dict(scale_factor=n_out / n_in)):
        if mode in ("bilinear", "bicubic"):
            kw["align_corners"] = n_out % 2 == 0
        want = TF.interpolate(torch.tensor(x), mode=mode, **kw).numpy()
        got = F.interpolate(spx.tensor(x), mode=mode, **kw)
        assert_close(got, want, rtol=1e-5, atol=1e-4)


def test_float64_index_math():
    # torch computes float64 inputs' coordinates in float64; jax here may lack x64, so the
    # rows themselves are compared: torch's output on an arange input is its row indices.
    from spx.nn.functional import upsampling

    for n_in, scale in [(5, 1.37), (7, 0.3), (9, 2.9), (6, 1 / 3)]:
        n_out = int(n_in * scale)
        x = torch.arange(n_in, dtype=torch.float64).reshape(1, 1, n_in)
        for exact, mode in [(False, "nearest"), (True, "nearest-exact")]:
            want = TF.interpolate(x, scale_factor=scale, mode=mode)[0, 0].numpy()
            rows = upsampling._nearest_rows(n_in, n_out, scale, exact, np.float64)
            np.testing.assert_array_equal(rows, want.astype(np.int64))


def test_bfloat16_keeps_dtype():
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 7)).astype(np.float32)
    want = TF.interpolate(torch.tensor(x).bfloat16(), size=(9, 4), mode="bicubic",
                          align_corners=True).float().numpy()  # fmt: skip
    y = F.interpolate(spx.tensor(x, dtype=spx.bfloat16), size=(9, 4), mode="bicubic",
                      align_corners=True)  # fmt: skip
    assert y.dtype == spx.bfloat16 and tuple(y.shape) == (1, 2, 9, 4)
    np.testing.assert_allclose(y.float().numpy(), want, rtol=2e-2, atol=2e-2)


def test_interpolate_on_arrays_and_under_jit():
    x = jnp.asarray(np.random.default_rng(1).standard_normal((1, 2, 4, 4)), jnp.float32)
    want = TF.interpolate(torch.tensor(np.asarray(x)), scale_factor=2.5, mode="bilinear")
    jitted = jax.jit(lambda x: jnp.asarray(F.interpolate(x, scale_factor=2.5, mode="bilinear")))
    assert_close(jitted(x), want, rtol=RTOL, atol=ATOL)
    array_level = spx.nn.functional.upsampling.interpolate  # the plain-array implementation
    assert_close(array_level(x, scale_factor=2.5, mode="bilinear"), want, rtol=RTOL, atol=ATOL)


ERRORS = [
    (dict(size=4, mode="nearest", align_corners=True), ValueError, "align_corners option"),
    (dict(size=4, mode="area", align_corners=False), ValueError, "align_corners option"),
    (dict(size=4, scale_factor=2), ValueError, "only one of size or scale_factor"),
    (dict(), ValueError, "either size or scale_factor"),
    (dict(size=(3, 3, 3)), ValueError, "same number of spatial dimensions"),
    (dict(scale_factor=(2, 2, 2)), ValueError, "scale_factor must have the same number"),
    (dict(size=(2.5, 3)), TypeError, "expected size to be one of int"),
    (dict(size=4, recompute_scale_factor=True), ValueError, "not meaningful with an explicit"),
    (dict(size=(0, 8)), RuntimeError, r"greater than 0.*\(H: 4, W: 4\) output \(H: 0, W: 8\)"),
    (dict(scale_factor=0.1), RuntimeError, "greater than 0"),
    (dict(size=4, mode="nearest", antialias=True), ValueError, "Anti-alias option"),
    (dict(size=4, mode="linear"), NotImplementedError, "Got 4D input, but linear mode needs 3D"),
    (dict(size=4, mode="trilinear"), NotImplementedError, "trilinear mode needs 5D"),
    (dict(size=4, mode="foo"), NotImplementedError, "unknown mode 'foo'"),
    (dict(size=4, mode="lanczos"), NotImplementedError, "lanczos"),
]


@pytest.mark.parametrize("kwargs,exc,match", ERRORS, ids=str)
def test_interpolate_errors(kwargs, exc, match):
    x = np.zeros((1, 1, 4, 4), np.float32)
    with pytest.raises(exc, match=match):
        F.interpolate(spx.tensor(x), **kwargs)
    if exc is not NotImplementedError or "foo" in str(kwargs):  # torch's own type, same cases
        with pytest.raises(exc):
            TF.interpolate(torch.tensor(x), **kwargs)


def test_rank_errors():
    with pytest.raises(NotImplementedError, match=r"Only 3D, 4D and 5D input.*got 2D"):
        F.interpolate(spx.zeros(4, 4), size=3)
    with pytest.raises(NotImplementedError, match="bicubic mode needs 4D"):
        F.interpolate(spx.zeros(1, 1, 4), size=3, mode="bicubic", align_corners=False)
    with pytest.raises(NotImplementedError, match="Got 3D input, but bilinear mode needs 4D"):
        F.interpolate(spx.zeros(1, 1, 4), size=3, mode="bilinear")


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(scale_factor=2),
        dict(scale_factor=(2, 1.5), mode="bilinear"),
        dict(size=(3, 7), mode="bicubic", align_corners=True),
        dict(size=5, mode="nearest-exact"),
        dict(scale_factor=0.5, mode="area"),
        dict(scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
    ],
    ids=str,
)
def test_upsample_module_matches_torch(kwargs):
    t, s = torch.nn.Upsample(**kwargs), nn.Upsample(**kwargs)
    assert repr(s) == repr(t)
    assert s.scale_factor == t.scale_factor and s.size == t.size
    assert dict(s.state_dict()) == {}
    x = np.random.default_rng(3).standard_normal((2, 3, 6, 5)).astype(np.float32)
    check_module(t, s, [x], rtol=RTOL, atol=ATOL, jax_form=kwargs.get("mode") != "area")


@pytest.mark.parametrize("cls", ["UpsamplingNearest2d", "UpsamplingBilinear2d"])
@pytest.mark.parametrize("kwargs", [dict(scale_factor=2), dict(size=(7, 3))], ids=str)
def test_upsampling_2d_modules(cls, kwargs):
    t, s = getattr(torch.nn, cls)(**kwargs), getattr(nn, cls)(**kwargs)
    assert repr(s) == repr(t) and s.align_corners == t.align_corners and s.mode == t.mode
    x = np.random.default_rng(4).standard_normal((2, 3, 4, 5)).astype(np.float32)
    check_module(t, s, [x], rtol=RTOL, atol=ATOL)


def test_upsample_in_a_model_trains_like_torch():
    torch.manual_seed(0)
    t = torch.nn.Sequential(
        torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.Upsample(scale_factor=2, mode="bilinear")
    )
    s = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.Upsample(scale_factor=2, mode="bilinear"))
    s.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    x = np.random.default_rng(5).standard_normal((2, 2, 5, 5)).astype(np.float32)
    check_module(t, s, [x], rtol=RTOL, atol=ATOL)


def test_upsample_constructor_validation():
    with pytest.raises(ValueError, match="mode must be one of"):
        nn.Upsample(scale_factor=2, mode="cubic")
    with pytest.raises(ValueError, match="align_corners can only be set"):
        nn.Upsample(scale_factor=2, mode="nearest", align_corners=True)


def test_autocast_runs_upsampling_in_float32_on_cuda_only():
    from spx.amp import autocast_mode

    lower, fp32 = autocast_mode._tables("cuda")
    up = spx.nn.functional.upsampling
    for fn in (up.upsample_nearest, up.upsample_linear, up.upsample_bicubic2d):
        assert fn in fp32 and fn not in lower
    # On the CPU torch keeps the input's dtype for every upsample op (checked against torch).
    x = np.random.default_rng(6).standard_normal((1, 2, 4, 4)).astype(np.float32)
    with torch.autocast("cpu"):
        want = TF.interpolate(torch.tensor(x).bfloat16(), scale_factor=2, mode="bilinear")
    with spx.autocast("cpu"):
        got = F.interpolate(spx.tensor(x, dtype=spx.bfloat16), scale_factor=2, mode="bilinear")
    assert want.dtype == torch.bfloat16 and got.dtype == spx.bfloat16


def test_uint8_images_round_instead_of_truncating():
    # torch's uint8 kernels are their own fixed-point algorithm: bilinear agrees within one
    # level, and must not be biased (a plain cast truncated every pixel downwards).
    x = np.random.default_rng(0).integers(0, 256, (2, 3, 9, 7), dtype=np.uint8)
    kw = dict(size=(15, 11), mode="bilinear", align_corners=False)
    want = TF.interpolate(torch.tensor(x), **kw).numpy().astype(np.int64)
    got = F.interpolate(spx.tensor(x), **kw)
    assert got.dtype == spx.uint8
    diff = got.numpy().astype(np.int64) - want
    assert np.abs(diff).max() <= 1 and abs(diff.mean()) < 0.05
