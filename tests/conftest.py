"""Test-session set-up: several CPU devices, before anything starts the JAX backend; compiled
programs released after each test file."""

import jax
import pytest

# Pipeline and distributed tests put one rank on each device; the forced CPU devices share the
# machine's cores (see shared/JAX_NOTES.md), so this costs nothing when unused.
jax.config.update("jax_num_cpu_devices", 8)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop the compiled programs of a finished test file.

    Every XLA CPU executable keeps a few memory mappings of its code; the whole suite compiles
    tens of thousands of programs, and one process past Linux's vm.max_map_count (65530)
    crashes inside XLA (SIGSEGV/SIGABRT, no Python traceback). Programs are rarely shared
    between test files, so clearing the caches between files costs little.
    """
    yield
    from spx._tensor import program

    program._PROGRAMS.clear()
    program._GRAD_FNS.clear()
    jax.clear_caches()
