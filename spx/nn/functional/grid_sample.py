"""``affine_grid`` and ``grid_sample``: spatial transformers (torch's index math, exactly).

``affine_grid`` maps an output pixel grid through a batch of affine matrices into normalized
``[-1, 1]`` input coordinates; ``grid_sample`` reads the input at such coordinates. The
coordinate arithmetic follows ATen's ``GridSampler.h`` step by step (unnormalize, pad by
clipping or reflecting, then interpolate), so values agree with torch to rounding. Gradients
come from JAX; the clip and reflect steps are written with ``where`` so their gradients at
the borders are torch's (a coordinate on a border counts as out of bounds: gradient 0).

See https://pytorch.org/docs/stable/generated/torch.nn.functional.grid_sample.html
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence

import jax
import jax.numpy as jnp

Array = jax.Array

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")
_ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since "
    "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
    "documentation of grid_sample for details."
)
_CUBIC_A = -0.75  # torch's bicubic convolution constant


def _linspace_from_neg_one(steps: int, align_corners: bool, dtype: jnp.dtype) -> Array:
    """torch's ``linspace_from_neg_one``: its linspace (symmetric halves), scaled when not
    aligning corners; one step is the single coordinate 0."""
    if steps <= 1:
        return jnp.zeros((1,), dtype)
    i = jnp.arange(steps, dtype=dtype)
    step = jnp.asarray(2.0 / (steps - 1), dtype)
    r = jnp.where(i < steps // 2, -1 + step * i, 1 - step * (steps - 1 - i))
    if not align_corners:
        r = r * ((steps - 1) / steps)
    return r.astype(dtype)


def affine_grid(theta: Array, size: Sequence[int], align_corners: bool | None = None) -> Array:
    """Sampling grids for a batch of affine maps (mirrors ``torch...affine_grid``).

    Args:
        theta: ``(N, 2, 3)`` for a 2-D ``size`` ``(N, C, H, W)``, or ``(N, 3, 4)`` for a 3-D
            ``size`` ``(N, C, D, H, W)``; floating point.
        size: the output image's size.
        align_corners: as in :func:`grid_sample` (``None`` warns, as torch, and means False).

    Returns:
        ``(N, H, W, 2)`` or ``(N, D, H, W, 3)`` normalized ``(x, y[, z])`` coordinates.

    Example:
        >>> eye = jnp.array([[[1.0, 0, 0], [0, 1, 0]]])
        >>> F.affine_grid(eye, (1, 1, 2, 3), align_corners=True)[0, 0]  # x: -1, 0, 1
    """
    theta = jnp.asarray(theta)
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=3)
        align_corners = False
    if not jnp.issubdtype(theta.dtype, jnp.floating):
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(int(s) for s in size)
    if len(size) in (4, 5):
        d = len(size) - 2
        if theta.ndim != 3 or theta.shape[-2:] != (d, d + 1):
            raise ValueError(
                f"Expected a batch of {d}D affine matrices of shape Nx{d}x{d + 1} for size "
                f"{size}. Got spx.Size({list(theta.shape)})."
            )
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an intended use case of affine_grid. See the "
            "documentation of affine_grid for details.",
            UserWarning,
            stacklevel=3,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(
            f"affine_grid: theta has batch size {theta.shape[0]} but size asks for {size[0]}"
        )
    # Base coordinates (x, y[, z], 1), x along the last spatial dim, as torch lays them out.
    axes = [_linspace_from_neg_one(s, align_corners, theta.dtype) for s in spatial]
    mesh = jnp.meshgrid(*axes, indexing="ij")  # one per spatial dim, in (D,) H, W order
    base = jnp.stack([*reversed(mesh), jnp.ones(mesh[0].shape, theta.dtype)], axis=-1)
    # An elementwise product and sum, not a matmul: exact float32 on GPUs (no TF32).
    lead = (slice(None),) + (None,) * d
    grid = (base[None, ..., None, :] * theta[lead]).sum(-1)
    return grid.reshape(size[0], *spatial, d)


def _unnormalize(coord: Array, size: int, align_corners: bool) -> Array:
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _clip(coord: Array, size: int) -> Array:
    # torch's clip_coordinates(_set_grad): the borders themselves get gradient 0.
    hi = size - 1
    return jnp.where(coord <= 0, 0, jnp.where(coord >= hi, hi, coord)).astype(coord.dtype)


def _reflect(coord: Array, twice_low: int, twice_high: int) -> Array:
    """torch's reflect_coordinates: fold ``coord`` into ``[low, high]`` by mirroring."""
    if twice_low == twice_high:
        return jnp.zeros_like(coord)
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = coord - low
    c = jnp.where(c < 0, -c, c)  # not abs: torch's gradient at 0 is +1
    extra = jnp.fmod(c, span)
    flips = jnp.floor(c / span)
    even = jnp.fmod(flips, 2) == 0
    return jnp.where(even, extra + low, span - extra + low)


def _pad_coordinates(coord: Array, size: int, padding_mode: str, align_corners: bool) -> Array:
    if padding_mode == "border":
        return _clip(coord, size)
    if padding_mode == "reflection":
        if align_corners:
            coord = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect(coord, -1, 2 * size - 1)
        return _clip(coord, size)
    return coord


