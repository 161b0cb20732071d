"""Well-conditioned test matrices, seeded (decompositions and their gradients are only stable,
and comparable across libraries, away from repeated or tiny eigen/singular values)."""

from __future__ import annotations

import numpy as np


def general(*shape: int, seed: int = 0) -> np.ndarray:
    """Random float32 of ``shape``, normal entries."""
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def well_conditioned(*shape: int, seed: int = 0) -> np.ndarray:
    """Square matrices ``(*, n, n)`` near ``2 I``: invertible, condition number ~3."""
    n = shape[-1]
    return (general(*shape, seed=seed) * 0.3 + 2 * np.eye(n)).astype(np.float32)


def spd(*shape: int, seed: int = 0) -> np.ndarray:
    """Symmetric positive-definite ``(*, n, n)`` with well-separated eigenvalues."""
    n = shape[-1]
    m = general(*shape, seed=seed)
    return (m @ np.swapaxes(m, -1, -2) + n * np.eye(n)).astype(np.float32)
