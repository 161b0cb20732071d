"""Connectionist Temporal Classification loss (mirrors ``torch.nn.functional.ctc_loss``).

The negative log-likelihood of each target sequence under all its alignments is the CTC forward
algorithm in log space: one ``jax.lax.scan`` over time, vectorized over the batch and over the
extended label sequence ``blank, l1, blank, l2, ..., blank`` (length ``2S + 1``). Variable input
lengths freeze a sample's state after its last frame; variable target lengths read the final
state at ``2 * target_length`` (and the one before it). Everything has a static shape, so the
loss compiles and differentiates like any other op.

**Gradient.** torch's CTC backward returns ``exp(log_probs) - posterior`` per frame (the
gradient for the logits of a ``log_softmax``, which it assumes feeds the loss), not the
``-posterior`` that differentiating the recursion gives; after a ``log_softmax`` both give the
same logits gradient, but the gradient reaching a ``log_probs`` leaf differs. spx reproduces
torch's with a custom VJP: the recursion's own gradient (made NaN-safe where states are
unreachable) plus ``exp(log_probs)`` on each sample's first ``input_length`` frames. As in torch,
an impossible alignment (input too short for its target) has an infinite loss and a NaN gradient
on its frames; ``zero_infinity=True`` makes both zero.

**Targets** are ``(N, S)`` padded (entries past each ``target_length`` are ignored) or 1-D
concatenated ``(sum(target_lengths),)``. For the concatenated form the padded width is the
largest target length when the lengths are known on the host (a tuple, numpy or a computed
Tensor), else the total length (correct, just more work). Lengths and label values are
checked as torch checks them: at once when they are known, else once the program computing
them has run (:mod:`spx._tensor.checks`; ``targets = batch[:, 1:]`` in the same step).
Inside ``spx.compile`` they cannot be, and an out-of-range label gives a NaN loss instead.

See https://pytorch.org/docs/stable/generated/torch.nn.functional.ctc_loss.html
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx._tensor.checks import known_value, when_known
from spx._tensor.recorded import recorded
from spx.nn.functional._utils import check_reduction

Array = jax.Array


def ctc_loss(
    log_probs: Array,
    targets: Array,
    input_lengths: Array | Sequence[int],
    target_lengths: Array | Sequence[int],
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Array:
    """CTC loss of each target under all alignments (mirrors ``torch.nn.functional.ctc_loss``).

    Args:
        log_probs: ``(T, N, C)`` or unbatched ``(T, C)`` log-probabilities over ``C`` classes
            (blank included), e.g. the output of ``log_softmax(dim=-1)``.
        targets: ``(N, S)`` padded label indices, or 1-D ``(sum(target_lengths),)`` with the
            targets concatenated; labels lie in ``[0, C)``.
        input_lengths: ``(N,)`` integers ``<= T`` (a Tensor, array, tuple or list): frames used
            per sample.
        target_lengths: ``(N,)`` integers ``<= S``: labels per sample.
        blank: the blank class index, in ``[0, C)``.
        reduction: ``"none"`` (per-sample losses ``(N,)``) | ``"mean"`` (each loss divided by
            its target length clamped to >= 1, then averaged over the batch) | ``"sum"``.
        zero_infinity: replace infinite losses (impossible alignments) and their gradients by 0.

    Returns:
        A scalar, or ``(N,)`` (``()`` unbatched) with ``reduction="none"``.

    Raises:
        RuntimeError: bad shapes, lengths or ``blank``, as torch (with the value and the fix).
        IndexError: a label outside ``[0, C)`` (torch reads garbage there), raised at once or,
            for a pending value, once computed.

    Example:
        >>> import spx
        >>> import spx.nn.functional as F
        >>> log_probs = spx.randn(6, 2, 4).log_softmax(-1)
        >>> F.ctc_loss(log_probs, spx.tensor([[1, 2], [3, 0]]), (6, 5), (2, 1)).shape
        spx.Size([])
    """
    check_reduction(reduction)
    lp_shape = tuple(np.shape(log_probs))
    if len(lp_shape) not in (2, 3):
        raise RuntimeError(
            f"ctc_loss: log_probs must be (T, N, C) or unbatched (T, C), got shape {lp_shape}"
        )
    time, batch, classes = (lp_shape[0], 1, lp_shape[1]) if len(lp_shape) == 2 else lp_shape
    if not 0 <= blank < classes:
        raise RuntimeError(
            f"ctc_loss: blank must be in label range [0, {classes}) (C={classes} classes in "
            f"log_probs), got blank={blank}"
        )
    tg_shape = tuple(np.shape(targets))
    if len(tg_shape) not in (1, 2):
        raise RuntimeError(
            f"ctc_loss: targets must be (N, S) padded or 1-D concatenated, got shape {tg_shape}"
        )
    input_lengths, _ = _lengths(input_lengths, "input_lengths", batch)
    target_lengths, tl = _lengths(target_lengths, "target_lengths", batch)
    padded = len(tg_shape) == 2
    if padded and tg_shape[0] != batch:
        raise RuntimeError(f"ctc_loss: padded targets must be (N={batch}, S), got shape {tg_shape}")
    check = functools.partial(
        _check_values, targets, input_lengths, target_lengths, time, classes, tg_shape
    )
    check()
    pending = [
        x
        for x in (targets, input_lengths, target_lengths)
        if known_value(x) is None and not isinstance(x, list | tuple)
    ]
    if pending:
        # A value computed in the same recorded step (targets = batch[:, 1:]): checked once the
        # step's program has computed it (spx._tensor.checks), the others read then.
        when_known(pending[-1], lambda _: check())
    # Concatenated targets: the largest target length if known, else the total length
    # (correct, more work).
    longest = int(tl.max()) if tl is not None and tl.size else tg_shape[0]
    width = tg_shape[1] if padded else longest
    return _ctc_loss_op(
        log_probs, targets, input_lengths, target_lengths, blank, reduction,
        bool(zero_infinity), width,
    )  # fmt: skip


def _lengths(value: Any, name: str, batch: int) -> tuple[Any, np.ndarray | None]:
    """``(the lengths as an op argument, their values if known)``, shape- and type-checked."""
    if isinstance(value, list | tuple):
        values = np.asarray(value)
        if values.size and not np.issubdtype(values.dtype, np.integer):
            raise TypeError(
                f"ctc_loss: {name} given as a sequence must hold ints, got {value!r:.80}"
            )
        value = values.astype(np.int32).reshape(-1)
    if isinstance(value, int | float):
        raise TypeError(
            f"ctc_loss: {name} must be a Tensor or a tuple of ints (one per sample), got the "
            f"number {value!r}; for one sample pass ({value!r},)"
        )
    dtype = getattr(value, "dtype", None)
    if dtype is None or not jnp.issubdtype(dtype, jnp.integer):
        raise RuntimeError(
            f"ctc_loss: {name} must be integral (a Tensor of ints or a tuple of ints), got "
            f"{type(value).__name__} of dtype {dtype}; cast with .long()"
        )
    size = int(np.prod(np.shape(value)))
    if size != batch:
        raise RuntimeError(
            f"ctc_loss: {name} must be of size batch_size ({batch}), got {size} values"
        )
    known = known_value(value)
    return value, None if known is None else np.asarray(known).reshape(-1)


def _check_values(
    targets: Any,
    input_lengths: Any,
    target_lengths: Any,
    time: int,
    classes: int,
    tg_shape: tuple[int, ...],
) -> None:
    """torch's checks of the lengths and the labels, on those whose values are known."""
    il, tl = _known_flat(input_lengths), _known_flat(target_lengths)
    if il is not None:
        _check_range(il, "input_lengths", 0, time, f"log_probs has T={time} frames")
    if tl is not None:
        _check_range(tl, "target_lengths", 0, None, "")
        if len(tg_shape) == 2:
            if tl.size and tl.max() > tg_shape[1]:
                raise RuntimeError(
                    f"ctc_loss: target_lengths has value {int(tl.max())} but the padded "
                    f"targets hold only S={tg_shape[1]} labels per sample (shape {tg_shape}); "
                    "pad the targets to the longest target or fix target_lengths"
                )
        elif int(tl.sum()) != tg_shape[0]:
            raise RuntimeError(
                f"ctc_loss: concatenated targets must hold sum(target_lengths) = "
                f"{int(tl.sum())} labels, got {tg_shape[0]}; pass targets as (N, S) if they "
                "are padded"
            )
    _check_labels(targets, tl, classes)