def _gather(x: Array, index: Sequence[Array], sizes: Sequence[int]) -> Array:
    """``x[n, :, index...]`` per batch element, 0 where an index is out of bounds.

    Args:
        x: ``(N, C, *sizes)``.
        index: one integer-valued float array ``(N, *out)`` per spatial dim.

    Returns:
        ``(N, C, *out)``.
    """
    inside = math.prod(
        [(i >= 0) & (i <= s - 1) for i, s in zip(index, sizes, strict=True)][1:],
        start=(index[0] >= 0) & (index[0] <= sizes[0] - 1),
    )
    safe = [jnp.clip(i, 0, s - 1).astype(jnp.int32) for i, s in zip(index, sizes, strict=True)]
    values = jax.vmap(lambda img, *ix: img[(slice(None), *ix)])(x, *safe)
    return jnp.where(inside[:, None], values, jnp.zeros((), x.dtype))


def _cubic_coefficients(t: Array) -> list[Array]:
    """torch's get_cubic_upsample_coefficients (A = -0.75) for offsets -1, 0, 1, 2."""
    a = _CUBIC_A

    def conv1(x: Array) -> Array:
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def conv2(x: Array) -> Array:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [conv2(t + 1), conv1(t), conv1(1 - t), conv2(2 - t)]


def _check(x: Array, grid: Array, mode: str, padding_mode: str) -> None:
    if mode not in _MODES:
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in _PADDINGS:
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    if x.dtype != grid.dtype:
        raise RuntimeError(
            f"grid_sampler(): expected input and grid to have same dtype, but input has "
            f"{x.dtype} and grid has {grid.dtype}"
        )
    if grid.shape[-1] != x.ndim - 2:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {x.ndim - 2} in last dimension, but "
            f"got grid with sizes {list(grid.shape)}"
        )
    if x.ndim not in (4, 5) or grid.ndim != x.ndim:
        raise RuntimeError(
            "grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, "
            f"but got input with sizes {list(x.shape)} and grid with sizes {list(grid.shape)}"
        )
    if x.shape[0] != grid.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input "
            f"with sizes {list(x.shape)} and grid with sizes {list(grid.shape)}"
        )
    for dim in range(2, x.ndim):
        if x.shape[dim] == 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but "
                f"input has sizes {list(x.shape)} with dimension {dim} being empty"
            )
    if mode == "bicubic" and x.ndim != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")


def grid_sample(
    input: Array,
    grid: Array,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Array:
    """Sample ``input`` at normalized grid coordinates (mirrors ``torch...grid_sample``).

    Args:
        input: ``(N, C, H, W)`` or ``(N, C, D, H, W)``.
        grid: ``(N, Ho, Wo, 2)`` or ``(N, Do, Ho, Wo, 3)``, ``(x, y[, z])`` in ``[-1, 1]``
            (x indexes W); same dtype as ``input``.
        mode: ``"bilinear"`` (trilinear for 5-D), ``"nearest"`` (ties to even, as torch) or
            ``"bicubic"`` (4-D only).
        padding_mode: ``"zeros"``, ``"border"`` or ``"reflection"``, for points outside.
        align_corners: whether -1 and 1 are the centres (True) or the outer edges (False) of
            the corner pixels. ``None`` warns, as torch, and means False.

    Returns:
        ``(N, C, Ho, Wo)`` or ``(N, C, Do, Ho, Wo)``.

    Example:
        >>> x = jnp.arange(4.0).reshape(1, 1, 2, 2)
        >>> F.grid_sample(x, jnp.zeros((1, 1, 1, 2)), align_corners=False)  # 1.5, the centre
    """
    x, grid = jnp.asarray(input), jnp.asarray(grid)
    _check(x, grid, mode, padding_mode)
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=3)
        align_corners = False
    sizes = x.shape[2:]
    d = len(sizes)
    # grid[..., 0] is x (the last dim), so spatial dim a reads component d - 1 - a.
    coords = [_unnormalize(grid[..., d - 1 - a], sizes[a], align_corners) for a in range(d)]
    if mode == "bicubic":
        return _bicubic(x, coords, sizes, padding_mode, align_corners)
    coords = [
        _pad_coordinates(c, s, padding_mode, align_corners)
        for c, s in zip(coords, sizes, strict=True)
    ]
    if mode == "nearest":
        return _gather(x, [jnp.round(c) for c in coords], sizes)  # round: ties to even
    lows = [jnp.floor(c) for c in coords]
    out = None
    for corner in itertools.product((0, 1), repeat=d):
        # torch's weights: (hi - c) for the low corner, (c - lo) for the high one.
        weights = [
            (c - lo) if bit else (lo + 1 - c)
            for c, lo, bit in zip(coords, lows, corner, strict=True)
        ]
        w = math.prod(weights[1:], start=weights[0])
        term = _gather(x, [lo + bit for lo, bit in zip(lows, corner, strict=True)], sizes)
        term = term * w[:, None].astype(x.dtype)
        out = term if out is None else out + term
    return out


def _bicubic(
    x: Array, coords: list[Array], sizes: tuple[int, ...], padding_mode: str, align_corners: bool
) -> Array:
    """torch's bicubic sampling: 4 x 4 taps, each padded on its own (get_value_bounded)."""
    iy, ix = coords
    y0, x0 = jnp.floor(iy), jnp.floor(ix)
    wy, wx = _cubic_coefficients(iy - y0), _cubic_coefficients(ix - x0)
    out = None
    for i in range(4):
        row = None
        yi = _pad_coordinates(y0 - 1 + i, sizes[0], padding_mode, align_corners)
        for j in range(4):
            xj = _pad_coordinates(x0 - 1 + j, sizes[1], padding_mode, align_corners)
            # torch truncates the padded coordinate to an int before its bounds check.
            tap = _gather(x, [jnp.trunc(yi), jnp.trunc(xj)], sizes)
            tap = tap * wx[j][:, None].astype(x.dtype)
            row = tap if row is None else row + tap
        row = row * wy[i][:, None].astype(x.dtype)
        out = row if out is None else out + row
    return out
