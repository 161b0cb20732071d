"""Running one ``torch.special`` function and its ``spx.special`` namesake on the same float32
or float64 values, and comparing results, dtypes, ``requires_grad`` and gradients.

float64 cases run under ``jax.enable_x64`` (spx computes 64-bit floats only there).
Tolerances: float32 ``rtol=2e-5, atol=1e-6``; float64 ``rtol=1e-7, atol=1e-10``. Both libraries
evaluate the same approximations, so what remains is rounding; cancellations far in a tail
(``erfcx'`` at 1e4) stay within the absolute part.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest

import spx

torch = pytest.importorskip("torch")

DTYPES = [np.float32, np.float64]
TOLERANCES = {np.float32: (2e-5, 1e-6), np.float64: (1e-7, 1e-10)}

# Edge values every unary function is run on: zeros of both signs, tiny, moderate, the
# branch points of the Cephes approximations (2, 5, 8), large, infinite and NaN.
EDGES = np.array([
    0.0, -0.0, 1e-30, 1e-6, 0.3, 1.0, -1.0, -0.7, 2.0, 2.5, -2.5, -3.0, 4.9, 5.0, 5.5, 7.0,
    8.0, 9.0, -9.0, 30.0, -30.0, 100.0, -100.0, 1e4, -1e4, np.inf, -np.inf, np.nan,
])  # fmt: skip
# Values in and around [0, 1] for functions of a probability.
PROBABILITIES = np.array([0.0, 1e-30, 1e-6, 0.3, 0.5, 0.999, 1.0, -0.1, 1.1, np.inf, np.nan])


def _assert_close(got: Any, want: Any, dtype: Any, what: str, scale: float = 1.0) -> None:
    rtol, atol = TOLERANCES[dtype]
    got_np = np.asarray(got.detach().numpy())
    want_np = want.detach().numpy()
    assert got_np.dtype == want_np.dtype, f"{what}: dtype {got_np.dtype} vs torch {want_np.dtype}"
    np.testing.assert_allclose(
        got_np, want_np, rtol=rtol * scale, atol=atol * scale, equal_nan=True, err_msg=what
    )


def compare(
    fn: Callable[[Any, Any], Any],
    arrays: list[np.ndarray],
    dtype: Any,
    grad: bool | tuple[bool, ...] = True,
    scale: float = 1.0,
) -> None:
    """``fn(module, *tensors)`` with spx and torch on ``arrays`` cast to ``dtype``: values,
    dtype and ``requires_grad`` equal; the inputs ``grad`` selects (all, none, or one flag
    per input) require grad, and when torch's result does, the gradients of ``sum(out * w)``
    (fixed weights ``w``) equal too. ``scale`` widens the tolerances for a case with known
    cancellation."""
    flags = grad if isinstance(grad, tuple) else (grad,) * len(arrays)
    grad = any(flags)
    with jax.enable_x64(dtype == np.float64):
        inputs = [np.asarray(a, dtype) for a in arrays]
        t_in = [torch.tensor(a, requires_grad=f) for a, f in zip(inputs, flags, strict=True)]
        s_in = [spx.tensor(a, requires_grad=f) for a, f in zip(inputs, flags, strict=True)]
        want, got = fn(torch, *t_in), fn(spx, *s_in)
        _assert_close(got, want, dtype, "value", scale)
        assert got.requires_grad == want.requires_grad, (
            f"requires_grad {got.requires_grad} vs torch {want.requires_grad}"
        )
        if not (grad and want.requires_grad):
            return
        w = np.linspace(0.5, 1.5, want.numel()).reshape(tuple(want.shape)).astype(dtype)
        (want * torch.tensor(w)).sum().backward()
        (got * spx.tensor(w)).sum().backward()
        for i, (s, t) in enumerate(zip(s_in, t_in, strict=True)):
            if t.grad is None:
                assert s.grad is None, f"grad[{i}]: torch gives None, spx a value"
            else:
                assert s.grad is not None, f"grad[{i}]: spx gave no gradient"
                _assert_close(s.grad, t.grad, dtype, f"grad[{i}]", scale)
