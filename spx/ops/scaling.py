"""Splitting and rescaling floats: ``spx.frexp`` (mantissa and exponent) and ``spx.renorm``
(cap the norm of each slice), mirroring torch's.

Example:
    >>> import spx
    >>> m, e = spx.frexp(spx.tensor([8.0]))
    >>> m.tolist(), e.tolist()
    ([0.5], [4])
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from spx._tensor import numpy_names
from spx._tensor.dispatch import apply
from spx._tensor.tensor import Tensor
from spx.ops._args import tensor_arg

__all__ = ["frexp", "renorm"]


class Frexp(NamedTuple):
    """``torch.return_types.frexp``: ``mantissa`` and ``exponent``."""

    mantissa: Tensor
    exponent: Tensor


@jax.custom_jvp
def _mantissa(x: Any) -> Any:
    return jnp.frexp(x)[0]


@_mantissa.defjvp
def _mantissa_jvp(primals: tuple, tangents: tuple) -> tuple:
    # torch's derivative grad / 2^exponent (JAX's frexp has none).
    (x,), (t,) = primals, tangents
    mantissa, exponent = jnp.frexp(x)
    return mantissa, t / jnp.exp2(exponent.astype(x.dtype))


def _frexp(x: Any) -> tuple[Any, Any]:
    return _mantissa(x), jnp.frexp(x)[1].astype(jnp.int32)


def frexp(input: Any) -> Frexp:
    """Split ``input`` into ``mantissa * 2 ** exponent`` with ``|mantissa|`` in ``[0.5, 1)``
    (0, inf and NaN keep themselves as mantissa, with exponent 0).

    Args:
        input: ``(*)`` floating-point tensor.

    Returns:
        ``(mantissa, exponent)``, both ``(*)``: ``input``'s dtype and int32. Mirrors
        ``torch.frexp``.
    """
    t = tensor_arg(input, "frexp")
    if not jnp.issubdtype(t.dtype, jnp.floating):
        raise RuntimeError(
            f"torch.frexp() only supports floating-point dtypes (got {t.dtype}); cast first: "
            "spx.frexp(x.float())"
        )
    return Frexp(*apply(_frexp, (), (t,), n_out=2))


def renorm(input: Any, p: float, dim: int, maxnorm: float) -> Tensor:
    """Rescale each slice ``input.select(dim, i)`` whose ``p``-norm exceeds ``maxnorm`` so that
    its norm is ``maxnorm``; other slices are unchanged.

    Args:
        input: ``(*)`` floating-point tensor, at least 1-D.
        p: the norm's power, ``> 0``.
        dim: the dimension indexing the slices.
        maxnorm: the largest norm kept, ``>= 0``.

    Returns:
        ``input``'s shape. Mirrors ``torch.renorm`` (and ``Tensor.renorm``/``renorm_``).
    """
    return tensor_arg(input, "renorm").renorm(p, dim, maxnorm)


# numpy's axis=/keepdims= as torch accepts them (torch.renorm(x, 2, axis=0, maxnorm=1)).
numpy_names.accept(globals(), __all__)
