"""Numerical differentiation of sampled functions by finite differences (``spx.gradient``),
mirroring torch's.

Inside, central differences (second-order accurate, also for uneven spacing: numpy's and torch's
formula); at the ends, one-sided differences of ``edge_order`` 1 or 2. Written with Tensor
operations, so it records, compiles and differentiates like any other op.

Example:
    >>> import spx
    >>> spx.gradient(spx.tensor([1.0, 4.0, 9.0, 16.0]), spacing=2.0)[0].tolist()
    [1.5, 2.0, 3.0, 3.5]
"""

from __future__ import annotations

from typing import Any

import spx
from spx._tensor import _dims
from spx._tensor.tensor import Tensor
from spx.ops._args import tensor_arg

__all__ = ["gradient"]


def gradient(
    input: Any, *, spacing: Any = 1, dim: Any = None, edge_order: int = 1
) -> tuple[Tensor, ...]:
    """Derivatives of ``input`` along each dimension ``dim`` by finite differences (mirrors
    ``torch.gradient``): central differences inside, one-sided of ``edge_order`` 1 or 2 at the
    ends, second-order accurate also for uneven ``spacing``.

    Args:
        input: the sampled function, ``(*)``; integers give floating results.
        spacing: one number for every dimension; a list of numbers, one per dimension; or a
            list of 1-D tensors, the coordinates of the samples along each dimension.
        dim: a dimension or a list of them (default: every dimension).
        edge_order: 1 or 2.

    Returns:
        One tensor shaped like ``input`` per dimension.

    Example:
        >>> import spx
        >>> spx.gradient(spx.tensor([1.0, 2.0, 4.0, 7.0]))[0].tolist()
        [1.0, 1.5, 2.5, 3.0]
        >>> spx.gradient(spx.tensor([1.0, 2.0, 4.0, 7.0]), spacing=(spx.tensor([0.0, 1.0, 3.0, 4.0]),))[0]
        tensor([1.0000, 1.0000, 2.3333, 3.0000])
    """  # noqa: E501
    x = tensor_arg(input, "gradient")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dim is None:
        dims = list(range(x.ndim))
    elif isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(dim)
    dims = [_dims.dim(d, x.ndim) for d in dims]
    if isinstance(spacing, list | tuple):
        if len(spacing) != len(dims):
            given = f"'self.dim() = {x.ndim}', since dim argument was not given"
            if dim is not None:
                given = f"the dim argument's ({len(dims)})"
            raise RuntimeError(
                "torch.gradient expected spacing to be unspecified, a scalar, or a list of "
                f"length equal to {given}, but got a list of length {len(spacing)}"
            )
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    for d in dims:
        if x.shape[d] < edge_order + 1:
            raise RuntimeError(
                "torch.gradient expected each dimension size to be at least edge_order+1 "
                f"(dimension {d} has size {x.shape[d]}, edge_order is {edge_order})"
            )
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(spx.get_default_dtype())
    return tuple(_gradient_along(x, d, h, edge_order) for d, h in zip(dims, spacings, strict=True))


def _gradient_along(x: Tensor, d: int, h: Any, edge_order: int) -> Tensor:
    n = x.shape[d]

    def f(start: int, stop: int) -> Tensor:  # x[start:stop] along d
        return x.narrow(d, start, stop - start)

    if isinstance(h, Tensor) and h.ndim == 1:
        if h.shape[0] != n:
            raise RuntimeError(
                f"torch.gradient expected the coordinates along dimension {d} to have "
                f"{n} elements, got {h.shape[0]}"
            )
        shape = [1] * x.ndim
        shape[d] = n - 1
        dx = h.diff().to(x.dtype).reshape(shape)  # the steps, along d
        hl, hr = dx.narrow(d, 0, n - 2), dx.narrow(d, 1, n - 2)
        inner = (hl**2 * f(2, n) - hr**2 * f(0, n - 2) + (hr**2 - hl**2) * f(1, n - 1)) / (
            hl * hr * (hl + hr)
        )
        a, b = dx.narrow(d, 0, 1), dx.narrow(d, n - 2, 1)  # first and last steps
        if edge_order == 1:
            first = (f(1, 2) - f(0, 1)) / a
            last = (f(n - 1, n) - f(n - 2, n - 1)) / b
        else:
            a2, b2 = dx.narrow(d, 1, 1), dx.narrow(d, n - 3, 1)  # second and next-to-last
            first = (
                -(2 * a + a2) / (a * (a + a2)) * f(0, 1)
                + (a + a2) / (a * a2) * f(1, 2)
                - a / (a2 * (a + a2)) * f(2, 3)
            )
            last = (
                b / (b2 * (b2 + b)) * f(n - 3, n - 2)
                - (b + b2) / (b2 * b) * f(n - 2, n - 1)
                + (2 * b + b2) / (b * (b2 + b)) * f(n - 1, n)
            )
        return spx.cat([first, inner, last], d)
    inner = (f(2, n) - f(0, n - 2)) / (2 * h)
    if edge_order == 1:
        first = (f(1, 2) - f(0, 1)) / h
        last = (f(n - 1, n) - f(n - 2, n - 1)) / h
    else:
        first = (-1.5 * f(0, 1) + 2 * f(1, 2) - 0.5 * f(2, 3)) / h
        last = (0.5 * f(n - 3, n - 2) - 2 * f(n - 2, n - 1) + 1.5 * f(n - 1, n)) / h
    return spx.cat([first, inner, last], d)
