"""Shared helpers: run an spx function and its torch reference on the same inputs and compare
outputs and gradients (``jax.grad`` of a random weighted sum vs torch autograd)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx._tensor.recorded import recorded

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


def host(t):
    """A Tensor's value as numpy (``numpy(force=True)``, torch's detach + numpy).

    Not ``t.detach().numpy()``: detach() of a non-leaf still requires grad today
    (tests/nn/test_tensor_gaps.py).
    """
    return t.numpy(force=True) if isinstance(t, spx.Tensor) else t


def assert_close(actual, expected, rtol: float = RTOL, atol: float = ATOL, what: str = "") -> None:
    if isinstance(expected, torch.Tensor):
        expected = expected.detach().numpy()
    actual, expected = host(actual), host(expected)
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

    Two ways, both against torch's autograd:

    * **torch flow**: the arguments are ``spx.Tensor`` objects (``requires_grad`` where
      differentiated), ``loss.backward()`` fills their ``.grad``; the op must return a Tensor.
    * **under JAX transforms**: the same function on jax arrays inside ``jax.jit`` and
      ``jax.vjp``, as ``spx.compile`` and ``spx.value_and_grad`` trace it.
    """
    if diff is None:
        diff = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    t_args = [
        torch.tensor(a, requires_grad=i in diff) if isinstance(a, np.ndarray) else a
        for i, a in enumerate(args)
    ]
    out_t = torch_fn(*t_args)
    g = np.random.default_rng(seed).standard_normal(tuple(out_t.shape)).astype(np.float32)
    if diff:
        (out_t * torch.tensor(g)).sum().backward()
    grads_t = [t_args[i].grad for i in diff]
    for i, gt in zip(diff, grads_t, strict=True):
        assert gt is not None, f"torch gave no gradient for argument {i}"

    # torch flow: Tensors in, a Tensor out, loss.backward() into .grad.
    s_args = [
        spx.tensor(a, requires_grad=i in diff) if isinstance(a, np.ndarray) else a
        for i, a in enumerate(args)
    ]
    out_s = spx_fn(*s_args)
    assert isinstance(out_s, spx.Tensor), f"expected an spx.Tensor, got {type(out_s).__name__}"
    assert tuple(out_s.shape) == tuple(out_t.shape), (out_s.shape, out_t.shape)
    if diff:
        assert out_s.requires_grad
        (out_s * spx.tensor(g, dtype=out_s.dtype)).sum().backward()
    assert_close(out_s, out_t, rtol, atol, "forward")
    for i, gt in zip(diff, grads_t, strict=True):
        gs = s_args[i].grad
        assert gs is not None, f"spx gave no gradient for argument {i}"
        assert_close(gs, gt, grad_rtol or rtol, grad_atol or atol, f"gradient of {i}")

    # The same function traced by JAX on arrays: forward and backward as one compiled program.
    j_args = [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]

    def of_diff(*diff_vals):
        full = list(j_args)
        for i, v in zip(diff, diff_vals, strict=True):
            full[i] = v
        return jnp.asarray(spx_fn(*full))

    @jax.jit
    def forward_and_vjp(*diff_vals):
        out, vjp = jax.vjp(of_diff, *diff_vals)
        return out, (vjp(jnp.asarray(g, out.dtype)) if diff else ())

    out_j, grads_j = forward_and_vjp(*[j_args[i] for i in diff])
    assert_close(out_j, out_t, rtol, atol, "forward under jax.jit")
    for i, gj, gt in zip(diff, grads_j, grads_t, strict=True):
        assert_close(gj, gt, grad_rtol or rtol, grad_atol or atol, f"jax.vjp gradient of {i}")
    return out_s


def _concatenate(*parts):
    return jnp.concatenate(parts)


_recorded_concatenate = recorded(_concatenate)


def cat(tensors):
    """``torch.cat`` of 1-D Tensors (or arrays) as one recorded op, for the checks below."""
    return _recorded_concatenate(*tensors)


def all_reductions(fn, cat):
    """``fn(*args, reduction=r)`` for "none", "mean" and "sum", flattened and concatenated.

    One compiled program then checks every reduction (and its gradient) at once, which keeps
    the suite fast; ``cat`` is this module's :func:`cat` or ``torch.cat``.
    """

    def combined(*args, **kwargs):
        outs = [fn(*args, **kwargs, reduction=r).reshape(-1) for r in ("none", "mean", "sum")]
        return cat(outs)

    return combined
