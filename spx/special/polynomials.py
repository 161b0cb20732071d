"""The classical orthogonal polynomials of ``torch.special``, each ``f(input, n)`` of a point
``x`` and a degree ``n`` (tensors or numbers, broadcast together):

* Chebyshev ``T``, ``U``, ``V``, ``W`` (``chebyshev_polynomial_t`` ...) and their shifted
  forms on ``[0, 1]`` (``shifted_chebyshev_polynomial_t`` ..., ``T*_n(x) = T_n(2x - 1)``);
* Hermite ``H`` (physicists') and ``He`` (probabilists'), Laguerre ``L``, Legendre ``P``.

Values follow torch's kernels case by case: a negative degree gives 0; ``n`` is truncated to
an integer; the closed forms at ``|x| = 1`` (Chebyshev, Legendre) and ``x = 0`` (Laguerre,
shifted Chebyshev); the trigonometric form ``cos(n acos x)`` inside ``(-1, 1)`` for large
degrees (as torch switches to it); otherwise the three-term recurrence, run per element for
its own ``n`` (a loop over the largest degree, stopped early once every element is done or
NaN). Hermite degrees above 128 (float32) or 512 (float64) give NaN, as torch's. torch does
not differentiate these functions; spx's results do not require grad either.

Example:
    >>> import spx
    >>> spx.special.chebyshev_polynomial_t(spx.tensor([0.5]), 3).tolist()  # 4x^3 - 3x
    [-1.0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
from jax import lax

from spx._tensor.tensor import Tensor
from spx.special._common import constant, float_pair, half_back

__all__ = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
]  # fmt: skip

Step = Callable[[Any, Any, Any], Any]  # (j, p, q) -> the next value, j = 1, 2, ...


def _operands(x: Any, n: Any) -> tuple[Any, Any]:
    """``x`` and the degree as torch reads them: promoted to one float dtype, broadcast, and
    ``n`` truncated toward zero (NaN and inf degrees as -1, which gives 0)."""
    x, n = float_pair(x, n)
    x, n = jnp.broadcast_arrays(x, n)
    n = jnp.where(jnp.isfinite(n), jnp.trunc(n), -1.0).astype(x.dtype)
    return x, n


def _recurrence(n: Any, p: Any, q: Any, step: Step, needed: Any) -> Any:
    """``q`` after ``n - 1`` steps of ``(p, q) -> (q, step(j, p, q))`` where ``needed`` (and
    ``n >= 2``); elements stop early at NaN, as torch's loops do."""
    steps = jnp.where(needed & (n >= 2), n - 1, 0).astype(n.dtype)
    last = jnp.max(steps, initial=0)

    def running(j: Any, q: Any) -> Any:
        return (j <= steps) & ~jnp.isnan(q)

    def cond(carry: tuple) -> Any:
        j, _, q = carry
        return (j <= last) & jnp.any(running(j, q))

    def body(carry: tuple) -> tuple:
        j, p, q = carry
        active = running(j, q)
        r = step(j, p, q)
        return j + 1, jnp.where(active, q, p), jnp.where(active, r, q)

    start = jnp.ones((), n.dtype)
    return lax.while_loop(cond, body, (start, p, q))[2]


def _by_degree(n: Any, first: Any, step: Step, needed: Any) -> Any:
    """``P_n`` from ``P_0 = 1`` and ``P_1 = first`` (0 for ``n < 0``)."""
    one = jnp.ones_like(first)
    out = _recurrence(n, one, first, step, needed)
    out = jnp.where(n == 1, first, out)
    return jnp.where(n < 0, 0, jnp.where(n == 0, one, out))


def _even(n: Any) -> Any:
    return jnp.fmod(n, 2) == 0


def _chebyshev(kind: str, y: Any, n: Any, endpoint: Any, large: float, shifted: bool) -> Any:
    """Chebyshev ``kind`` of the (already shifted) point ``y``; ``endpoint`` marks where the
    closed forms at ``y = +-1`` apply, ``large`` the degree above which torch uses the
    trigonometric form inside ``(-1, 1)``."""
    up = y > 0
    sign = jnp.where(_even(n), 1.0, -1.0).astype(y.dtype)
    first = {"t": y, "u": y + y, "v": y + y - 1, "w": y + y + 1}[kind]
    out = _by_degree(n, first, lambda j, p, q: (y + y) * q - p, ~endpoint)
    theta = jnp.arccos(jnp.clip(y, -1, 1))
    if kind == "t":
        ends = jnp.where(up, 1.0, sign)
        trig = jnp.cos(n * theta)
    elif kind == "u":
        ends = jnp.where(up, n + 1, sign * (n + 1))
        s = jnp.sin(theta)
        at_pole = (n + 1) * jnp.cos((n + 1) * theta) / y
        trig = jnp.where(s != 0, jnp.sin((n + 1) * theta) / s, at_pole)
    elif kind == "v":
        ends = jnp.where(up, 1.0, sign * (2 * n + 1))
        trig = jnp.where(
            jnp.sin(theta / 2) != 1,
            jnp.cos((n + 0.5) * theta) / jnp.cos(theta / 2),
            sign * (2 * n + 1),
        )
    else:
        ends = jnp.where(up, 2 * n + 1, sign)
        trig = jnp.where(
            jnp.cos(theta / 2) != 1,
            jnp.sin((n + 0.5) * theta) / jnp.sin(theta / 2),
            sign if shifted else jnp.where(up, 2 * n + 1, sign),
        )
    out = jnp.where((n > large) & (jnp.abs(y) < 1), trig, out)
    return jnp.where(endpoint & (n >= 0), ends, out).astype(y.dtype)


