"""F.affine_grid and F.grid_sample against torch: values, gradients (input, grid, theta), errors."""

import itertools
import warnings

import numpy as np
import pytest

import spx
import spx.nn.functional as F
from spx import nn
from tests.nn._parity import check_module

torch = pytest.importorskip("torch")
TF = torch.nn.functional


class _TFn(torch.nn.Module):
    def __init__(self, fn, *args, **kw):
        super().__init__()
        self.fn, self.args, self.kw = fn, args, kw

    def forward(self, *xs):
        return self.fn(*xs, *self.args, **self.kw)


class _SFn(nn.Module):
    def __init__(self, fn, *args, **kw):
        super().__init__()
        self.fn, self.args, self.kw = fn, args, kw

    def forward(self, *xs):
        return self.fn(*xs, *self.args, **self.kw)


def _sample_cases():
    for dim, mode, pad, ac in itertools.product(
        (2, 3), ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection"), (0, 1)
    ):
        if not (mode == "bicubic" and dim == 3):
            yield dim, mode, pad, bool(ac)


@pytest.mark.parametrize("dim,mode,padding_mode,align_corners", list(_sample_cases()), ids=str)
def test_grid_sample_matches_torch(dim, mode, padding_mode, align_corners):
    rng = np.random.default_rng(dim)
    spatial = (4, 5) if dim == 2 else (3, 4, 5)
    out = (3, 4) if dim == 2 else (2, 3, 4)
    x = rng.standard_normal((2, 3, *spatial)).astype(np.float32)
    # Spread past [-1, 1] so every padding mode's outside branch is taken.
    grid = (1.4 * rng.uniform(-1, 1, (2, *out, dim))).astype(np.float32)
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    tol = 1e-5 if mode == "bicubic" else 2e-6
    check_module(_TFn(TF.grid_sample, **kw), _SFn(F.grid_sample, **kw), [x, grid],
                 rtol=tol, atol=tol * 5)  # fmt: skip


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_on_pixel_centres_and_borders(align_corners, padding_mode):
    # Coordinates exactly on borders and centres: where clip/reflect gradients switch.
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 4)).astype(np.float32)
    lin = np.linspace(-1.5, 1.5, 7, dtype=np.float32)
    grid = np.stack(np.meshgrid(lin, lin, indexing="xy"), -1)[None].astype(np.float32)
    kw = dict(mode="bilinear", padding_mode=padding_mode, align_corners=align_corners)
    check_module(_TFn(TF.grid_sample, **kw), _SFn(F.grid_sample, **kw), [x, grid], atol=1e-5)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 1, 1, 3), (2, 2, 3, 4, 5), (1, 1, 2, 1, 3)])
def test_affine_grid_matches_torch(size, align_corners):
    d = len(size) - 2
    theta = np.random.default_rng(1).standard_normal((size[0], d, d + 1)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's unit-size warning; spx warns the same
        check_module(_TFn(TF.affine_grid, size, align_corners=align_corners),
                     _SFn(F.affine_grid, size, align_corners=align_corners), [theta])  # fmt: skip


def test_spatial_transformer_end_to_end():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    theta = (np.eye(2, 3)[None] + 0.2 * rng.standard_normal((2, 2, 3))).astype(np.float32)

    def run(lib, fns, x, theta):
        grid = fns.affine_grid(theta, (2, 3, 5, 4), align_corners=False)
        return fns.grid_sample(x, grid, align_corners=False, padding_mode="border")

    xt, tt = torch.tensor(x, requires_grad=True), torch.tensor(theta, requires_grad=True)
    run(torch, TF, xt, tt).square().sum().backward()
    xs, ts = spx.tensor(x, requires_grad=True), spx.tensor(theta, requires_grad=True)
    run(spx, F, xs, ts).square().sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ts.grad.numpy(), tt.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_align_corners_none_warns_as_torch():
    x, g = np.zeros((1, 1, 2, 2), np.float32), np.zeros((1, 1, 1, 2), np.float32)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(spx.tensor(x), spx.tensor(g))
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.affine_grid(spx.tensor(np.eye(2, 3, dtype=np.float32)[None]), (1, 1, 2, 2))


@pytest.mark.parametrize(
    "x_shape,g_shape,kw,exc",
    [
        ((1, 1, 3, 3), (1, 2, 2, 3), {}, RuntimeError),
        ((1, 1, 3, 3), (2, 2, 2, 2), {}, RuntimeError),
        ((1, 1, 0, 3), (1, 2, 2, 2), {}, RuntimeError),
        ((1, 3, 3), (1, 2, 2), {}, RuntimeError),
        ((1, 1, 3, 3, 3), (1, 2, 2, 2, 3), {"mode": "bicubic"}, RuntimeError),
        ((1, 1, 3, 3), (1, 2, 2, 2), {"mode": "linear"}, ValueError),
        ((1, 1, 3, 3), (1, 2, 2, 2), {"padding_mode": "circular"}, ValueError),
    ],
)
def test_grid_sample_errors_match_torch(x_shape, g_shape, kw, exc):
    x, g = np.zeros(x_shape, np.float32), np.zeros(g_shape, np.float32)
    with pytest.raises(exc) as want:
        TF.grid_sample(torch.tensor(x), torch.tensor(g), align_corners=False, **kw)
    with pytest.raises(exc) as got:
        F.grid_sample(spx.tensor(x), spx.tensor(g), align_corners=False, **kw)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize(
    "theta_shape,size,exc",
    [
        ((1, 3, 3), (1, 1, 2, 2), ValueError),
        ((1, 2, 3), (1, 1, 2, 2, 2), ValueError),
        ((1, 2, 3), (1, 1, 2), NotImplementedError),
        ((1, 2, 3), (1, 1, 0, 2), ValueError),
    ],
)
def test_affine_grid_errors_match_torch(theta_shape, size, exc):
    theta = np.zeros(theta_shape, np.float32)
    with pytest.raises(exc) as want:
        TF.affine_grid(torch.tensor(theta), size, align_corners=False)
    with pytest.raises(exc) as got:
        F.affine_grid(spx.tensor(theta), size, align_corners=False)
    assert str(got.value).replace("spx.Size", "torch.Size") == str(want.value)
