"""How many workers a node runs, and which local devices each one takes, without starting JAX.

``--nproc-per-node`` accepts torchrun's words: ``cpu`` (the CPUs this process may run on, as
``torch._utils.cpu_count``), ``gpu`` (the NVIDIA GPUs the workers will see), ``auto`` (GPUs if
there are any, else CPUs). torchrun asks ``torch.cuda``; the launcher must not start JAX (it would
hold the GPUs the workers need), so GPUs are counted with ``nvidia-smi -L`` and, when that tool is
missing, ``/proc/driver/nvidia/gpus``, then narrowed to ``CUDA_VISIBLE_DEVICES``.

Each worker on a GPU node is told which GPUs are its own in ``SPX_LOCAL_DEVICE_IDS``: indices into
the GPUs it sees (``CUDA_VISIBLE_DEVICES`` order), comma-separated, the argument
``jax.distributed.initialize(local_device_ids=...)`` takes. The node's GPUs are split evenly in
``LOCAL_RANK`` order. On a node without GPUs the variable is not set.
"""

from __future__ import annotations

import os
import shutil
import subprocess

# The variable that tells a worker which local GPUs are its own (see the module docstring).
LOCAL_DEVICE_IDS_ENV = "SPX_LOCAL_DEVICE_IDS"
_NVIDIA_PROC = "/proc/driver/nvidia/gpus"


def cpu_count() -> int:
    """CPUs this process may run on (its affinity mask, which respects cgroups and taskset)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _nvidia_smi_count(timeout: float) -> int | None:
    """GPUs listed by ``nvidia-smi -L`` (lines ``GPU <i>: ...``), or None if it cannot tell."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "-L"], capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def _visible_entries(value: str) -> int:
    """Devices named by ``CUDA_VISIBLE_DEVICES``; CUDA stops at the first invalid entry."""
    count = 0
    for item in value.split(","):
        item = item.strip()
        if not item or item.startswith("-"):
            break
        count += 1
    return count


def count_gpus(timeout: float = 10.0) -> int:
    """NVIDIA GPUs the workers of this node will see.

    Args:
        timeout: seconds ``nvidia-smi -L`` may take.

    Returns:
        The number of GPUs, 0 when the node has none (or no NVIDIA driver).

    Example:
        >>> count_gpus() >= 0
        True
    """
    found = _nvidia_smi_count(timeout)
    if found is None:
        found = len(os.listdir(_NVIDIA_PROC)) if os.path.isdir(_NVIDIA_PROC) else 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        found = min(found, _visible_entries(visible))
    return found


def determine_local_world_size(nproc_per_node: str) -> int:
    """The number of workers for ``--nproc-per-node`` (an int, ``auto``, ``cpu`` or ``gpu``).

    Args:
        nproc_per_node: the flag's value as given on the command line.

    Returns:
        A positive number of workers.

    Raises:
        ValueError: not a positive int nor one of the words, or ``gpu`` on a node without GPUs.

    Example:
        >>> determine_local_world_size("4")
        4
    """
    value = nproc_per_node.strip()
    try:
        n = int(value)
    except ValueError:
        n = None
    if n is not None:
        if n < 1:
            raise ValueError(
                f"--nproc-per-node={nproc_per_node}: expected a positive number of workers per "
                "node (or auto, cpu, gpu); pass e.g. --nproc-per-node=2"
            )
        return n
    if value == "cpu":
        return cpu_count()
    if value == "gpu":
        gpus = count_gpus()
        if gpus == 0:
            raise ValueError(
                "--nproc-per-node=gpu: no NVIDIA GPU found on this node (nvidia-smi -L and "
                f"{_NVIDIA_PROC} list none, or CUDA_VISIBLE_DEVICES hides them); pass a number "
                "of workers, or --nproc-per-node=cpu"
            )
        return gpus
    if value == "auto":
        return count_gpus() or cpu_count()
    raise ValueError(
        f"--nproc-per-node={nproc_per_node!r} is not supported; expected a positive int, "
        "'auto', 'cpu' or 'gpu' (spx-run counts NVIDIA GPUs only; 'xpu' and other torch "
        "device types do not exist in JAX)"
    )


def local_device_ids(local_rank: int, local_world_size: int, num_gpus: int) -> list[int] | None:
    """The GPUs (indices among the visible ones) that worker ``local_rank`` should use.

    GPUs are split evenly in local-rank order: with 8 GPUs and 4 workers, worker 1 gets [2, 3].
    With more workers than GPUs, workers share them round-robin.

    Args:
        local_rank: the worker's rank on this node.
        local_world_size: workers on this node.
        num_gpus: GPUs visible on this node (:func:`count_gpus`).

    Returns:
        The device ids, or None on a node without GPUs.

    Example:
        >>> local_device_ids(1, 4, 8)
        [2, 3]
    """
    if num_gpus <= 0:
        return None
    if num_gpus < local_world_size:
        return [local_rank % num_gpus]
    per_worker = num_gpus // local_world_size
    return list(range(local_rank * per_worker, (local_rank + 1) * per_worker))
