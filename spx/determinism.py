"""torch's determinism switches: ``spx.use_deterministic_algorithms`` and friends, on XLA.

torch's ``use_deterministic_algorithms(True)`` makes every operation pick a deterministic
kernel (or raise where none exists). What decides this under spx is XLA, per backend:

* **CPU**: XLA's CPU kernels give the same results run to run; there is nothing to switch.
* **GPU**: XLA is deterministic only with ``--xla_gpu_deterministic_ops=true`` in
  ``XLA_FLAGS`` (deterministic scatter and reductions instead of atomics, and autotuning
  limited to deterministic convolution and GEMM algorithms). XLA reads ``XLA_FLAGS`` once,
  when JAX starts its backend, i.e. at the first array operation of the process.

So ``spx.use_deterministic_algorithms(True)`` adds the flag to ``XLA_FLAGS`` when JAX has not
started yet (call it at the top of the script, next to ``spx.manual_seed``, as torch's
reproducibility recipe does), which covers a GPU started later; when JAX already runs on a GPU
without the flag, it raises ``RuntimeError`` naming the fix (``warn_only=True``: a warning).
``False`` takes out the flag it added, while JAX has not started. torch raises at a
nondeterministic *operation*; spx can only refuse at the switch, since XLA's flag covers every
operation at once, and then no operation needs to raise.

``spx.backends.cudnn.deterministic`` stays what :mod:`spx.backends.cudnn` says it is: stored,
read back, changing nothing (XLA, not cuDNN's heuristics, chooses convolution algorithms, and
the flag above is what restricts them). The settings are process-wide, as torch's and
``XLA_FLAGS`` are.

Example:
    >>> import spx
    >>> spx.use_deterministic_algorithms(True)
    >>> spx.are_deterministic_algorithms_enabled()
    True
    >>> spx.use_deterministic_algorithms(False)
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import numpy as np

__all__ = [
    "are_deterministic_algorithms_enabled",
    "get_deterministic_debug_mode",
    "is_deterministic_algorithms_warn_only_enabled",
    "set_deterministic_debug_mode",
    "use_deterministic_algorithms",
]

FLAG = "--xla_gpu_deterministic_ops"
_GPU_PLATFORMS = frozenset({"gpu", "cuda", "rocm"})


@dataclass
class _State:
    mode: bool = False
    warn_only: bool = False
    # XLA_FLAGS as it was before this module added FLAG (None: unset), or no entry if it didn't.
    added: bool = False
    flags_before: str | None = None


_STATE = _State()


def _backend_started() -> bool:
    """Whether JAX has created its backends (and so already read ``XLA_FLAGS``)."""
    from jax._src import xla_bridge

    started = getattr(xla_bridge, "backends_are_initialized", None)
    # JAX's own answer where it has one; else its cache of created backends.
    return started() if started is not None else bool(getattr(xla_bridge, "_backends", None))


def _gpu_started() -> bool:
    """Whether a started JAX runs a GPU backend (call only once :func:`_backend_started`)."""
    from jax._src import xla_bridge

    return bool(_GPU_PLATFORMS & set(xla_bridge.backends()))


def _without_flag(flags: str) -> list[str]:
    return [f for f in flags.split() if f.split("=", 1)[0] != FLAG]


def _flag_on(flags: str) -> bool:
    values = [f.split("=", 1)[1:] for f in flags.split() if f.split("=", 1)[0] == FLAG]
    # XLA takes the last occurrence; a bare flag means true.
    return bool(values) and (values[-1] or ["true"])[0].lower() in ("true", "1")


def _require_deterministic_xla(warn_only: bool) -> None:
    flags = os.environ.get("XLA_FLAGS", "")
    if _flag_on(flags):
        return  # the user's own XLA_FLAGS asked for it already
    if not _backend_started():
        if not _STATE.added:
            _STATE.added, _STATE.flags_before = True, os.environ.get("XLA_FLAGS")
        os.environ["XLA_FLAGS"] = " ".join([*_without_flag(flags), f"{FLAG}=true"])
        return
    if not _gpu_started():
        return  # XLA's CPU kernels are deterministic already
    message = (
        "use_deterministic_algorithms(True): JAX already runs on the GPU without "
        f"{FLAG}=true, and XLA reads its flags only when JAX starts, so GPU results may "
        "differ from run to run. Call spx.use_deterministic_algorithms(True) before the "
        f"first tensor operation, or start the process with XLA_FLAGS={FLAG}=true."
    )
    if warn_only:
        warnings.warn(message, UserWarning, stacklevel=3)
    else:
        raise RuntimeError(message)


def _release_flag() -> None:
    if not _STATE.added or _backend_started():
        return  # not ours, or XLA has read it already (deterministic ops are still correct)
    rest = _without_flag(os.environ.get("XLA_FLAGS", ""))
    if rest:
        os.environ["XLA_FLAGS"] = " ".join(rest)
    elif _STATE.flags_before is None:
        os.environ.pop("XLA_FLAGS", None)
    else:
        os.environ["XLA_FLAGS"] = _STATE.flags_before
    _STATE.added, _STATE.flags_before = False, None


def _check_bool(value: object, name: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(
            f"use_deterministic_algorithms: {name} must be a bool, got "
            f"{type(value).__name__} {value!r:.40}"
        )
    return bool(value)


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Require deterministic kernels (mirrors ``torch.use_deterministic_algorithms``).

    See the module docstring for what this does on XLA: nothing to do on CPU; on GPU it adds
    ``--xla_gpu_deterministic_ops=true`` to ``XLA_FLAGS`` if JAX has not started yet.

    Args:
        mode: True to require determinism, False to allow nondeterministic kernels.
        warn_only: with ``mode=True``, warn instead of raising when determinism can't be had
            (JAX already started on a GPU without the flag). Stored even with ``mode=False``,
            as in torch.

    Raises:
        TypeError: ``mode`` or ``warn_only`` is not a bool (torch's error kind).
        RuntimeError: ``mode=True`` while JAX already runs on a GPU without the flag; the
            message names the fix. Nothing is changed then.

    Example:
        >>> import spx
        >>> spx.use_deterministic_algorithms(True, warn_only=True)
        >>> spx.is_deterministic_algorithms_warn_only_enabled()
        True
        >>> spx.use_deterministic_algorithms(False)
    """
    mode = _check_bool(mode, "mode")
    warn_only = _check_bool(warn_only, "warn_only")
    if mode:
        _require_deterministic_xla(warn_only)
    else:
        _release_flag()
    _STATE.mode, _STATE.warn_only = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """Whether :func:`use_deterministic_algorithms` was turned on (mirrors torch's).

    Example:
        >>> import spx
        >>> spx.are_deterministic_algorithms_enabled()
        False
    """
    return _STATE.mode


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether ``warn_only=True`` was given with the last :func:`use_deterministic_algorithms`
    (mirrors torch's).

    Example:
        >>> import spx
        >>> spx.is_deterministic_algorithms_warn_only_enabled()
        False
    """
    return _STATE.warn_only


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """torch's other spelling: ``"default"``/0 (off), ``"warn"``/1 (on, warn only),
    ``"error"``/2 (on) (mirrors ``torch.set_deterministic_debug_mode``).

    Args:
        debug_mode: the mode, by name or number.

    Raises:
        TypeError: not a str or int.
        RuntimeError: an unknown name or number (torch's errors).

    Example:
        >>> import spx
        >>> spx.set_deterministic_debug_mode("warn")
        >>> spx.get_deterministic_debug_mode()
        1
        >>> spx.set_deterministic_debug_mode(0)
    """
    if not isinstance(debug_mode, int | str):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(
                "invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                f"but got {debug_mode}"
            )
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(
            f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}"
        )
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0, 1 or 2, as :func:`set_deterministic_debug_mode` takes it (mirrors torch's).

    Example:
        >>> import spx
        >>> spx.get_deterministic_debug_mode()
        0
    """
    if not _STATE.mode:
        return 0
    return 1 if _STATE.warn_only else 2
