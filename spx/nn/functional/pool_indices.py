"""Max pooling that also returns where each maximum came from, and its inverse, max unpooling.

``max_pool{1,2,3}d_with_indices`` and ``adaptive_max_pool{1,2,3}d_with_indices`` return
``(output, indices)`` like torch: ``indices`` holds, for every output element, the flat position
of the chosen input element within its ``(n, c)`` plane (``d * H * W + h * W + w``), so
``max_unpool{1,2,3}d`` can put values back. Indices are int32 (JAX runs with 64-bit types off;
torch's are int64).

Both pools select one dim at a time, last dim first: each output position gathers its (at most
``k``) window taps along that dim, picks one, and carries the chosen value and its flat index
to the next dim. A max over a box is the max of per-dim maxes; picking the first maximum along
``W``, then the first row holding the max, and so on, picks the first maximum in row-major
order — torch's scan order, so ties resolve as torch's do (and a NaN wins, the last one in scan
order, as in torch's CPU kernel). The output is a gather of the
input, so its gradient reaches exactly the chosen elements, as torch's backward scatters it.

See https://pytorch.org/docs/stable/generated/torch.nn.MaxUnpool2d.html
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from spx.nn.functional._utils import ntuple
from spx.nn.functional.pooling import _adaptive_sizes, _batched, _bins, _window_geometry

Array = jax.Array
_Size = int | Sequence[int]


def _lowest(dtype: jnp.dtype) -> np.ndarray:
    if jnp.issubdtype(dtype, jnp.inexact):
        return np.asarray(-np.inf, dtype)
    return np.asarray(jnp.iinfo(dtype).min, dtype)


def _select_along(
    x: Array, flat: Array, axis: int, positions: np.ndarray, valid: np.ndarray
) -> tuple[Array, Array]:
    """Reduce ``axis`` of ``x`` to ``len(positions)`` windows, keeping the argmax.

    Args:
        x: values, the pooled axis of length ``L``.
        flat: int32 flat input index of each element of ``x`` (same shape).
        axis: the axis to pool.
        positions: ``(out, k)`` input positions of each window's taps (clipped into range).
        valid: ``(out, k)`` whether each tap lies inside the input (padding does not).

    Returns:
        ``(values, flat)`` with ``axis`` of length ``out``.
    """
    out, k = positions.shape
    taps = jnp.take(x, jnp.asarray(positions.reshape(-1)), axis=axis)
    taps = jnp.moveaxis(taps.reshape((*x.shape[:axis], out, k, *x.shape[axis + 1 :])), axis + 1, -1)
    taps_flat = jnp.take(flat, jnp.asarray(positions.reshape(-1)), axis=axis)
    taps_flat = jnp.moveaxis(
        taps_flat.reshape((*x.shape[:axis], out, k, *x.shape[axis + 1 :])), axis + 1, -1
    )
    mask = jnp.asarray(valid.reshape((out,) + (1,) * (x.ndim - axis - 1) + (k,)))
    return window_max(taps, taps_flat, mask)


def window_max(taps: Array, taps_flat: Array, mask: Array | None = None) -> tuple[Array, Array]:
    """Each window's maximum and its flat index, picked as torch's CPU kernels pick them.

    The first tap equal to the maximum wins (torch compares with ``>``), and a NaN wins over
    numbers: the last NaN of the window, as torch's scan leaves it. Max pooling and fractional
    max pooling both select with this.

    Args:
        taps: ``(..., k)`` values, the last axis a window's taps in scan order.
        taps_flat: int32 ``(..., k)`` flat input index of each tap.
        mask: bool, broadcastable to ``taps``: which taps lie inside the input. Padding never
            counts, even against an all ``-inf`` window. None: every tap does.

    Returns:
        ``(values, indices)``, each of shape ``taps.shape[:-1]``.

    Example:
        >>> window_max(jnp.array([[1.0, 3.0, 3.0]]), jnp.array([[4, 5, 6]]))
        (Array([3.], dtype=float32), Array([5], dtype=int32))
    """
    k = taps.shape[-1]
    if mask is None:
        best = jnp.max(taps, axis=-1, keepdims=True)
        choice = jnp.argmax(taps == best, axis=-1)
    else:
        best = jnp.max(jnp.where(mask, taps, _lowest(taps.dtype)), axis=-1, keepdims=True)
        choice = jnp.argmax(mask & (taps == best), axis=-1)
    if jnp.issubdtype(taps.dtype, jnp.inexact):
        nan = jnp.isnan(taps) if mask is None else mask & jnp.isnan(taps)
        last_nan = k - 1 - jnp.argmax(nan[..., ::-1], axis=-1)
        choice = jnp.where(nan.any(axis=-1), last_nan, choice)
    choice = choice[..., None]
    values = jnp.take_along_axis(taps, choice, axis=-1)[..., 0]
    indices = jnp.take_along_axis(taps_flat, choice, axis=-1)[..., 0]
    return values, indices


def _flat_positions(spatial: tuple[int, ...], batch: tuple[int, int]) -> Array:
    """int32 ``(N, C, *spatial)``: each element's row-major index within its plane."""
    plane = jnp.arange(int(np.prod(spatial)), dtype=jnp.int32).reshape(spatial)
    return jnp.broadcast_to(plane, (*batch, *spatial))


