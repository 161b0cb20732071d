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

Gradients are JAX's transposes of the gathers (scatter-adds), which is what torch's backward
kernels compute — except where torch's backward takes a size shortcut its forward does not
(3-D ``nearest`` with exactly doubled sizes, ``bicubic`` with unchanged sizes from a
``scale_factor``): there spx's gradient is the true one of the forward both compute.
``area`` is ``adaptive_avg_pool{1,2,3}d``, as in torch. Integer (uint8) images in the linear
and cubic modes: the float result rounded and saturated; torch's uint8 kernels are a separate
fixed-point algorithm (bilinear within 1 level of spx's, bicubic within ~10 at the borders).

See https://pytorch.org/docs/stable/generated/torch.nn.functional.interpolate.html
"""

from __future__ import annotations

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
                "use mode='bicubic'"
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
    if len(shape) not in (3, 4, 5):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {len(shape)}D) for "
            f"the modes: {' | '.join(MODES)} (got {mode}); pass (N, C, *spatial) input "
            "(add a batch dim with x[None])"
        )
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

    if antialias:
        if mode in ("bilinear", "bicubic") and dim == 2:
            raise NotImplementedError(
                f"interpolate: antialias=True (mode={mode!r}) is not supported by spx; use "
                "antialias=False, or mode='area' to downsample by an integer factor"
            )
        raise ValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and "
            f"requires a 4-D tensor as input (got mode={mode!r}, {len(shape)}-D input)"
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
        antialias: not supported (NotImplementedError for ``bilinear``/``bicubic``; torch's
            ValueError for the other modes).

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
