"""spx.dtype and friends: isinstance checks, default dtype, finfo/iinfo, promotion rules."""

import numpy as np
import pytest

import spx

torch = pytest.importorskip("torch")

PAIRS = [("int32", "float16"), ("int64", "float32"), ("bool", "int8"), ("float16", "bfloat16"),
         ("uint8", "int8"), ("float32", "float64"), ("bool", "float32")]  # fmt: skip


def test_dtype_is_numpy_dtype():
    assert isinstance(spx.ones(2).dtype, spx.dtype)
    assert isinstance(spx.tensor([1, 2]).dtype, spx.dtype)
    assert spx.dtype("float32") == spx.float32
    assert spx.get_default_dtype() == spx.float32


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "int32", "uint8", "bool"])
def test_dtype_names_behave_as_torchs_dtype_objects(name):
    """torch's idioms on dtypes: identity, isinstance, dict keys and sets. spx.float32 was
    JAX's scalar type: == a tensor's dtype, but `is`, isinstance and hashing all failed."""
    t_dtype, s_dtype = getattr(torch, name), getattr(spx, name)
    t_x, s_x = torch.zeros(2, dtype=t_dtype), spx.zeros(2, dtype=s_dtype)
    assert (t_x.dtype is t_dtype) and (s_x.dtype is s_dtype)
    assert isinstance(t_dtype, torch.dtype) and isinstance(s_dtype, spx.dtype)
    assert {t_dtype: "yes"}[t_x.dtype] == {s_dtype: "yes"}[s_x.dtype] == "yes"
    assert (t_x.dtype in {t_dtype}) and (s_x.dtype in {s_dtype})
    assert s_x.to(spx.float32).dtype is spx.float32


@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types(a, b):
    want = torch.promote_types(getattr(torch, a), getattr(torch, b))
    assert np.dtype(spx.promote_types(getattr(spx, a), getattr(spx, b))).name == str(want)[6:]


def test_result_type():
    assert spx.result_type(spx.ones(2, dtype=spx.float16), 2.5) == spx.float16
    assert spx.result_type(spx.tensor([1]), 2.5) == spx.float32
    assert spx.result_type(spx.tensor([1]), spx.ones(1)) == spx.float32


@pytest.mark.parametrize("a,b", [("float32", "int32"), ("int32", "float32"), ("int32", "bool"),
                                 ("bool", "int32"), ("float32", "float16")])  # fmt: skip
def test_can_cast(a, b):
    assert spx.can_cast(getattr(spx, a), getattr(spx, b)) == torch.can_cast(
        getattr(torch, a), getattr(torch, b)
    )


def test_finfo_iinfo():
    for name in ("float32", "float16", "bfloat16"):
        s, t = spx.finfo(getattr(spx, name)), torch.finfo(getattr(torch, name))
        assert float(s.eps) == t.eps and float(s.max) == t.max and float(s.tiny) == t.tiny
    assert spx.iinfo(spx.int32).max == torch.iinfo(torch.int32).max


def test_predicates():
    assert spx.is_floating_point(spx.ones(1)) and not spx.is_floating_point(spx.tensor([1]))
    assert not spx.is_complex(spx.ones(1))
    assert spx.is_nonzero(spx.tensor([2])) is True and spx.is_nonzero(spx.tensor(0.0)) is False
    for lib in (torch, spx):
        with pytest.raises(RuntimeError, match="more than one value"):
            lib.is_nonzero(lib.ones(2))
        with pytest.raises(RuntimeError, match="no values"):
            lib.is_nonzero(lib.ones(0))


def test_64_bit_dtypes_are_narrowed_without_warnings():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        made = [
            spx.zeros(3, dtype=spx.long), spx.tensor([1, 2], dtype=spx.int64),
            spx.arange(4, dtype=spx.long), spx.full((2,), 3, dtype=spx.int64),
            spx.ones(2).to(spx.float64), spx.ones(2).double(), spx.ones(2).sum(dtype=spx.float64),
            spx.zeros_like(spx.ones(2), dtype=spx.long), spx.ones(2).softmax(0, spx.float64),
        ]  # fmt: skip
    assert [str(t.dtype) for t in made] == [
        "int32", "int32", "int32", "int32", "float32", "float32", "float32", "int32", "float32",
    ]  # fmt: skip