def _check_index_range(size: int, name: str) -> None:
    if size > np.iinfo(np.int32).max:
        raise RuntimeError(
            f"{name}: a plane of {size} elements has more positions than int32 indices can "
            "address; pool a smaller input"
        )


def _max_pool_with_indices(
    input: Array,
    kernel_size: _Size,
    stride: _Size | None,
    padding: _Size,
    dilation: _Size,
    ceil_mode: bool,
    nd: int,
    name: str,
) -> tuple[Array, Array]:
    x, unbatched = _batched(jnp.asarray(input), nd, name)
    ks, ss, ps, ds, outs, _ = _window_geometry(
        x, kernel_size, stride, padding, dilation, ceil_mode, nd, name
    )
    spatial = x.shape[2:]
    _check_index_range(int(np.prod(spatial)), name)
    flat = _flat_positions(spatial, x.shape[:2])
    for i in reversed(range(nd)):  # last dim first: see the module docstring
        n, k, s, p, d, o = spatial[i], ks[i], ss[i], ps[i], ds[i], outs[i]
        pos = np.arange(o)[:, None] * s - p + np.arange(k)[None, :] * d
        valid = (pos >= 0) & (pos < n)
        x, flat = _select_along(x, flat, 2 + i, np.clip(pos, 0, n - 1), valid)
    return (x[0], flat[0]) if unbatched else (x, flat)


def _adaptive_max_pool_with_indices(
    input: Array, output_size: _Size | None, nd: int, name: str
) -> tuple[Array, Array]:
    x, unbatched = _batched(jnp.asarray(input), nd, name)
    sizes = _adaptive_sizes(x, output_size, nd, name)
    spatial = x.shape[2:]
    if any(n == 0 for n in spatial):
        raise RuntimeError(f"{name}: input spatial size {spatial} must be non-empty")
    _check_index_range(int(np.prod(spatial)), name)
    flat = _flat_positions(spatial, x.shape[:2])
    for i in reversed(range(nd)):  # last dim first: see the module docstring
        n, out = spatial[i], sizes[i]
        bins = _bins(n, out)
        k = max(b - a for a, b in bins)
        pos = np.array([[a + j for j in range(k)] for a, _ in bins])
        valid = np.array([[a + j < b for j in range(k)] for a, b in bins])
        x, flat = _select_along(x, flat, 2 + i, np.clip(pos, 0, n - 1), valid)
    return (x[0], flat[0]) if unbatched else (x, flat)


