"""``spx.Generator``: a seeded random stream of its own (mirrors ``torch.Generator``).

Scripts pass one where reproducibility matters apart from the global seed:
``random_split(ds, [0.9, 0.1], generator=spx.Generator().manual_seed(42))``,
``DataLoader(..., generator=g)``, ``spx.randn(3, generator=g)``, ``nn.init.normal_(w,
generator=g)``. Tensor draws take JAX keys split from the generator's key; the data pipeline's
samplers (which shuffle with numpy) take a numpy stream seeded from the same seed. Both are
deterministic functions of the seed; the numbers differ from torch's (torch's generator is not
JAX's), as every spx draw does.

Example:
    >>> import spx
    >>> a = spx.randn(2, generator=spx.Generator().manual_seed(0))
    >>> b = spx.randn(2, generator=spx.Generator().manual_seed(0))
    >>> bool((a == b).all())
    True
"""

from __future__ import annotations

import os
from typing import Any

import jax
import numpy as np
from jax._src.core import trace_state_clean

from spx import _validate

__all__ = ["Generator", "default_generator"]

# torch.Generator()'s seed before manual_seed (torch's default_rng_seed_val).
DEFAULT_SEED = 67280421310721

_IN_TRACE = (
    "spx.Generator drew a random key inside a JAX transformation (spx.compile, jax.jit): the "
    "key would be baked into the compiled program and every call would draw the same numbers. "
    "Omit generator= inside compiled code (spx.manual_seed's generator is threaded through "
    "the program), or draw outside and pass the result in."
)


