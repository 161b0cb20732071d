"""Polynomial and Chebyshev-series evaluation for the Cephes-derived approximations of
:mod:`spx.special.bessel` and :mod:`spx.special.modified_bessel`.

Each evaluates a fixed coefficient list elementwise over a JAX array (the loop is unrolled
while tracing: a handful of multiply-adds per coefficient). The coefficients are those of
the Cephes Math Library (Stephen L. Moshier; 3-clause BSD), which torch's kernels use too, so
spx's values agree with torch's to rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["chbevl", "polevl"]


def polevl(x: Any, coefficients: Sequence[float]) -> Any:
    """``c[0] x^(n-1) + c[1] x^(n-2) + ... + c[n-1]`` by Horner's rule."""
    out = x * 0 + coefficients[0]
    for c in coefficients[1:]:
        out = out * x + c
    return out


def chbevl(x: Any, coefficients: Sequence[float]) -> Any:
    """The Chebyshev series ``sum c[i] T_i(x / 2)`` (highest order first, Clenshaw's
    recurrence, with Cephes's convention of half the constant term)."""
    b0 = x * 0 + coefficients[0]
    b1 = x * 0
    b2 = x * 0
    for c in coefficients[1:]:
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)