def unpool_output_size(
    input_shape: Sequence[int],
    kernel_size: _Size,
    stride: _Size | None,
    padding: _Size,
    output_size: Sequence[int] | None,
    nd: int,
    name: str,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """torch's ``_unpool_output_size``: the spatial output size and the normalized arguments.

    The default size inverts the pool, ``(L - 1) * stride - 2 * padding + kernel``; an explicit
    ``output_size`` (``nd`` or ``nd + 2`` entries) must lie strictly within ``stride`` of it.
    """
    ks = ntuple(kernel_size, nd, f"{name}: kernel_size")
    no_stride = stride is None or (isinstance(stride, Sequence) and len(stride) == 0)
    ss = ks if no_stride else ntuple(stride, nd, f"{name}: stride")
    ps = ntuple(padding, nd, f"{name}: padding")
    if any(v < 1 for v in ks + ss) or any(p < 0 for p in ps):
        raise ValueError(
            f"{name}: kernel_size {kernel_size!r} and stride {stride!r} must be positive and "
            f"padding {padding!r} non-negative"
        )
    spatial = tuple(input_shape[-nd:])
    default = tuple((n - 1) * s + k - 2 * p for n, k, s, p in zip(spatial, ks, ss, ps, strict=True))
    if output_size is None:
        return default, ks, ss, ps
    sizes = tuple(int(v) for v in output_size)
    if len(sizes) == nd + 2:
        sizes = sizes[2:]
    if len(sizes) != nd:
        raise ValueError(
            f"{name}: output_size should be a sequence containing {nd} or {nd + 2} elements, "
            f"but it has a length of '{len(sizes)}'"
        )
    for i, (want, base, s) in enumerate(zip(sizes, default, ss, strict=True)):
        if not base - s < want < base + s:
            raise ValueError(
                f'{name}: invalid output_size "{tuple(output_size)}" (dim {i} must be between '
                f"{base - s} and {base + s}, exclusive); pass None for the default size {default}"
            )
    return sizes, ks, ss, ps


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _scatter_planes(values: Array, indices: Array, plane: int) -> Array:
    """``(rows, k)`` values put at ``indices`` of ``(rows, plane)`` zeros (out of range: none)."""
    rows = values.reshape(-1, values.shape[-1])
    out = jnp.zeros((rows.shape[0], plane), values.dtype)
    where = indices.reshape(rows.shape)
    return out.at[jnp.arange(rows.shape[0])[:, None], where].set(rows, mode="drop")


def _scatter_planes_fwd(values: Array, indices: Array, plane: int) -> tuple[Array, tuple]:
    return _scatter_planes(values, indices, plane), (indices, values.shape)


def _scatter_planes_bwd(plane: int, res: tuple, g: Array) -> tuple[Array, None]:
    # torch's max_unpool backward gathers the output gradient at the indices: an index that
    # appears twice sends the gradient to both inputs (a scatter's own transpose would not).
    indices, shape = res
    where = indices.reshape(g.shape[0], -1)
    picked = jnp.take_along_axis(g, jnp.clip(where, 0, g.shape[1] - 1), axis=1)
    inside = (where >= 0) & (where < g.shape[1])
    return jnp.where(inside, picked, 0).reshape(shape), None


_scatter_planes.defvjp(_scatter_planes_fwd, _scatter_planes_bwd)


def _max_unpool(
    input: Array,
    indices: Array,
    kernel_size: _Size,
    stride: _Size | None,
    padding: _Size,
    output_size: Sequence[int] | None,
    nd: int,
    name: str,
) -> Array:
    x, unbatched = _batched(jnp.asarray(input), nd, name)
    idx = jnp.asarray(indices)
    if not jnp.issubdtype(idx.dtype, jnp.integer):
        raise RuntimeError(
            f"{name}: indices must be integers (as max_pool{nd}d(..., return_indices=True) "
            f"returns them), got {idx.dtype}"
        )
    if unbatched:
        idx = idx[None]
    if idx.shape != x.shape:
        raise RuntimeError(
            f"{name}: expected indices of the input's shape {tuple(x.shape)}, got "
            f"{tuple(idx.shape)}; pass the indices the pool returned with this output"
        )
    sizes, *_ = unpool_output_size(x.shape, kernel_size, stride, padding, output_size, nd, name)
    plane = int(np.prod(sizes))
    _check_index_range(plane, name)
    n, c = x.shape[:2]
    flat_x = x.reshape(n * c, -1)
    flat_idx = idx.reshape(n * c, -1).astype(jnp.int32)
    y = _scatter_planes(flat_x, flat_idx, plane).reshape(n, c, *sizes)
    return y[0] if unbatched else y


def check_unpool_indices(indices: np.ndarray, spatial: Sequence[int], name: str) -> None:
    """torch's eager check that every index addresses the output plane (known values only)."""
    plane = int(np.prod(spatial))
    invalid = (indices < 0) | (indices >= plane)
    if invalid.any():
        # The last one in scan order, as torch's (single-threaded) CPU kernel reports.
        bad = int(indices.reshape(-1)[np.flatnonzero(invalid)[-1]])
        raise RuntimeError(
            f"{name}: found an invalid max index: {bad} (output volumes are of size "
            f"{'x'.join(str(int(v)) for v in spatial)}); pass the indices of the pool whose "
            "output this is, and its input size as output_size"
        )


def max_pool1d_with_indices(
    input: Array,
    kernel_size: _Size,
    stride: _Size | None = None,
    padding: _Size = 0,
    dilation: _Size = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> tuple[Array, Array]:
    """1-D max pooling and the argmax of each window (mirrors torch's function of that name).

    Always returns ``(output, indices)`` (``return_indices`` is accepted and ignored, as in
    torch); the arguments are :func:`~spx.nn.functional.max_pool1d`'s.

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        kernel_size, stride (default ``kernel_size``), padding, dilation: int or 1-tuple.
        ceil_mode: round the output length up.
        return_indices: ignored.

    Returns:
        ``output`` ``(N, C, L_out)`` and int32 ``indices`` of the same shape: each maximum's
        position along ``L``.

    Example:
        >>> F.max_pool1d_with_indices(jnp.array([[[1.0, 3.0, 2.0, 0.0]]]), 2)
        ... # ([[[3., 2.]]], [[[1, 2]]])
    """
    return _max_pool_with_indices(
        input, kernel_size, stride, padding, dilation, ceil_mode, 1, "max_pool1d_with_indices"
    )


def max_pool2d_with_indices(
    input: Array,
    kernel_size: _Size,
    stride: _Size | None = None,
    padding: _Size = 0,
    dilation: _Size = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> tuple[Array, Array]:
    """2-D max pooling and the argmax of each window (mirrors torch's function of that name).

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        kernel_size: int or ``(kH, kW)``.
        stride: int or pair; defaults to ``kernel_size``.
        padding: implicit ``-inf`` padding, at most half the effective kernel.
        dilation: spacing between window elements.
        ceil_mode: round output sizes up.
        return_indices: ignored (the indices are always returned, as in torch).

    Returns:
        ``output`` ``(N, C, H_out, W_out)`` and int32 ``indices`` of the same shape, each the
        flat position ``h * W + w`` of its maximum within the ``(n, c)`` plane.

    Example:
        >>> out, idx = F.max_pool2d_with_indices(jnp.arange(16.0).reshape(1, 1, 4, 4), 2)
        >>> idx  # [[[[5, 7], [13, 15]]]]
    """
    return _max_pool_with_indices(
        input, kernel_size, stride, padding, dilation, ceil_mode, 2, "max_pool2d_with_indices"
    )


def max_pool3d_with_indices(
    input: Array,
    kernel_size: _Size,
    stride: _Size | None = None,
    padding: _Size = 0,
    dilation: _Size = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> tuple[Array, Array]:
    """3-D max pooling and the argmax of each window (mirrors torch's function of that name).

    Args:
        input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        kernel_size, stride (default ``kernel_size``), padding, dilation: int or triple.
        ceil_mode: round output sizes up.
        return_indices: ignored.

    Returns:
        ``output`` and int32 ``indices`` ``(N, C, D_out, H_out, W_out)``; each index is
        ``d * H * W + h * W + w``.

    Example:
        >>> F.max_pool3d_with_indices(jnp.ones((1, 2, 4, 4, 4)), 2)[1].shape  # (1, 2, 2, 2, 2)
    """
    return _max_pool_with_indices(
        input, kernel_size, stride, padding, dilation, ceil_mode, 3, "max_pool3d_with_indices"
    )


def adaptive_max_pool1d_with_indices(
    input: Array, output_size: _Size, return_indices: bool = False
) -> tuple[Array, Array]:
    """Adaptive 1-D max pooling and each bin's argmax (mirrors torch's function of that name).

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        output_size: the target length.
        return_indices: ignored (the indices are always returned, as in torch).

    Returns:
        ``output`` and int32 ``indices`` ``(N, C, output_size)``.

    Example:
        >>> F.adaptive_max_pool1d_with_indices(jnp.array([[[1.0, 3.0, 2.0]]]), 2)
        ... # ([[[3., 3.]]], [[[1, 1]]])
    """
    return _adaptive_max_pool_with_indices(input, output_size, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d_with_indices(
    input: Array, output_size: _Size | None, return_indices: bool = False
) -> tuple[Array, Array]:
    """Adaptive 2-D max pooling and each bin's argmax (mirrors torch's function of that name).

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        output_size: int or ``(H_out, W_out)``; a None entry keeps that input size.
        return_indices: ignored.

    Returns:
        ``output`` and int32 ``indices`` ``(N, C, H_out, W_out)``, each ``h * W + w``.

    Example:
        >>> F.adaptive_max_pool2d_with_indices(jnp.ones((2, 3, 7, 9)), 2)[1].shape  # (2,3,2,2)
    """
    return _adaptive_max_pool_with_indices(input, output_size, 2, "adaptive_max_pool2d")


def adaptive_max_pool3d_with_indices(
    input: Array, output_size: _Size | None, return_indices: bool = False
) -> tuple[Array, Array]:
    """Adaptive 3-D max pooling and each bin's argmax (mirrors torch's function of that name).

    Args:
        input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        output_size: int or a triple; a None entry keeps that input size.
        return_indices: ignored.

    Returns:
        ``output`` and int32 ``indices`` ``(N, C, D_out, H_out, W_out)``.

    Example:
        >>> F.adaptive_max_pool3d_with_indices(jnp.ones((1, 2, 4, 5, 6)), 2)[1].shape
    """
    return _adaptive_max_pool_with_indices(input, output_size, 3, "adaptive_max_pool3d")


def max_unpool1d(
    input: Array,
    indices: Array,
    kernel_size: _Size,
    stride: _Size | None = None,
    padding: _Size = 0,
    output_size: Sequence[int] | None = None,
) -> Array:
    """Partial inverse of :func:`max_pool1d` (mirrors ``torch.nn.functional.max_unpool1d``).

    Every value goes to the position its index names in a zero output; the rest stay zero.

    Args:
        input: ``(N, C, L_in)`` or ``(C, L_in)``, a pool's output.
        indices: the pool's indices, same shape, positions in ``[0, L_out)``.
        kernel_size, stride (default ``kernel_size``), padding: the pool's, int or 1-tuple.
        output_size: the output length (``(L_out,)`` or ``(N, C, L_out)``); default
            ``(L_in - 1) * stride - 2 * padding + kernel_size``. Give the pool's input length
            when it was not a multiple of the stride.

    Returns:
        ``(N, C, L_out)``.

    Example:
        >>> out, idx = F.max_pool1d(jnp.array([[[1.0, 3.0, 2.0, 0.0]]]), 2, return_indices=True)
        >>> F.max_unpool1d(out, idx, 2)  # [[[0., 3., 2., 0.]]]
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1,
                       "max_unpool1d")  # fmt: skip


def max_unpool2d(
    input: Array,
    indices: Array,
    kernel_size: _Size,
    stride: _Size | None = None,
    padding: _Size = 0,
    output_size: Sequence[int] | None = None,
) -> Array:
    """Partial inverse of :func:`max_pool2d` (mirrors ``torch.nn.functional.max_unpool2d``).

    Args:
        input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``, a pool's output.
        indices: the pool's flat per-plane indices ``h * W_out + w``, same shape as ``input``.
        kernel_size: int or ``(kH, kW)``, the pool's.
        stride: int or pair; defaults to ``kernel_size``.
        padding: the pool's padding.
        output_size: ``(H_out, W_out)`` or ``(N, C, H_out, W_out)``; default
            ``(H_in - 1) * stride - 2 * padding + kernel_size`` per dim, and an explicit one
            must lie strictly within ``stride`` of it.

    Returns:
        ``(N, C, H_out, W_out)``, zero except where the indices point.

    Example:
        >>> x = jnp.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2).shape  # (1, 1, 4, 4)
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2,
                       "max_unpool2d")  # fmt: skip


def max_unpool3d(
    input: Array,
    indices: Array,
    kernel_size: _Size,
    stride: _Size | None = None,
    padding: _Size = 0,
    output_size: Sequence[int] | None = None,
) -> Array:
    """Partial inverse of :func:`max_pool3d` (mirrors ``torch.nn.functional.max_unpool3d``).

    Args:
        input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``, a pool's output.
        indices: the pool's flat per-plane indices, same shape as ``input``.
        kernel_size, stride (default ``kernel_size``), padding: the pool's, int or triple.
        output_size: ``(D, H, W)`` or ``(N, C, D, H, W)``; default as :func:`max_unpool2d`.

    Returns:
        ``(N, C, D_out, H_out, W_out)``.

    Example:
        >>> x = jnp.ones((1, 2, 4, 4, 4))
        >>> F.max_unpool3d(*F.max_pool3d(x, 2, return_indices=True), 2).shape  # (1,2,4,4,4)
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3,
                       "max_unpool3d")  # fmt: skip
