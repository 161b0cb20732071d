"""Pooling over channels-first inputs: max/avg (1-D/2-D/3-D) and adaptive avg/max.

``return_indices=True`` on the max pools is :mod:`.pool_indices`'s (with ``max_unpool``).

Max and average pools are single ``lax.reduce_window`` calls (differentiable, fused by XLA).
torch's ``ceil_mode`` becomes extra right padding; the average pool's divisor — which depends on
``count_include_pad``, ``ceil_mode`` and ``divisor_override`` exactly as in torch's CPU kernel —
is a constant computed from shapes at trace time, so it costs nothing at run time.

Adaptive pools use torch's bins (``start = floor(i * L / out)``, ``end = ceil((i + 1) * L / out)``)
one spatial dim at a time: a reshape when the size divides evenly, otherwise a small constant
averaging matrix (avg) or one slice per output bin (max).

See https://pytorch.org/docs/stable/nn.functional.html#pooling-functions
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from spx._tensor.methods._dtypes import half_in_float32
from spx.nn.functional._utils import ntuple

Array = jax.Array
_Size = int | Sequence[int]


def _batched(x: Array, nd: int, name: str) -> tuple[Array, bool]:
    if x.ndim == nd + 1:
        return x[None], True
    if x.ndim != nd + 2:
        raise RuntimeError(
            f"{name}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) input, "
            f"got shape {x.shape}"
        )
    return x, False


def _out_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    # torch's pooling_output_shape, including the rule that the last window must start inside
    # the input or its left padding.
    eff = d * (k - 1) + 1
    numer = size + 2 * p - eff + ((s - 1) if ceil_mode else 0)
    out = numer // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _window_geometry(
    x: Array,
    kernel_size: _Size,
    stride: _Size | None,
    padding: _Size,
    dilation: _Size,
    ceil_mode: bool,
    nd: int,
    name: str,
) -> tuple[tuple[int, ...], ...]:
    ks = ntuple(kernel_size, nd, f"{name}: kernel_size")
    # torch treats stride=None and stride=[] as "same as kernel_size".
    no_stride = stride is None or (isinstance(stride, Sequence) and len(stride) == 0)
    ss = ks if no_stride else ntuple(stride, nd, f"{name}: stride")
    ps = ntuple(padding, nd, f"{name}: padding")
    ds = ntuple(dilation, nd, f"{name}: dilation")
    if any(v < 1 for v in ks + ss + ds):
        raise ValueError(
            f"{name}: kernel_size {kernel_size!r}, stride {stride!r} and dilation {dilation!r} "
            "must be positive"
        )
    for k, p, d in zip(ks, ps, ds, strict=True):
        if p < 0 or p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(
                f"{name}: pad should be at most half of effective kernel size, but got "
                f"padding={padding!r}, kernel_size={kernel_size!r} and dilation={dilation!r}"
            )
    spatial = x.shape[2:]
    outs = tuple(
        _out_size(n, k, s, p, d, ceil_mode)
        for n, k, s, p, d in zip(spatial, ks, ss, ps, ds, strict=True)
    )
    if any(o < 1 for o in outs):
        raise RuntimeError(
            f"{name}: input spatial size {spatial} with kernel_size={ks}, stride={ss}, "
            f"padding={ps}, dilation={ds} gives output size {outs}, which is too small"
        )
    # Right padding that makes reduce_window produce exactly `outs` windows (ceil_mode may
    # need windows hanging past the padded input).
    right = tuple(
        max(p, (o - 1) * s + d * (k - 1) + 1 - n - p)
        for n, k, s, p, d, o in zip(spatial, ks, ss, ps, ds, outs, strict=True)
    )
    return ks, ss, ps, ds, outs, right


def _max_pool(
    input: Array,
    kernel_size: _Size,
    stride: _Size | None,
    padding: _Size,
    dilation: _Size,
    ceil_mode: bool,
    return_indices: bool,
    nd: int,
    name: str,
) -> Array | tuple[Array, Array]:
    if return_indices:
        # Imported here: pool_indices builds on this module's window geometry.
        from spx.nn.functional.pool_indices import _max_pool_with_indices

        return _max_pool_with_indices(
            input, kernel_size, stride, padding, dilation, ceil_mode, nd, name
        )
    x, unbatched = _batched(jnp.asarray(input), nd, name)
    ks, ss, ps, ds, outs, right = _window_geometry(
        x, kernel_size, stride, padding, dilation, ceil_mode, nd, name
    )
    # A numpy (not jnp) init value: reduce_window only recognizes max/add (and so has a
    # gradient) when the init value is a concrete identity, and jnp values are traced in jit.
    init = np.asarray(
        -np.inf if jnp.issubdtype(x.dtype, jnp.inexact) else jnp.iinfo(x.dtype).min, x.dtype
    )
    pads = ((0, 0), (0, 0), *zip(ps, right, strict=True))
    if all(d == 1 for d in ds):
        y = jax.lax.reduce_window(
            x,
            init,
            jax.lax.max,
            window_dimensions=(1, 1, *ks),
            window_strides=(1, 1, *ss),
            padding=pads,
        )
    else:
        y = _dilated_max(jax.lax.pad(x, init, [(*p, 0) for p in pads]),
                         ks, ss, ds, outs)  # fmt: skip
    # Trailing padding beyond what `outs` needs is dropped by reduce_window; trim defensively.
    y = y[(slice(None), slice(None), *(slice(0, o) for o in outs))]
    return y[0] if unbatched else y


def _dilated_max(
    xp: Array,
    ks: tuple[int, ...],
    ss: tuple[int, ...],
    ds: tuple[int, ...],
    outs: tuple[int, ...],
) -> Array:
    """Dilated max pool of an already padded input as a max over strided slices.

    jax has no gradient for reduce_window max with window dilation, so each kernel tap becomes
    one strided slice (prod(kernel) of them) and the taps are max-reduced.
    """
    taps = []
    for offsets in itertools.product(*(range(k) for k in ks)):
        start = (0, 0, *(o * d for o, d in zip(offsets, ds, strict=True)))
        limit = (
            *xp.shape[:2],
            *(st + (o - 1) * s + 1 for st, o, s in zip(start[2:], outs, ss, strict=True)),
        )
        taps.append(jax.lax.slice(xp, start, limit, (1, 1, *ss)))
    return jnp.max(jnp.stack(taps), axis=0)


def _avg_divisor_1d(size: int, k: int, s: int, p: int, out: int, include_pad: bool) -> np.ndarray:
    # torch's avg_pool CPU kernel: the padded window is clipped to [-p, size + p), and without
    # count_include_pad further to the real input [0, size).
    starts = np.arange(out) * s - p
    ends = np.minimum(starts + k, size + p)
    if include_pad:
        return (ends - starts).astype(np.float64)
    return (np.minimum(ends, size) - np.maximum(starts, 0)).astype(np.float64)


@half_in_float32  # torch sums a half input's windows in float
def _avg_pool(
    input: Array,
    kernel_size: _Size,
    stride: _Size | None,
    padding: _Size,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
    nd: int,
    name: str,
) -> Array:
    x, unbatched = _batched(jnp.asarray(input), nd, name)
    ks, ss, ps, _, outs, right = _window_geometry(
        x, kernel_size, stride, padding, 1, ceil_mode, nd, name
    )
    summed = jax.lax.reduce_window(
        x,
        np.zeros((), x.dtype),
        jax.lax.add,
        window_dimensions=(1, 1, *ks),
        window_strides=(1, 1, *ss),
        padding=((0, 0), (0, 0), *zip(ps, right, strict=True)),
    )
    summed = summed[(slice(None), slice(None), *(slice(0, o) for o in outs))]
    if divisor_override is not None:
        if divisor_override == 0:
            raise ValueError(f"{name}: divisor_override must be non-zero")
        y = summed / divisor_override
    else:
        divisor = np.ones((), np.float64)
        for n, k, s, p, o in zip(x.shape[2:], ks, ss, ps, outs, strict=True):
            divisor = np.multiply.outer(divisor, _avg_divisor_1d(n, k, s, p, o, count_include_pad))
        y = summed / jnp.asarray(divisor, x.dtype)
    return y[0] if unbatched else y


def max_pool1d(
    input: Array,
    kernel_size: _Size,
    stride: _Size | None = None,
    padding: _Size = 0,
    dilation: _Size = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Array:
    """1-D max pooling (mirrors ``torch.nn.functional.max_pool1d``).

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        kernel_size, stride (default ``kernel_size``), padding (implicit ``-inf``, at most half
            the effective kernel), dilation: int or 1-tuple.
        ceil_mode: round the output length up (windows may hang over the right edge).
        return_indices: also return each maximum's position (int32, as
            :func:`max_pool1d_with_indices`), for :func:`max_unpool1d`.

    Example:
        >>> F.max_pool1d(jnp.arange(6.0)[None, None], 2).shape  # (1, 1, 3)
    """
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d"
    )


def max_pool2d(
    input: Array,
    kernel_size: _Size,
    stride: _Size | None = None,
    padding: _Size = 0,
    dilation: _Size = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Array:
    """2-D max pooling over NCHW input (mirrors ``torch.nn.functional.max_pool2d``).

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        kernel_size: int or ``(kH, kW)``.
        stride: int or pair; defaults to ``kernel_size``.
        padding: implicit ``-inf`` padding on both sides, at most half the effective kernel.
        dilation: spacing between window elements.
        ceil_mode: round output sizes up instead of down.
        return_indices: also return each maximum's flat position ``h * W + w`` in its plane
            (int32, as :func:`max_pool2d_with_indices`), for :func:`max_unpool2d`.

    Returns:
        ``(N, C, H_out, W_out)``, and the indices of that shape with ``return_indices``.

    Example:
        >>> F.max_pool2d(jnp.ones((2, 3, 8, 8)), 3, stride=2, padding=1).shape  # (2, 3, 4, 4)
    """
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d"
    )


def max_pool3d(
    input: Array,
    kernel_size: _Size,
    stride: _Size | None = None,
    padding: _Size = 0,
    dilation: _Size = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Array:
    """3-D max pooling over NCDHW input (mirrors ``torch.nn.functional.max_pool3d``).

    Arguments as :func:`max_pool2d`, with ints or triples; ``return_indices=True`` also
    returns the flat positions ``d * H * W + h * W + w`` (:func:`max_pool3d_with_indices`).

    Example:
        >>> F.max_pool3d(jnp.ones((1, 2, 4, 4, 4)), 2).shape  # (1, 2, 2, 2, 2)
    """
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3, "max_pool3d"
    )


def avg_pool1d(
    input: Array,
    kernel_size: _Size,
    stride: _Size | None = None,
    padding: _Size = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Array:
    """1-D average pooling (mirrors ``torch.nn.functional.avg_pool1d``).

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        kernel_size, stride (default ``kernel_size``), padding: int or 1-tuple.
        ceil_mode: round the output length up.
        count_include_pad: count the zero padding in the divisor.

    Example:
        >>> F.avg_pool1d(jnp.arange(6.0)[None, None], 2)  # [[[0.5, 2.5, 4.5]]]
    """
    return _avg_pool(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d"
    )


def avg_pool2d(
    input: Array,
    kernel_size: _Size,
    stride: _Size | None = None,
    padding: _Size = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Array:
    """2-D average pooling over NCHW input (mirrors ``torch.nn.functional.avg_pool2d``).

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        kernel_size: int or ``(kH, kW)``.
        stride: int or pair; defaults to ``kernel_size``.
        padding: implicit zero padding, at most half the kernel.
        ceil_mode: round output sizes up; windows hanging past the padded input are clipped
            (their divisor shrinks, as in torch).
        count_include_pad: whether the zero padding counts in the divisor.
        divisor_override: if given, every window sum is divided by this instead.

    Returns:
        ``(N, C, H_out, W_out)``.

    Example:
        >>> F.avg_pool2d(jnp.ones((2, 3, 8, 8)), 2).shape  # (2, 3, 4, 4)
    """
    return _avg_pool(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2,
        "avg_pool2d",
    )  # fmt: skip


def avg_pool3d(
    input: Array,
    kernel_size: _Size,
    stride: _Size | None = None,
    padding: _Size = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Array:
    """3-D average pooling over NCDHW input (mirrors ``torch.nn.functional.avg_pool3d``).

    Example:
        >>> F.avg_pool3d(jnp.ones((1, 2, 4, 4, 4)), 2).shape  # (1, 2, 2, 2, 2)
    """
    return _avg_pool(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3,
        "avg_pool3d",
    )  # fmt: skip


def _adaptive_sizes(x: Array, output_size: _Size | None, nd: int, name: str) -> tuple[int, ...]:
    if isinstance(output_size, int) or output_size is None:
        output_size = (output_size,) * nd
    sizes = tuple(output_size)
    if len(sizes) != nd:
        raise ValueError(f"{name}: output_size must have {nd} entries, got {output_size!r}")
    # None keeps that dim's input size (torch's convention).
    sizes = tuple(n if o is None else o for n, o in zip(x.shape[2:], sizes, strict=True))
    if any(o < 1 for o in sizes):
        raise ValueError(f"{name}: output_size must be positive, got {output_size!r}")
    return sizes


def _bins(size: int, out: int) -> list[tuple[int, int]]:
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def _adaptive_pool(input: Array, output_size: _Size | None, nd: int, op: str, name: str) -> Array:
    x, unbatched = _batched(jnp.asarray(input), nd, name)
    sizes = _adaptive_sizes(x, output_size, nd, name)
    for axis, out in zip(range(2, nd + 2), sizes, strict=True):
        n = x.shape[axis]
        if n % out == 0:
            # Even bins: a reshape and a reduction, which XLA fuses.
            split = (*x.shape[:axis], out, n // out, *x.shape[axis + 1 :])
            reduce = jnp.mean if op == "avg" else jnp.max
            x = reduce(x.reshape(split), axis=axis + 1)
        elif op == "avg":
            weights = np.zeros((out, n), np.float64)
            for i, (a, b) in enumerate(_bins(n, out)):
                weights[i, a:b] = 1.0 / (b - a)
            pooled = jnp.tensordot(x, jnp.asarray(weights, x.dtype), ((axis,), (1,)))
            x = jnp.moveaxis(pooled, -1, axis)
        else:
            parts = [
                jnp.max(jax.lax.slice_in_dim(x, a, b, axis=axis), axis=axis, keepdims=True)
                for a, b in _bins(n, out)
            ]
            x = jnp.concatenate(parts, axis=axis)
    return x[0] if unbatched else x


def adaptive_avg_pool1d(input: Array, output_size: _Size) -> Array:
    """Average-pool to a fixed length (mirrors ``torch.nn.functional.adaptive_avg_pool1d``).

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        output_size: the target length.

    Example:
        >>> F.adaptive_avg_pool1d(jnp.ones((2, 3, 10)), 4).shape  # (2, 3, 4)
    """
    return _adaptive_pool(input, output_size, 1, "avg", "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input: Array, output_size: _Size | None) -> Array:
    """Average-pool to a fixed ``(H_out, W_out)`` (mirrors ``torch...adaptive_avg_pool2d``).

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        output_size: int or ``(H_out, W_out)``; a None entry keeps that input size.

    Example:
        >>> F.adaptive_avg_pool2d(jnp.ones((2, 3, 7, 9)), (1, 1)).shape  # (2, 3, 1, 1)
    """
    return _adaptive_pool(input, output_size, 2, "avg", "adaptive_avg_pool2d")


def adaptive_avg_pool3d(input: Array, output_size: _Size | None) -> Array:
    """Average-pool to a fixed ``(D_out, H_out, W_out)`` (mirrors torch's 3-D variant).

    Example:
        >>> F.adaptive_avg_pool3d(jnp.ones((1, 2, 4, 5, 6)), 2).shape  # (1, 2, 2, 2, 2)
    """
    return _adaptive_pool(input, output_size, 3, "avg", "adaptive_avg_pool3d")


def adaptive_max_pool1d(
    input: Array, output_size: _Size, return_indices: bool = False
) -> Array | tuple[Array, Array]:
    """Max-pool to a fixed length (mirrors ``torch.nn.functional.adaptive_max_pool1d``).

    ``return_indices=True`` also returns each maximum's position (int32).

    Example:
        >>> F.adaptive_max_pool1d(jnp.ones((2, 3, 10)), 4).shape  # (2, 3, 4)
    """
    if return_indices:
        from spx.nn.functional.pool_indices import _adaptive_max_pool_with_indices

        return _adaptive_max_pool_with_indices(input, output_size, 1, "adaptive_max_pool1d")
    return _adaptive_pool(input, output_size, 1, "max", "adaptive_max_pool1d")


def adaptive_max_pool2d(
    input: Array, output_size: _Size | None, return_indices: bool = False
) -> Array | tuple[Array, Array]:
    """Max-pool to a fixed ``(H_out, W_out)`` (mirrors ``torch...adaptive_max_pool2d``).

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        output_size: int or ``(H_out, W_out)``; a None entry keeps that input size.
        return_indices: also return each maximum's flat position in its plane (int32).

    Example:
        >>> F.adaptive_max_pool2d(jnp.ones((2, 3, 7, 9)), (2, 4)).shape  # (2, 3, 2, 4)
    """
    if return_indices:
        from spx.nn.functional.pool_indices import _adaptive_max_pool_with_indices

        return _adaptive_max_pool_with_indices(input, output_size, 2, "adaptive_max_pool2d")
    return _adaptive_pool(input, output_size, 2, "max", "adaptive_max_pool2d")


def adaptive_max_pool3d(
    input: Array, output_size: _Size | None, return_indices: bool = False
) -> Array | tuple[Array, Array]:
    """Max-pool to a fixed ``(D_out, H_out, W_out)`` (mirrors torch's 3-D variant).

    Args:
        input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        output_size: int or a triple; a None entry keeps that input size.
        return_indices: also return each maximum's flat position in its plane (int32).

    Example:
        >>> F.adaptive_max_pool3d(jnp.ones((1, 2, 4, 5, 6)), 2).shape  # (1, 2, 2, 2, 2)
    """
    if return_indices:
        from spx.nn.functional.pool_indices import _adaptive_max_pool_with_indices

        return _adaptive_max_pool_with_indices(input, output_size, 3, "adaptive_max_pool3d")
    return _adaptive_pool(input, output_size, 3, "max", "adaptive_max_pool3d")


def _lp_pool(
    input: Array,
    norm_type: float,
    kernel_size: _Size,
    stride: _Size | None,
    ceil_mode: bool,
    nd: int,
    name: str,
) -> Array:
    x = jnp.asarray(input)
    if norm_type == float("inf"):
        return _max_pool(jnp.abs(x), kernel_size, stride, 0, 1, ceil_mode, False, nd, name)
    if norm_type == -float("inf"):
        return -_max_pool(-jnp.abs(x), kernel_size, stride, 0, 1, ceil_mode, False, nd, name)
    if norm_type == 0:
        raise ValueError(f"{name}: norm_type must be non-zero (the output is a 1/p power)")
    ks = ntuple(kernel_size, nd, f"{name}: kernel_size")
    # torch: (sign(s) * relu(|s|)) * prod(k) to the power 1/p, s = avg_pool(x^p) (so clipped
    # ceil_mode windows use the average pool's shrunken divisor, exactly as torch). That factor
    # is s itself: a negative window sum (odd p, signed input) gives s for p = 1 and NaN for
    # p = 3, as in torch, not 0.
    out = _avg_pool(x**norm_type, ks, stride, 0, ceil_mode, True, None, nd, name)
    out = out * float(np.prod(ks))
    # torch documents a zero gradient where the window's sum is zero (the root's is infinite).
    nonzero = out != 0
    return jnp.where(nonzero, jnp.where(nonzero, out, 1) ** (1.0 / norm_type), 0)


def lp_pool1d(
    input: Array,
    norm_type: float,
    kernel_size: _Size,
    stride: _Size | None = None,
    ceil_mode: bool = False,
) -> Array:
    """1-D power-average pooling ``(sum x^p)^(1/p)`` (mirrors ``torch...lp_pool1d``).

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        norm_type: the power ``p``; ``inf`` is max pooling of ``|x|``.
        kernel_size: int or 1-tuple.
        stride: defaults to ``kernel_size``.
        ceil_mode: round the output length up.

    Example:
        >>> F.lp_pool1d(jnp.ones((1, 1, 4)), 2, 2)  # [[[1.4142, 1.4142]]]
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, "lp_pool1d")


def lp_pool2d(
    input: Array,
    norm_type: float,
    kernel_size: _Size,
    stride: _Size | None = None,
    ceil_mode: bool = False,
) -> Array:
    """2-D power-average pooling (mirrors ``torch.nn.functional.lp_pool2d``).

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        norm_type: the power ``p``; ``inf`` is max pooling of ``|x|``.
        kernel_size: int or ``(kH, kW)``.
        stride: defaults to ``kernel_size``.
        ceil_mode: round output sizes up.

    Example:
        >>> F.lp_pool2d(jnp.ones((1, 1, 4, 4)), 1, 2)  # window sums: all 4.0
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, "lp_pool2d")


def lp_pool3d(
    input: Array,
    norm_type: float,
    kernel_size: _Size,
    stride: _Size | None = None,
    ceil_mode: bool = False,
) -> Array:
    """3-D power-average pooling (mirrors ``torch.nn.functional.lp_pool3d``).

    Example:
        >>> F.lp_pool3d(jnp.ones((1, 1, 4, 4, 4)), 2, 2).shape  # (1, 1, 2, 2, 2)
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3, "lp_pool3d")
