"""Convolutions in torch's layouts: ``conv1d/2d/3d`` and ``conv_transpose1d/2d/3d``.

Inputs are channels-first (``NCL``, ``NCHW``, ``NCDHW``) and weights are ``(out, in/groups, *k)``
(``(in, out/groups, *k)`` for transposed convs), exactly as torch, so state dicts load unchanged.
Everything lowers to one ``lax.conv_general_dilated`` with matching dimension numbers: XLA picks
its own internal layout, so no transposes are spent here.

See https://pytorch.org/docs/stable/generated/torch.nn.functional.conv2d.html
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from spx import _validate
from spx.nn.functional._utils import ntuple, required_array

Array = jax.Array

_DIMENSION_NUMBERS = {
    1: ("NCH", "OIH", "NCH"),
    2: ("NCHW", "OIHW", "NCHW"),
    3: ("NCDHW", "OIDHW", "NCDHW"),
}


def _batched(x: Array, nd: int, name: str) -> tuple[Array, bool]:
    # torch accepts an unbatched (C, *spatial) input and returns an unbatched output.
    if x.ndim == nd + 1:
        return x[None], True
    if x.ndim != nd + 2:
        raise RuntimeError(
            f"{name}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) input "
            f"(N, C, {', '.join('*' * nd)}), got shape {x.shape}"
        )
    return x, False


def _padding(
    padding: str | int | Sequence[int],
    kernel: Sequence[int],
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
    name: str,
) -> list[tuple[int, int]]:
    nd = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * nd
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(
                    f"{name}: padding='same' is not supported for strided convolutions "
                    f"(stride={stride}); pass explicit padding instead"
                )
            # torch puts the odd extra element on the right/bottom, like this.
            pads = []
            for k, d in zip(kernel, dilation, strict=True):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
            return pads
        raise ValueError(f"{name}: padding string must be 'same' or 'valid', got {padding!r}")
    pads = ntuple(padding, nd, f"{name}: padding")
    if any(p < 0 for p in pads):
        raise ValueError(f"{name}: padding must be non-negative, got {padding!r}")
    return [(p, p) for p in pads]


def _check_groups(x: Array, w: Array, groups: int, in_axis_size: int, name: str) -> None:
    _validate.as_int(groups, "groups", name, minimum=1)
    if x.shape[1] != in_axis_size:
        raise RuntimeError(
            f"{name}: given groups={groups} and weight of shape {w.shape}, expected input "
            f"{x.shape} to have {in_axis_size} channels, but got {x.shape[1]} channels"
        )


def _check_window(
    spatial: Sequence[int],
    pads: Sequence[tuple[int, int]],
    kernel: Sequence[int],
    dilation: Sequence[int],
    name: str,
) -> None:
    """torch's error for a (dilated) kernel larger than the padded input, where XLA would
    return an empty output."""
    padded = [n + lo + hi for n, (lo, hi) in zip(spatial, pads, strict=True)]
    effective = [d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True)]
    if any(k > n for k, n in zip(effective, padded, strict=True)):
        raise RuntimeError(
            f"{name}: Calculated padded input size per channel: "
            f"({' x '.join(map(str, padded))}). Kernel size: "
            f"({' x '.join(map(str, effective))}). Kernel size can't be greater than actual "
            "input size; pad the input or use a smaller kernel_size/dilation"
        )


def _conv(
    input: Array,
    weight: Array,
    bias: Array | None,
    stride: int | Sequence[int],
    padding: str | int | Sequence[int],
    dilation: int | Sequence[int],
    groups: int,
    nd: int,
    name: str,
) -> Array:
    x, w = required_array(input, "input", name), required_array(weight, "weight", name)
    if w.ndim != nd + 2:
        raise RuntimeError(
            f"{name}: weight must be (out_channels, in_channels/groups, {', '.join('k' * nd)}), "
            f"got shape {w.shape}"
        )
    x, unbatched = _batched(x, nd, name)
    _check_groups(x, w, groups, w.shape[1] * groups, name)
    if w.shape[0] % groups:
        raise RuntimeError(
            f"{name}: out_channels ({w.shape[0]}) must be divisible by groups ({groups})"
        )
    strides = ntuple(stride, nd, f"{name}: stride")
    dilations = ntuple(dilation, nd, f"{name}: dilation")
    if any(s < 1 for s in strides) or any(d < 1 for d in dilations):
        raise ValueError(f"{name}: stride {stride!r} and dilation {dilation!r} must be >= 1")
    pads = _padding(padding, w.shape[2:], strides, dilations, name)
    _check_window(x.shape[2:], pads, w.shape[2:], dilations, name)
    if bias is not None and tuple(np.shape(bias)) != (w.shape[0],):
        raise RuntimeError(
            f"{name}: Given weight of size {list(w.shape)}, expected bias to be 1-dimensional "
            f"with {w.shape[0]} elements, but got bias of size {list(np.shape(bias))} instead"
        )
    y = jax.lax.conv_general_dilated(
        x,
        w,
        window_strides=strides,
        padding=pads,
        rhs_dilation=dilations,
        dimension_numbers=_DIMENSION_NUMBERS[nd],
        feature_group_count=groups,
    )
    if bias is not None:
        y = y + jnp.asarray(bias).reshape((-1,) + (1,) * nd)
    return y[0] if unbatched else y


def _conv_transpose(
    input: Array,
    weight: Array,
    bias: Array | None,
    stride: int | Sequence[int],
    padding: int | Sequence[int],
    output_padding: int | Sequence[int],
    groups: int,
    dilation: int | Sequence[int],
    nd: int,
    name: str,
) -> Array:
    x, w = required_array(input, "input", name), required_array(weight, "weight", name)
    if w.ndim != nd + 2:
        raise RuntimeError(
            f"{name}: weight must be (in_channels, out_channels/groups, "
            f"{', '.join('k' * nd)}), got shape {w.shape}"
        )
    x, unbatched = _batched(x, nd, name)
    _check_groups(x, w, groups, w.shape[0], name)
    if w.shape[0] % groups:
        raise RuntimeError(f"{name}: in_channels ({w.shape[0]}) must be divisible by groups")
    strides = ntuple(stride, nd, f"{name}: stride")
    dilations = ntuple(dilation, nd, f"{name}: dilation")
    pads = ntuple(padding, nd, f"{name}: padding")
    out_pads = ntuple(output_padding, nd, f"{name}: output_padding")
    for op, s, d in zip(out_pads, strides, dilations, strict=True):
        if not (op < s or op < d):
            raise ValueError(
                f"{name}: output_padding {output_padding!r} must be smaller than either stride "
                f"{stride!r} or dilation {dilation!r}"
            )
    # A transposed conv is the gradient of a conv: a conv over the stride-dilated input with
    # the kernel flipped and its in/out roles swapped per group.
    c_in, c_out_g, *kernel = w.shape
    w = w.reshape(groups, c_in // groups, c_out_g, *kernel)
    w = jnp.swapaxes(w, 1, 2).reshape(groups * c_out_g, c_in // groups, *kernel)
    w = jnp.flip(w, axis=tuple(range(2, nd + 2)))
    conv_pads = [
        (d * (k - 1) - p, d * (k - 1) - p + op)
        for k, d, p, op in zip(kernel, dilations, pads, out_pads, strict=True)
    ]
    y = jax.lax.conv_general_dilated(
        x,
        w,
        window_strides=(1,) * nd,
        padding=conv_pads,
        lhs_dilation=strides,
        rhs_dilation=dilations,
        dimension_numbers=_DIMENSION_NUMBERS[nd],
        feature_group_count=groups,
    )
    if bias is not None:
        y = y + jnp.asarray(bias).reshape((-1,) + (1,) * nd)
    return y[0] if unbatched else y


def conv1d(
    input: Array,
    weight: Array,
    bias: Array | None = None,
    stride: int | Sequence[int] = 1,
    padding: str | int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
) -> Array:
    """1-D convolution (mirrors ``torch.nn.functional.conv1d``).

    Args:
        input: ``(N, C_in, L)`` or unbatched ``(C_in, L)``.
        weight: ``(C_out, C_in / groups, kL)``.
        bias: ``(C_out,)`` or None.
        stride: int or 1-tuple.
        padding: int, 1-tuple, ``"valid"`` (no padding) or ``"same"`` (stride 1 only; an odd
            total padding puts the extra element on the right, as torch).
        dilation: int or 1-tuple.
        groups: split input and output channels into this many groups.

    Returns:
        ``(N, C_out, L_out)`` (or ``(C_out, L_out)`` for unbatched input).

    Example:
        >>> F.conv1d(jnp.ones((2, 4, 10)), jnp.ones((8, 4, 3)), padding=1).shape  # (2, 8, 10)
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(
    input: Array,
    weight: Array,
    bias: Array | None = None,
    stride: int | Sequence[int] = 1,
    padding: str | int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
) -> Array:
    """2-D convolution over NCHW input (mirrors ``torch.nn.functional.conv2d``).

    Args:
        input: ``(N, C_in, H, W)`` or unbatched ``(C_in, H, W)``.
        weight: ``(C_out, C_in / groups, kH, kW)``.
        bias: ``(C_out,)`` or None.
        stride: int or ``(sH, sW)``.
        padding: int, ``(pH, pW)``, ``"valid"`` or ``"same"`` (stride 1 only).
        dilation: int or ``(dH, dW)``.
        groups: channel groups (``groups == C_in`` is a depthwise conv).

    Returns:
        ``(N, C_out, H_out, W_out)``.

    Example:
        >>> x, w = jnp.ones((2, 3, 8, 8)), jnp.ones((6, 3, 3, 3))
        >>> F.conv2d(x, w, stride=2, padding=1).shape  # (2, 6, 4, 4)
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(
    input: Array,
    weight: Array,
    bias: Array | None = None,
    stride: int | Sequence[int] = 1,
    padding: str | int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
) -> Array:
    """3-D convolution over NCDHW input (mirrors ``torch.nn.functional.conv3d``).

    Args:
        input: ``(N, C_in, D, H, W)`` or unbatched ``(C_in, D, H, W)``.
        weight: ``(C_out, C_in / groups, kD, kH, kW)``.
        bias: ``(C_out,)`` or None.
        stride: int or 3-tuple.
        padding: int, 3-tuple, ``"valid"`` or ``"same"``.
        dilation: int or 3-tuple.
        groups: channel groups.

    Example:
        >>> F.conv3d(jnp.ones((1, 2, 4, 4, 4)), jnp.ones((3, 2, 3, 3, 3))).shape  # (1,3,2,2,2)
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def conv_transpose1d(
    input: Array,
    weight: Array,
    bias: Array | None = None,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    output_padding: int | Sequence[int] = 0,
    groups: int = 1,
    dilation: int | Sequence[int] = 1,
) -> Array:
    """1-D transposed convolution (mirrors ``torch.nn.functional.conv_transpose1d``).

    Args:
        input: ``(N, C_in, L)`` or ``(C_in, L)``.
        weight: ``(C_in, C_out / groups, kL)`` (torch's transposed layout).
        bias: ``(C_out,)`` or None.
        stride, padding, output_padding, dilation: int or 1-tuple; the output length is
            ``(L - 1) * stride - 2 * padding + dilation * (kL - 1) + output_padding + 1``.
        groups: channel groups.

    Example:
        >>> F.conv_transpose1d(jnp.ones((1, 4, 5)), jnp.ones((4, 2, 3)), stride=2).shape
    """
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
        "conv_transpose1d",
    )  # fmt: skip


