"""``unfold`` (im2col) and ``fold`` (col2im): sliding blocks to columns and back.

``unfold`` turns ``(N, C, H, W)`` into ``(N, C * kh * kw, L)``, one column per position of the
sliding ``kh x kw`` block; ``fold`` sums such columns back into ``(N, C, H, W)``, adding where
blocks overlap (it is the adjoint of ``unfold``, not its inverse). Both are written as one
strided slice per kernel offset, so they are exact (no convolution, no TF32) and JAX
differentiates them into each other.

See https://pytorch.org/docs/stable/generated/torch.nn.Unfold.html
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

Array = jax.Array


def _pair(value: Any, name: str) -> tuple[int, int]:
    """torch's ``_pair`` plus its im2col length check (``It is expected kernel_size ...``)."""
    items = tuple(value) if isinstance(value, list | tuple) else (value, value)
    if len(items) != 2:
        raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(items)}")
    return int(items[0]), int(items[1])


def _check_params(
    kernel: tuple[int, int],
    dilation: tuple[int, int],
    padding: tuple[int, int],
    stride: tuple[int, int],
) -> None:
    # torch's messages, in torch's order (im2col_shape_check).
    checks = [
        (kernel, "kernel size should be greater than zero", "kernel", lambda v: v > 0),
        (stride, "stride should be greater than zero", "stride", lambda v: v > 0),
        (dilation, "dilation should be greater than zero", "dilation", lambda v: v > 0),
        (padding, "padding should be non-negative", "pad", lambda v: v >= 0),
    ]
    for (h, w), text, word, ok in checks:
        if not (ok(h) and ok(w)):
            raise RuntimeError(f"{text}, but got {word}_height: {h} {word}_width: {w}")


def _blocks(
    size: tuple[int, int],
    kernel: tuple[int, int],
    dilation: tuple[int, int],
    padding: tuple[int, int],
    stride: tuple[int, int],
) -> tuple[int, int]:
    """The number of block positions along H and W (torch's formula; may be < 1)."""
    return tuple(
        (s + 2 * p - (d * (k - 1) + 1)) // st + 1
        for s, k, d, p, st in zip(size, kernel, dilation, padding, stride, strict=True)
    )


def _block_slices(
    i: int, j: int, blocks: tuple[int, int], dilation: tuple[int, int], stride: tuple[int, int]
) -> tuple[slice, slice]:
    """The strided rows and columns of the padded image that kernel offset ``(i, j)`` reads."""
    (bh, bw), (dh, dw), (sh, sw) = blocks, dilation, stride
    return (
        slice(i * dh, i * dh + (bh - 1) * sh + 1, sh),
        slice(j * dw, j * dw + (bw - 1) * sw + 1, sw),
    )


def unfold(
    input: Array,
    kernel_size: int | tuple[int, int],
    dilation: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    stride: int | tuple[int, int] = 1,
) -> Array:
    """Extract sliding local blocks as columns (mirrors ``torch.nn.functional.unfold``).

    Args:
        input: ``(N, C, H, W)`` or unbatched ``(C, H, W)``.
        kernel_size: the block size, an int or ``(kh, kw)``.
        dilation: spacing between a block's elements.
        padding: implicit zero padding on both sides of H and W.
        stride: step between blocks.

    Returns:
        ``(N, C * kh * kw, L)`` (or ``(C * kh * kw, L)``), ``L`` the number of blocks; the
        column index runs over ``(c, i, j)`` with ``j`` fastest, torch's order.

    Example:
        >>> F.unfold(jnp.ones((1, 2, 4, 4)), 2).shape  # (1, 8, 9)
    """
    x = jnp.asarray(input)
    kernel, dil = _pair(kernel_size, "kernel_size"), _pair(dilation, "dilation")
    pad, st = _pair(padding, "padding"), _pair(stride, "stride")
    _check_params(kernel, dil, pad, st)
    if x.ndim < 3:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-max(x.ndim, 1)}, "
            f"{max(x.ndim, 1) - 1}], but got {x.ndim})"
        )
    if x.ndim not in (3, 4) or 0 in x.shape[-3:]:
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
            f"non-zero dimensions for input, but got: {list(x.shape)}"
        )
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    n, c, h, w = x.shape
    blocks = _blocks((h, w), kernel, dil, pad, st)
    if min(blocks) < 1:
        raise RuntimeError(
            f"Given input with spatial size ({h}, {w}), kernel_size={kernel}, "
            f"dilation={dil}, padding={pad}, calculated shape of the array of sliding blocks "
            f"as {blocks}, but its components must be at least one."
        )
    x = jnp.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    cols = [
        x[(..., *_block_slices(i, j, blocks, dil, st))]
        for i in range(kernel[0])
        for j in range(kernel[1])
    ]
    out = jnp.stack(cols, axis=2)  # (N, C, kh * kw, bh, bw)
    out = out.reshape(n, c * kernel[0] * kernel[1], blocks[0] * blocks[1])
    return out[0] if unbatched else out


