"""Fractional max pooling (mirrors torch's ``fractional_max_pool2d`` / ``fractional_max_pool3d``).

Graham's fractional max pooling (https://arxiv.org/abs/1412.6071) takes the max over
``kernel_size`` windows whose starts advance by a pseudo-random step, so that ``L_in`` input
positions map onto any ``L_out`` outputs. Per ``(n, c)`` plane and per spatial dim one sample
``u`` in ``[0, 1)`` fixes the starts, by torch's CPU kernel (``generate_intervals``)::

    alpha = (L_in - k) / (L_out - 1)
    start[i] = int((i + u) * alpha) - int(u * alpha)   for i < L_out - 1
    start[L_out - 1] = L_in - k

computed in the input's dtype as torch computes it (each float16/bfloat16 step rounded, via
``lax.reduce_precision``), so that given the same samples (torch's ``_random_samples``
argument) the windows, values and indices are torch's. The samples are ``(N, C, nd)``; in 2-D
column 0 drives the width and column 1 the height, in 3-D the columns are ``(T, H, W)``.
Without samples they are drawn uniformly from ``spx.manual_seed``'s generator (or ``key=``),
as torch draws them with ``torch.rand``.

Each window is reduced one dim at a time (last dim first), as in :mod:`.pool_indices`: the
first maximum in row-major order wins and a NaN wins over numbers (the last one in scan order),
as in torch's kernel. Indices are each maximum's flat position in its ``(n, c)`` plane, int32
(torch's are int64). The output is a gather, so the gradient adds up at each chosen element,
as torch's backward does. Everything has a static shape: the pool compiles under ``jit``.

See https://pytorch.org/docs/stable/generated/torch.nn.functional.fractional_max_pool2d.html
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx import _validate
from spx import random as spx_random
from spx._tensor.recorded import recorded
from spx.nn.functional._utils import resolve_key
from spx.nn.functional.pool_indices import _check_index_range, _flat_positions, window_max

Array = jax.Array
_Size = int | Sequence[int]
_Ratio = float | Sequence[float]
_DIMS = {2: ("height", "width"), 3: ("time", "height", "width")}
# Which column of a plane's samples drives each spatial dim (torch's kernels).
_SAMPLE_COLUMN = {2: (1, 0), 3: (0, 1, 2)}


def _int_sizes(value: Any, nd: int, arg: str, name: str) -> tuple[int, ...]:
    """torch's ``IntArrayRef[nd]`` argument: an int, or exactly ``nd`` ints."""
    if _validate.is_int(value):
        return (int(value),) * nd
    if isinstance(value, Sequence) and not isinstance(value, str):
        items = tuple(value)
        if len(items) != nd:
            raise RuntimeError(
                f"{name}: {arg} must either be a single int or a tuple of {nd} ints, got {value!r}"
            )
        if all(_validate.is_int(v) for v in items):
            return tuple(int(v) for v in items)
    raise TypeError(f"{name}: {arg} must be an int or a tuple of {nd} ints, got {value!r}")


