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

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
from jax._src.core import trace_state_clean

from spx import _context, _transforms, _validate
from spx.generator import Generator, default_generator


def manual_seed(seed: int) -> Any:
    """Seed the calling rank's generator (mirrors ``torch.manual_seed``).

    Args:
        seed: any Python int; negative values and values >= 2**64 are rejected as in torch.

    Returns:
        ``spx.default_generator``, the generator just seeded (torch's return value).

    Example:
        >>> import spx
        >>> g = spx.manual_seed(0)
        >>> g.initial_seed()
        0
    """
    seed = _validate.as_int(seed, "seed", "manual_seed", minimum=-(2**63), maximum=2**64 - 1)
    ctx = _context.current()
    ctx.seed = seed % 2**64  # torch keeps it as uint64: initial_seed() after -1 is 2**64 - 1
    # Keys are created lazily so that seeding does not start the JAX backend.
    ctx.key = None
    return default_generator


def seed() -> int:
    """Seed the calling rank's generator from the operating system's entropy and return the
    seed (mirrors ``torch.seed``: a non-deterministic 64-bit seed, which ``initial_seed()``
    then returns).

    Example:
        >>> import spx
        >>> s = spx.seed()
        >>> spx.initial_seed() == s
        True
    """
    value = int.from_bytes(os.urandom(8), "little")  # torch's seeds span all 64 bits
    manual_seed(value)
    return value


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
        >>> _ = spx.manual_seed(0)
        >>> x = jax.random.normal(spx.random.next_key(), (2, 3))
    """
    ctx = _context.current()
    key = get_key()
    new, sub = jax.random.split(key)
    _transforms.check_key(new)  # a plain jax.jit must not leave a tracer in the generator
    ctx.key = new
    return sub


# -- saving and restoring the stream (torch.get_rng_state / set_rng_state) ----------------------
# A state is a uint8 tensor, as torch's: the seed (8 bytes, little-endian), then the key's data
# (empty while no key was made: the stream restarts from the seed), then, for a Generator, its
# numpy stream (empty until a sampler used it). torch's bytes are its Mersenne twister's; spx's
# are JAX's key, so a state restores spx's stream, not torch's.
_KEY_WORDS = 2  # uint32 words of a threefry key, JAX's default implementation


def _state_bytes(seed: int, key: Any, extra: bytes = b"") -> Any:
    import numpy as np

    from spx._tensor.tensor import Tensor

    data = b""
    if key is not None:
        if isinstance(key, jax.core.Tracer):
            raise RuntimeError(
                "get_rng_state() inside a JAX transformation (spx.compile, jax.jit): the key "
                "there is traced; save the state outside the compiled function"
            )
        raw = np.asarray(jax.random.key_data(key), dtype=np.uint32)
        data = raw.astype("<u4").tobytes()
    head = seed.to_bytes(8, "little") + len(data).to_bytes(1, "little")
    return Tensor._of(jnp.asarray(np.frombuffer(head + data + extra, dtype=np.uint8)))


def _parse_state(state: Any, what: str) -> tuple[int, Any, bytes]:
    """``(seed, key or None, the rest)`` of a state made by :func:`_state_bytes`."""
    import numpy as np

    from spx._tensor.tensor import Tensor

    value = state._data if isinstance(state, Tensor) else state
    try:
        raw = np.asarray(value)
    except Exception:
        raw = None
    if raw is None or raw.dtype != np.uint8 or raw.ndim != 1 or raw.size < 9:
        raise TypeError(
            f"{what}: expected the uint8 tensor get_state()/get_rng_state() returned, got "
            f"{type(state).__name__}"
            + (f" of dtype {raw.dtype} and shape {tuple(raw.shape)}" if raw is not None else "")
        )
    data = raw.tobytes()
    seed = int.from_bytes(data[:8], "little")
    n = data[8]
    if n not in (0, 4 * _KEY_WORDS) or len(data) < 9 + n:
        raise ValueError(
            f"{what}: this state does not come from spx's get_state()/get_rng_state() (a "
            "torch state can't restore spx's stream: the two generators differ); save and "
            "restore the state spx returns"
        )
    key = None
    if n:
        words = np.frombuffer(data[9 : 9 + n], dtype="<u4").astype(np.uint32)
        with jax.ensure_compile_time_eval():
            key = jax.random.wrap_key_data(jnp.asarray(words))
    return seed, key, data[9 + n :]


def get_rng_state() -> Any:
    """The calling rank's random state as a uint8 tensor (mirrors ``torch.get_rng_state``).

    Example:
        >>> import spx
        >>> state = spx.get_rng_state()
        >>> a = spx.rand(2)
        >>> spx.set_rng_state(state)
        >>> bool((spx.rand(2) == a).all())
        True
    """
    ctx = _context.current()
    return _state_bytes(ctx.seed, None if ctx.key is None else get_key())


def set_rng_state(new_state: Any) -> None:
    """Restore a state :func:`get_rng_state` returned (mirrors ``torch.set_rng_state``)."""
    seed, key, _ = _parse_state(new_state, "set_rng_state")
    ctx = _context.current()
    ctx.seed = seed
    ctx.key = key


@contextlib.contextmanager
def fork_rng(
    devices: Any = None,
    enabled: bool = True,
    _caller: str = "fork_rng",
    _devices_kw: str = "devices",
    device_type: Any = None,
) -> Iterator[None]:
    """Draws inside the block leave the calling rank's stream as it was (mirrors
    ``torch.random.fork_rng``).

    Args:
        devices: accepted for torch's signature: spx has one stream per rank for every device.
        enabled: False makes the block an ordinary one (its draws advance the stream).
        _caller, _devices_kw, device_type: accepted for torch's signature.

    Example:
        >>> import spx
        >>> _ = spx.manual_seed(0)
        >>> with spx.random.fork_rng():
        ...     a = spx.rand(2)
        >>> bool((spx.rand(2) == a).all())
        True
    """
    if not enabled:
        yield
        return
    # The seed and key themselves (not get_rng_state's bytes): inside spx.compile the key is
    # traced, and restoring it there restores it in the compiled program.
    ctx = _context.current()
    seed, key = ctx.seed, ctx.key
    try:
        yield
    finally:
        ctx.seed, ctx.key = seed, key


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
    if generator is None or generator is default_generator:  # the rank's stream
        return next_key_tensor() if lazy else next_key()
    if isinstance(generator, Generator):
        return generator.next_key()
    if is_key(generator):
        return generator  # a JAX key, for an explicit draw
    raise TypeError(
        f"generator must be an spx.Generator (or a JAX key), got {type(generator).__name__} "
        f"{generator!r:.40}; e.g. generator=spx.Generator().manual_seed(0)"
    )
