"""Resizing: ``interpolate`` (mirrors ``torch.nn.functional.interpolate``) and its kernels.

Every mode is a gather of input rows along each spatial dim, then (for the linear and cubic
modes) a weighted sum. The row indices and weights depend only on the sizes, so they are
computed here with numpy, once per shape, with torch's CPU index math in its precision
(float32 for float32/float16/bfloat16 inputs, float64 for float64): ``nearest`` reads row
``floor(dst * scale)``, ``nearest-exact`` ``floor((dst + 0.5) * scale)``, and the linear modes
sample at ``scale * (dst + 0.5) - 0.5`` clamped at 0 (``align_corners=False``) or at
``dst * (in - 1) / (out - 1)`` (``align_corners=True``), where ``scale = in / out`` or, when a
``scale_factor`` is given and not recomputed, ``1 / scale_factor``. ``jax.image.resize`` is not
used: its nearest rounds differently and it antialiases when downsampling.

``antialias=True`` (``bilinear`` and ``bicubic`` on 4-D input, as in torch) is torch's separable
"AA" resampling (Pillow's): output ``i`` averages the input rows within ``support`` of
``center = scale * (i + 0.5)``, weighted by the triangle (bilinear) or Keys cubic filter with
``a = -0.5`` (bicubic; not the -0.75 of the plain mode) stretched by ``scale`` when
downsampling (``support = interp_size / 2 * scale`` for ``scale >= 1``, else
``interp_size / 2``), the weights normalized to sum to 1. Each spatial dim is then one matrix
product (W first, then H, as torch), with the weights built here in torch's precision. Not
copied from torch's CPU kernel: its forward repeats the first output row whenever the output
width is 1 (a stride bug; its backward is right), and it rejects float16/bfloat16, which spx
computes in float32 like torch's CUDA kernel.

Gradients are JAX's transposes of the gathers (scatter-adds), which is what torch's backward
kernels compute — except where torch's backward takes a size shortcut its forward does not
(3-D ``nearest`` with exactly doubled sizes, ``bicubic`` with unchanged sizes from a
``scale_factor``, antialiased modes with an unchanged size from a ``scale_factor``): there
spx's gradient is the true one of the forward both compute.
``area`` is ``adaptive_avg_pool{1,2,3}d``, as in torch. Integer (uint8) images in the linear
and cubic modes: the float result rounded and saturated; torch's uint8 kernels are a separate
fixed-point algorithm (bilinear within 1 level of spx's, bicubic within ~10 at the borders;
antialiased, whose W pass spx also rounds and clips as torch does: within 2 levels).

See https://pytorch.org/docs/stable/generated/torch.nn.functional.interpolate.html
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx.nn.functional import pooling as _pooling

Array = jax.Array

MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
# The linear modes and the one input rank (spatial dims) each accepts, as in torch.
_LINEAR_DIMS = {"linear": 1, "bilinear": 2, "trilinear": 3}
_CUBIC_A = -0.75  # torch's (and OpenCV's) bicubic convolution coefficient


def _opmath(dtype: Any) -> type:
    # torch computes the source coordinates in the input's "opmath" type.
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def _scales_value(scale: float | None, in_size: int, out_size: int, ft: type) -> Any:
    """torch's ``compute_scales_value``: ``1 / scale_factor`` if one was given, else in/out."""
    if scale is not None and scale > 0:
        return ft(1.0 / scale)
    return ft(in_size) / ft(out_size)


def _area_scale(in_size: int, out_size: int, align_corners: bool, scale: Any, ft: type) -> Any:
    """torch's ``area_pixel_compute_scale``."""
    if align_corners:
        return ft(in_size - 1) / ft(out_size - 1) if out_size > 1 else ft(0)
    return _scales_value(scale, in_size, out_size, ft)


def _source_index(scale: Any, out_size: int, align_corners: bool, cubic: bool, ft: type) -> Any:
    """torch's ``area_pixel_compute_source_index`` for every output index, in ``ft``."""
    dst = np.arange(out_size, dtype=ft)
    if align_corners:
        return scale * dst
    src = scale * (dst + ft(0.5)) - ft(0.5)
    return src if cubic else np.maximum(src, ft(0))


