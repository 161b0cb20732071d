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

__all__ = ["Generator"]

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
        self._numpy: np.random.Generator | None = None
        return self

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

    def numpy(self) -> np.random.Generator:
        """The numpy stream the data pipeline's samplers draw from (shared, so it advances)."""
        if self._numpy is None:
            self._numpy = np.random.default_rng(self._seed % (2**64))
        return self._numpy

    def __repr__(self) -> str:
        return f"<spx.Generator object, seed {self._seed}>"
