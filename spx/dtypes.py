"""torch dtype names as numpy dtypes (``spx.float32``, ``spx.bfloat16``, ...).

Each name is the ``numpy.dtype`` object a Tensor's ``.dtype`` returns, and ``spx.dtype`` is
``numpy.dtype``, so torch's idioms hold: ``x.dtype is spx.float32``,
``isinstance(spx.float32, spx.dtype)``, ``{spx.float16: ...}[x.dtype]``,
``x.dtype in {spx.float16, spx.bfloat16}``. (They were JAX's scalar types before: equal to a
tensor's dtype by ``==`` but not by ``is``, hash or isinstance.)

64-bit types need ``jax.config.update("jax_enable_x64", True)``; without it JAX computes in
32 bits, so ``spx.long`` arrays are created as int32 and ``spx.cdouble`` ones as complex64
(as every JAX array is by default).

Example:
    >>> import spx
    >>> spx.ones(2).dtype is spx.float32, isinstance(spx.bfloat16, spx.dtype)
    (True, True)
"""

import jax.numpy as jnp
import numpy as np

float32 = float = np.dtype(jnp.float32)
float16 = half = np.dtype(jnp.float16)
bfloat16 = np.dtype(jnp.bfloat16)
float64 = double = np.dtype(jnp.float64)
int8 = np.dtype(jnp.int8)
uint8 = np.dtype(jnp.uint8)
int16 = short = np.dtype(jnp.int16)
int32 = int = np.dtype(jnp.int32)
int64 = long = np.dtype(jnp.int64)
bool = np.dtype(jnp.bool_)
complex64 = cfloat = np.dtype(jnp.complex64)
complex128 = cdouble = np.dtype(jnp.complex128)

__all__ = [
    "bfloat16", "bool", "cdouble", "cfloat", "complex64", "complex128", "double", "float",
    "float16", "float32", "float64", "half", "int", "int8", "int16", "int32", "int64", "long",
    "short", "uint8",
]  # fmt: skip
