"""torch's dtype functions: ``spx.dtype``, ``get_default_dtype``, ``finfo``/``iinfo``,
``promote_types``, ``result_type``, ``can_cast``, ``is_floating_point``, ...

spx dtypes *are* numpy dtypes (``spx.float32`` is ``jnp.float32``; ``t.dtype`` is a
``numpy.dtype``), so ``spx.dtype`` is ``numpy.dtype`` and ``isinstance(t.dtype, spx.dtype)``
holds. The default float dtype is float32 and cannot be changed: JAX computes in 32 bits unless
``jax_enable_x64`` is set, so ``torch.set_default_dtype(torch.float64)`` has no faithful
equivalent and spx does not offer one.

Example:
    >>> import spx
    >>> isinstance(spx.ones(2).dtype, spx.dtype)
    True
    >>> spx.promote_types(spx.int32, spx.float16) == spx.float16
    True
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from spx._tensor.tensor import Tensor
from spx.ops._args import tensor_arg

__all__ = [
    "can_cast", "dtype", "finfo", "get_default_dtype", "iinfo", "is_complex",
    "is_floating_point", "is_nonzero", "promote_types", "result_type",
]  # fmt: skip

dtype = np.dtype
finfo = jnp.finfo
iinfo = jnp.iinfo


def get_default_dtype() -> np.dtype:
    """The dtype of float tensors created from Python floats: always float32 in spx."""
    return np.dtype(jnp.float32)


def promote_types(type1: Any, type2: Any) -> np.dtype:
    """The smallest dtype both promote to (mirrors ``torch.promote_types``)."""
    return np.dtype(jnp.promote_types(type1, type2))


def result_type(tensor1: Any, tensor2: Any) -> np.dtype:
    """The dtype of an arithmetic result of the two (Python numbers count as torch's wrapped
    numbers: they don't widen a tensor's dtype)."""
    args = [a.dtype if isinstance(a, Tensor) else a for a in (tensor1, tensor2)]
    return np.dtype(jnp.result_type(*args))


def can_cast(from_: Any, to: Any) -> bool:
    """Whether torch's casting rule allows ``from_`` -> ``to`` (no float -> int, no
    complex -> real, no non-bool -> bool)."""
    return bool(np.can_cast(np.dtype(from_), np.dtype(to), casting="same_kind"))


def is_floating_point(input: Any) -> bool:
    """Whether ``input`` has a floating dtype (float16, bfloat16, float32, float64)."""
    return tensor_arg(input, "is_floating_point").is_floating_point()


def is_complex(input: Any) -> bool:
    """Whether ``input`` has a complex dtype."""
    return tensor_arg(input, "is_complex").is_complex()


def is_nonzero(input: Any) -> bool:
    """Whether a one-element tensor is nonzero (a Python bool; mirrors ``torch.is_nonzero``)."""
    return tensor_arg(input, "is_nonzero").is_nonzero()
