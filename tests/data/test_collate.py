"""default_collate / default_convert against torch's (Tensors, values, structure, documented
dtypes)."""

import collections

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx.data import default_collate, default_convert

torch = pytest.importorskip("torch")
from torch.utils.data import default_collate as torch_collate  # noqa: E402
from torch.utils.data import default_convert as torch_convert  # noqa: E402

Point = collections.namedtuple("Point", ["x", "y"])


def _assert_same(ours, ref):
    """Same structure and values; torch's tensors are spx Tensors here."""
    if isinstance(ref, torch.Tensor):
        assert isinstance(ours, spx.Tensor), type(ours)
        np.testing.assert_array_equal(np.asarray(ours), ref.numpy())
        assert ours.shape == tuple(ref.shape)
    elif isinstance(ref, dict):
        assert type(ours) is type(ref) and list(ours) == list(ref)
        for k in ref:
            _assert_same(ours[k], ref[k])
    elif isinstance(ref, list | tuple):
        assert type(ours) is type(ref) and len(ours) == len(ref)
        for a, b in zip(ours, ref, strict=True):
            _assert_same(a, b)
    else:
        assert ours == ref


def _samples(n=3):
    return [
        {
            "x": np.full((2, 3), i, np.float32),
            "label": i,
            "w": 0.5 * i,
            "name": f"s{i}",
            "pair": (np.int64(i), np.array([i, -i], np.int16)),
            "p": Point(np.float64(i), [i, i + 1]),
            "flag": i % 2 == 0,
        }
        for i in range(n)
    ]


def test_nested_batch_equals_torch():
    samples = _samples()
    ours = default_collate(samples)
    ref = torch_collate(samples)
    _assert_same(ours, ref)
    assert isinstance(ours["p"], Point)
    assert isinstance(ours["pair"], list)  # a tuple field becomes a list, as in torch


def test_dtypes_follow_documented_rules():
    b = default_collate(_samples())
    x64 = jax.config.jax_enable_x64
    assert b["x"].dtype == np.float32  # arrays keep their dtype (64-bit ones: spx's width)
    assert b["pair"][0].dtype == (np.int64 if x64 else np.int32)
    assert b["pair"][1].dtype == np.int16  # numpy scalars too
    assert b["flag"].dtype == np.bool_
    # Python numbers take JAX's default widths (torch: int64 / float64).
    assert b["label"].dtype == (np.int64 if x64 else np.int32)
    assert b["w"].dtype == (np.float64 if x64 else np.float32)
    assert b["label"].dtype == jnp.asarray(1).dtype and b["w"].dtype == jnp.asarray(1.0).dtype


def test_mapping_and_sequence_types_kept():
    od = [collections.OrderedDict(a=np.zeros(2), b=1) for _ in range(2)]
    assert isinstance(default_collate(od), collections.OrderedDict)
    lists = [[np.zeros(2), 1.0], [np.ones(2), 2.0]]
    _assert_same(default_collate(lists), torch_collate(lists))


def test_jax_arrays_are_stacked():
    out = default_collate([jnp.ones((2,)), jnp.zeros((2,))])
    assert isinstance(out, spx.Tensor) and out.shape == (2, 2)
    np.testing.assert_array_equal(out, [[1, 1], [0, 0]])


def test_errors_match_torch_kinds():
    uneven = [np.zeros(2), np.zeros(3)]
    with pytest.raises(RuntimeError):
        torch_collate(uneven)
    with pytest.raises(RuntimeError, match=r"shape \(2,\).*shape \(3,\)"):
        default_collate(uneven)
    ragged = [[1, 2], [1]]
    with pytest.raises(RuntimeError):
        torch_collate(ragged)
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate(ragged)
    with pytest.raises(TypeError):
        torch_collate([object(), object()])
    with pytest.raises(TypeError, match="collate_fn"):
        default_collate([object(), object()])
    strings = [np.array(["a"]), np.array(["b"])]
    with pytest.raises(TypeError):
        torch_collate(strings)
    with pytest.raises(TypeError, match="dtype"):
        default_collate(strings)


def test_large_python_ints_need_x64_and_the_error_names_the_fix():
    if jax.config.jax_enable_x64:
        assert default_collate([2**40, 1]).tolist() == [2**40, 1]
    else:
        with pytest.raises(OverflowError, match="jax_enable_x64"):
            default_collate([2**40, 1])


def test_default_convert_equals_torch():
    sample = {"a": np.float32(2.0), "b": (np.arange(3), 4), "c": "s", "d": [np.int8(1)]}
    ours = default_convert(sample)
    ref = torch_convert(sample)
    _assert_same(ours, ref)


def test_strings_in_tuples_bfloat16_and_tensors_that_require_grad_as_torch():
    samples = [("a", 1, np.str_("x")), ("b", 2, np.str_("y"))]
    _assert_same(default_collate(samples), torch_collate(samples))  # string fields: tuples
    assert default_collate(["a", "b"]) == torch_collate(["a", "b"]) == ["a", "b"]
    half = [spx.ones(3, dtype=spx.bfloat16) * i for i in range(2)]
    ours = default_collate(half)
    ref = torch_collate([torch.ones(3, dtype=torch.bfloat16) * i for i in range(2)])
    assert str(ours.dtype) == "bfloat16" and ours.shape == tuple(ref.shape)
    np.testing.assert_array_equal(np.asarray(ours, np.float32), ref.float().numpy())
    for lib, collate in ((spx, default_collate), (torch, torch_collate)):
        p = lib.tensor([1.0, 2.0], requires_grad=True)
        batch = collate([p, p * 3])  # torch stacks: the batch stays in the graph
        (batch**2).sum().backward()
        np.testing.assert_allclose(np.asarray(p.grad), [20.0, 40.0])


def test_a_collate_fn_built_on_default_collate_uses_tensors_as_torch():
    def collate(batch):  # a torch script's custom collate_fn
        x, y = default_collate(batch)
        return x.float() * 2, y.to("cpu")

    samples = [(np.full(3, i, np.float32), i) for i in range(4)]
    x, y = next(iter(spx.data.DataLoader(samples, batch_size=4, collate_fn=collate)))
    np.testing.assert_array_equal(np.asarray(x), np.repeat(np.arange(4.0), 3).reshape(4, 3) * 2)
    assert y.tolist() == [0, 1, 2, 3]
    loader = spx.data.DataLoader(samples, batch_size=2, collate_fn=default_collate)
    assert [b[1].tolist() for b in loader] == [[0, 1], [2, 3]]
