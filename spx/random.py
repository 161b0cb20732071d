"""Seeded randomness with torch's habits: ``spx.manual_seed(n)`` then draw.

All spx randomness (parameter init, Dropout, ``spx.randn``) draws from one key per rank, held in
the thread's :class:`spx._context.RankContext`. Each draw splits the key, so successive draws
differ and a run is reproducible from its seed. Under ``spx.compile`` the key is threaded through
the compiled program as state, so every call of a compiled step gets fresh masks.

Draws made by Tensor operations (Dropout, ``spx.randn``, ``normal_``) split the key lazily
(:func:`next_key_tensor`): the split is recorded like any operation and computed with the
program that uses the key, instead of costing an eager JAX dispatch (~100 µs) per draw. The
rank's key is then a recorded Tensor until the next computation; :func:`get_key` computes it.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax._src.core import trace_state_clean

from spx import _context, _transforms, _validate


def manual_seed(seed: int) -> None:
    """Seed the calling rank's generator (mirrors ``torch.manual_seed``).

    Args:
        seed: any Python int; negative values and values >= 2**64 are rejected as in torch.

    Example:
        >>> import spx
        >>> spx.manual_seed(0)
    """
    seed = _validate.as_int(seed, "seed", "manual_seed", minimum=-(2**63), maximum=2**64 - 1)
    ctx = _context.current()
    ctx.seed = seed
    # Keys are created lazily so that seeding does not start the JAX backend.
    ctx.key = None


def initial_seed() -> int:
    """The seed the calling rank's generator started from (mirrors ``torch.initial_seed``)."""
    return _context.current().seed


def _make_key(seed: int) -> jax.Array:
    # jax keys take 32 or 64 bits; fold the seed into 64 bits the way torch wraps it. Always a
    # concrete key, even when the first draw after seeding happens under a JAX trace.
    with jax.ensure_compile_time_eval():
        return jax.random.key(seed % (2**63))


def get_key() -> jax.Array:
    """The calling rank's current key (without advancing it), computed if it is recorded."""
    ctx = _context.current()
    key = ctx.key
    if key is None:
        key = ctx.key = _make_key(ctx.seed)
    elif hasattr(key, "_ref"):
        key = ctx.key = key._data
    return key


def set_key(key: jax.Array) -> None:
    """Replace the calling rank's current key (used to thread the key through compiled code)."""
    _context.current().key = key


def next_key() -> jax.Array:
    """Advance the calling rank's generator and return a fresh key for one draw.

    Example:
        >>> import jax, spx
        >>> spx.manual_seed(0)
        >>> x = jax.random.normal(spx.random.next_key(), (2, 3))
    """
    ctx = _context.current()
    key = get_key()
    new, sub = jax.random.split(key)
    _transforms.check_key(new)  # a plain jax.jit must not leave a tracer in the generator
    ctx.key = new
    return sub


def _split(key: Any) -> tuple[Any, Any]:
    new, sub = jax.random.split(key)
    return new, sub


def next_key_tensor() -> Any:
    """Like :func:`next_key`, recorded: the split runs with the program that uses the key.

    Returns:
        A Tensor holding a fresh key, for a recorded random operation's input.
    """
    from spx._tensor.dispatch import apply

    ctx = _context.current()
    if not trace_state_clean() and not _transforms.is_binding():
        # Under a foreign transform: split eagerly. Fine under an evaluating one (an eager
        # jax.grad keeps the key concrete); under a staging one (jax.jit) the key would leak
        # out of the trace, and next_key's check raises with the right code.
        from spx._tensor.tensor import Tensor

        return Tensor._of(next_key())
    key = ctx.key if ctx.key is not None else get_key()
    new, sub = apply(_split, (), (key,), n_out=2)
    ctx.key = new
    return sub


def is_key(x: Any) -> bool:
    """Whether ``x`` is a JAX PRNG key: typed (``jax.random.key``) or raw ``uint32[..., 2]``."""
    return isinstance(x, jax.Array) and (
        jnp.issubdtype(x.dtype, jax.dtypes.prng_key)
        or (x.dtype == jnp.uint32 and x.shape[-1:] == (2,))
    )


def key_for(generator: Any, lazy: bool = True) -> Any:
    """The key a random op draws with: from ``generator`` (an :class:`spx.Generator` or a JAX
    key) or, for None, from the rank's generator (recorded with ``lazy``, else eager)."""
    if generator is None:
        return next_key_tensor() if lazy else next_key()
    from spx.generator import Generator

    if isinstance(generator, Generator):
        return generator.next_key()
    if is_key(generator):
        return generator  # a JAX key, for an explicit draw
    raise TypeError(
        f"generator must be an spx.Generator (or a JAX key), got {type(generator).__name__} "
        f"{generator!r:.40}; e.g. generator=spx.Generator().manual_seed(0)"
    )
