"""Running the same code against spx and torch and comparing what comes out.

A case is written once, over a module ``m`` (``spx`` or ``torch``) and its tensors::

    check(lambda m, x: m.cat([x, x], dim=1), (2, 3))

``check`` builds the inputs from seeded numpy data (shapes become random float32 arrays; numpy
arrays are used as given), runs the case with spx and with torch, and compares the results:
shapes, values (with tolerances), dtypes (exactly, except that spx's int32 stands for torch's
int64) and structure (tuples, ``(values, indices)`` pairs, ``Size``, Python numbers).
``check_grad`` does the same for the gradients that ``backward()`` leaves in ``.grad``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import spx

torch = pytest.importorskip("torch")


def data(shape: tuple, seed: int = 0, kind: str = "float") -> np.ndarray:
    """Seeded test data: float32 normals, ints in [-5, 5), or bools."""
    rng = np.random.default_rng(seed + 7919 * len(shape) + sum(shape))
    if kind == "float":
        return rng.standard_normal(shape).astype(np.float32)
    if kind == "int":
        return rng.integers(-5, 5, shape).astype(np.int64)
    if kind == "pos":
        return (rng.random(shape) + 0.5).astype(np.float32)
    if kind == "bool":
        return rng.random(shape) > 0.5
    raise ValueError(kind)


def _inputs(args: tuple, seed: int) -> list[np.ndarray | Any]:
    out = []
    for i, a in enumerate(args):
        if isinstance(a, tuple):
            out.append(data(a, seed + i))
        else:
            out.append(a)
    return out


def to_spx(a: Any, requires_grad: bool = False) -> Any:
    if isinstance(a, np.ndarray | np.generic):
        arr = np.asarray(a)
        if arr.dtype == np.int64:
            arr = arr.astype(np.int32)  # spx's ints are int32 (no jax_enable_x64)
        return spx.tensor(arr, requires_grad=requires_grad)
    return a


def to_torch(a: Any, requires_grad: bool = False) -> Any:
    if isinstance(a, np.ndarray | np.generic):
        return torch.tensor(np.asarray(a), requires_grad=requires_grad)
    return a


_TORCH_TO_NP = {}


def _np_dtype(torch_dtype: Any) -> np.dtype:
    if not _TORCH_TO_NP:
        for name in ("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                     "uint8", "bool", "complex64"):  # fmt: skip
            _TORCH_TO_NP[getattr(torch, name)] = np.dtype(name)
    if torch_dtype == torch.bfloat16:
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return _TORCH_TO_NP[torch_dtype]


def same_dtype(spx_dtype: Any, torch_dtype: Any) -> bool:
    """spx's dtype stands for torch's: equal, or int32 for torch's default int64."""
    want = _np_dtype(torch_dtype)
    got = np.dtype(spx_dtype)
    return got == want or (want == np.int64 and got == np.int32)


def torch_value(t: Any) -> np.ndarray:
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return t.float().numpy()
    return t.numpy()


def assert_same(got: Any, want: Any, rtol: float = 1e-5, atol: float = 1e-6, path: str = "out"):
    """``got`` (from spx) matches ``want`` (from torch) in structure, shape, dtype and value."""
    if isinstance(want, torch.Tensor):
        assert isinstance(got, spx.Tensor), f"{path}: expected an spx.Tensor, got {type(got)}"
        assert tuple(got.shape) == tuple(want.shape), (
            f"{path}: shape {tuple(got.shape)} != torch {tuple(want.shape)}"
        )
        assert same_dtype(got.dtype, want.dtype), f"{path}: dtype {got.dtype} vs torch {want.dtype}"
        value = np.asarray(got.detach().numpy())
        if value.dtype.name == "bfloat16":
            value = value.astype(np.float32)
        expected = torch_value(want)
        if value.dtype == np.bool_ or np.issubdtype(value.dtype, np.integer):
            np.testing.assert_array_equal(value, expected, err_msg=path)
        else:
            np.testing.assert_allclose(value, expected, rtol=rtol, atol=atol, err_msg=path)
        return
    if isinstance(want, torch.Size):
        assert isinstance(got, spx.Size), f"{path}: expected spx.Size, got {type(got)}"
        assert tuple(got) == tuple(want), f"{path}: {got} != {want}"
        return
    if hasattr(want, "values") and hasattr(want, "indices") and isinstance(want, tuple):
        assert hasattr(got, "values") and hasattr(got, "indices"), (
            f"{path}: expected a (values, indices) pair, got {type(got)}"
        )
        assert_same(got.values, want.values, rtol, atol, path + ".values")
        assert_same(got.indices, want.indices, rtol, atol, path + ".indices")
        return
    if isinstance(want, tuple | list):
        assert isinstance(got, tuple | list), f"{path}: expected a sequence, got {type(got)}"
        assert type(got) is type(want) or not isinstance(want, list), (
            f"{path}: {type(got).__name__} vs torch {type(want).__name__}"
        )
        assert len(got) == len(want), f"{path}: {len(got)} items vs torch {len(want)}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same(g, w, rtol, atol, f"{path}[{i}]")
        return
    if isinstance(want, bool | int | float | complex):
        assert type(got) is type(want), f"{path}: {type(got).__name__} vs {type(want).__name__}"
        if isinstance(want, float):
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=path)
        else:
            assert got == want, f"{path}: {got!r} != torch {want!r}"
        return
    if want is None:
        assert got is None, f"{path}: expected None, got {got!r}"
        return
    if isinstance(want, torch.dtype):
        assert same_dtype(got, want), f"{path}: dtype {got} vs torch {want}"
        return
    raise TypeError(f"{path}: don't know how to compare {type(want)}")


