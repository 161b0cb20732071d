"""F.interpolate(antialias=True) against torch: values and input gradients for bilinear and
bicubic, down- and upsampling, size= and scale_factor= (integer and not, recomputed or not),
align_corners; the weights in float32 and float64; uint8 and bfloat16; torch's errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import spx
import spx.nn.functional as F
from spx.nn.functional import upsampling

from ._reference import assert_close, check_against_torch, randn, torch

TF = torch.nn.functional

# Sums of up to ~20 float32 terms per pass, in another order than torch's loops.
RTOL, ATOL = 1e-5, 1e-5

# (input shape, size, scale_factor, recompute_scale_factor)
RESIZES = [
    ((2, 3, 17, 13), (4, 5), None, None),  # down by non-integer factors
    ((2, 3, 17, 13), (2, 3), None, None),  # strong down: wide support
    ((2, 3, 7, 6), (29, 40), None, None),  # up by non-integer factors
    ((2, 3, 17, 13), (30, 6), None, None),  # up in H, down in W
    ((2, 3, 17, 13), (17, 5), None, None),  # H unchanged (copied), W down
    ((2, 3, 17, 13), (6, 13), None, None),  # W unchanged, H down
    ((2, 3, 16, 12), None, 0.5, None),  # integer down
    ((2, 3, 5, 4), None, 3, None),  # integer up
    ((2, 3, 17, 13), None, 0.37, None),  # 1/scale_factor is not in/out
    ((2, 3, 11, 13), None, (2.3, 0.6), None),
    ((2, 3, 17, 13), None, (0.45, 1.7), True),  # recomputed: the scale is in/out
    ((1, 2, 64, 48), None, 1 / 7, None),
]


@pytest.mark.parametrize("shape,size,scale_factor,recompute", RESIZES, ids=str)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_matches_torch(mode, align_corners, shape, size, scale_factor, recompute):
    kw = dict(size=size, scale_factor=scale_factor, mode=mode, align_corners=align_corners,
              recompute_scale_factor=recompute, antialias=True)  # fmt: skip
    x = randn(np.random.default_rng(len(shape) + shape[-1]), *shape)
    check_against_torch(
        lambda x: F.interpolate(x, **kw), lambda x: TF.interpolate(x, **kw), [x],
        rtol=RTOL, atol=ATOL,
    )  # fmt: skip


def _torch_matrix(mode, n_in, n_out, align_corners, scale, dtype):
    """torch's resampling along W as a matrix, read off an identity batch (H = 1)."""
    eye = torch.eye(n_in, dtype=dtype).reshape(n_in, 1, 1, n_in)
    kw = dict(size=(1, n_out)) if scale is None else dict(scale_factor=(1.0, scale))
    out = TF.interpolate(eye, mode=mode, align_corners=align_corners, antialias=True, **kw)
    return out[:, 0, 0, :].numpy().T


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize(
    "dtype,ft,atol", [(torch.float32, np.float32, 1e-6), (torch.float64, np.float64, 1e-13)]
)
def test_weights_match_torch_over_many_sizes(mode, dtype, ft, atol):
    # The index ranges (xmin, xsize) must be torch's exactly: one row off is a weight of ~0.1.
    # float64 inputs need jax_enable_x64 to stay float64, so their weights are checked here.
    for n_in, n_out, ac in itertools.product(
        [1, 2, 3, 7, 10, 33, 64], [1, 2, 4, 9, 13, 40, 101], [False, True]
    ):
        if n_in == n_out:
            continue
        for scale in (None, (n_out + 0.5) / n_in):
            if scale is not None and int(n_in * scale) != n_out:
                continue
            want = _torch_matrix(mode, n_in, n_out, ac, scale, dtype)
            got = upsampling.aa_weights(n_in, n_out, ac, scale, mode, ft)
            assert got.dtype == ft
            np.testing.assert_allclose(got, want, rtol=0, atol=atol,
                                       err_msg=f"{n_in} -> {n_out}, {ac=}, {scale=}")  # fmt: skip


