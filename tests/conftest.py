"""Test-session set-up: several CPU devices, before anything starts the JAX backend."""

import jax

# Pipeline and distributed tests put one rank on each device; the forced CPU devices share the
# machine's cores (see shared/JAX_NOTES.md), so this costs nothing when unused.
jax.config.update("jax_num_cpu_devices", 8)
