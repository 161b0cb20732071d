"""Shared helpers: run an spx function and its torch reference on the same inputs and compare
outputs and gradients (``jax.grad`` of a random weighted sum vs torch autograd)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pytest

torch = pytest.importorskip("torch")

RTOL = 1e-5
ATOL = 1e-6


def randn(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def log_softmax_np(a: np.ndarray, axis: int) -> np.ndarray:
    """Test-data helper in numpy (no jax compile just to build inputs)."""
    a64 = a.astype(np.float64)
    z = a64 - a64.max(axis, keepdims=True)
    return (z - np.log(np.exp(z).sum(axis, keepdims=True))).astype(np.float32)


def softmax_np(a: np.ndarray, axis: int) -> np.ndarray:
    return np.exp(log_softmax_np(a, axis)).astype(np.float32)


def assert_close(actual, expected, rtol: float = RTOL, atol: float = ATOL, what: str = "") -> None:
    if isinstance(expected, torch.Tensor):
        expected = expected.detach().numpy()
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol,
                               err_msg=what)  # fmt: skip


def check_against_torch(
    spx_fn: Callable,
    torch_fn: Callable,
    args: Sequence[np.ndarray],
    diff: Sequence[int] | None = None,
    rtol: float = RTOL,
    atol: float = ATOL,
    grad_rtol: float | None = None,
    grad_atol: float | None = None,
    seed: int = 1234,
):
    """Compare ``spx_fn(*args)`` with ``torch_fn(*args)`` and the gradients w.r.t. ``diff``.

    ``diff`` lists the positions of the float arguments to differentiate (default: every float
    argument). The scalar differentiated is ``sum(out * g)`` with a fixed random ``g``, so every
    output element's gradient path is exercised with a distinct weight.
    """
    if diff is None:
        diff = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    j_args = [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    t_args = [
        torch.tensor(a, requires_grad=i in diff) if isinstance(a, np.ndarray) else a
        for i, a in enumerate(args)
    ]
    out_t = torch_fn(*t_args)
    g = np.random.default_rng(seed).standard_normal(tuple(out_t.shape)).astype(np.float32)

    def of_diff(*diff_vals):
        full = list(j_args)
        for i, v in zip(diff, diff_vals, strict=True):
            full[i] = v
        return spx_fn(*full)

    # Forward and backward as one compiled program: one XLA compile per check instead of one
    # per primitive and shape in eager mode (much faster for these tiny inputs), and the way
    # the ops run inside a training step anyway.
    @jax.jit
    def forward_and_vjp(*diff_vals):
        out, vjp = jax.vjp(of_diff, *diff_vals)
        return out, (vjp(jnp.asarray(g, out.dtype)) if diff else ())

    out_j, grads_j = forward_and_vjp(*[j_args[i] for i in diff])
    assert tuple(out_j.shape) == tuple(out_t.shape), (out_j.shape, out_t.shape)
    assert_close(out_j, out_t, rtol, atol, "forward")
    if not diff:
        return out_j
    (out_t * torch.tensor(g)).sum().backward()
    for i, gj in zip(diff, grads_j, strict=True):
        gt = t_args[i].grad
        assert gt is not None, f"torch gave no gradient for argument {i}"
        assert_close(gj, gt, grad_rtol or rtol, grad_atol or atol, f"gradient of argument {i}")
    return out_j


def all_reductions(fn, cat):
    """``fn(*args, reduction=r)`` for "none", "mean" and "sum", flattened and concatenated.

    One compiled program then checks every reduction (and its gradient) at once, which keeps
    the suite fast; ``cat`` is ``jnp.concatenate`` or ``torch.cat``.
    """

    def combined(*args, **kwargs):
        outs = [fn(*args, **kwargs, reduction=r).reshape(-1) for r in ("none", "mean", "sum")]
        return cat(outs)

    return combined