def _guard(src: Any, in_size: int) -> tuple[np.ndarray, Any]:
    """torch's ``guard_index_and_lambda``: the row below ``src`` and the weight of the next."""
    index = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    lam = np.clip(src - index.astype(src.dtype), 0, 1)
    return index, lam


def _nearest_rows(in_size: int, out_size: int, scale: Any, exact: bool, ft: type) -> np.ndarray:
    s = _area_scale(in_size, out_size, False, scale, ft)
    if exact:
        src = _source_index(s, out_size, False, False, ft) + 0.5
    else:
        src = _source_index(s, out_size, True, False, ft)
    # floorf: the coordinate is rounded to float32 before the floor, as in torch's kernel.
    rows = np.floor(src.astype(np.float32)).astype(np.int64)
    return np.minimum(rows, in_size - 1)


def _along(x: Array, axis: int, rows: Sequence[np.ndarray], weights: Sequence[Any]) -> Array:
    """``sum_k weights[k] * x[rows[k]]`` along ``axis`` (a separable filter step)."""
    shape = [1] * x.ndim
    shape[axis] = -1
    out = None
    for r, w in zip(rows, weights, strict=True):
        term = jnp.take(x, jnp.asarray(r), axis=axis) * jnp.asarray(w, x.dtype).reshape(shape)
        out = term if out is None else out + term
    return out


def _compute_dtype(x: Array) -> Any:
    # float16/bfloat16 are accumulated in float32, like torch's opmath; cast back at the end.
    return jnp.promote_types(x.dtype, jnp.float32)


def _cast_back(x: Array, dtype: Any) -> Array:
    # Integer images (uint8) round to the nearest level and saturate (a plain cast would
    # truncate: every pixel biased down). torch's uint8 CPU kernels are a separate fixed-point
    # algorithm (renormalized taps at the borders): bilinear agrees within 1 level, bicubic
    # within ~10 near the borders; torch's own float path differs from them as much.
    if jnp.issubdtype(dtype, jnp.integer):
        info = jnp.iinfo(dtype)
        x = jnp.clip(jnp.round(x), info.min, info.max)
    return x.astype(dtype)


def upsample_nearest(
    input: Array, output_size: Sequence[int], scales: Sequence[float | None], exact: bool
) -> Array:
    """``nearest`` / ``nearest-exact`` resize of ``(N, C, *spatial)`` to ``output_size``.

    Args:
        input: ``(N, C, L)``, ``(N, C, H, W)`` or ``(N, C, D, H, W)``.
        output_size: one size per spatial dim.
        scales: one ``scale_factor`` (or None) per spatial dim, used for the index math.
        exact: ``nearest-exact`` (half-pixel centres) instead of torch's legacy ``nearest``.

    Example:
        >>> upsample_nearest(jnp.ones((1, 1, 3)), (5,), (None,), False).shape
        (1, 1, 5)
    """
    x = jnp.asarray(input)
    ft = _opmath(x.dtype)
    for i, (n_out, scale) in enumerate(zip(output_size, scales, strict=True)):
        n_in = x.shape[2 + i]
        if len(output_size) == 2 and not exact and n_in and n_out in (n_in, 2 * n_in):
            # torch's 2-D nearest kernel (nearest_idx) copies a dim whose size is unchanged and
            # halves indices for a doubled one, whatever scale_factor says; 1-D/3-D don't.
            rows = np.arange(n_out) // (n_out // n_in)
        else:
            rows = _nearest_rows(n_in, n_out, scale, exact, ft)
        x = jnp.take(x, jnp.asarray(rows), axis=2 + i)
    return x


def upsample_linear(
    input: Array, output_size: Sequence[int], align_corners: bool, scales: Sequence[float | None]
) -> Array:
    """``linear`` / ``bilinear`` / ``trilinear`` resize (one separable step per spatial dim).

    Args:
        input: ``(N, C, *spatial)`` with 1 to 3 spatial dims.
        output_size: one size per spatial dim.
        align_corners: sample the corner pixels' centres exactly (``(in-1)/(out-1)`` scale).
        scales: one ``scale_factor`` (or None) per spatial dim.

    Example:
        >>> upsample_linear(jnp.ones((1, 1, 2, 2)), (4, 4), False, (None, None)).shape
        (1, 1, 4, 4)
    """
    x = jnp.asarray(input)
    dtype, ft = x.dtype, _opmath(x.dtype)
    x = x.astype(_compute_dtype(x))
    for i, (n_out, scale) in enumerate(zip(output_size, scales, strict=True)):
        n_in = x.shape[2 + i]
        if n_out == n_in:
            continue  # torch copies a dim whose size is unchanged, whatever the scale_factor
        s = _area_scale(n_in, n_out, align_corners, scale, ft)
        i0, lam = _guard(_source_index(s, n_out, align_corners, False, ft), n_in)
        i1 = np.where(i0 < n_in - 1, i0 + 1, i0)
        x = _along(x, 2 + i, (i0, i1), (ft(1) - lam, lam))
    return _cast_back(x, dtype)


