"""spx.asarray and spx.frombuffer against torch's: dtype inference, aliasing of a Tensor,
copy=False errors, requires_grad, and buffer reads with count/offset."""

import array

import numpy as np
import pytest

import spx
from tests.tensor._parity import assert_same

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "data",
    [[1, 2.5], 3, 2.5, True, [[1, 2], [3, 4]], np.array([1, 2], np.int32),
     np.array([0.5], np.float32), [1j, 2]],
)  # fmt: skip
def test_asarray_of_data_matches_torch(data):
    assert_same(spx.asarray(data), torch.asarray(data))


def test_asarray_dtype_argument():
    assert_same(spx.asarray([1, 2], dtype=spx.float16), torch.asarray([1, 2], dtype=torch.float16))


def test_asarray_of_a_tensor_is_the_same_object_unless_converted():
    a = spx.tensor([1.0, 2.0])
    assert spx.asarray(a) is a
    assert spx.asarray(a, dtype=spx.float32) is a
    b = spx.asarray(a, dtype=spx.float16)
    assert b is not a and b.dtype == spx.float16
    c = spx.asarray(a, copy=True)
    assert c is not a and c.tolist() == a.tolist()


def test_asarray_copy_false_refuses_a_conversion_as_torch():
    with pytest.raises(ValueError, match="alias"):
        torch.asarray(torch.tensor([1.0]), dtype=torch.float16, copy=False)
    with pytest.raises(ValueError, match="alias"):
        spx.asarray(spx.tensor([1.0]), dtype=spx.float16, copy=False)


def test_asarray_requires_grad_sets_it_on_the_returned_tensor():
    a, t = spx.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])
    b, u = spx.asarray(a, requires_grad=True), torch.asarray(t, requires_grad=True)
    assert (b is a) == (u is t) and b.requires_grad == u.requires_grad == a.requires_grad
    (b * 3).sum().backward()
    assert a.grad.tolist() == [3.0, 3.0]


@pytest.mark.parametrize(
    "buffer,dtype,kwargs",
    [
        (bytearray(b"\x01\x00\x00\x00\x02\x00\x00\x00"), "int32", {}),
        (bytes(range(8)), "uint8", {"count": 3, "offset": 2}),
        (array.array("f", [1.5, -2.0, 3.25]), "float32", {"offset": 4}),
        (memoryview(bytearray(8)), "int16", {"count": 2}),
    ],
)
def test_frombuffer_matches_torch(buffer, dtype, kwargs):
    want = torch.frombuffer(bytearray(buffer), dtype=getattr(torch, dtype), **kwargs)
    got = spx.frombuffer(buffer, dtype=getattr(spx, dtype), **kwargs)
    assert_same(got, want)


def test_frombuffer_requires_grad_and_bad_sizes():
    t = spx.frombuffer(array.array("f", [1.0, 2.0]), dtype=spx.float32, requires_grad=True)
    assert t.requires_grad
    with pytest.raises(ValueError):
        torch.frombuffer(bytearray(3), dtype=torch.int32)
    with pytest.raises(ValueError, match="frombuffer"):
        spx.frombuffer(bytearray(3), dtype=spx.int32)