def fold(
    input: Array,
    output_size: int | tuple[int, int],
    kernel_size: int | tuple[int, int],
    dilation: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    stride: int | tuple[int, int] = 1,
) -> Array:
    """Sum sliding local blocks into an image (mirrors ``torch.nn.functional.fold``).

    Args:
        input: ``(N, C * kh * kw, L)`` or unbatched ``(C * kh * kw, L)``, columns in
            :func:`unfold`'s order.
        output_size: the image's spatial size ``(H, W)`` (or an int).
        kernel_size, dilation, padding, stride: as in :func:`unfold`.

    Returns:
        ``(N, C, H, W)`` (or ``(C, H, W)``); overlapping blocks add up.

    Example:
        >>> F.fold(jnp.ones((1, 8, 9)), (4, 4), 2)[0, 0]  # 1 at the corners, 4 inside
    """
    x = jnp.asarray(input)
    out_hw = _pair(output_size, "output_size")
    kernel, dil = _pair(kernel_size, "kernel_size"), _pair(dilation, "dilation")
    pad, st = _pair(padding, "padding"), _pair(stride, "stride")
    _check_params(kernel, dil, pad, st)
    if x.ndim not in (2, 3) or 0 in x.shape[-2:]:
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
            f"non-zero dimensions for input, but got: {list(x.shape)}"
        )
    unbatched = x.ndim == 2
    if unbatched:
        x = x[None]
    n, ckk, length = x.shape
    kk = kernel[0] * kernel[1]
    if ckk % kk:
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={ckk} and kernel_size={kernel}."
        )
    blocks = _blocks(out_hw, kernel, dil, pad, st)
    if blocks[0] * blocks[1] != length:
        raise RuntimeError(
            f"Given output_size={out_hw}, kernel_size={kernel}, dilation={dil}, "
            f"padding={pad}, stride={st}, expected size of input's dimension 2 to match the "
            f"calculated number of sliding blocks {blocks[0]} * {blocks[1]} = "
            f"{blocks[0] * blocks[1]}, but got input.size(2)={length}."
        )
    if min(blocks) < 1:
        raise RuntimeError(
            f"Given output_size={out_hw}, kernel_size={kernel}, dilation={dil}, "
            f"padding={pad}, stride={st}, calculated shape of the array of sliding blocks as "
            f"{blocks}, but its components must be at least one."
        )
    c = ckk // kk
    cols = x.reshape(n, c, kernel[0], kernel[1], *blocks)
    h, w = out_hw[0] + 2 * pad[0], out_hw[1] + 2 * pad[1]
    out = jnp.zeros((n, c, h, w), x.dtype)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            rows, columns = _block_slices(i, j, blocks, dil, st)
            out = out.at[:, :, rows, columns].add(cols[:, :, i, j])
    out = out[:, :, pad[0] : pad[0] + out_hw[0], pad[1] : pad[1] + out_hw[1]]
    return out[0] if unbatched else out