def conv_transpose2d(
    input: Array,
    weight: Array,
    bias: Array | None = None,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    output_padding: int | Sequence[int] = 0,
    groups: int = 1,
    dilation: int | Sequence[int] = 1,
) -> Array:
    """2-D transposed convolution (mirrors ``torch.nn.functional.conv_transpose2d``).

    Args:
        input: ``(N, C_in, H, W)`` or ``(C_in, H, W)``.
        weight: ``(C_in, C_out / groups, kH, kW)`` (torch's transposed layout).
        bias: ``(C_out,)`` or None.
        stride, padding, output_padding, dilation: int or pair; each output size is
            ``(H - 1) * stride - 2 * padding + dilation * (kH - 1) + output_padding + 1``.
        groups: channel groups.

    Example:
        >>> x, w = jnp.ones((2, 4, 5, 5)), jnp.ones((4, 3, 3, 3))
        >>> F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1).shape  # (2,3,10,10)
    """
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
        "conv_transpose2d",
    )  # fmt: skip


def conv_transpose3d(
    input: Array,
    weight: Array,
    bias: Array | None = None,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    output_padding: int | Sequence[int] = 0,
    groups: int = 1,
    dilation: int | Sequence[int] = 1,
) -> Array:
    """3-D transposed convolution (mirrors ``torch.nn.functional.conv_transpose3d``).

    Args:
        input: ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)``.
        weight: ``(C_in, C_out / groups, kD, kH, kW)``.
        bias: ``(C_out,)`` or None.
        stride, padding, output_padding, dilation: int or 3-tuple.
        groups: channel groups.

    Example:
        >>> F.conv_transpose3d(jnp.ones((1, 2, 3, 3, 3)), jnp.ones((2, 1, 2, 2, 2))).shape
    """
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
        "conv_transpose3d",
    )  # fmt: skip
