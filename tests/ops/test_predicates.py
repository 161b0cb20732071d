"""spx.is_same_size and spx.is_signed against torch's over shapes and dtypes."""

import numpy as np
import pytest

import spx

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("a,b", [((2, 3), (2, 3)), ((2, 3), (3, 2)), ((), ()), ((1,), ())])
def test_is_same_size(a, b):
    want = torch.is_same_size(torch.zeros(a), torch.zeros(b))
    assert spx.is_same_size(spx.zeros(a), spx.zeros(b)) is want


@pytest.mark.parametrize(
    "dtype", ["bool", "uint8", "int8", "int16", "int32", "float16", "bfloat16", "float32",
              "complex64"],
)  # fmt: skip
def test_is_signed(dtype):
    want = torch.is_signed(torch.zeros(2, dtype=getattr(torch, dtype)))
    got = spx.is_signed(spx.zeros(2, dtype=getattr(spx, dtype)))
    assert got is want, f"{dtype}: {got} vs torch {want}"
    assert isinstance(np.bool_(got).item(), bool)
