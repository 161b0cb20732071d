"""Private helpers shared by the ``spx.nn.functional`` modules.

Argument normalization (``int | tuple`` → tuple, torch's legacy ``size_average``/``reduce``),
loss reductions and dropout-key resolution live here once, so every public function validates
its arguments the same way and says the same thing when they are wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from spx import _user_code, _validate
from spx import random as spx_random
from spx._tensor.methods.reduction import _norm

REDUCTIONS = ("none", "mean", "sum")


def ntuple(value: int | Sequence[int], n: int, name: str) -> tuple[int, ...]:
    """``value`` as an ``n``-tuple of ints (torch's ``_pair``/``_triple``), validated.

    ``name`` reads ``"conv2d: stride"`` (the function, then the argument).

    Raises:
        TypeError: not an int or a sequence of ints (numpy integers are fine).
        ValueError: a sequence of the wrong length.
    """
    where, _, arg = name.rpartition(": ")
    return _validate.as_int_tuple(value, n, arg or name, where or "spx.nn.functional")


def required_array(value: Any, name: str, fn: str) -> jax.Array:
    """``value`` as an array; ``None`` is a TypeError naming the argument (torch's too).

    Example:
        >>> required_array([1.0], "weight", "linear").shape
        (1,)
    """
    if value is None:
        raise TypeError(
            f"{fn}(): argument '{name}' must be an array, not None. If it is a module's "
            f"parameter that was set to None, assign it a Parameter again."
        )
    return jnp.asarray(value)


def check_reduction(reduction: str, allowed: Sequence[str] = REDUCTIONS) -> str:
    """Validate a ``reduction`` string (torch raises ValueError with this wording)."""
    if reduction not in allowed:
        raise ValueError(
            f"{reduction!r} is not a valid value for reduction; expected one of {tuple(allowed)}"
        )
    return reduction


def legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """Resolve torch's deprecated ``size_average``/``reduce`` pair into a reduction string.

    Mirrors ``torch.nn._reduction.legacy_get_string``: when either legacy flag is given it wins
    over ``reduction`` and a deprecation warning is emitted.
    """
    if size_average is None and reduce is None:
        return check_reduction(reduction)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = ("mean" if size_average else "sum") if reduce else "none"
    _user_code.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
        DeprecationWarning,
    )
    return ret


def hinge(x: jax.Array) -> jax.Array:
    """``max(x, 0)`` as torch's ``clamp_min(x, 0)`` computes it for its margin losses: the
    gradient is 1 at ``x == 0`` (``jax.nn.relu`` gives 0 there, so tied scores at a margin of 0
    would never train) and NaN stays NaN."""
    return jnp.where(x < 0, jnp.zeros((), x.dtype), x)


def reduce_loss(loss: jax.Array, reduction: str) -> jax.Array:
    """Apply an already-validated ``reduction`` to an elementwise loss."""
    if reduction == "mean":
        return jnp.mean(loss)
    if reduction == "sum":
        return jnp.sum(loss)
    return loss


def resolve_key(key: Any) -> jax.Array:
    """The key to draw a random mask from: ``key`` if given, else the rank's next key.

    Accepts new-style typed keys (``jax.random.key``) and raw ``uint32[2]`` keys
    (``jax.random.PRNGKey``); anything else (e.g. a ``torch.Generator``) is a TypeError.
    """
    if key is None:
        return spx_random.next_key()
    if spx_random.is_key(key):
        return key
    raise TypeError(
        f"key must be a jax PRNG key (jax.random.key(n) or jax.random.PRNGKey(n)), got "
        f"{type(key).__name__}; omit it to draw from spx.manual_seed's generator"
    )


def is_concrete(x: jax.Array) -> bool:
    """Whether ``x`` holds known values (not a tracer inside ``jit``/``grad``/``vmap``)."""
    return not isinstance(x, jax.core.Tracer)


def vector_norm(x: jax.Array, p: float, dim: int) -> jax.Array:
    """``||x||_p`` along ``dim`` with keepdims, with gradients matching torch's ``norm``
    (zero at a zero vector, where JAX's derivative of the root is NaN)."""
    return _norm(x, p, (dim,), True)