def _plain_chebyshev(kind: str, large: float) -> Callable[[Any, Any], Any]:
    def fn(x: Any, n: Any) -> Any:
        x0 = x
        x, n = _operands(x, n)
        return half_back(_chebyshev(kind, x, n, jnp.abs(x) == 1, large, False), jnp.asarray(x0))

    fn.__name__ = fn.__qualname__ = f"_chebyshev_{kind}"
    return fn


def _shifted_chebyshev(kind: str, large: float) -> Callable[[Any, Any], Any]:
    # torch's closed forms sit at x = 1 and x = 0 (y = +-1), tested on x itself.
    def fn(x: Any, n: Any) -> Any:
        x0 = x
        x, n = _operands(x, n)
        y = x + x - 1
        endpoint = (x == 1) | (x == 0)
        return half_back(_chebyshev(kind, y, n, endpoint, large, True), jnp.asarray(x0))

    fn.__name__ = fn.__qualname__ = f"_shifted_chebyshev_{kind}"
    return fn


_chebyshev_t = _plain_chebyshev("t", 6)
_chebyshev_u = _plain_chebyshev("u", 8)
_chebyshev_v = _plain_chebyshev("v", 8)
_chebyshev_w = _plain_chebyshev("w", 8)
_shifted_t = _shifted_chebyshev("t", 6)
_shifted_u = _shifted_chebyshev("u", 6)
_shifted_v = _shifted_chebyshev("v", 6)
_shifted_w = _shifted_chebyshev("w", 4)


def _hermite_limit(x: Any) -> int:
    return 512 if x.dtype == jnp.float64 else 128


def _hermite_h(x: Any, n: Any) -> Any:
    x0 = x
    x, n = _operands(x, n)
    everywhere = jnp.ones(x.shape, bool)
    out = _by_degree(n, x + x, lambda j, p, q: (x + x) * q - (j + j) * p, everywhere)
    out = jnp.where(n > _hermite_limit(x), jnp.nan, out).astype(x.dtype)
    return half_back(out, jnp.asarray(x0))


def _hermite_he(x: Any, n: Any) -> Any:
    x0 = x
    x, n = _operands(x, n)
    everywhere = jnp.ones(x.shape, bool)
    out = _by_degree(n, x, lambda j, p, q: x * q - j * p, everywhere)
    out = jnp.where(n > _hermite_limit(x), jnp.nan, out).astype(x.dtype)
    return half_back(out, jnp.asarray(x0))


def _laguerre_l(x: Any, n: Any) -> Any:
    x0 = x
    x, n = _operands(x, n)
    at_zero = x == 0
    out = _by_degree(n, 1 - x, lambda j, p, q: ((j + j + (1 - x)) * q - j * p) / (j + 1), ~at_zero)
    out = jnp.where(at_zero & (n >= 0), 1.0, out).astype(x.dtype)
    return half_back(out, jnp.asarray(x0))


def _legendre_p(x: Any, n: Any) -> Any:
    x0 = x
    x, n = _operands(x, n)
    endpoint = jnp.abs(x) == 1
    out = _by_degree(n, x, lambda j, p, q: ((j + j + 1) * x * q - j * p) / (j + 1), ~endpoint)
    ends = jnp.where((x > 0) | _even(n), 1.0, -1.0)
    out = jnp.where(endpoint & (n >= 0), ends, out).astype(x.dtype)
    return half_back(out, jnp.asarray(x0))


def chebyshev_polynomial_t(input: Any, n: Any) -> Tensor:
    """The Chebyshev polynomial of the first kind ``T_n(x)`` (``T_n(cos t) = cos(n t)``).

    Args:
        input: ``(*)`` tensor (or number) ``x``.
        n: ``(*)`` tensor or int, the degree, broadcast with ``input``.

    Returns:
        the broadcast shape, float. Not differentiable (as torch). Mirrors
        ``torch.special.chebyshev_polynomial_t``.
    """
    return constant(_chebyshev_t, (input, n), "chebyshev_polynomial_t")


