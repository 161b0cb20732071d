"""torch's device fields on spx's (JAX's) devices: ``x.device.type`` and ``.index`` as torch
reports them for CPU tensors, usable where torch code passes them (autocast's device_type)."""

import pytest

import spx

torch = pytest.importorskip("torch")


def test_type_and_index_as_torch():
    for lib in (spx, torch):
        x = lib.zeros(3)
        assert (x.device.type, x.device.index) == ("cpu", None)
        assert lib.device("cpu").type == "cpu"
    with spx.autocast(device_type=spx.zeros(2).device.type, dtype=spx.bfloat16):
        assert (spx.ones(2, 3) @ spx.ones(3, 2)).dtype == spx.bfloat16