def _cubic_weights(t: Any) -> list[Any]:
    """torch's ``get_cubic_upsample_coefficients`` (Keys' kernel with A = -0.75)."""
    a = t.dtype.type(_CUBIC_A)

    def near(x: Any) -> Any:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Any) -> Any:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    one = t.dtype.type(1)
    return [far(t + one), near(t), near(one - t), far(one - t + one)]


def upsample_bicubic2d(
    input: Array, output_size: Sequence[int], align_corners: bool, scales: Sequence[float | None]
) -> Array:
    """``bicubic`` resize of ``(N, C, H, W)``: 4 taps per dim, borders clamped (as torch).

    Example:
        >>> upsample_bicubic2d(jnp.ones((1, 1, 2, 2)), (3, 5), True, (None, None)).shape
        (1, 1, 3, 5)
    """
    x = jnp.asarray(input)
    dtype, ft = x.dtype, _opmath(x.dtype)
    x = x.astype(_compute_dtype(x))
    for i, (n_out, scale) in enumerate(zip(output_size, scales, strict=True)):
        n_in = x.shape[2 + i]
        s = _area_scale(n_in, n_out, align_corners, scale, ft)
        i0, t = _guard(_source_index(s, n_out, align_corners, True, ft), n_in)
        rows = [np.clip(i0 - 1 + k, 0, n_in - 1) for k in range(4)]
        x = _along(x, 2 + i, rows, _cubic_weights(t))
    return _cast_back(x, dtype)


def _fma(a: Any, b: Any, c: Any) -> Any:
    """``a * b + c`` as a fused multiply-add, in ``a``'s dtype.

    torch's compiled CPU kernels (GCC, ``-ffp-contract=fast`` on x86-64 AVX2/AVX512 and arm64)
    fuse the cubic filter's polynomial steps; near the filter's zeros those steps cancel, so
    plain float32 steps would differ from torch's weights by up to ~6e-7. float32: the product
    is exact in float64, so one rounding to float32 is the fused result. float64 (the product
    is not exact in any numpy type): unfused, within ~1e-15 of torch.
    """
    if a.dtype == np.float32:
        return (a.astype(np.float64) * np.float64(b) + np.float64(c)).astype(np.float32)
    return a * b + c


def _triangle(x: Any) -> Any:
    """The antialiased bilinear filter (torch's and Pillow's ``bilinear_filter``)."""
    x = np.abs(x)
    return np.where(x < 1, x.dtype.type(1) - x, x.dtype.type(0))


def _keys_cubic(x: Any) -> Any:
    """The antialiased bicubic filter: Keys' kernel with ``a = -0.5`` (Pillow's), not -0.75."""
    ft = x.dtype.type
    a = ft(-0.5)
    x = np.abs(x)
    near = _fma(_fma(x, a + ft(2), -(a + ft(3))) * x, x, ft(1))
    far = _fma(_fma(_fma(x, a, ft(-5) * a), x, ft(8) * a), x, ft(-4) * a)
    return np.where(x < 1, near, np.where(x < 2, far, ft(0)))


# Antialiased modes: the filter's support at scale 1 (torch's interp_size) and the filter.
_AA_FILTERS: dict[str, tuple[int, Callable[[Any], Any]]] = {
    "bilinear": (2, _triangle),
    "bicubic": (4, _keys_cubic),
}


