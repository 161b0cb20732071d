"""Sums, means or maxima of bags of embeddings (mirrors ``torch.nn.functional.embedding_bag``).

A bag is a run of indices: the rows of a 2-D ``(B, L)`` input, or the slices of a 1-D input that
``offsets`` start. Each index becomes the id of its bag (``searchsorted`` over the offsets), the
looked-up rows are reduced with ``jax.ops.segment_sum``/``segment_max`` over those ids, and no
``(B, L, D)`` array of padded bags is ever built; everything has a static shape and compiles.
Indices equal to ``padding_idx`` belong to no bag (they are neither summed nor counted), and an
empty bag gives zeros in every mode, as in torch. In ``"max"`` mode a bag's gradient goes, per
feature, all to the first row (in input order) holding the maximum, as torch's ``max_indices``
send it, not split among tied rows.

Two places where torch 2.13's CPU kernel is inconsistent follow the documented semantics here:

* ``scale_grad_by_freq`` divides each row's gradient by the number of times its index occurs in
  ``input``. torch's CPU backward divides some rows by another index's count
  (https://github.com/pytorch/pytorch/issues/190063; CUDA and ``F.embedding`` are correct).
* With ``include_last_offset=True`` and a final offset before the end of ``input``, the indices
  after it belong to no bag in every mode, forward and backward. torch's CPU kernel excludes
  them from a plain ``sum`` (yet sends them its gradient), includes them in a ``sum`` with
  ``padding_idx`` and in ``max``, and counts them in ``mean``'s divisor only
  (https://github.com/pytorch/pytorch/issues/191965).

``max_norm`` renormalises the looked-up rows of a Tensor ``weight`` in place first (torch's
``embedding_renorm_``); a raw array cannot be written, so the looked-up rows are rescaled in the
output only. ``sparse`` is accepted (after torch's checks) and ignored: gradients are dense.

See https://pytorch.org/docs/stable/generated/torch.nn.functional.embedding_bag.html
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx import _user_code
from spx._tensor import checks
from spx._tensor.checks import known_value
from spx._tensor.grad_mode import no_grad
from spx._tensor.recorded import recorded
from spx._tensor.tensor import Tensor

Array = jax.Array

_MODES = ("sum", "mean", "max")


def embedding_bag(
    input: Array,
    weight: Array,
    offsets: Array | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Array | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Array:
    """Reduce bags of embedding rows (mirrors ``torch.nn.functional.embedding_bag``).

    Args:
        input: integer indices: ``(B, L)`` (``B`` bags of ``L`` indices, ``offsets`` must be
            None) or 1-D ``(n,)`` (the bags concatenated, cut by ``offsets``).
        weight: ``(num_embeddings, embedding_dim)``.
        offsets: with a 1-D input, ``(B,)`` start positions of the bags (the first is 0), or
            ``(B + 1,)`` with ``include_last_offset=True`` (the last is the end of the last bag).
        max_norm: rescale looked-up rows whose ``norm_type``-norm exceeds it (see above).
        norm_type: the p of the norm for ``max_norm``.
        scale_grad_by_freq: divide each row's gradient by its index's count in ``input``
            (``"sum"``/``"mean"`` only).
        mode: ``"sum"`` | ``"mean"`` | ``"max"`` (elementwise over each bag).
        sparse: accepted for compatibility (not with ``"max"``, as torch); gradients are dense.
        per_sample_weights: float weights shaped like ``input``, multiplying each row before
            the sum (``mode="sum"`` only), of ``weight``'s dtype.
        include_last_offset: ``offsets`` has one more entry, the end of the last bag (CSR).
        padding_idx: indices equal to it are left out of their bag (not summed, counted nor
            maximized); negative values count from the end.

    Returns:
        ``(B, embedding_dim)`` of ``weight``'s dtype; an empty bag gives a row of zeros.

    Raises:
        ValueError: bad shapes or mode (torch's messages).
        NotImplementedError: ``per_sample_weights`` with a mode other than ``"sum"``.
        RuntimeError: known indices or offsets out of range, ``padding_idx`` out of range.

    Example:
        >>> import spx
        >>> import spx.nn.functional as F
        >>> weight = spx.arange(12.0).reshape(4, 3)
        >>> F.embedding_bag(spx.tensor([0, 1, 3]), weight, spx.tensor([0, 2]), mode="sum")
        tensor([[ 3.,  5.,  7.],
                [ 9., 10., 11.]])
    """
    for name, value in (("input", input), ("weight", weight)):
        if value is None:
            raise TypeError(f"embedding_bag(): argument '{name}' must be a Tensor, not None")
    in_dtype, w_dtype = _dtype(input), _dtype(weight)
    if jnp.issubdtype(w_dtype, jnp.integer) and jnp.issubdtype(in_dtype, jnp.floating):
        _user_code.warn(
            "Argument order of nn.functional.embedding_bag was changed. Usage "
            "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
            "`embedding_bag(input, weight, ...)`.",
            UserWarning,
        )
        input, weight = weight, input
        in_dtype, w_dtype = w_dtype, in_dtype
    in_shape, w_shape = tuple(np.shape(input)), tuple(np.shape(weight))
    if per_sample_weights is not None and tuple(np.shape(per_sample_weights)) != in_shape:
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({tuple(np.shape(per_sample_weights))}) is "
            f"not None, then it must have the same shape as the input ({in_shape})"
        )
    if len(w_shape) != 2:
        raise ValueError(
            f"weight has to be a 2D Tensor, but got Tensor of dimension {len(w_shape)}"
        )
    if len(in_shape) == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a "
                "mini-batch of fixed length sequences. However, found offsets of type "
                f"{type(offsets)}"
            )
        if in_shape[1] == 0:
            raise RuntimeError(
                f"embedding_bag: a 2D input must have bags of at least one index, got shape "
                f"{in_shape}; use a 1-D input with offsets for empty bags"
            )
        include_last_offset = False
    elif len(in_shape) == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if np.ndim(offsets) != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {len(in_shape)}"
        )
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Use mode='sum' and divide by the "
            "bag sizes for a weighted mean."
        )
    _check_dtypes(in_dtype, offsets, per_sample_weights, w_dtype)
    num = w_shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise RuntimeError(
                f"padding_idx must be within the number of embeddings, -{num} through "
                f"{num - 1}, but got {padding_idx}"
            )
        padding_idx %= num
    _check_values(input, offsets, num, include_last_offset)
    if max_norm is not None and isinstance(weight, Tensor):
        # torch renormalises the looked-up rows of the table itself: the next step starts
        # from them. A raw array cannot be written; the op then scales the output.
        _renorm_(weight, input, max_norm, norm_type)
        max_norm = None
    return _embedding_bag_op(
        input, weight, offsets, per_sample_weights, mode, scale_grad_by_freq,
        include_last_offset, padding_idx, max_norm, norm_type,
    )  # fmt: skip


def _dtype(x: Any) -> Any:
    dtype = getattr(x, "dtype", None)
    return np.asarray(x).dtype if dtype is None and x is not None else dtype


def _check_dtypes(in_dtype: Any, offsets: Any, psw: Any, w_dtype: Any) -> None:
    for name, dtype in (("input", in_dtype), ("offsets", _dtype(offsets))):
        if dtype is not None and not jnp.issubdtype(dtype, jnp.integer):
            raise RuntimeError(
                f"embedding_bag: {name} must hold integer indices, got dtype {dtype}; cast "
                "with .long()"
            )
    if psw is not None and _dtype(psw) != w_dtype:
        raise RuntimeError(
            f"embedding_bag: per_sample_weights has dtype {_dtype(psw)} but weight has "
            f"{w_dtype}; they must match (cast with .to(weight.dtype))"
        )


def _check_values(input: Any, offsets: Any, num: int, include_last_offset: bool) -> None:
    """torch's checks of indices and offsets: the indices' range at once when their values are
    known, else once they are computed (:mod:`spx._tensor.checks`); the offsets when both are
    known now."""

    def check_range(idx: np.ndarray) -> None:
        flat = idx.reshape(-1)
        bad = np.flatnonzero((flat < 0) | (flat >= num))
        if bad.size:
            raise RuntimeError(
                f"embedding_bag: index {bad[0]} of input takes value {flat[bad[0]]} which is "
                f"not in the valid range [0, {num}); check the data or num_embeddings"
            )

    checks.when_known(input, check_range)
    idx = known_value(input) if not isinstance(input, list | tuple) else np.asarray(input)
    off = known_value(offsets) if not isinstance(offsets, list | tuple) else np.asarray(offsets)
    if idx is None or off is None or off.size == 0:
        return
    if off[0] != 0:
        raise RuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
            f"from position 0. However, got {off[0]}"
        )
    if (np.diff(off) < 0).any():
        at = int(np.flatnonzero(np.diff(off) < 0)[0]) + 1
        raise RuntimeError(
            f"embedding_bag: offsets must be non-decreasing, but offsets[{at}] = {off[at]} "
            f"comes after offsets[{at - 1}] = {off[at - 1]}"
        )
    if off[-1] > idx.size:
        raise RuntimeError(
            f"offsets[-1] can not be greater than input's length {idx.size} but got "
            f"offsets[-1] of {off[-1]}"
        )


def _renorm_(weight: Tensor, input: Any, max_norm: float, norm_type: float) -> None:
    """torch's ``embedding_renorm_``: looked-up rows with norm above ``max_norm`` are scaled
    by ``max_norm / (norm + 1e-7)``, in place and without recording a gradient."""
    with no_grad():
        w = weight._data
        idx = jnp.asarray(input._data if isinstance(input, Tensor) else input).reshape(-1)
        rows = jnp.take(w, idx, axis=0, mode="clip")
        norms = jnp.linalg.norm(rows, ord=norm_type, axis=-1, keepdims=True)
        scale = jnp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight.copy_(w.at[idx].set((rows * scale).astype(w.dtype), mode="drop"))


def _bag_ids(
    n: int, offsets: Array | None, length: int, include_last_offset: bool
) -> tuple[Array, int]:
    """``(bag of each index, number of bags)``; an index in no bag gets the id ``bags``."""
    if offsets is None:  # a 2-D input of bags of ``length``
        return jnp.arange(n, dtype=jnp.int32) // length, n // length
    offsets = jnp.asarray(offsets).astype(jnp.int32)
    bags = offsets.shape[0] - 1 if include_last_offset else offsets.shape[0]
    if bags <= 0:
        return jnp.zeros((n,), jnp.int32), 0
    pos = jnp.arange(n, dtype=jnp.int32)
    ids = jnp.searchsorted(offsets[:bags], pos, side="right").astype(jnp.int32) - 1
    end = offsets[bags] if include_last_offset else n
    return jnp.where((ids < 0) | (pos >= end), bags, ids), bags


def _embedding_bag(
    input: Array,
    weight: Array,
    offsets: Array | None,
    per_sample_weights: Array | None,
    mode: str,
    scale_grad_by_freq: bool,
    include_last_offset: bool,
    padding_idx: int | None,
    max_norm: float | None,
    norm_type: float,
) -> Array:
    """The bags over arrays (the recorded implementation; see :func:`embedding_bag`)."""
    idx, w = jnp.asarray(input), jnp.asarray(weight)
    length = idx.shape[1] if idx.ndim == 2 else 0
    idx = idx.reshape(-1)
    num, n = w.shape[0], idx.shape[0]
    ids, bags = _bag_ids(n, offsets, length, include_last_offset)
    if padding_idx is not None:
        ids = jnp.where(idx == padding_idx, bags, ids)
    # Traced indices cannot be checked: out-of-range ones read NaN rather than a clamped row.
    rows = jnp.take(w, idx, axis=0, mode="fill", fill_value=jnp.nan)
    if max_norm is not None:
        norms = jnp.linalg.norm(rows, ord=norm_type, axis=-1, keepdims=True)
        scale = jnp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        # Forward scaled, gradient not (torch renormalises the table under no_grad).
        rows = jax.lax.stop_gradient(rows * scale) + (rows - jax.lax.stop_gradient(rows))
    if scale_grad_by_freq:
        counts = jnp.zeros((num,), w.dtype).at[idx].add(1, mode="drop")
        inv = (1.0 / jnp.maximum(jnp.take(counts, idx, mode="clip"), 1.0))[:, None]
        frozen = jax.lax.stop_gradient(rows)
        rows = frozen + (rows - frozen) * inv  # value unchanged, gradient / count
    if per_sample_weights is not None:
        rows = rows * jnp.asarray(per_sample_weights).reshape(-1, 1).astype(w.dtype)
    segments = bags + 1  # the last segment collects indices in no bag; it is dropped
    counts = jax.ops.segment_sum(jnp.ones((n,), w.dtype), ids, segments)[:bags, None]
    if mode == "max":
        return _bag_max(rows, ids, segments, counts).astype(w.dtype)
    total = jax.ops.segment_sum(rows, ids, segments)[:bags]
    if mode == "mean":
        total = total / jnp.maximum(counts, 1.0)
    return total.astype(w.dtype)


def _bag_max(rows: Array, ids: Array, segments: int, counts: Array) -> Array:
    """Each bag's elementwise maximum, its gradient all to the first row attaining it.

    torch records, per bag and feature, the first row (in input order) holding the maximum
    and sends that row the whole gradient; ``segment_max``'s own gradient would split it
    evenly among tied rows. So the maximum is found without gradient, the position of the
    first row equal to it is the smallest such position (``segment_min``), and the value is
    gathered from there. A bag whose maximum no row equals (a NaN) keeps ``segment_max``.
    """
    n, bags = rows.shape[0], segments - 1
    best = jax.ops.segment_max(rows, ids, segments)
    if n == 0:
        return jnp.zeros_like(best[:bags])
    frozen = jax.lax.stop_gradient(rows)
    pos = jnp.where(frozen == jax.lax.stop_gradient(best)[ids], jnp.arange(n)[:, None], n)
    first = jax.ops.segment_min(pos, ids, segments)[:bags]
    picked = jnp.take_along_axis(rows, jnp.minimum(first, n - 1), axis=0)
    value = jnp.where(first < n, picked, best[:bags])
    return jnp.where(counts > 0, value, 0.0)


_embedding_bag_op = recorded(_embedding_bag)
