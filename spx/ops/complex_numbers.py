"""torch's complex-number functions: ``spx.complex``, ``spx.polar``, ``spx.view_as_complex``,
``spx.view_as_real``.

They are what rotary position embeddings are built from (Meta's LLaMA ``precompute_freqs_cis``
and ``apply_rotary_emb``), with torch's signatures, broadcasting, dtypes and error messages.
Gradients flow through all four as through any recorded operation (``loss.backward()`` and
``spx.compile``): a real loss of complex intermediates gives torch's real gradients, and a
complex tensor's ``.grad`` follows torch's convention (the conjugate of JAX's).

``view_as_real`` and ``view_as_complex`` are views, as torch's: a write into either reaches
the other. One difference from torch, from JAX: **no complex32.** torch makes ``ComplexHalf``
tensors from float16 input; JAX has no complex type narrower than complex64, so spx refuses
float16 with the fix (``x.float()`` first, which is what LLaMA does anyway). float64 input
gives complex128 only with ``jax_enable_x64``; without it spx's float64 tensors are float32
(see :mod:`spx.dtypes`), so they give complex64.

Example:
    >>> import spx
    >>> z = spx.view_as_complex(spx.tensor([[1.0, 2.0], [3.0, -4.0]]))
    >>> z.abs().tolist()
    [2.2360680103302, 5.0]
    >>> spx.view_as_real(z * 1j).tolist()
    [[-2.0, 1.0], [4.0, 3.0]]
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from spx._tensor.dispatch import apply
from spx._tensor.methods import _layout
from spx._tensor.methods._dtypes import scalar_type
from spx._tensor.methods.math import _broadcastable
from spx._tensor.tensor import PART_VIEWS, Tensor
from spx.ops._args import tensor_arg

__all__ = ["complex", "imag", "polar", "real", "view_as_complex", "view_as_real"]

_REAL_PARTS = (np.dtype(np.float32), np.dtype(np.float64))
_NO_COMPLEX32 = (
    "{what}: float16 input would give complex32 (torch's ComplexHalf), which JAX does not have "
    "(its narrowest complex type is complex64). Cast to float32 first: {fix}"
)


def _check_parts(a: Tensor, b: Tensor, what: str, fix: str) -> None:
    """torch's dtype checks of ``complex``/``polar``: both float, then both the same dtype."""
    da, db = np.dtype(a.dtype), np.dtype(b.dtype)
    if da == np.float16 and db == np.float16:
        raise RuntimeError(_NO_COMPLEX32.format(what=what, fix=fix))
    if da not in (*_REAL_PARTS, np.float16) or db not in (*_REAL_PARTS, np.float16):
        raise RuntimeError(
            "Expected both inputs to be Half, Float or Double tensors but got "
            f"{scalar_type(da)} and {scalar_type(db)}"
        )
    if da != db:
        raise RuntimeError(
            f"Expected object of scalar type {scalar_type(da)} but got scalar type "
            f"{scalar_type(db)} for second argument"
        )
    if a.shape != b.shape:
        _broadcastable(tuple(a.shape), tuple(b.shape))


# Module-level pure functions: their identity keys spx's shape and program caches.
def _complex(real: Any, imag: Any) -> Any:
    # lax.complex, not real + 1j * imag: 1j * inf would make a nan real part (0 * inf).
    real, imag = jnp.broadcast_arrays(real, imag)
    return lax.complex(real, imag)


def _polar(r: Any, theta: Any) -> Any:
    return _polar_parts(*jnp.broadcast_arrays(r, theta))


@jax.custom_jvp
def _polar_parts(r: Any, theta: Any) -> Any:
    """``r * e^(i theta)`` with torch's derivative (``polar_backward``): the one in ``r`` is
    ``sgn(result)``, so it is 0 where ``r`` is 0 and flips sign where ``r`` is negative (JAX's
    is ``e^(i theta)`` everywhere). In ``theta`` both are ``i * result``."""
    return lax.complex(r * jnp.cos(theta), r * jnp.sin(theta))


@_polar_parts.defjvp
def _polar_parts_jvp(primals: tuple, tangents: tuple) -> tuple:
    (r, theta), (dr, dtheta) = primals, tangents
    out = _polar_parts(r, theta)
    # sgn(out) = out / |out| (0 at 0) written out: jnp.sign's own derivative is 0, which would
    # break second derivatives (torch differentiates sgn); the inner where keeps 0/0 out of them.
    zero = out == 0
    safe = jnp.where(zero, jnp.ones_like(out), out)
    sgn = jnp.where(zero, jnp.zeros_like(out), safe / jnp.abs(safe))
    # Linear in (dr, dtheta), so JAX transposes it into torch's backward formula.
    return out, sgn * dr + 1j * out * dtheta


def _view_as_complex(x: Any) -> Any:
    return lax.complex(x[..., 0], x[..., 1])


def _view_as_real(z: Any) -> Any:
    return jnp.stack([jnp.real(z), jnp.imag(z)], axis=-1)


# Both are views: writing one goes back into the other (see spx._tensor.tensor.PART_VIEWS).
PART_VIEWS[_view_as_real] = lambda whole, pairs: _view_as_complex(pairs).astype(whole.dtype)
PART_VIEWS[_view_as_complex] = lambda whole, z: _view_as_real(z).astype(whole.dtype)