def test_float64_resize_matches_torch():
    # The whole float64 resize, W then H, on the float64 weights (jax here may lack x64).
    x = np.random.default_rng(0).standard_normal((2, 3, 11, 9))
    for mode, size in [("bilinear", (4, 20)), ("bicubic", (25, 3))]:
        want = TF.interpolate(torch.tensor(x), size=size, mode=mode, antialias=True).numpy()
        wh = upsampling.aa_weights(11, size[0], False, None, mode, np.float64)
        ww = upsampling.aa_weights(9, size[1], False, None, mode, np.float64)
        got = np.einsum("oh,nchw,pw->ncop", wh, x, ww)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_downsampling_averages_what_plain_bilinear_aliases():
    # A 1-pixel checkerboard at a third of its size: plain bilinear samples single pixels
    # (source rows 1, 4, 7, 10), so a coarser checkerboard of 0s and 1s (aliasing) comes out;
    # antialias averages each output's neighbourhood, close to the mean 0.5 everywhere.
    board = (np.indices((12, 12)).sum(0) % 2).astype(np.float32)[None, None]
    plain = F.interpolate(spx.tensor(board), size=(4, 4), mode="bilinear").numpy()
    smooth = F.interpolate(spx.tensor(board), size=(4, 4), mode="bilinear", antialias=True)
    assert np.ptp(plain) == 1.0
    assert np.ptp(smooth.numpy()) < 0.1
    assert_close(smooth, TF.interpolate(torch.tensor(board), size=(4, 4), mode="bilinear",
                                        antialias=True), RTOL, ATOL)  # fmt: skip


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_unchanged_size_from_a_scale_factor(mode):
    # scale_factor=1.1 keeps 5 and 6: torch's forward copies such a dim, but its backward
    # filters it with the 1/1.1 scale, disagreeing with its own forward. The reference is
    # torch's forward and that forward's true gradient (a linear map, read off column by
    # column), which is what spx's backward computes. Here W also changes (6 -> 13).
    shape = (1, 1, 5, 6)
    kw = dict(scale_factor=(1.1, 2.2), mode=mode, antialias=True)
    x = np.random.default_rng(0).standard_normal(shape)
    want = TF.interpolate(torch.tensor(x), **kw)
    assert tuple(want.shape) == (1, 1, 5, 13)
    w = np.random.default_rng(1).standard_normal(tuple(want.shape))
    basis = np.eye(x.size).reshape(x.size, *shape)
    columns = [float((TF.interpolate(torch.tensor(e), **kw) * torch.tensor(w)).sum())
               for e in basis]  # fmt: skip
    t = spx.tensor(x.astype(np.float32), requires_grad=True)
    got = F.interpolate(t, **kw)
    (got * spx.tensor(w.astype(np.float32))).sum().backward()
    assert_close(got, want.float(), RTOL, ATOL)
    np.testing.assert_allclose(t.grad.numpy().reshape(-1), columns, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize(("in_hw", "out_hw"), [((9, 1), (4, 1)), ((13, 4), (4, 1))])
def test_single_column_output_is_resized_correctly(mode, in_hw, out_hw):
    # torch's CPU forward is wrong whenever the output width is 1 (every output row repeats
    # the first: its vertical pass mis-strides); its transposed problem (output height 1)
    # and its backward are right, and spx agrees with those.
    x = randn(np.random.default_rng(2), 2, 3, *in_hw)
    xt = np.ascontiguousarray(x.transpose(0, 1, 3, 2))
    kw = dict(mode=mode, antialias=True)
    want = TF.interpolate(torch.tensor(xt), size=out_hw[::-1], **kw).numpy().transpose(0, 1, 3, 2)
    t = spx.tensor(x, requires_grad=True)
    got = F.interpolate(t, size=out_hw, **kw)
    assert_close(got, want, RTOL, ATOL)
    g = np.random.default_rng(3).standard_normal(want.shape).astype(np.float32)
    (got * spx.tensor(g)).sum().backward()
    xr = torch.tensor(x, requires_grad=True)
    (TF.interpolate(xr, size=out_hw, **kw) * torch.tensor(g)).sum().backward()
    assert_close(t.grad, xr.grad, RTOL, ATOL)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_uint8_rounds_like_torchs_fixed_point_kernel(mode):
    # torch's uint8 kernel uses int16 fixed-point weights and clips the W pass to uint8; spx
    # computes in float32, clips the W pass too, and rounds: at most a level or two apart.
    x = np.random.default_rng(0).integers(0, 256, (2, 3, 19, 23), dtype=np.uint8)
    for size in [(7, 9), (40, 31), (10, 50)]:
        want = TF.interpolate(torch.tensor(x), size=size, mode=mode, antialias=True).numpy()
        got = F.interpolate(spx.tensor(x), size=size, mode=mode, antialias=True)
        assert got.dtype == spx.uint8
        diff = got.numpy().astype(np.int64) - want.astype(np.int64)
        assert np.abs(diff).max() <= 2 and (diff != 0).mean() < 0.05
        assert abs(diff.mean()) < 0.05


def test_bfloat16_keeps_dtype():
    # torch's CPU kernel refuses bfloat16 ("not implemented for 'BFloat16'"); its CUDA kernel
    # and spx compute it (spx in float32). Reference: torch's float32 result.
    x = randn(np.random.default_rng(0), 1, 2, 9, 11)
    xb = spx.tensor(x, dtype=spx.bfloat16)
    want = TF.interpolate(torch.tensor(xb.float().numpy()), size=(4, 5), mode="bicubic",
                          antialias=True).numpy()  # fmt: skip
    y = F.interpolate(xb, size=(4, 5), mode="bicubic", antialias=True)
    assert y.dtype == spx.bfloat16 and tuple(y.shape) == (1, 2, 4, 5)
    np.testing.assert_allclose(y.float().numpy(), want, rtol=2e-2, atol=2e-2)


ERRORS = [
    ((1, 1, 4, 4), "nearest"),
    ((1, 1, 4, 4), "nearest-exact"),
    ((1, 1, 4, 4), "area"),
    ((1, 1, 4), "linear"),
    ((1, 1, 4, 4, 4), "trilinear"),
    ((1, 1, 4), "bilinear"),
    ((1, 1, 4, 4, 4), "bilinear"),
    ((1, 1, 4, 4, 4), "bicubic"),
    ((4, 4), "bilinear"),  # torch checks antialias before the rank
]


@pytest.mark.parametrize("shape,mode", ERRORS, ids=str)
def test_antialias_errors_match_torch(shape, mode):
    kw = dict(size=3, mode=mode, antialias=True)
    with pytest.raises(ValueError, match="Anti-alias option is restricted"):
        TF.interpolate(torch.zeros(shape), **kw)
    with pytest.raises(ValueError) as info:
        F.interpolate(spx.zeros(*shape), **kw)
    message = str(info.value)
    assert message.startswith("Anti-alias option is restricted to bilinear and bicubic")
    assert f"mode={mode!r}" in message and f"{len(shape)}-D input" in message
    assert "antialias=False" in message and "(N, C, H, W)" in message


def test_plain_modes_are_unchanged_by_the_antialias_code_path():
    # antialias=False still picks the plain kernels (torch's -0.75 bicubic, no renormalizing).
    x = randn(np.random.default_rng(4), 1, 2, 6, 7)
    for mode in ("bilinear", "bicubic"):
        want = TF.interpolate(torch.tensor(x), size=(3, 11), mode=mode, antialias=False)
        got = F.interpolate(spx.tensor(x), size=(3, 11), mode=mode, antialias=False)
        assert_close(got, want, RTOL, ATOL)
        aa = F.interpolate(spx.tensor(x), size=(3, 11), mode=mode, antialias=True)
        assert np.abs(aa.numpy() - got.numpy()).max() > 1e-3