def run(fn: Callable, *args: Any, seed: int = 0) -> tuple[Any, Any]:
    """``fn(spx, *spx_inputs)`` and ``fn(torch, *torch_inputs)`` from the same data."""
    arrays = _inputs(args, seed)
    got = fn(spx, *[to_spx(a) for a in arrays])
    want = fn(torch, *[to_torch(a) for a in arrays])
    return got, want


def check(fn: Callable, *args: Any, rtol: float = 1e-5, atol: float = 1e-6, seed: int = 0):
    """``fn`` gives the same result with spx and with torch (see the module docstring)."""
    got, want = run(fn, *args, seed=seed)
    assert_same(got, want, rtol, atol)
    return got


def check_raises(fn: Callable, *args: Any, error: type | tuple = Exception, seed: int = 0):
    """``fn`` raises with torch, and spx raises ``error`` (the type torch's error is, or a
    compatible one)."""
    arrays = _inputs(args, seed)
    with pytest.raises(Exception):  # torch itself must refuse the case
        fn(torch, *[to_torch(a) for a in arrays])
    with pytest.raises(error):
        fn(spx, *[to_spx(a) for a in arrays])


def _flat_tensors(out: Any) -> list:
    if isinstance(out, tuple | list):
        return [t for o in out for t in _flat_tensors(o)]
    return [out]


def check_grad(fn: Callable, *args: Any, rtol: float = 1e-5, atol: float = 1e-5, seed: int = 0):
    """The gradients of a weighted sum of ``fn``'s float outputs match torch's.

    Every float array input becomes a leaf that requires grad; the loss is
    ``sum(out_i * w_i)`` with fixed random weights ``w_i`` (so gradients are not all ones).
    """
    arrays = _inputs(args, seed)
    diff = [isinstance(a, np.ndarray) and a.dtype == np.float32 for a in arrays]
    s_in = [to_spx(a, d) for a, d in zip(arrays, diff, strict=True)]
    t_in = [to_torch(a, d) for a, d in zip(arrays, diff, strict=True)]
    s_outs = [o for o in _flat_tensors(fn(spx, *s_in)) if o.dtype == np.float32]
    t_outs = [o for o in _flat_tensors(fn(torch, *t_in)) if o.dtype == torch.float32]
    assert len(s_outs) == len(t_outs) and s_outs, "no float outputs to differentiate"
    s_loss, t_loss = 0.0, 0.0
    for i, (so, to) in enumerate(zip(s_outs, t_outs, strict=True)):
        w = data(tuple(to.shape), seed + 100 + i)
        s_loss = s_loss + (so * spx.tensor(w)).sum()
        t_loss = t_loss + (to * torch.tensor(w)).sum()
    s_loss.backward()
    t_loss.backward()
    for k, (s, t, d) in enumerate(zip(s_in, t_in, diff, strict=True)):
        if d and t.grad is None:
            assert s.grad is None, f"grad[{k}]: torch gives None (unused input), spx a value"
        elif d:
            assert s.grad is not None, f"spx gave no grad for input {k}"
            assert_same(s.grad, t.grad, rtol, atol, f"grad[{k}]")
