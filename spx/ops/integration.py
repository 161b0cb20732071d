"""Numerical integration of sampled functions by the trapezoidal rule (``spx.trapezoid``,
``spx.trapz``, ``spx.cumulative_trapezoid``), mirroring torch's.

The samples ``y`` are spaced either by a constant ``dx`` (default 1) or at the points ``x``,
given as a 1-D tensor as long as ``y``'s ``dim`` or as a tensor broadcastable with ``y``.
Integer samples integrate to float32, as in torch. JAX differentiates all of it.

Example:
    >>> import spx
    >>> spx.trapezoid(spx.tensor([1.0, 2.0, 3.0])).item()
    4.0
    >>> spx.cumulative_trapezoid(spx.tensor([1.0, 2.0, 3.0]), dx=2.0).tolist()
    [3.0, 8.0]
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from spx._tensor import _dims, numpy_names
from spx._tensor.dispatch import apply
from spx._tensor.tensor import Tensor
from spx.ops._args import tensor_arg

__all__ = ["cumulative_trapezoid", "trapezoid", "trapz"]


def _float(y: Any) -> Any:
    return y if jnp.issubdtype(y.dtype, jnp.inexact) else y.astype(jnp.float32)


def _spacing(x: Any, y: Any, axis: int) -> Any:
    """The widths between sample points, shaped to broadcast with ``y``'s pairs."""
    if x.ndim == 1:
        widths = jnp.diff(x)
        return jnp.reshape(widths, (-1,) + (1,) * (y.ndim - 1 - axis))
    return jnp.diff(x, axis=axis - y.ndim + x.ndim)


def _pairs(y: Any, axis: int) -> Any:
    n = y.shape[axis]
    return (jnp.take(y, jnp.arange(1, n), axis) + jnp.take(y, jnp.arange(n - 1), axis)) / 2


def _trapezoid_dx(y: Any, dx: Any, axis: int) -> Any:
    y = _float(y)
    if y.shape[axis] == 0:
        return jnp.sum(y, axis=axis)
    return jnp.sum(_pairs(y, axis), axis=axis) * dx


def _trapezoid_x(y: Any, x: Any, axis: int) -> Any:
    y = _float(y)
    if y.shape[axis] == 0:
        return jnp.sum(y, axis=axis)
    return jnp.sum(_pairs(y, axis) * _spacing(x, y, axis), axis=axis)


def _cumulative_dx(y: Any, dx: Any, axis: int) -> Any:
    y = _float(y)
    return jnp.cumsum(_pairs(y, axis) * dx, axis=axis)


def _cumulative_x(y: Any, x: Any, axis: int) -> Any:
    y = _float(y)
    return jnp.cumsum(_pairs(y, axis) * _spacing(x, y, axis), axis=axis)


def _check_x(t: Tensor, x: Tensor, axis: int, fn: str) -> None:
    if x.ndim == 1:
        if x.shape[0] != t.shape[axis]:
            raise RuntimeError(
                f"{fn}: There must be one `x` value for each sample point, but got "
                f"{x.shape[0]} x values for {t.shape[axis]} samples along dim {axis}"
            )
        return
    shape = list(jnp.broadcast_shapes(tuple(x.shape), tuple(t.shape)))
    if shape != list(t.shape):
        raise RuntimeError(
            f"{fn}: x of shape {list(x.shape)} does not broadcast to y's shape "
            f"{list(t.shape)}; pass a 1-D x as long as y's dim, or one shaped like y"
        )


def _integrate(y: Any, x: Any, dx: Any, dim: int, fn: str, cumulative: bool) -> Tensor:
    t = tensor_arg(y, fn, "y")
    if t.ndim == 0:
        raise IndexError(f"{fn}: y must have at least one dimension (got a 0-d tensor)")
    axis = _dims.dim(dim, t.ndim)
    if x is not None and dx is not None:
        raise TypeError(f"{fn}: pass either x or dx, not both")
    if isinstance(x, bool | int | float):
        raise TypeError(f"{fn}: x must be a tensor of sample points; for a spacing use dx={x}")
    if x is None:
        step = 1.0 if dx is None else dx
        return apply(_cumulative_dx if cumulative else _trapezoid_dx, (axis,), (t, step))
    xs = tensor_arg(x, fn, "x")
    _check_x(t, xs, axis, fn)
    return apply(_cumulative_x if cumulative else _trapezoid_x, (axis,), (t, xs))


def trapezoid(y: Any, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The trapezoidal-rule integral of ``y`` along ``dim``.

    Args:
        y: ``(*)`` samples.
        x: sample points: a 1-D tensor as long as ``y.shape[dim]``, or a tensor
            broadcastable with ``y``.
        dx: constant spacing (default 1); not with ``x``.
        dim: the dimension integrated over.

    Returns:
        ``y``'s shape without ``dim``. Mirrors ``torch.trapezoid``.
    """
    return _integrate(y, x, dx, dim, "trapezoid", cumulative=False)


def trapz(y: Any, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """Alias of :func:`trapezoid` (mirrors ``torch.trapz``)."""
    return _integrate(y, x, dx, dim, "trapz", cumulative=False)


def cumulative_trapezoid(y: Any, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The running trapezoidal-rule integral of ``y`` along ``dim``.

    Args:
        y: ``(*)`` samples, ``n`` along ``dim``.
        x: sample points (as in :func:`trapezoid`).
        dx: constant spacing (default 1); not with ``x``.
        dim: the dimension integrated over.

    Returns:
        ``y``'s shape with ``n - 1`` along ``dim``. Mirrors ``torch.cumulative_trapezoid``.
    """
    return _integrate(y, x, dx, dim, "cumulative_trapezoid", cumulative=True)


# numpy's axis=/keepdims= as torch accepts them (torch.trapezoid(y, axis=0)).
numpy_names.accept(globals(), __all__)
