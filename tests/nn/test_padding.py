"""Padding layers (Zero/Constant/Reflection/Replication/CircularPad 1-3d) against torch.nn."""

import numpy as np
import pytest

from spx import nn
from tests.nn._parity import check_module

torch = pytest.importorskip("torch")

MODES = ["ZeroPad", "ConstantPad", "ReflectionPad", "ReplicationPad", "CircularPad"]
PADS = {1: [2, (1, 2), (0, -1)], 2: [1, (1, 0, 2, 1)], 3: [1, (1, 0, 0, 1, 1, 1)]}


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _make(lib, mode, nd, pad):
    cls = getattr(lib, f"{mode}{nd}d")
    return cls(pad, 2.5) if mode == "ConstantPad" else cls(pad)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("batched", [True, False])
def test_padding_matches_torch(mode, nd, batched):
    shape = (2, 3, *(4,) * nd) if batched else (3, *(4,) * nd)
    for pad in PADS[nd]:
        t_layer, s_layer = _make(torch.nn, mode, nd, pad), _make(nn, mode, nd, pad)
        assert repr(s_layer) == repr(t_layer)
        check_module(t_layer, s_layer, [_x(shape)])


def test_constant_pad_keeps_int_value_in_repr():
    assert repr(nn.ConstantPad2d(1, 3)) == repr(torch.nn.ConstantPad2d(1, 3))


def test_padding_errors():
    with pytest.raises(ValueError, match="sequence of 4 ints"):
        nn.ZeroPad2d((1, 2))
    with pytest.raises(TypeError, match="padding"):
        nn.ReflectionPad1d(1.5)
    with pytest.raises(TypeError, match="value"):
        nn.ConstantPad1d(1, "a")
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.CircularPad2d(1)(np.zeros((2, 2, 3, 3, 3), np.float32))
    with pytest.raises(RuntimeError, match="reflect"):
        nn.ReflectionPad1d(4)(np.zeros((1, 2, 4), np.float32))
