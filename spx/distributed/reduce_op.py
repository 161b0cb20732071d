"""``ReduceOp`` and the one function every backend uses to combine contributions.

Mirrors ``torch.distributed.ReduceOp``. A reduction always runs on one device, over arrays that
are already there, in rank order: every rank that reduces the same contributions gets bit-for-bit
the same answer (float addition is not associative, so the order is part of the contract).
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


class ReduceOp(enum.Enum):
    """How a reducing collective combines the ranks' tensors (torch ``dist.ReduceOp``).

    ``AVG`` divides the sum by the number of ranks and needs a floating dtype; ``BAND``/``BOR``/
    ``BXOR`` need an integer or bool dtype. Values match torch's ``RedOpType`` numbering.

    Example:
        >>> import spx.distributed as dist
        >>> dist.ReduceOp.MAX
        <ReduceOp.MAX: 4>
    """

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7

    # torch code sometimes spells the type ``ReduceOp.RedOpType``; one enum serves both.
    @classmethod
    def _missing_(cls, value: object) -> ReduceOp | None:
        if isinstance(value, str):
            return cls.__members__.get(value.upper())
        return None


_BINARY = {
    ReduceOp.SUM: jnp.add,
    ReduceOp.AVG: jnp.add,
    ReduceOp.PRODUCT: jnp.multiply,
    ReduceOp.MIN: jnp.minimum,
    ReduceOp.MAX: jnp.maximum,
    ReduceOp.BAND: jnp.bitwise_and,
    ReduceOp.BOR: jnp.bitwise_or,
    ReduceOp.BXOR: jnp.bitwise_xor,
}


def check_op(op: ReduceOp | str, dtype: np.dtype | None = None) -> ReduceOp:
    """Normalize ``op`` and check it suits ``dtype``; raises a clear error otherwise.

    Args:
        op: a :class:`ReduceOp` (or its name, e.g. ``"sum"``).
        dtype: the dtype that will be reduced, or None to skip the dtype check.

    Returns:
        The :class:`ReduceOp`.
    """
    try:
        op = ReduceOp(op)
    except ValueError:
        raise ValueError(
            f"unknown reduce op {op!r}; use one of {[m.name for m in ReduceOp]} "
            "(e.g. dist.ReduceOp.SUM)"
        ) from None
    if dtype is None:
        return op
    dtype = np.dtype(dtype)
    floating = jnp.issubdtype(dtype, jnp.inexact)
    if op is ReduceOp.AVG and not floating:
        raise TypeError(
            f"ReduceOp.AVG needs a floating dtype, got {dtype}; reduce with ReduceOp.SUM and "
            "divide, or cast the tensor to float first"
        )
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and floating:
        raise TypeError(f"ReduceOp.{op.name} needs an integer or bool dtype, got {dtype}")
    return op


# One small program per (op, shape, dtype, device), applied n-1 times, rather than one program
# per world size: XLA compiles cost ~0.15 s each on CPU, and each device needs its own.
@functools.partial(jax.jit, static_argnums=2)
def _combine(acc: jax.Array, x: jax.Array, op: ReduceOp) -> jax.Array:
    return _BINARY[op](acc, x).astype(acc.dtype)


@jax.jit
def _mean(total: jax.Array, n: int) -> jax.Array:
    return (total / n).astype(total.dtype)


def reduce_arrays(arrays: Sequence[jax.Array], op: ReduceOp) -> jax.Array:
    """Combine same-shaped arrays that live on one device, in the order given.

    Args:
        arrays: one array per rank, in rank order, all of one shape and dtype, all committed to
            the device the result should live on.
        op: the reduction (already checked with :func:`check_op`).

    Returns:
        The reduced array, same shape and dtype, on the arrays' device.

    Example:
        >>> import jax.numpy as jnp
        >>> reduce_arrays([jnp.ones(2), jnp.ones(2)], ReduceOp.SUM)
        Array([2., 2.], dtype=float32)
    """
    acc = arrays[0]
    # Left to right in rank order: deterministic, and the same on every rank.
    for x in arrays[1:]:
        acc = _combine(acc, x, op)
    return _mean(acc, len(arrays)) if op is ReduceOp.AVG and len(arrays) > 1 else acc