@functools.lru_cache(maxsize=256)
def aa_weights(
    in_size: int, out_size: int, align_corners: bool, scale: float | None, mode: str, ft: type
) -> np.ndarray:
    """The ``(out_size, in_size)`` antialiased resampling matrix along one dim, as torch's.

    torch's ``_compute_indices_min_size_weights_aa``, in its mixed precision (``ft`` steps,
    some promoted to float64 and rounded back): output ``i`` reads the rows ``xmin[i]`` to
    ``xmin[i] + xsize[i] - 1`` around ``center = scale * (i + 0.5)``, weighted by the filter
    at ``(row + 0.5 - center) / max(scale, 1)`` and normalized by the weights' sum.
    ``align_corners`` changes only ``scale`` (``(in - 1) / (out - 1)``), not the centres.

    Args:
        in_size: the input's size along the dim.
        out_size: the output's size along the dim.
        align_corners: torch's ``align_corners``.
        scale: the ``scale_factor`` for the dim, or None (the scale is then in/out).
        mode: ``'bilinear'`` or ``'bicubic'``.
        ft: the weights' type (torch's ``scalar_t``): ``np.float32`` or ``np.float64``.

    Returns:
        The matrix (read-only, cached per arguments); each row sums to 1.

    Example:
        >>> aa_weights(6, 3, False, None, "bilinear", np.float64)[1].tolist()
        [0.0, 0.125, 0.375, 0.375, 0.125, 0.0]
    """
    interp_size, filter_fn = _AA_FILTERS[mode]
    s = _area_scale(in_size, out_size, align_corners, scale, ft)
    if s >= 1:  # downsampling: the filter is stretched to cover `scale` input rows per output
        support, invscale = ft(interp_size * 0.5 * np.float64(s)), ft(1.0 / np.float64(s))
    else:
        support, invscale = ft(interp_size * 0.5), ft(1)
    max_taps = int(np.ceil(support)) * 2 + 1
    center = (np.float64(s) * (np.arange(out_size) + 0.5)).astype(ft)
    # C++ casts truncate towards zero; the `+ 0.5` is a double added to the ft difference.
    lo = np.trunc((center - support).astype(np.float64) + 0.5).astype(np.int64)
    hi = np.trunc((center + support).astype(np.float64) + 0.5).astype(np.int64)
    xmin = np.maximum(lo, 0)
    xsize = np.clip(np.minimum(hi, in_size) - xmin, 0, max_taps)
    taps = np.arange(max_taps)
    rows = xmin[:, None] + taps
    dist = (rows.astype(ft) - center[:, None]).astype(np.float64) + 0.5
    valid = taps < xsize[:, None]
    w = np.where(valid, filter_fn((dist * np.float64(invscale)).astype(ft)), ft(0)).astype(ft)
    total = np.zeros(out_size, ft)
    for k in range(max_taps):  # torch's sequential float sum (numpy's sum is pairwise)
        total = (total + w[:, k]).astype(ft)
    w = np.where(total[:, None] != 0, w / np.where(total == 0, ft(1), total)[:, None], w)
    matrix = np.zeros((out_size, in_size), ft)
    out_idx = np.broadcast_to(np.arange(out_size)[:, None], rows.shape)
    matrix[out_idx[valid], rows[valid]] = w[valid]
    matrix.setflags(write=False)
    return matrix


def _resample_aa(
    x: Array,
    output_size: Sequence[int],
    align_corners: bool,
    scales: Sequence[float | None],
    mode: str,
) -> Array:
    dtype, ft = x.dtype, _opmath(x.dtype)
    x = x.astype(_compute_dtype(x))
    # W (the contiguous dim) first, then H, as torch; a dim whose size is unchanged is copied
    # whatever the scale_factor (torch's forward does; its backward filters it anyway).
    for axis, spec in ((3, "nchw,ow->ncho"), (2, "nchw,oh->ncow")):
        n_in, n_out = x.shape[axis], output_size[axis - 2]
        if n_in != n_out:
            w = aa_weights(n_in, n_out, bool(align_corners), scales[axis - 2], mode, ft)
            # HIGHEST: torch's kernel is a float loop, not a matmul that TF32 settings touch.
            x = jnp.einsum(spec, x, jnp.asarray(w, x.dtype), precision=jax.lax.Precision.HIGHEST)
            if jnp.issubdtype(dtype, jnp.integer):
                # torch's uint8 kernel stores the W pass as uint8: its overshoot is clipped.
                x = _cast_back(x, dtype).astype(x.dtype)
    return _cast_back(x, dtype)


