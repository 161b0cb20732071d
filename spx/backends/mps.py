"""``spx.backends.mps``: Apple's Metal backend, which spx never uses (False, as torch on Linux)."""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """False: JAX runs spx on CPU, NVIDIA GPU or TPU."""
    return False


def is_built() -> bool:
    """False (see :func:`is_available`)."""
    return False