def output_size_of(
    shape: Sequence[int],
    kernel_size: _Size,
    output_size: _Size | None,
    output_ratio: _Ratio | None,
    nd: int,
    name: str,
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(kernel, output size)`` for an input of ``shape``, checked as torch checks them.

    ``output_size`` wins when both are given (torch ignores the ratio then); a ratio ``r`` gives
    ``int(L_in * r)`` per dim.
    """
    if output_size is None and output_ratio is None:
        raise ValueError(
            f"{name} requires specifying either an output_size or an output_ratio; pass e.g. "
            f"output_ratio={(0.5,) * nd}"
        )
    kernel = _int_sizes(kernel_size, nd, "kernel_size", name)
    if any(k < 1 for k in kernel):
        raise ValueError(f"{name}: kernel_size must be greater than 0, but got {kernel_size!r}")
    if len(shape) not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"{name}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) input, got "
            f"shape {tuple(shape)}"
        )
    spatial = tuple(shape[-nd:])
    if output_size is None:
        ratios = output_ratio
        if not isinstance(ratios, Sequence):
            ratios = (ratios,) * nd
        if len(ratios) != nd:
            raise ValueError(
                f"{name} requires output_ratio to be a single number or a tuple of {nd} "
                f"numbers, got {output_ratio!r}"
            )
        sizes = tuple(int(n * float(r)) for n, r in zip(spatial, ratios, strict=True))
    else:
        sizes = _int_sizes(output_size, nd, "output_size", name)
    if any(o < 0 for o in sizes):
        raise RuntimeError(f"{name}: output_size must be non-negative, got {sizes}")
    return kernel, sizes


def _check_input(
    shape: Sequence[int], kernel: tuple[int, ...], sizes: tuple[int, ...], nd: int, name: str
) -> None:
    # torch's check, whatever the rank: only dim 0 may be empty (a batch, or unbatched C).
    for i, n in enumerate(shape[1:], start=1):
        if n == 0:
            raise RuntimeError(
                f"{name}: expected an input with non-zero size for non-batch dimensions, but "
                f"got {tuple(shape)} with dimension {i} being empty"
            )
    spatial = tuple(shape[-nd:])
    # torch checks H, W in 2-D and T, W, H in 3-D; 3-D also wants the window to fit
    # strictly (outputT + poolT - 1 < inputT), 2-D only to fit.
    order = range(nd) if nd == 2 else (0, 2, 1)
    for i in order:
        n, k, o = spatial[i], kernel[i], sizes[i]
        fits = o + k - 1 <= n if nd == 2 else (k <= n and o + k - 1 < n)
        if not fits:
            most = n - k + 1 if nd == 2 else n - k
            raise RuntimeError(
                f"{name}: pool {_DIMS[nd][i]} {k} too large relative to input {_DIMS[nd][i]} "
                f"{n} for an output {_DIMS[nd][i]} of {o}; the output can have at most "
                f"{max(most, 0)} there: use a smaller kernel_size or output_size"
            )


def _check_samples(samples: Any, shape: Sequence[int], dtype: Any, nd: int, name: str) -> None:
    """torch's ``fractional_max_pool_check_shape``."""
    s_dtype = getattr(samples, "dtype", None)
    if s_dtype is None or jnp.dtype(s_dtype) != jnp.dtype(dtype):
        raise RuntimeError(
            f"{name}: expect _random_samples to have the same dtype as input ({dtype}), got "
            f"{s_dtype}; convert them, e.g. samples.to(input.dtype)"
        )
    s_shape = tuple(np.shape(samples))
    batch, channels = (1, shape[0]) if len(shape) == nd + 1 else (shape[0], shape[1])
    if len(s_shape) != 3:
        raise RuntimeError(
            f"{name}: expect _random_samples to have 3 dimensions (N, C, {nd}), got shape {s_shape}"
        )
    if s_shape[0] < batch:
        raise RuntimeError(
            f"{name}: expect _random_samples.size(0) no less than the input batch size "
            f"{batch}, got shape {s_shape}"
        )
    if s_shape[1] != channels:
        raise RuntimeError(
            f"{name}: expect _random_samples.size(1) equal to the input channel size "
            f"{channels}, got shape {s_shape}"
        )
    if s_shape[2] != nd:
        raise RuntimeError(
            f"{name}: expect _random_samples.size(2) equal to {nd}; got {s_shape[2]} (shape "
            f"{s_shape})"
        )


def _intervals(sample: Array, size: int, out: int, k: int, dtype: Any) -> Array:
    """int32 ``(*sample.shape, out)``: torch's ``generate_intervals`` in the input's dtype."""
    last = jnp.full((*sample.shape, 1), size - k, jnp.int32)
    if out == 1:
        return last
    compute = jnp.float64 if dtype == jnp.float64 else jnp.float32
    if dtype in (jnp.float32, jnp.float64):
        rnd = lambda v: v  # noqa: E731 - one IEEE operation each, as in C++
    else:
        # c10::Half / BFloat16 arithmetic: each operation in float, rounded to the type.
        info = jnp.finfo(dtype)
        rnd = lambda v: jax.lax.reduce_precision(v, info.nexp, info.nmant)  # noqa: E731
    # alpha = scalar_t(size - k) / scalar_t(out - 1), on the host in the input's own type.
    t = np.dtype(dtype).type
    alpha = np.asarray(t(size - k) / t(out - 1), compute)
    u = sample.astype(compute)
    i = rnd(jnp.arange(out - 1, dtype=compute))
    starts = rnd(rnd(i + u[..., None]) * alpha).astype(jnp.int32)  # C++ int cast: truncation
    starts = starts - rnd(u * alpha).astype(jnp.int32)[..., None]
    return jnp.concatenate([starts, last], axis=-1)


def _select(x: Array, flat: Array, axis: int, starts: Array, k: int) -> tuple[Array, Array]:
    """Reduce ``axis`` to ``starts.shape[-1]`` windows of ``k`` taps, keeping each argmax.

    ``starts`` is ``(N, C, out)``: each plane has its own windows.
    """
    n, c, out = starts.shape
    size = x.shape[axis]
    # Samples outside [0, 1) would put windows outside the input (torch reads out of bounds).
    pos = jnp.clip(starts[..., None] + jnp.arange(k, dtype=jnp.int32), 0, size - 1)
    index_shape = [n, c] + [1] * (x.ndim - 2)
    index_shape[axis] = out * k
    pos = pos.reshape(index_shape)
    tap_shape = (*x.shape[:axis], out, k, *x.shape[axis + 1 :])
    taps = jnp.moveaxis(jnp.take_along_axis(x, pos, axis=axis).reshape(tap_shape), axis + 1, -1)
    taps_flat = jnp.take_along_axis(flat, pos, axis=axis).reshape(tap_shape)
    taps_flat = jnp.moveaxis(taps_flat, axis + 1, -1)
    return window_max(taps, taps_flat)  # no mask: every window lies inside the input


def _fractional_max_pool(
    input: Array,
    random_samples: Array | None,
    key: Array | None,
    kernel: tuple[int, ...],
    sizes: tuple[int, ...],
    nd: int,
) -> tuple[Array, Array]:
    """The pool over arrays; arguments already checked. Returns ``(output, int32 indices)``."""
    x = jnp.asarray(input)
    unbatched = x.ndim == nd + 1
    if unbatched:
        x = x[None]
    n, c, *spatial = x.shape
    if random_samples is None:
        # torch.rand(N, C, nd, dtype=input.dtype)
        samples = jax.random.uniform(resolve_key(key), (n, c, nd), x.dtype)
    else:
        samples = jnp.asarray(random_samples)[:n]
    samples = jax.lax.stop_gradient(samples)
    out_shape = (n, c, *sizes)
    if math.prod(out_shape) == 0:
        y, idx = jnp.zeros(out_shape, x.dtype), jnp.zeros(out_shape, jnp.int32)
    else:
        y, idx = x, _flat_positions(tuple(spatial), (n, c))
        for i in reversed(range(nd)):  # last dim first: see pool_indices' docstring
            sample = samples[..., _SAMPLE_COLUMN[nd][i]]
            starts = _intervals(sample, spatial[i], sizes[i], kernel[i], x.dtype)
            y, idx = _select(y, idx, 2 + i, starts, kernel[i])
    return (y[0], idx[0]) if unbatched else (y, idx)


_fractional_max_pool_op = recorded(_fractional_max_pool)


def _fractional(
    input: Any,
    kernel_size: _Size,
    output_size: _Size | None,
    output_ratio: _Ratio | None,
    random_samples: Any,
    key: Any,
    nd: int,
    name: str,
) -> tuple[Any, Any]:
    shape = tuple(np.shape(input))
    kernel, sizes = output_size_of(shape, kernel_size, output_size, output_ratio, nd, name)
    dtype = getattr(input, "dtype", None) or jnp.asarray(input).dtype
    _check_input(shape, kernel, sizes, nd, name)
    if not jnp.issubdtype(dtype, jnp.floating):
        raise NotImplementedError(
            f"{name}: input must be floating point, got {dtype}; convert it first, e.g. x.float()"
        )
    _check_index_range(math.prod(shape[-nd:]), name)
    if random_samples is not None:
        _check_samples(random_samples, shape, dtype, nd, name)
    elif key is None:
        key = spx_random.next_key_tensor()  # recorded: a compiled step draws fresh samples
    return _fractional_max_pool_op(input, random_samples, key, kernel, sizes, nd)


def fractional_max_pool2d_with_indices(
    input: Array,
    kernel_size: _Size,
    output_size: _Size | None = None,
    output_ratio: _Ratio | None = None,
    return_indices: bool = False,
    _random_samples: Array | None = None,
    *,
    key: Array | None = None,
) -> tuple[Array, Array]:
    """2-D fractional max pooling and each maximum's position (mirrors torch's function).

    Always returns ``(output, indices)`` (``return_indices`` is accepted and ignored, as in
    torch); see :func:`fractional_max_pool2d` for the arguments.

    Example:
        >>> import spx
        >>> import spx.nn.functional as F
        >>> out, idx = F.fractional_max_pool2d_with_indices(spx.randn(1, 2, 9, 9), 2, 4)
        >>> idx.shape, idx.dtype
        (spx.Size([1, 2, 4, 4]), dtype('int32'))
    """
    return _fractional(
        input, kernel_size, output_size, output_ratio, _random_samples, key, 2,
        "fractional_max_pool2d",
    )  # fmt: skip


def fractional_max_pool2d(
    input: Array,
    kernel_size: _Size,
    output_size: _Size | None = None,
    output_ratio: _Ratio | None = None,
    return_indices: bool = False,
    _random_samples: Array | None = None,
    *,
    key: Array | None = None,
) -> Array | tuple[Array, Array]:
    """2-D fractional max pooling (mirrors ``torch.nn.functional.fractional_max_pool2d``).

    Max over ``kernel_size`` windows whose starts step pseudo-randomly so that the input maps
    onto ``output_size`` (see the module docstring for torch's formula, reproduced exactly).

    Args:
        input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``, floating point.
        kernel_size: int or ``(kH, kW)``.
        output_size: int or ``(H_out, W_out)``, with ``H_out + kH - 1 <= H_in`` (likewise W).
        output_ratio: instead of ``output_size``: a number or a pair in ``(0, 1)``;
            ``H_out = int(H_in * ratio)``. ``output_size`` wins when both are given.
        return_indices: also return each maximum's flat position ``h * W_in + w`` in its
            plane (int32; torch's are int64), for :func:`max_unpool2d`.
        _random_samples: ``(N', C, 2)`` samples in ``[0, 1)`` of the input's dtype,
            ``N' >= N``: column 0 places the windows along W, column 1 along H. Giving torch's
            samples reproduces torch's result exactly.
        key: jax PRNG key to draw the samples from when ``_random_samples`` is None (an spx
            addition, as in the dropouts); default: the next key of ``spx.manual_seed``'s
            generator.

    Returns:
        ``(N, C, H_out, W_out)`` (unbatched: no ``N``), and the int32 indices of that shape
        with ``return_indices``.

    Raises:
        ValueError: neither ``output_size`` nor ``output_ratio``; a kernel size below 1.
        RuntimeError: a window that does not fit, a bad input rank or ``_random_samples``.

    Example:
        >>> import spx
        >>> import spx.nn.functional as F
        >>> F.fractional_max_pool2d(spx.randn(2, 3, 10, 10), 3, output_ratio=0.5).shape
        spx.Size([2, 3, 5, 5])
    """
    out, idx = fractional_max_pool2d_with_indices(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples, key=key
    )
    return (out, idx) if return_indices else out


def fractional_max_pool3d_with_indices(
    input: Array,
    kernel_size: _Size,
    output_size: _Size | None = None,
    output_ratio: _Ratio | None = None,
    return_indices: bool = False,
    _random_samples: Array | None = None,
    *,
    key: Array | None = None,
) -> tuple[Array, Array]:
    """3-D fractional max pooling and each maximum's position (mirrors torch's function).

    Always returns ``(output, indices)``; see :func:`fractional_max_pool3d` for the arguments.

    Example:
        >>> import spx
        >>> import spx.nn.functional as F
        >>> F.fractional_max_pool3d_with_indices(spx.randn(1, 2, 6, 6, 6), 2, 3)[1].shape
        spx.Size([1, 2, 3, 3, 3])
    """
    return _fractional(
        input, kernel_size, output_size, output_ratio, _random_samples, key, 3,
        "fractional_max_pool3d",
    )  # fmt: skip


def fractional_max_pool3d(
    input: Array,
    kernel_size: _Size,
    output_size: _Size | None = None,
    output_ratio: _Ratio | None = None,
    return_indices: bool = False,
    _random_samples: Array | None = None,
    *,
    key: Array | None = None,
) -> Array | tuple[Array, Array]:
    """3-D fractional max pooling (mirrors ``torch.nn.functional.fractional_max_pool3d``).

    Args:
        input: ``(N, C, T_in, H_in, W_in)`` or ``(C, T_in, H_in, W_in)``, floating point.
        kernel_size: int or ``(kT, kH, kW)``.
        output_size: int or ``(T_out, H_out, W_out)``. As torch, each window must fit
            strictly: ``T_out + kT - 1 < T_in`` (likewise H and W).
        output_ratio: instead of ``output_size``: a number or a triple in ``(0, 1)``.
        return_indices: also return each maximum's flat position ``t * H * W + h * W + w``
            in its plane (int32), for :func:`max_unpool3d`.
        _random_samples: ``(N', C, 3)`` samples in ``[0, 1)`` of the input's dtype,
            ``N' >= N``, columns for T, H and W.
        key: jax PRNG key for the samples when ``_random_samples`` is None (spx addition).

    Returns:
        ``(N, C, T_out, H_out, W_out)`` (unbatched: no ``N``), and the int32 indices with
        ``return_indices``.

    Raises:
        ValueError: neither ``output_size`` nor ``output_ratio``; a kernel size below 1.
        RuntimeError: a window that does not fit, a bad input rank or ``_random_samples``.

    Example:
        >>> import spx
        >>> import spx.nn.functional as F
        >>> F.fractional_max_pool3d(spx.randn(2, 3, 8, 8, 8), 2, output_size=(3, 4, 5)).shape
        spx.Size([2, 3, 3, 4, 5])
    """
    out, idx = fractional_max_pool3d_with_indices(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples, key=key
    )
    return (out, idx) if return_indices else out
