"""``spx.backends.cudnn``: the cuDNN switches scripts set, accepted as torch accepts them.

``torch.backends.cudnn.benchmark = True`` asks cuDNN to time its convolution algorithms and
``deterministic = True`` to use deterministic ones. XLA compiles its own convolution kernels
(autotuned on GPU at compile time; on CPU there is no cuDNN at all, exactly as for a torch
build without CUDA, where setting these flags also changes nothing): the flags are stored and
read back, and do not change what XLA runs.
"""

from __future__ import annotations

__all__ = ["allow_tf32", "benchmark", "deterministic", "enabled", "is_available", "version"]

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """Whether a GPU is available (XLA links NVIDIA's libraries itself when one is)."""
    from spx import cuda

    return cuda.is_available()


def version() -> None:
    """None: spx does not load cuDNN itself (torch returns None without CUDA too)."""
    return None
