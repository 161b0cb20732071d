"""torch's top-level constants, memory formats, and spx.real/imag, against torch's."""

import math
import pickle

import numpy as np
import pytest

import spx
from spx import nn

torch = pytest.importorskip("torch")


def test_numbers_are_torchs():
    for name in ("pi", "e", "inf"):
        assert getattr(spx, name) == getattr(torch, name)
    assert math.isnan(spx.nan) and math.isnan(torch.nan)
    assert spx.newaxis is torch.newaxis is None
    assert spx.ones(2, 3)[spx.newaxis].shape == tuple(torch.ones(2, 3)[torch.newaxis].shape)


def test_memory_formats_are_accepted_hints_that_change_nothing():
    formats = ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format")
    for name in formats:
        assert (
            repr(getattr(spx, name))
            == f"spx.{name}"
            == repr(getattr(torch, name)).replace("torch", "spx")
        )
        assert pickle.loads(pickle.dumps(getattr(spx, name))) is getattr(spx, name)
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    got = spx.from_numpy(x).contiguous(memory_format=spx.channels_last)
    np.testing.assert_array_equal(np.asarray(got), x)
    conv = nn.Conv2d(3, 4, 3)
    assert conv.to(memory_format=spx.channels_last) is conv
    with pytest.raises(TypeError, match=r"spx\.channels_last"):
        conv.to(memory_format="channels_last")
    t = spx.ones(2)
    for write in (t.to, t.contiguous, t.clone):
        assert write(memory_format=spx.contiguous_format).tolist() == [1.0, 1.0]
        with pytest.raises(TypeError, match="memory_format"):  # torch: TypeError too
            write(memory_format="channels_last")


def test_real_and_imag_functions_are_torchs():
    values = [1 + 2j, -3.5 - 0.5j]
    assert spx.real(spx.tensor(values)).tolist() == torch.real(torch.tensor(values)).tolist()
    assert spx.imag(spx.tensor(values)).tolist() == torch.imag(torch.tensor(values)).tolist()
    assert spx.real(spx.ones(2)).tolist() == torch.real(torch.ones(2)).tolist()
    with pytest.raises(RuntimeError, match="non-complex"):
        torch.imag(torch.ones(2))
    with pytest.raises(RuntimeError, match="non-complex"):
        spx.imag(spx.ones(2))
    assert spx.GradScaler is spx.amp.GradScaler
