"""torch dtype names as JAX/numpy dtypes (``spx.float32``, ``spx.bfloat16``, ...).

64-bit types need ``jax.config.update("jax_enable_x64", True)``; without it JAX computes in
32 bits, so ``spx.long`` arrays are created as int32 (as every JAX array is by default).
"""

import jax.numpy as jnp

float32 = float = jnp.float32
float16 = half = jnp.float16
bfloat16 = jnp.bfloat16
float64 = double = jnp.float64
int8 = jnp.int8
uint8 = jnp.uint8
int16 = short = jnp.int16
int32 = int = jnp.int32
int64 = long = jnp.int64
bool = jnp.bool_
complex64 = jnp.complex64

__all__ = [
    "bfloat16", "bool", "complex64", "double", "float", "float16", "float32", "float64",
    "half", "int", "int8", "int16", "int32", "int64", "long", "short", "uint8",
]  # fmt: skip