def upsample_bilinear2d_aa(
    input: Array, output_size: Sequence[int], align_corners: bool, scales: Sequence[float | None]
) -> Array:
    """Antialiased ``bilinear`` resize of ``(N, C, H, W)`` (torch's ``_upsample_bilinear2d_aa``).

    Args:
        input: ``(N, C, H, W)``.
        output_size: ``(H_out, W_out)``.
        align_corners: use the scale ``(in - 1) / (out - 1)`` (the centres stay half-pixel).
        scales: one ``scale_factor`` (or None) per spatial dim.

    Returns:
        ``(N, C, H_out, W_out)`` in the input's dtype. Downsampling averages every input pixel
        under the stretched triangle filter (Pillow's ``BILINEAR`` resize); upsampling is the
        plain bilinear interpolation except at the borders, where weights are renormalized.

    Example:
        >>> x = jnp.arange(6.0).reshape(1, 1, 1, 6)
        >>> y = upsample_bilinear2d_aa(x, (1, 3), False, (None, None))
        >>> [f"{v:.3f}" for v in y[0, 0, 0].tolist()]
        ['0.714', '2.500', '4.286']
    """
    return _resample_aa(jnp.asarray(input), output_size, align_corners, scales, "bilinear")


def upsample_bicubic2d_aa(
    input: Array, output_size: Sequence[int], align_corners: bool, scales: Sequence[float | None]
) -> Array:
    """Antialiased ``bicubic`` resize of ``(N, C, H, W)`` (torch's ``_upsample_bicubic2d_aa``).

    Keys' cubic filter with ``a = -0.5`` (Pillow's ``BICUBIC``), stretched when downsampling;
    see :func:`upsample_bilinear2d_aa` for the arguments.

    Example:
        >>> upsample_bicubic2d_aa(jnp.ones((1, 1, 8, 8)), (3, 5), False, (None, None)).shape
        (1, 1, 3, 5)
    """
    return _resample_aa(jnp.asarray(input), output_size, align_corners, scales, "bicubic")


_AREA = {
    1: _pooling.adaptive_avg_pool1d,
    2: _pooling.adaptive_avg_pool2d,
    3: _pooling.adaptive_avg_pool3d,
}


def _is_int(v: Any) -> bool:
    try:
        operator.index(v)
    except TypeError:
        return False
    return not isinstance(v, bool)