def _known_flat(value: Any) -> np.ndarray | None:
    known = np.asarray(value) if isinstance(value, list | tuple) else known_value(value)
    return None if known is None else np.asarray(known).reshape(-1)


def _check_range(values: np.ndarray, name: str, low: int, high: int | None, why: str) -> None:
    for n, v in enumerate(values.tolist()):
        if v < low or (high is not None and v > high):
            bound = f"at least {low}" if v < low else f"at most {high} ({why})"
            raise RuntimeError(
                f"ctc_loss: expected {name} to have value {bound}, but got value {v} for sample {n}"
            )


def _check_labels(targets: Any, tl: np.ndarray | None, classes: int) -> None:
    """torch reads labels outside ``[0, C)`` as garbage; spx raises (if they are known)."""
    values = known_value(targets) if not isinstance(targets, list | tuple) else None
    if values is None or values.size == 0:
        return
    if values.ndim == 2:
        used = np.ones(values.shape, bool)
        if tl is not None:
            used = np.arange(values.shape[1])[None, :] < tl[:, None]
        values = values[used]
    bad = (values < 0) | (values >= classes)
    if bad.any():
        raise IndexError(
            f"ctc_loss: target label {values[bad][0]} is out of range for log_probs with "
            f"C={classes} classes; labels (and blank) must lie in [0, {classes})"
        )


