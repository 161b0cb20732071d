"""``spx.histogram``: counts (or weights, or a density) of values in bins, returning
``(hist, bin_edges)`` as ``torch.histogram``.

Bins are ``[e_i, e_{i+1})`` except the last, which includes its right edge; values outside
the edges are not counted. With an int ``bins`` the edges span ``range`` (default: the data's
minimum and maximum, widened by 0.5 each way when they are equal, as torch and numpy do).
torch does not differentiate ``histogram``; spx's results do not require grad.

Example:
    >>> import spx
    >>> hist, edges = spx.histogram(spx.tensor([1.0, 2.0, 1.0]), bins=2, range=(0.0, 2.0))
    >>> hist.tolist(), edges.tolist()
    ([0.0, 3.0], [0.0, 1.0, 2.0])
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp

from spx._tensor.dispatch import apply
from spx._tensor.tensor import Tensor
from spx.ops._args import tensor_arg

__all__ = ["histogram"]


class Histogram(NamedTuple):
    """``torch.return_types.histogram``: ``hist`` and ``bin_edges``."""

    hist: Tensor
    bin_edges: Tensor


def _edges_from_count(x: Any, bins: int, lo: float | None, hi: float | None) -> Any:
    if lo is None:
        lo, hi = jnp.min(x), jnp.max(x)
    lo, hi = jnp.asarray(lo, x.dtype), jnp.asarray(hi, x.dtype)
    same = lo == hi
    lo, hi = jnp.where(same, lo - 0.5, lo), jnp.where(same, hi + 0.5, hi)
    return jnp.linspace(lo, hi, bins + 1).astype(x.dtype)


def _count(x: Any, edges: Any, weight: Any, density: bool) -> Any:
    x = x.ravel()
    weight = jnp.ones_like(x) if weight is None else weight.ravel().astype(x.dtype)
    n = edges.shape[0] - 1
    # Bin i holds [e_i, e_{i+1}); the last bin also holds its right edge.
    index = jnp.searchsorted(edges, x, side="right") - 1
    index = jnp.where(x == edges[-1], n - 1, index)
    inside = (x >= edges[0]) & (x <= edges[-1])
    hist = jnp.zeros(n, x.dtype).at[jnp.where(inside, index, n)].add(weight, mode="drop")
    if density:
        hist = hist / (jnp.sum(hist) * jnp.diff(edges))
    return hist


def _histogram_count(x: Any, bins: int, lo: Any, hi: Any, density: bool) -> tuple:
    edges = _edges_from_count(x, bins, lo, hi)
    return _count(x, edges, None, density), edges


def _weighted_histogram_count(
    x: Any, weight: Any, bins: int, lo: Any, hi: Any, density: bool
) -> tuple:
    edges = _edges_from_count(x, bins, lo, hi)
    return _count(x, edges, weight, density), edges


def _histogram_edges(x: Any, edges: Any, density: bool) -> tuple:
    edges = edges.astype(x.dtype)
    return _count(x, edges, None, density), edges


def _weighted_histogram_edges(x: Any, edges: Any, weight: Any, density: bool) -> tuple:
    edges = edges.astype(x.dtype)
    return _count(x, edges, weight, density), edges


def histogram(
    input: Any,
    bins: int | Any,
    *,
    range: tuple[float, float] | None = None,
    weight: Any = None,
    density: bool = False,
) -> Histogram:
    """The histogram of ``input``'s values.

    Args:
        input: ``(*)`` floating-point tensor (flattened).
        bins: the number of equal bins, or a 1-D tensor of increasing edges.
        range: ``(min, max)`` of the equal bins (default: the data's); not with edge ``bins``.
        weight: ``(*)`` like ``input``: each value counts its weight instead of 1.
        density: divide so that the histogram integrates to 1 over the edges.

    Returns:
        ``(hist, bin_edges)``: ``(nbins,)`` and ``(nbins + 1,)``, ``input``'s dtype. Mirrors
        ``torch.histogram``.
    """
    t = tensor_arg(input, "histogram").detach()
    if not jnp.issubdtype(t.dtype, jnp.floating):
        raise RuntimeError(
            f"torch.histogram: input tensor and bins tensors should have the same dtype, and a "
            f"floating one (got {t.dtype}); cast first: spx.histogram(x.float(), ...)"
        )
    w = None
    if weight is not None:
        w = tensor_arg(weight, "histogram", "weight").detach()
        if tuple(w.shape) != tuple(t.shape):
            raise RuntimeError(
                f"torch.histogram: if weight tensor is provided it should have the same shape "
                f"as the input tensor (got {list(w.shape)} and {list(t.shape)})"
            )
    if isinstance(bins, int):
        if bins <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins}")
        lo, hi = (None, None) if range is None else (float(range[0]), float(range[1]))
        if lo is not None and lo > hi:
            raise RuntimeError(f"torch.histogram(): max must be larger than min (got {range})")
        static = (bins, lo, hi, bool(density))
        if w is None:
            return Histogram(*apply(_histogram_count, static, (t,), 2))
        return Histogram(*apply(_weighted_histogram_count, static, (t, w), 2))
    edges = tensor_arg(bins, "histogram", "bins").detach()
    if range is not None:
        raise TypeError("torch.histogram(): range can't be given with bin edges (a tensor bins)")
    if edges.ndim != 1 or edges.shape[0] < 1:
        raise RuntimeError(f"torch.histogram(): bins must be a 1-D tensor of edges, got {edges}")
    if w is None:
        return Histogram(*apply(_histogram_edges, (bool(density),), (t, edges), 2))
    return Histogram(*apply(_weighted_histogram_edges, (bool(density),), (t, edges, w), 2))
