"""Folding an eval-mode BatchNorm into the convolution or linear layer before it (mirrors
``torch.nn.utils.fusion``).

In eval mode a BatchNorm is an affine map per channel, ``y = (x - mean) / sqrt(var + eps) * w +
b``; folded into the preceding layer's weight and bias it costs nothing at inference. The
functions return new modules (deep copies) or new Parameters, as torch's do; the originals are
left as they were.

Example:
    >>> import spx
    >>> from spx.nn.utils.fusion import fuse_conv_bn_eval
    >>> conv, bn = spx.nn.Conv2d(3, 4, 3).eval(), spx.nn.BatchNorm2d(4).eval()
    >>> x = spx.randn(1, 3, 8, 8)
    >>> fused = fuse_conv_bn_eval(conv, bn)
    >>> bool(spx.allclose(fused(x), bn(conv(x)), atol=1e-5))
    True
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

import spx
from spx.nn.parameter import Parameter

__all__ = [
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
]

ModuleT = TypeVar("ModuleT")


def _check_eval(layer: Any, bn: Any) -> None:
    if layer.training or bn.training:
        # torch's assertion; also for what python -O would drop there: fusing a training-mode
        # BatchNorm would freeze statistics it is still updating.
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def fuse_conv_bn_eval(conv: ModuleT, bn: Any, transpose: bool = False) -> ModuleT:
    """A copy of ``conv`` computing ``bn(conv(x))`` (both in eval mode).

    Args:
        conv: a ``Conv1d/2d/3d`` or ``ConvTranspose1d/2d/3d`` (``transpose=True``).
        bn: the ``BatchNorm`` after it, with running statistics.
        transpose: whether ``conv`` is a transposed convolution (its weight is
            ``(in, out, ...)``).
    """
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose,
    )  # fmt: skip
    return fused


def fuse_conv_bn_weights(
    conv_w: Any,
    conv_b: Any,
    bn_rm: Any,
    bn_rv: Any,
    bn_eps: float,
    bn_w: Any,
    bn_b: Any,
    transpose: bool = False,
) -> tuple[Parameter, Parameter]:
    """The weight and bias of a convolution followed by an eval-mode BatchNorm, as Parameters.

    Args:
        conv_w: ``(out, in/groups, *kernel)`` (``(in, out/groups, *kernel)`` if ``transpose``).
        conv_b: ``(out,)`` or None (zeros; the fused bias then does not require grad, as in
            torch).
        bn_rm, bn_rv: running mean and variance, ``(out,)``.
        bn_eps: the BatchNorm's eps.
        bn_w, bn_b: its affine weight and bias, ``(out,)``, or None (ones, zeros).
        transpose: whether the convolution is transposed.
    """
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    if conv_b is None:
        conv_b = spx.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = spx.ones_like(bn_rm)
    if bn_b is None:
        bn_b = spx.zeros_like(bn_rm)
    rsqrt = spx.rsqrt(bn_rv + bn_eps)
    rest = [1] * (conv_w.ndim - 2)
    shape = [1, -1, *rest] if transpose else [-1, 1, *rest]
    with spx.no_grad():
        w = (conv_w * (bn_w * rsqrt).reshape(shape)).to(dtype=w_dtype)
        b = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(dtype=b_dtype)
    return Parameter(w, conv_w.requires_grad), Parameter(b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear: ModuleT, bn: Any) -> ModuleT:
    """A copy of ``linear`` computing ``bn(linear(x))`` (both in eval mode; ``bn`` over the
    linear layer's ``out_features``, or over 1 feature)."""
    _check_eval(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
            f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}"
        )
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
    )
    return fused


def fuse_linear_bn_weights(
    linear_w: Any, linear_b: Any, bn_rm: Any, bn_rv: Any, bn_eps: float, bn_w: Any, bn_b: Any
) -> tuple[Parameter, Parameter]:
    """The weight ``(out, in)`` and bias ``(out,)`` of a linear layer followed by an eval-mode
    BatchNorm, as Parameters (``linear_b`` None: zeros, and a bias that does not require
    grad, as in torch)."""
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    if linear_b is None:
        linear_b = spx.zeros_like(bn_rm)
    with spx.no_grad():
        scale = bn_w * spx.rsqrt(bn_rv + bn_eps)
        w = linear_w * scale.unsqueeze(-1).to(dtype=w_dtype)
        b = ((linear_b - bn_rm) * scale + bn_b).to(dtype=b_dtype)
    return Parameter(w, linear_w.requires_grad), Parameter(b, linear_b.requires_grad)
