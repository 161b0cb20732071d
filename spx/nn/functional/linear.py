"""Affine maps with torch's weight layout: ``linear`` and ``bilinear``.

Weights are ``(out_features, in_features)`` exactly as in torch (no kernel transpose when
porting); ``x @ W.T`` is written as a ``dot_general`` contracting the last dims of both, which XLA
lowers to one GEMM without materializing a transpose.

See https://pytorch.org/docs/stable/generated/torch.nn.functional.linear.html
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from spx.nn.functional._utils import required_array

Array = jax.Array


def linear(input: Array, weight: Array, bias: Array | None = None) -> Array:
    """``y = x W^T + b`` (mirrors ``torch.nn.functional.linear``).

    Args:
        input: ``(*, in_features)``.
        weight: ``(out_features, in_features)``, or ``(in_features,)`` for a dot product
            (torch allows 1-D weights; the output then drops the feature dim).
        bias: ``(out_features,)`` or None.

    Returns:
        ``(*, out_features)``.

    Example:
        >>> F.linear(jnp.ones((8, 3)), jnp.ones((4, 3)), jnp.zeros(4)).shape  # (8, 4)
    """
    x, w = required_array(input, "input", "linear"), required_array(weight, "weight", "linear")
    if w.ndim not in (1, 2):
        raise RuntimeError(
            f"linear: weight must be (out_features, in_features) or (in_features,), "
            f"got shape {w.shape}"
        )
    if x.ndim == 0 or x.shape[-1] != w.shape[-1]:
        raise RuntimeError(
            f"linear: input's last dim must equal in_features={w.shape[-1]} "
            f"(weight shape {w.shape}), got input shape {x.shape}"
        )
    if x.ndim > 2 and w.ndim == 2:
        # One GEMM over the flattened leading dims, as torch's linear does: XLA's CPU backend
        # computes the weight's gradient of a dot with several batch-like dims as a much slower
        # multi-dim contraction (2.9 vs 4.4 ms for (32, 32, 128) x (512, 128), a 4-block MLP's
        # step 34 vs 44 ms; tools/_compute_floor.py). The reshapes are free.
        y = jax.lax.dot_general(
            x.reshape(math.prod(x.shape[:-1]), x.shape[-1]), w, (((1,), (1,)), ((), ()))
        )
        y = y.reshape(*x.shape[:-1], w.shape[0])
    else:
        y = jax.lax.dot_general(x, w, (((x.ndim - 1,), (w.ndim - 1,)), ((), ())))
    if bias is not None:
        y = y + jnp.asarray(bias)
    return y


def bilinear(input1: Array, input2: Array, weight: Array, bias: Array | None = None) -> Array:
    """``y_o = x1^T A_o x2 + b_o`` (mirrors ``torch.nn.functional.bilinear``).

    Args:
        input1: ``(*, in1_features)``.
        input2: ``(*, in2_features)`` with the same leading dims as ``input1``.
        weight: ``(out_features, in1_features, in2_features)``.
        bias: ``(out_features,)`` or None.

    Returns:
        ``(*, out_features)``.

    Example:
        >>> F.bilinear(jnp.ones((5, 2)), jnp.ones((5, 3)), jnp.ones((4, 2, 3))).shape  # (5, 4)
    """
    x1, x2 = (
        required_array(input1, "input1", "bilinear"),
        required_array(input2, "input2", "bilinear"),
    )
    w = required_array(weight, "weight", "bilinear")
    if w.ndim != 3:
        raise RuntimeError(f"bilinear: weight must be (out, in1, in2), got shape {w.shape}")
    if x1.shape[:-1] != x2.shape[:-1]:
        raise RuntimeError(
            f"bilinear: input1 {x1.shape} and input2 {x2.shape} must share all but the last dim"
        )
    if x1.shape[-1] != w.shape[1] or x2.shape[-1] != w.shape[2]:
        raise RuntimeError(
            f"bilinear: weight {w.shape} expects input1 (*, {w.shape[1]}) and input2 "
            f"(*, {w.shape[2]}), got {x1.shape} and {x2.shape}"
        )
    # Contract x1 with the weight first: (*, in1) x (out, in1, in2) -> (*, out, in2); then the
    # in2 contraction is a batched dot. einsum picks this order for us.
    y = jnp.einsum("...i,oij,...j->...o", x1, w, x2)
    if bias is not None:
        y = y + jnp.asarray(bias)
    return y