def chebyshev_polynomial_u(input: Any, n: Any) -> Tensor:
    """The Chebyshev polynomial of the second kind ``U_n(x)``.

    Args:
        input: ``(*)`` tensor (or number) ``x``.
        n: ``(*)`` tensor or int, the degree. Mirrors ``torch.special.chebyshev_polynomial_u``.
    """
    return constant(_chebyshev_u, (input, n), "chebyshev_polynomial_u")


def chebyshev_polynomial_v(input: Any, n: Any) -> Tensor:
    """The Chebyshev polynomial of the third kind ``V_n(x)``.

    Args:
        input: ``(*)`` tensor (or number) ``x``.
        n: ``(*)`` tensor or int, the degree. Mirrors ``torch.special.chebyshev_polynomial_v``.
    """
    return constant(_chebyshev_v, (input, n), "chebyshev_polynomial_v")


def chebyshev_polynomial_w(input: Any, n: Any) -> Tensor:
    """The Chebyshev polynomial of the fourth kind ``W_n(x)``.

    Args:
        input: ``(*)`` tensor (or number) ``x``.
        n: ``(*)`` tensor or int, the degree. Mirrors ``torch.special.chebyshev_polynomial_w``.
    """
    return constant(_chebyshev_w, (input, n), "chebyshev_polynomial_w")


def shifted_chebyshev_polynomial_t(input: Any, n: Any) -> Tensor:
    """``T_n(2x - 1)``, the first-kind Chebyshev polynomial moved to ``[0, 1]``.

    Args:
        input: ``(*)`` tensor (or number) ``x``.
        n: ``(*)`` tensor or int, the degree. Mirrors
            ``torch.special.shifted_chebyshev_polynomial_t``.
    """
    return constant(_shifted_t, (input, n), "shifted_chebyshev_polynomial_t")


def shifted_chebyshev_polynomial_u(input: Any, n: Any) -> Tensor:
    """``U_n(2x - 1)``, the second-kind Chebyshev polynomial moved to ``[0, 1]``.

    Args:
        input: ``(*)`` tensor (or number) ``x``.
        n: ``(*)`` tensor or int, the degree. Mirrors
            ``torch.special.shifted_chebyshev_polynomial_u``.
    """
    return constant(_shifted_u, (input, n), "shifted_chebyshev_polynomial_u")


def shifted_chebyshev_polynomial_v(input: Any, n: Any) -> Tensor:
    """``V_n(2x - 1)``, the third-kind Chebyshev polynomial moved to ``[0, 1]``.

    Args:
        input: ``(*)`` tensor (or number) ``x``.
        n: ``(*)`` tensor or int, the degree. Mirrors
            ``torch.special.shifted_chebyshev_polynomial_v``.
    """
    return constant(_shifted_v, (input, n), "shifted_chebyshev_polynomial_v")


def shifted_chebyshev_polynomial_w(input: Any, n: Any) -> Tensor:
    """``W_n(2x - 1)``, the fourth-kind Chebyshev polynomial moved to ``[0, 1]``.

    Args:
        input: ``(*)`` tensor (or number) ``x``.
        n: ``(*)`` tensor or int, the degree. Mirrors
            ``torch.special.shifted_chebyshev_polynomial_w``.
    """
    return constant(_shifted_w, (input, n), "shifted_chebyshev_polynomial_w")


def hermite_polynomial_h(input: Any, n: Any) -> Tensor:
    """The physicists' Hermite polynomial ``H_n(x)`` (``H_2(x) = 4x^2 - 2``).

    Args:
        input: ``(*)`` tensor (or number) ``x``.
        n: ``(*)`` tensor or int, the degree. Mirrors ``torch.special.hermite_polynomial_h``.
    """
    return constant(_hermite_h, (input, n), "hermite_polynomial_h")


def hermite_polynomial_he(input: Any, n: Any) -> Tensor:
    """The probabilists' Hermite polynomial ``He_n(x)`` (``He_2(x) = x^2 - 1``).

    Args:
        input: ``(*)`` tensor (or number) ``x``.
        n: ``(*)`` tensor or int, the degree. Mirrors ``torch.special.hermite_polynomial_he``.
    """
    return constant(_hermite_he, (input, n), "hermite_polynomial_he")


def laguerre_polynomial_l(input: Any, n: Any) -> Tensor:
    """The Laguerre polynomial ``L_n(x)`` (``L_1(x) = 1 - x``).

    Args:
        input: ``(*)`` tensor (or number) ``x``.
        n: ``(*)`` tensor or int, the degree. Mirrors ``torch.special.laguerre_polynomial_l``.
    """
    return constant(_laguerre_l, (input, n), "laguerre_polynomial_l")


def legendre_polynomial_p(input: Any, n: Any) -> Tensor:
    """The Legendre polynomial ``P_n(x)`` (``P_2(x) = (3x^2 - 1) / 2``).

    Args:
        input: ``(*)`` tensor (or number) ``x``.
        n: ``(*)`` tensor or int, the degree. Mirrors ``torch.special.legendre_polynomial_p``.
    """
    return constant(_legendre_p, (input, n), "legendre_polynomial_p")