def plan(
    shape: Sequence[int],
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> tuple[Callable[..., Array], tuple]:
    """torch's ``interpolate`` argument handling: ``(kernel, its arguments after the input)``.

    Needs only the input's shape, so ``spx.nn.functional.interpolate`` validates and picks the
    kernel in Python and records just that kernel (which the autocast tables key on).
    """
    shape = tuple(int(n) for n in shape)
    if mode not in MODES:
        if mode == "lanczos":
            raise NotImplementedError(
                "interpolate: mode='lanczos' (antialiased Lanczos-3) is not supported by spx; "
                "use mode='bicubic' with antialias=True (Pillow's BICUBIC)"
            )
        raise NotImplementedError(
            f"interpolate: unknown mode {mode!r}; expected one of {' | '.join(MODES)}"
        )
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                f"linear | bilinear | bicubic | trilinear (got mode={mode!r}); leave it None"
            )
    elif align_corners is None:
        align_corners = False
    # As torch: the sizes are checked before the rank (a 2-D input has no spatial dims).
    dim = len(shape) - 2
    spatial = list(shape[2:])

    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = list(size) if isinstance(size, Sequence) else [size] * dim
        if len(sizes) != dim:
            raise ValueError(
                "Input and output must have the same number of spatial dimensions, but got "
                f"input with spatial dimensions of {spatial} and output size of {size}. Please "
                "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                "(o1, o2, ...,oK) format."
            )
        if not all(_is_int(v) for v in sizes):
            raise TypeError(
                "expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                f"Tuple[int, int, int], but got size with types {[type(v) for v in sizes]}"
            )
        output_size: list[int] | None = [operator.index(v) for v in sizes]
        scales: list[float] | None = None
    elif scale_factor is not None:
        if isinstance(scale_factor, Sequence):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {spatial} and scale_factor of shape "
                    f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                    "format and scale_factor in (s1, s2, ...,sK) format."
                )
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
        output_size = None
    else:
        raise ValueError("either size or scale_factor should be defined")

    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True  # area pools to a size: torch recomputes it
    if recompute_scale_factor:
        # torch's int(): truncation of the float product, then the kernel sees only the size.
        output_size = [int(n * s) for n, s in zip(spatial, scales, strict=True)]
        scales = None
    if output_size is None:
        output_size = [int(n * s) for n, s in zip(spatial, scales, strict=True)]
    if scales is None:
        scales = [None] * dim

    if antialias and not (mode in _AA_FILTERS and len(shape) == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear and bicubic modes (and torch's lanczos, "
            f"which spx lacks) and requires a 4-D tensor as input (got mode={mode!r} and "
            f"{len(shape)}-D input); use mode='bilinear' or 'bicubic' on (N, C, H, W) input, or "
            "antialias=False"
        )
    if len(shape) not in (3, 4, 5):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {len(shape)}D) for "
            f"the modes: {' | '.join(MODES)} (got {mode}); pass (N, C, *spatial) input "
            "(add a batch dim with x[None])"
        )
    if mode in _LINEAR_DIMS and _LINEAR_DIMS[mode] != dim:
        raise NotImplementedError(
            f"Got {len(shape)}D input, but {mode} mode needs {_LINEAR_DIMS[mode] + 2}D input"
        )
    if mode == "bicubic" and dim != 2:
        raise NotImplementedError(
            f"Input Error: bicubic mode needs 4D input (N, C, H, W), got {len(shape)}D"
        )
    if any(n <= 0 for n in spatial) or any(n <= 0 for n in output_size):
        names = ["D", "H", "W"][-dim:] if dim > 1 else ["W"]
        given, wanted = (
            ", ".join(f"{a}: {n}" for a, n in zip(names, sizes, strict=True))
            for sizes in (spatial, output_size)
        )
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input ({given}) output "
            f"({wanted}); pass a larger size or scale_factor"
        )

    out, sc = tuple(output_size), tuple(scales)
    if mode == "area":
        return _AREA[dim], (out,)
    if mode in ("nearest", "nearest-exact"):
        return upsample_nearest, (out, sc, mode == "nearest-exact")
    if antialias:
        kernel = upsample_bicubic2d_aa if mode == "bicubic" else upsample_bilinear2d_aa
        return kernel, (out, bool(align_corners), sc)
    if mode == "bicubic":
        return upsample_bicubic2d, (out, bool(align_corners), sc)
    return upsample_linear, (out, bool(align_corners), sc)


def interpolate(
    input: Array,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Array:
    """Resize ``(N, C, *spatial)`` input (mirrors ``torch.nn.functional.interpolate``).

    Args:
        input: ``(N, C, L)`` (``nearest``, ``nearest-exact``, ``linear``, ``area``),
            ``(N, C, H, W)`` (those, ``bilinear``, ``bicubic``) or ``(N, C, D, H, W)``
            (those, ``trilinear``).
        size: output spatial size: an int or one int per spatial dim.
        scale_factor: multiplier per spatial dim (a float or a sequence); the output size is
            ``floor(in * scale_factor)``. Exactly one of ``size`` and ``scale_factor``.
        mode: ``'nearest'`` (torch's legacy ``floor(dst * in / out)``), ``'nearest-exact'``,
            ``'linear'``, ``'bilinear'``, ``'bicubic'``, ``'trilinear'`` or ``'area'``.
        align_corners: linear and cubic modes only (default False): True maps the corner
            pixels' centres onto each other.
        recompute_scale_factor: True computes the output size from ``scale_factor`` and then
            interpolates as if that size had been given (the scale becomes in/out).
        antialias: ``bilinear`` and ``bicubic`` on ``(N, C, H, W)`` only (else torch's
            ValueError): low-pass filter when downsampling, as Pillow's resize does, so
            detail finer than the output's pixels averages out instead of aliasing.

    Returns:
        ``(N, C, *output_size)`` in the input's dtype.

    Example:
        >>> x = jnp.arange(4.0).reshape(1, 1, 2, 2)
        >>> interpolate(x, scale_factor=2, mode="bilinear")[0, 0, 0].tolist()
        [0.0, 0.25, 0.75, 1.0]
    """
    x = jnp.asarray(input)
    kernel, args = plan(
        x.shape, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias
    )
    return kernel(x, *args)
