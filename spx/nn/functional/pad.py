"""``pad`` with torch's argument order and modes.

torch's ``pad`` tuple starts at the **last** dimension: ``(left, right)`` pads the last dim,
``(left, right, top, bottom)`` the last two, and so on. Negative values crop. Modes:
``"constant"`` (fill with ``value``, default 0), ``"reflect"`` (mirror without repeating the
edge), ``"replicate"`` (repeat the edge) and ``"circular"`` (wrap around). As in torch, the
non-constant modes pad only the last 1, 2 or 3 dims of a (batched or unbatched) input, and
negative entries crop first and then pad from the cropped array.

See https://pytorch.org/docs/stable/generated/torch.nn.functional.pad.html
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp

Array = jax.Array

_JNP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _pairs(x: Array, pad: Sequence[int]) -> list[tuple[int, int]]:
    """Per-dim ``(lo, hi)`` for every dim of ``x``, first dim first."""
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError(f"pad: padding length must be divisible by 2, got {len(pad)} ({pad})")
    n = len(pad) // 2
    if n > x.ndim:
        raise RuntimeError(
            f"pad: padding length should be at most twice the input's number of dims, but got "
            f"padding length {len(pad)} for an input of shape {x.shape}"
        )
    pairs = [(0, 0)] * (x.ndim - n)
    # pad[0:2] belongs to the last dim, pad[2:4] to the one before, ...
    pairs += [(pad[2 * i], pad[2 * i + 1]) for i in reversed(range(n))]
    return pairs


def pad(
    input: Array, pad: Sequence[int], mode: str = "constant", value: float | None = None
) -> Array:
    """Pad (or crop) ``input`` (mirrors ``torch.nn.functional.pad``).

    Args:
        input: any shape; for non-constant modes ``(C, *spatial)`` or ``(N, C, *spatial)``
            with 1-3 padded spatial dims.
        pad: ``(last_lo, last_hi, second_last_lo, second_last_hi, ...)``; negative crops.
        mode: ``"constant"`` | ``"reflect"`` | ``"replicate"`` | ``"circular"``.
        value: fill value for ``"constant"`` (default 0); not allowed with other modes.

    Returns:
        The padded array.

    Example:
        >>> F.pad(jnp.ones((1, 2, 3)), (1, 1)).shape  # (1, 2, 5)
        >>> F.pad(jnp.ones((1, 2, 3, 3)), (1, 1, 2, 2), mode="reflect").shape  # (1, 2, 7, 5)
    """
    x = jnp.asarray(input)
    pairs = _pairs(x, pad)
    if mode == "constant":
        for n, (lo, hi) in zip(x.shape, pairs, strict=True):
            if n + lo + hi < 0:
                raise RuntimeError(
                    f"pad: padding {tuple(pad)} crops a dim of size {n} below zero "
                    f"(input shape {x.shape})"
                )
        fill = jnp.asarray(0 if value is None else value, x.dtype)
        # lax.pad handles negative (cropping) padding natively.
        return jax.lax.pad(x, fill, [(lo, hi, 0) for lo, hi in pairs])
    if mode not in _JNP_MODE:
        raise NotImplementedError(
            f"pad: unrecognised padding mode {mode!r}; expected 'constant', 'reflect', "
            "'replicate' or 'circular'"
        )
    if value is not None:
        raise ValueError(
            f"pad: padding mode {mode!r} doesn't take a value argument (got value={value}); "
            "value is only used by mode='constant'"
        )
    n = len(pad) // 2
    if not 1 <= n <= 3 or x.ndim not in (n + 1, n + 2):
        raise NotImplementedError(
            f"pad: mode {mode!r} with padding size {len(pad)} is not supported for a "
            f"{x.ndim}-D input {x.shape}; non-constant padding supports (pad size, input ndim) "
            "in {(2, 2 or 3), (4, 3 or 4), (6, 4 or 5)}"
        )
    for axis, (size, (lo, hi)) in enumerate(zip(x.shape, pairs, strict=True)):
        too_big = max(lo, hi) >= size if mode == "reflect" else max(lo, hi) > size
        if mode != "replicate" and too_big:
            rule = "less than" if mode == "reflect" else "at most"
            raise RuntimeError(
                f"pad: {mode} padding ({lo}, {hi}) on dim {axis} must be {rule} the input "
                f"size {size} (input shape {x.shape})"
            )
    # Crop negative entries first, then pad from the cropped array (torch's order).
    crop = tuple(
        slice(max(-lo, 0), size - max(-hi, 0))
        for size, (lo, hi) in zip(x.shape, pairs, strict=True)
    )
    x = x[crop]
    if x.size == 0 and any(lo > 0 or hi > 0 for lo, hi in pairs):
        raise RuntimeError(f"pad: cannot {mode}-pad an empty array (after cropping: {x.shape})")
    return jnp.pad(x, [(max(lo, 0), max(hi, 0)) for lo, hi in pairs], mode=_JNP_MODE[mode])