def _ctc_loss(
    log_probs: Array,
    targets: Array,
    input_lengths: Array,
    target_lengths: Array,
    blank: int,
    reduction: str,
    zero_infinity: bool,
    width: int,
) -> Array:
    """The loss over arrays (the recorded implementation; see :func:`ctc_loss`).

    ``width`` is the static padded target width ``S`` (the extended sequence is ``2S + 1``).
    """
    lp = jnp.asarray(log_probs)
    batched = lp.ndim == 3
    if not batched:
        lp = lp[:, None, :]
    out_dtype = lp.dtype
    if out_dtype in (jnp.float16, jnp.bfloat16):
        lp = lp.astype(jnp.float32)  # the recursion sums many logs: keep float32 accuracy
    il = jnp.asarray(input_lengths).reshape(-1).astype(jnp.int32)
    tl = jnp.asarray(target_lengths).reshape(-1).astype(jnp.int32)
    labels = _padded_labels(jnp.asarray(targets), tl, width, blank)
    nll = _nll(lp, labels, il, tl, blank, zero_infinity)
    if zero_infinity:
        nll = jnp.where(nll == jnp.inf, 0.0, nll)
    nll = nll.astype(out_dtype)
    if reduction == "mean":
        return jnp.mean(nll / jnp.maximum(tl, 1).astype(out_dtype))
    if reduction == "sum":
        return jnp.sum(nll)
    return nll if batched else nll[0]


_ctc_loss_op = recorded(_ctc_loss)


def _padded_labels(targets: Array, tl: Array, width: int, blank: int) -> Array:
    """``(N, width)`` int32 labels; positions past each target length hold ``blank``."""
    batch = tl.shape[0]
    pos = jnp.arange(width, dtype=jnp.int32)
    valid = pos[None, :] < tl[:, None]
    if targets.ndim == 2:
        labels = targets[:, :width]
    elif targets.shape[0] == 0:
        labels = jnp.zeros((batch, width), jnp.int32)
    else:
        starts = jnp.cumsum(tl) - tl
        labels = jnp.take(targets, starts[:, None] + pos[None, :], mode="clip")
    return jnp.where(valid, labels.astype(jnp.int32), blank)