class Generator:
    """A random number generator with its own seed and state (``torch.Generator``).

    Args:
        device: accepted for torch's signature (``"cpu"``, ``"cuda"``); the stream is the same.
    """

    def __init__(self, device: Any = "cpu") -> None:
        self.device = device
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream from ``seed``; returns the generator (torch's chaining)."""
        seed = _validate.as_int(
            seed, "seed", "Generator.manual_seed", minimum=-(2**63), maximum=2**64 - 1
        )
        self._seed = seed % 2**64  # torch stores the seed as uint64 (-1 reads back 2**64 - 1)
        self._key: jax.Array | None = None  # made at the first draw (no JAX start-up here)
        self._restart_numpy()
        return self

    def _restart_numpy(self) -> None:
        # Samplers hold the numpy stream itself (DataLoader(generator=g) took it at
        # construction): reseeding restarts that object in place, so they follow, as a
        # reseeded torch.Generator restarts a loader's shuffling.
        stream = self.__dict__.get("_numpy")
        if stream is not None:
            stream.bit_generator.state = np.random.default_rng(self._seed).bit_generator.state
        else:
            self._numpy = None

    def seed(self) -> int:
        """Reseed from the operating system's entropy; returns the new seed."""
        seed = int.from_bytes(os.urandom(8), "little") >> 1
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        """The seed the stream started from."""
        return self._seed

    def next_key(self) -> jax.Array:
        """A fresh JAX key for one draw (the generator's key advances).

        Raises:
            RuntimeError: under a JAX trace, where the key would be constant across calls.
        """
        if not trace_state_clean():
            raise RuntimeError(_IN_TRACE)
        if self._key is None:
            self._key = jax.random.key(self._seed % (2**63))
        self._key, sub = jax.random.split(self._key)
        return sub

    def get_state(self) -> Any:
        """The generator's state as a uint8 tensor, for :meth:`set_state` (torch's).

        It holds the seed, the JAX key and the numpy stream the samplers draw from.

        Example:
            >>> import spx
            >>> g = spx.Generator().manual_seed(1)
            >>> state = g.get_state()
            >>> a = spx.rand(3, generator=g)
            >>> bool((spx.rand(3, generator=g.set_state(state)) == a).all())
            True
        """
        from spx.random import _state_bytes

        extra = b""
        if self._numpy is not None:
            bits = self._numpy.bit_generator.state
            st = bits["state"]
            extra = (
                st["state"].to_bytes(16, "little")
                + st["inc"].to_bytes(16, "little")
                + bytes([bits["has_uint32"]])
                + int(bits["uinteger"]).to_bytes(4, "little")
            )
        return _state_bytes(self._seed, self._key, extra)

    def set_state(self, new_state: Any) -> Generator:
        """Restore a state :meth:`get_state` returned; returns the generator (torch's)."""
        from spx.random import _parse_state

        seed, key, extra = _parse_state(new_state, "Generator.set_state")
        if len(extra) not in (0, 37):
            raise ValueError(
                "Generator.set_state: this state does not come from spx.Generator.get_state(); "
                "save and restore the state spx returns"
            )
        self._seed, self._key = seed, key
        self._restart_numpy()
        if extra:
            if self._numpy is None:
                self._numpy = np.random.default_rng()
            self._numpy.bit_generator.state = {
                "bit_generator": "PCG64",
                "state": {
                    "state": int.from_bytes(extra[:16], "little"),
                    "inc": int.from_bytes(extra[16:32], "little"),
                },
                "has_uint32": extra[32],
                "uinteger": int.from_bytes(extra[33:37], "little"),
            }
        return self

    def numpy(self) -> np.random.Generator:
        """The numpy stream the data pipeline's samplers draw from (shared, so it advances)."""
        if self._numpy is None:
            self._numpy = np.random.default_rng(self._seed)
        return self._numpy

    def __repr__(self) -> str:
        return f"<spx.Generator object, seed {self._seed}>"


class _DefaultGenerator(Generator):
    """The calling rank's global stream as a Generator object (``torch.default_generator``).

    Every method acts on the stream ``spx.manual_seed`` seeds (one per rank, as spx's global
    randomness is), so passing ``generator=spx.default_generator`` draws exactly what passing
    nothing draws, and ``spx.default_generator.manual_seed(n)`` is ``spx.manual_seed(n)``.
    """

    def __init__(self) -> None:
        self.device = "cpu"

    def manual_seed(self, seed: int) -> Generator:
        from spx import random as spx_random

        spx_random.manual_seed(seed)
        return self

    def seed(self) -> int:
        from spx import random as spx_random

        return spx_random.seed()

    def initial_seed(self) -> int:
        from spx import random as spx_random

        return spx_random.initial_seed()

    def next_key(self) -> jax.Array:
        from spx import random as spx_random

        return spx_random.next_key()

    def get_state(self) -> Any:
        from spx import random as spx_random

        return spx_random.get_rng_state()

    def set_state(self, new_state: Any) -> Generator:
        from spx import random as spx_random

        spx_random.set_rng_state(new_state)
        return self

    def numpy(self) -> np.random.Generator:
        # Samplers treat this generator as None (spx.data.sampler.as_generator): a stream
        # seeded from the global one, new at each call, as unseeded shuffles draw.
        from spx.data.sampler import fresh_seed

        return np.random.default_rng(fresh_seed())

    def __deepcopy__(self, memo: dict) -> Generator:
        # torch: a copy of the default generator is an independent generator in its state.
        return Generator().set_state(self.get_state())

    def __reduce__(self) -> tuple:
        return (_from_state, (self.get_state(),))

    def __repr__(self) -> str:
        return "<spx.default_generator: the calling rank's global stream (spx.manual_seed)>"


def _from_state(state: Any) -> Generator:
    """A generator in ``state`` (how a pickled default generator comes back, as torch's)."""
    return Generator().set_state(state)


default_generator: Generator = _DefaultGenerator()
"""The calling rank's global generator (mirrors ``torch.default_generator``), which
``spx.manual_seed`` returns.

Example:
    >>> import spx
    >>> spx.manual_seed(3) is spx.default_generator
    True
    >>> spx.default_generator.initial_seed()
    3
"""
