"""torch's CPU thread settings: ``spx.get_num_threads`` / ``set_num_threads`` and the interop pair.

torch sizes its intra-op pool on demand. JAX's CPU backend creates its thread pool once, when it
starts, with one thread per CPU the process may use, and has no setting to resize it. So:

* ``get_num_threads()`` answers the truth: the number of CPUs this process may use (what XLA's
  pool was sized to, unless the affinity changed since).
* ``set_num_threads(n)`` checks ``n`` as torch does and, when ``n`` differs from that number,
  warns once per value that it has no effect and how to get the effect (start the process on
  fewer CPUs: ``taskset -c 0-3 python train.py``). Scripts call it for speed only, so going on is
  right; the numbers are the same with any thread count.

Example:
    >>> import spx
    >>> spx.get_num_threads() >= 1
    True
"""

from __future__ import annotations

import os
import warnings

from spx import _validate

__all__ = [
    "get_num_interop_threads",
    "get_num_threads",
    "set_num_interop_threads",
    "set_num_threads",
]

_WARNED: set[tuple[str, int]] = set()


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _checked(name: str, n: object) -> int:
    # torch's messages (RuntimeError for the type too).
    if not _validate.is_int(n):  # numpy ints pass, bools don't (as in torch)
        raise RuntimeError(f"{name} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{name} expects a positive integer")
    return int(n)


def _no_effect(name: str, n: int) -> None:
    have = _cpus()
    if n != have and (name, n) not in _WARNED:
        _WARNED.add((name, n))
        warnings.warn(
            f"spx.{name}({n}) has no effect: JAX's CPU backend runs on a thread pool sized "
            f"once, at start-up, to the {have} CPU(s) this process may use. To use fewer "
            "threads, start the process on fewer CPUs (taskset -c 0-3 python train.py).",
            stacklevel=3,
        )


def get_num_threads() -> int:
    """The CPU threads JAX computes with: one per CPU this process may use."""
    return _cpus()


def set_num_threads(n: int) -> None:
    """Accepted for torch scripts; JAX's pool can't be resized (warns when ``n`` differs)."""
    _no_effect("set_num_threads", _checked("set_num_threads", n))


def get_num_interop_threads() -> int:
    """The threads that run independent operations side by side: JAX's same pool."""
    return _cpus()


def set_num_interop_threads(n: int) -> None:
    """Accepted for torch scripts; JAX's pool can't be resized (warns when ``n`` differs)."""
    _no_effect("set_num_interop_threads", _checked("set_num_interop_threads", n))