def _logsumexp(*xs: Array) -> Array:
    """Elementwise log-sum-exp whose gradient is 0, not NaN, where every term is ``-inf``."""
    m = jax.lax.stop_gradient(functools.reduce(jnp.maximum, xs))
    m = jnp.where(jnp.isfinite(m), m, 0.0)
    total = sum(jnp.exp(x - m) for x in xs)
    ok = total > 0
    return jnp.where(ok, jnp.log(jnp.where(ok, total, 1.0)) + m, -jnp.inf)


def _forward(lp: Array, labels: Array, il: Array, tl: Array, blank: int) -> Array:
    """Per-sample negative log-likelihood ``(N,)`` by the CTC forward (alpha) recursion."""
    time, batch, _ = lp.shape
    if time == 0:  # every input length is 0: only empty targets are possible
        return jnp.where(tl == 0, 0.0, jnp.inf).astype(lp.dtype)
    ext_len = 2 * labels.shape[1] + 1
    ext = jnp.full((batch, ext_len), blank, jnp.int32).at[:, 1::2].set(labels)
    # A label may follow the one two places back (skipping a blank) unless they are equal.
    skip = jnp.zeros((batch, ext_len), bool).at[:, 3::2].set(labels[:, 1:] != labels[:, :-1])
    lp_ext = jnp.take_along_axis(
        lp,
        jnp.broadcast_to(ext[None], (time, batch, ext_len)),
        axis=2,
        mode="fill",
        wrap_negative_indices=False,
    )
    neg_inf = jnp.array(-jnp.inf, lp.dtype)
    s = jnp.arange(ext_len)
    start = (s[None, :] == 0) | ((s[None, :] == 1) & (tl[:, None] > 0))
    alpha0 = jnp.where(start, lp_ext[0], neg_inf)

    def step(alpha: Array, xs: tuple[Array, Array]) -> tuple[Array, None]:
        t, lp_t = xs
        shift1 = jnp.pad(alpha[:, :-1], ((0, 0), (1, 0)), constant_values=-jnp.inf)
        shift2 = jnp.pad(alpha[:, :-2], ((0, 0), (2, 0)), constant_values=-jnp.inf)
        new = _logsumexp(alpha, shift1, jnp.where(skip, shift2, neg_inf)) + lp_t
        # Past its input length a sample's state stays as it was at its last frame.
        return jnp.where((t < il)[:, None], new, alpha), None

    alpha, _ = jax.lax.scan(step, alpha0, (jnp.arange(1, time), lp_ext[1:]))
    last = jnp.take_along_axis(alpha, (2 * tl)[:, None], axis=1)[:, 0]
    before = jnp.take_along_axis(alpha, jnp.maximum(2 * tl - 1, 0)[:, None], axis=1)[:, 0]
    nll = -_logsumexp(last, jnp.where(tl > 0, before, neg_inf))
    # No frames: only the empty target has an alignment (torch's loss 0, or inf).
    return jnp.where(il == 0, jnp.where(tl == 0, 0.0, jnp.inf), nll)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4, 5))
def _nll(lp: Array, labels: Array, il: Array, tl: Array, blank: int, zero_inf: bool) -> Array:
    return _forward(lp, labels, il, tl, blank)


def _nll_fwd(
    lp: Array, labels: Array, il: Array, tl: Array, blank: int, zero_inf: bool
) -> tuple[Array, tuple]:
    nll, vjp = jax.vjp(lambda x: _forward(x, labels, il, tl, blank), lp)
    return nll, (lp, il, nll, vjp)


def _nll_bwd(blank: int, zero_inf: bool, res: tuple, g: Array) -> tuple:
    lp, il, nll, vjp = res
    (d_path,) = vjp(g)  # -posterior * g
    grad = jnp.exp(lp) * g[None, :, None] + d_path  # torch's (exp(lp) - posterior) * g
    impossible = (nll == jnp.inf)[None, :, None]
    grad = jnp.where(impossible, 0.0 if zero_inf else jnp.nan, grad)
    frames = (jnp.arange(lp.shape[0])[:, None] < il[None, :])[:, :, None]
    return jnp.where(frames, grad, 0.0).astype(lp.dtype), None, None, None


_nll.defvjp(_nll_fwd, _nll_bwd)
