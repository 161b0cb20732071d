"""Pooling against torch: kernel/stride/padding/dilation, ceil_mode, count_include_pad,
divisor_override, adaptive pools with even and uneven bins; input gradients."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import spx.nn.functional as F

from ._reference import check_against_torch, randn, torch

TF = torch.nn.functional

MAX_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=2, stride=2, ceil_mode=True),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0)),
    dict(kernel_size=3, stride=1, dilation=2),
    dict(kernel_size=2, stride=3, padding=1, dilation=2, ceil_mode=True),
]


@pytest.mark.parametrize("kwargs", MAX_CASES, ids=str)
def test_max_pool2d(kwargs):
    rng = np.random.default_rng(0)
    x = randn(rng, 2, 3, 7, 8)
    check_against_torch(
        lambda x: F.max_pool2d(x, **kwargs), lambda x: TF.max_pool2d(x, **kwargs), [x]
    )


AVG_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=2, stride=2, ceil_mode=True),
    dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True),
    dict(kernel_size=3, padding=1, divisor_override=4),
]


@pytest.mark.parametrize("kwargs", AVG_CASES, ids=str)
def test_avg_pool2d(kwargs):
    rng = np.random.default_rng(1)
    x = randn(rng, 2, 3, 7, 8)
    check_against_torch(
        lambda x: F.avg_pool2d(x, **kwargs), lambda x: TF.avg_pool2d(x, **kwargs), [x]
    )


def test_pool1d_3d_and_unbatched():
    rng = np.random.default_rng(2)
    x1 = randn(rng, 2, 3, 9)
    check_against_torch(lambda x: F.max_pool1d(x, 3, 2, 1, ceil_mode=True),
                        lambda x: TF.max_pool1d(x, 3, 2, 1, ceil_mode=True), [x1])  # fmt: skip
    kw = dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)
    check_against_torch(lambda x: F.avg_pool1d(x, **kw), lambda x: TF.avg_pool1d(x, **kw), [x1])
    x3 = randn(rng, 1, 2, 4, 5, 5)
    check_against_torch(lambda x: F.max_pool3d(x, 2, ceil_mode=True),
                        lambda x: TF.max_pool3d(x, 2, ceil_mode=True), [x3])  # fmt: skip
    check_against_torch(
        lambda x: F.avg_pool3d(x, 3, 2, 1), lambda x: TF.avg_pool3d(x, 3, 2, 1), [x3]
    )
    xu = randn(rng, 3, 6, 6)
    out = check_against_torch(lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), [xu])
    assert out.shape == (3, 3, 3)


@pytest.mark.parametrize("size", [(1, 1), (3, 4), (2, 5), (7, 8), (4, None), 3])
@pytest.mark.parametrize("op", ["adaptive_avg_pool2d", "adaptive_max_pool2d"])
def test_adaptive_pool2d(op, size):
    rng = np.random.default_rng(3)
    x = randn(rng, 2, 3, 7, 8)
    check_against_torch(lambda x: getattr(F, op)(x, size), lambda x: getattr(TF, op)(x, size), [x])


def test_adaptive_pool1d_and_3d():
    rng = np.random.default_rng(4)
    x = randn(rng, 2, 3, 10)
    for size in (3, 5):
        check_against_torch(lambda x, s=size: F.adaptive_avg_pool1d(x, s),
                            lambda x, s=size: TF.adaptive_avg_pool1d(x, s), [x])  # fmt: skip
        check_against_torch(lambda x, s=size: F.adaptive_max_pool1d(x, s),
                            lambda x, s=size: TF.adaptive_max_pool1d(x, s), [x])  # fmt: skip
    x3 = randn(rng, 1, 2, 5, 4, 6)
    check_against_torch(lambda x: F.adaptive_avg_pool3d(x, (2, 3, 4)),
                        lambda x: TF.adaptive_avg_pool3d(x, (2, 3, 4)), [x3])  # fmt: skip


def test_pool_errors():
    x = jnp.ones((1, 1, 5, 5))
    with pytest.raises(RuntimeError, match="half of effective kernel"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="too small"):
        F.max_pool2d(jnp.ones((1, 1, 2, 2)), 5)
    with pytest.raises(RuntimeError, match=r"3-D .* or 4-D"):
        F.avg_pool2d(jnp.ones((5, 5)), 2)
