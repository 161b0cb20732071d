"""A persistent compilation cache for every rank, not just process 0.

JAX's persistent cache (``jax_compilation_cache_dir``) keys an executable by its program *and
its devices*, and in a multi-process job only process 0 writes entries
(``jax._src.compiler._cache_write`` returns early elsewhere, to spare shared filesystems from
concurrent writers). A pipeline rank compiles programs for its own device, which process 0
never compiles, so without help every rank but 0 recompiles everything at every launch.

spx gives each rank its own directory, ``<cache dir>/rank<R>``, and lets every rank write its
own entries there (same rules as JAX's writer otherwise: no host callbacks, the configured
minimum compile time). A relaunch of the same job on the same world then loads every rank's
executables instead of compiling them.

The cache directory is, in order: ``jax_compilation_cache_dir`` if set (``JAX_COMPILATION_
CACHE_DIR``), ``SPX_COMPILATION_CACHE_DIR``, else ``~/.cache/spx/xla`` (``$XDG_CACHE_HOME``
honoured). ``SPX_COMPILATION_CACHE=0`` turns it off. Unless set in the environment, the minimum
compile time and entry size for caching are lowered to 0: small pipeline programs compile in
~0.1 s each but there are many of them.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import jax

_patched = False


def cache_root() -> str | None:
    """The directory that holds the ranks' cache directories, or None when disabled."""
    if os.environ.get("SPX_COMPILATION_CACHE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    configured = jax.config.jax_compilation_cache_dir
    if configured:
        return configured
    explicit = os.environ.get("SPX_COMPILATION_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "spx", "xla")


def enable(rank: int) -> str | None:
    """Point this process's persistent cache at its rank's directory and let it write there.

    Call before anything compiles (``init_process_group`` does).

    Args:
        rank: this process's global rank.

    Returns:
        The rank's cache directory, or None when caching is disabled.
    """
    root = cache_root()
    if root is None:
        return None
    path = os.path.join(root, f"rank{rank}")
    os.makedirs(path, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", path)
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    if "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES" not in os.environ:
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    if rank != 0:
        _let_this_process_write()
    return path


def _let_this_process_write() -> None:
    """Replace JAX's writer (process 0 only) by one that writes from this process too.

    Private JAX API (``jax._src.compiler._cache_write``), installed only in ranks other than 0,
    whose directory is their own. The replacement keeps JAX's rules (no host callbacks, the
    configured minimum compile time) and accepts the writer's arguments of every JAX that
    spx supports: JAX 0.10 passes ``host_callbacks`` as a sixth argument, JAX 0.11 does not.
    Whatever goes wrong while writing only costs the cache entry, never the job.
    """
    global _patched
    if _patched:
        return
    from jax._src import compilation_cache, compiler

    def cache_write(
        cache_key: str,
        compile_time_secs: float,
        module_name: str,
        backend: Any,
        executable: Any,
        host_callbacks: Any = (),
        *_: Any,
        **__: Any,
    ) -> None:
        if host_callbacks:
            return  # baked-in callback pointers cannot be reloaded by another process
        if compile_time_secs < jax.config.jax_persistent_cache_min_compile_time_secs:
            return
        try:
            compilation_cache.put_executable_and_time(
                cache_key, module_name, executable, backend, int(compile_time_secs)
            )
        except Exception as e:  # a full disk, or another JAX's cache API: never fail the job
            warnings.warn(
                f"spx: could not write the persistent compilation cache entry for "
                f"{module_name!r}: {type(e).__name__}: {e}",
                stacklevel=2,
            )

    compiler._cache_write = cache_write
    _patched = True
