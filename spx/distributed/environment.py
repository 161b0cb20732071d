"""What the process can use and how it was launched: torch's ``is_*_available``,
``is_torchelastic_launched``, ``get_node_local_rank`` and ``get_default_backend_for_device``.

Every torch backend name is accepted by :func:`~spx.distributed.init_process_group`; the ones
JAX's runtime actually runs underneath are gloo (CPU) and NCCL (GPU), so those two report
available, as they would in a torch build with both.

Example:
    >>> import spx.distributed as dist
    >>> dist.is_gloo_available(), dist.get_default_backend_for_device("cpu")
    (True, 'gloo')
"""

from __future__ import annotations

import os
from typing import Any

__all__ = [
    "get_default_backend_for_device", "get_node_local_rank", "is_backend_available",
    "is_gloo_available", "is_mpi_available", "is_nccl_available", "is_torchelastic_launched",
    "is_ucc_available", "is_xccl_available",
]  # fmt: skip

# The device type each backend serves, as torch's default_device_backend_map.
_DEFAULT_BACKEND = {"cpu": "gloo", "cuda": "nccl", "gpu": "nccl"}
_RUN_UNDERNEATH = ("gloo", "nccl", "thread")


def is_gloo_available() -> bool:
    """True: collectives between CPU processes run on gloo (JAX's CPU collectives)."""
    return True


def is_nccl_available() -> bool:
    """True: collectives between GPU processes run on NCCL (JAX's GPU collectives)."""
    return True


def is_mpi_available() -> bool:
    """False: spx's collectives do not run on MPI (``init_process_group("mpi")`` still works)."""
    return False


def is_ucc_available() -> bool:
    """False: spx's collectives do not run on UCC."""
    return False


def is_xccl_available() -> bool:
    """False: spx's collectives do not run on XCCL."""
    return False


def is_backend_available(backend: str) -> bool:
    """Whether ``backend`` ("gloo", "nccl", "thread", ...) runs underneath spx's collectives."""
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a name such as 'gloo', got {backend!r}")
    return backend.lower() in _RUN_UNDERNEATH


def is_torchelastic_launched() -> bool:
    """Whether this process was started by ``spx-run``/``torchrun`` (``TORCHELASTIC_RUN_ID``
    is set)."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank on its node: ``LOCAL_RANK`` (set by ``spx-run``), else
    ``fallback_rank``.

    Raises:
        RuntimeError: neither is there (torch's message).
    """
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
        "`get_node_local_rank` to work, assuming you are not running in a multi-device context "
        "and want the code to run locally instead."
    )


def get_default_backend_for_device(device: Any) -> str:
    """torch's default backend for ``device`` ("cpu" -> "gloo", "cuda" -> "nccl").

    Raises:
        ValueError: a device type with no default backend.
    """
    kind = device if isinstance(device, str) else getattr(device, "type", None)
    kind = str(kind).split(":")[0].lower() if kind is not None else None
    if kind not in _DEFAULT_BACKEND:
        raise ValueError(
            f"Default backend not registered for device : {device!r}; pass 'cpu' or 'cuda' "
            "(or name the backend: init_process_group('gloo'))"
        )
    return _DEFAULT_BACKEND[kind]