def complex(real: Any, imag: Any) -> Tensor:
    """The complex tensor ``real + imag * 1j`` (mirrors ``torch.complex``).

    Args:
        real: the real parts, float32 (or float64 with ``jax_enable_x64``).
        imag: the imaginary parts, the same dtype as ``real``; the two shapes broadcast.

    Returns:
        complex64 (complex128 for float64 parts), of the broadcast shape. Differentiable in
        both parts.

    Raises:
        RuntimeError: torch's messages for parts that are not floats or differ in dtype or
            shape; float16 parts, which would give complex32 (JAX has none).

    Example:
        >>> import spx
        >>> z = spx.complex(spx.tensor([1.0, 0.0]), spx.tensor([2.0, -1.0]))
        >>> z.dtype, z.imag.tolist()
        (dtype('complex64'), [2.0, -1.0])
    """
    re, im = tensor_arg(real, "complex", "real"), tensor_arg(imag, "complex", "imag")
    _check_parts(re, im, "complex", "spx.complex(real.float(), imag.float())")
    return apply(_complex, (), (re, im))


def polar(abs: Any, angle: Any) -> Tensor:
    """The complex tensor with absolute value ``abs`` and phase ``angle`` (mirrors
    ``torch.polar``): ``abs * cos(angle) + abs * sin(angle) * 1j``.

    LLaMA's rotary embeddings are ``spx.polar(spx.ones_like(freqs), freqs)``: ``e^(i freqs)``.

    Args:
        abs: the absolute values, float32 (or float64 with ``jax_enable_x64``).
        angle: the angles in radians, the same dtype as ``abs``; the two shapes broadcast.

    Returns:
        complex64 (complex128 for float64 input), of the broadcast shape. Differentiable in
        both arguments.

    Raises:
        RuntimeError: torch's messages for arguments that are not floats or differ in dtype or
            shape; float16 arguments, which would give complex32 (JAX has none).

    Example:
        >>> import math
        >>> import spx
        >>> z = spx.polar(spx.tensor([2.0]), spx.tensor([math.pi / 2]))
        >>> [round(v, 4) for v in spx.view_as_real(z)[0].tolist()]
        [-0.0, 2.0]
    """
    r, theta = tensor_arg(abs, "polar", "abs"), tensor_arg(angle, "polar", "angle")
    _check_parts(r, theta, "polar", "spx.polar(abs.float(), angle.float())")
    return apply(_polar, (), (r, theta))


def view_as_complex(input: Any) -> Tensor:
    """``input``'s last dimension of size 2 read as (real, imaginary) pairs (mirrors
    ``torch.view_as_complex``): shape ``(*, 2)`` becomes complex ``(*)``.

    A view, as torch's: writes into either show in the other. As torch, it refuses inputs whose
    layout no complex view could have (strides as ``input.stride()`` gives them: ``x.t()`` or
    ``x[:, :2]`` of a wider ``x``); spx keeps no storage offsets, so torch's odd-offset refusal
    (``x[:, 1:3]``) is not raised.

    Args:
        input: ``(*, 2)``, float32 (or float64 with ``jax_enable_x64``), at least 1-D.

    Returns:
        ``(*)``, complex64 (complex128 for float64). Differentiable.

    Raises:
        RuntimeError: torch's messages for another dtype, a 0-d input, a last dimension that is
            not 2, or strides no complex view could have; for float16, which would give
            complex32 (JAX has none), the fix ``input.float()``.

    Example:
        >>> import spx
        >>> x = spx.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> spx.view_as_complex(x).tolist()
        [(1+2j), (3+4j)]
    """
    x = tensor_arg(input, "view_as_complex")
    dtype = np.dtype(x.dtype)
    if dtype == np.float16:
        raise RuntimeError(
            _NO_COMPLEX32.format(what="view_as_complex", fix="spx.view_as_complex(x.float())")
        )
    if dtype not in _REAL_PARTS:
        raise RuntimeError(
            "view_as_complex is only supported for half, float and double tensors, but got a "
            f"tensor of scalar type: {scalar_type(dtype)}"
        )
    if x.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if x._view is not None:
        _check_strides(*_layout.layout(x))
    return x._make_view(apply(_view_as_complex, (), (x,)), _view_as_complex, ())


def _check_strides(shape: tuple, strides: tuple) -> None:
    """torch's layout checks: a complex element is two adjacent reals, and complex strides
    are the real ones halved (dimensions of size 1 have no stride that matters)."""
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(size != 1 and stride % 2 for size, stride in zip(shape[:-1], strides[:-1], strict=True)):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")


def view_as_real(input: Any) -> Tensor:
    """A complex tensor as its (real, imaginary) pairs in a new last dimension of size 2
    (mirrors ``torch.view_as_real``): complex ``(*)`` becomes ``(*, 2)``.

    A view, as torch's: writes into either show in the other.

    Args:
        input: ``(*)``, complex64 (or complex128 with ``jax_enable_x64``).

    Returns:
        ``(*, 2)``, float32 (float64 for complex128). Differentiable.

    Raises:
        RuntimeError: torch's message for a real input.

    Example:
        >>> import spx
        >>> z = spx.complex(spx.tensor([1.0, 3.0]), spx.tensor([2.0, 4.0]))
        >>> spx.view_as_real(z).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """
    z = tensor_arg(input, "view_as_real")
    if not z.is_complex():
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return z._make_view(apply(_view_as_real, (), (z,)), _view_as_real, ())


def real(input: Any) -> Tensor:
    """``input.real``: the real part of a complex tensor, a real tensor itself (a view, as
    ``torch.real``).

    Example:
        >>> import spx
        >>> spx.real(spx.tensor([1 + 2j])).tolist()
        [1.0]
    """
    return tensor_arg(input, "real").real


def imag(input: Any) -> Tensor:
    """``input.imag``: the imaginary part of a complex tensor (a view, as ``torch.imag``);
    a real tensor raises torch's error.

    Example:
        >>> import spx
        >>> spx.imag(spx.tensor([1 + 2j])).tolist()
        [2.0]
    """
    return tensor_arg(input, "imag").imag
