"""Worker ranks, environment and command line: torchrun's contract, plus what JAX needs.

Every worker gets what ``torchrun`` 2.13 sets (``LocalElasticAgent._start_workers``)::

    RANK GROUP_RANK ROLE_RANK ROLE_NAME LOCAL_WORLD_SIZE WORLD_SIZE GROUP_WORLD_SIZE
    ROLE_WORLD_SIZE MASTER_ADDR MASTER_PORT TORCHELASTIC_RESTART_COUNT TORCHELASTIC_MAX_RESTARTS
    TORCHELASTIC_RUN_ID TORCHELASTIC_USE_AGENT_STORE TORCH_NCCL_ASYNC_ERROR_HANDLING LOCAL_RANK
    TORCHELASTIC_ERROR_FILE TORCHELASTIC_SIGNALS_TO_HANDLE [OMP_NUM_THREADS] [CUDA_VISIBLE_DEVICES]

with one deliberate difference: ``TORCHELASTIC_USE_AGENT_STORE`` is ``False``. torchrun's agent
serves a TCP store at MASTER_PORT that workers join; spx-run opens nothing there: global rank 0
hosts JAX's coordinator at MASTER_ADDR:MASTER_PORT, which is what ``False`` tells torch-style code.

For JAX: ``JAX_NUM_CPU_DEVICES=1`` (one CPU device per process, as one rank per process expects)
unless the user chose a count (``JAX_NUM_CPU_DEVICES`` or ``--xla_force_host_platform_device_count``
in ``XLA_FLAGS``); with several CPU workers on a node, ``PJRT_NPROC`` (XLA's CPU thread pools)
at each worker's share of the cores, unless the user set it (see :func:`xla_cpu_threads`); on
GPU nodes ``SPX_LOCAL_DEVICE_IDS`` (see :mod:`.devices`); when more workers than GPUs share
them, ``XLA_PYTHON_CLIENT_MEM_FRACTION`` splits JAX's 75% preallocation between the workers of
one GPU (unless the user set how JAX takes GPU memory).

The command is torchrun's: ``python -u [-m] script args`` (``--no-python``: ``script args``),
with ``${local_rank}`` in the arguments replaced by the worker's local rank.
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from string import Template

from spx.distributed.elastic.devices import LOCAL_DEVICE_IDS_ENV, local_device_ids

# Variables ``import jax`` writes into os.environ. The launcher imports spx (and so jax) before
# it runs; workers must inherit the environment spx-run was started with, not these.
_JAX_IMPORT_SIDE_EFFECTS = ("TPU_SKIP_MDS_QUERY", "TF_CPP_MIN_LOG_LEVEL")
# The user's own choice of how JAX takes GPU memory, which spx-run never overrides.
_GPU_MEMORY_SETTINGS = (
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_ALLOCATOR",
)


@dataclass(frozen=True)
class NodeInfo:
    """What one node's agent contributes to rank assignment."""

    role: str
    local_world_size: int


@dataclass(frozen=True)
class Worker:
    """One worker's place in the job."""

    local_rank: int
    global_rank: int
    role_rank: int
    world_size: int
    role_world_size: int


def assign_worker_ranks(nodes: Sequence[NodeInfo], group_rank: int) -> list[Worker]:
    """Ranks of node ``group_rank``'s workers (torch's ``_assign_worker_ranks``).

    Global ranks run over nodes in ``group_rank`` order; role ranks do the same among the nodes
    of the same role. With equal nodes: ``RANK = node_rank * nproc_per_node + local_rank``.

    Example:
        >>> [w.global_rank for w in assign_worker_ranks([NodeInfo("default", 2)] * 2, 1)]
        [2, 3]
    """
    base_global = sum(n.local_world_size for n in nodes[:group_rank])
    me = nodes[group_rank]
    role_sizes: dict[str, int] = defaultdict(int)
    for node in nodes:
        role_sizes[node.role] += node.local_world_size
    base_role = sum(n.local_world_size for n in nodes[:group_rank] if n.role == me.role)
    world_size = sum(n.local_world_size for n in nodes)
    return [
        Worker(
            local_rank=i,
            global_rank=base_global + i,
            role_rank=base_role + i,
            world_size=world_size,
            role_world_size=role_sizes[me.role],
        )
        for i in range(me.local_world_size)
    ]


def launcher_environ(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment workers start from: ``os.environ`` without ``import jax``'s additions.

    A variable in :data:`_JAX_IMPORT_SIDE_EFFECTS` is kept only if it was in this process's
    environment at exec time (``/proc/self/environ``), with that value.
    """
    env = dict(os.environ if environ is None else environ)
    try:
        with open("/proc/self/environ", "rb") as fp:
            initial = dict(
                item.decode(errors="surrogateescape").split("=", 1)
                for item in fp.read().split(b"\0")
                if b"=" in item
            )
    except OSError:  # not Linux: nothing to compare against, keep what we have
        return env
    for key in _JAX_IMPORT_SIDE_EFFECTS:
        if key in initial:
            env[key] = initial[key]
        else:
            env.pop(key, None)
    return env


def _user_chose_cpu_devices(environ: dict[str, str]) -> bool:
    return (
        "JAX_NUM_CPU_DEVICES" in environ
        or "xla_force_host_platform_device_count" in environ.get("XLA_FLAGS", "")
    )


@dataclass(frozen=True)
class GroupInfo:
    """What every worker of one attempt on this node shares."""

    role: str
    local_world_size: int
    group_rank: int
    group_world_size: int
    master_addr: str
    master_port: int
    restart_count: int
    max_restarts: int
    run_id: str
    signals_to_handle: str = "SIGTERM,SIGINT,SIGHUP,SIGQUIT"
    omp_num_threads: str | None = None
    num_gpus: int = 0
    virtual_local_rank: bool = False


def worker_env(worker: Worker, group: GroupInfo, environ: dict[str, str]) -> dict[str, str]:
    """The variables spx-run adds to ``environ`` for ``worker``.

    Args:
        worker: the worker's ranks.
        group: the attempt's shared facts.
        environ: the launcher's environment (read for OMP/JAX/CUDA settings already present).

    Example:
        >>> g = GroupInfo("default", 2, 0, 1, "127.0.0.1", 29500, 0, 0, "none")
        >>> worker_env(assign_worker_ranks([NodeInfo("default", 2)], 0)[1], g, {})["RANK"]
        '1'
    """
    env = {
        "RANK": str(worker.global_rank),
        "GROUP_RANK": str(group.group_rank),
        "ROLE_RANK": str(worker.role_rank),
        "ROLE_NAME": group.role,
        "LOCAL_WORLD_SIZE": str(group.local_world_size),
        "WORLD_SIZE": str(worker.world_size),
        "GROUP_WORLD_SIZE": str(group.group_world_size),
        "ROLE_WORLD_SIZE": str(worker.role_world_size),
        "MASTER_ADDR": group.master_addr,
        "MASTER_PORT": str(group.master_port),
        "TORCHELASTIC_RESTART_COUNT": str(group.restart_count),
        "TORCHELASTIC_MAX_RESTARTS": str(group.max_restarts),
        "TORCHELASTIC_RUN_ID": group.run_id,
        "TORCHELASTIC_USE_AGENT_STORE": "False",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
        "TORCHELASTIC_SIGNALS_TO_HANDLE": group.signals_to_handle,
    }
    omp = environ.get("OMP_NUM_THREADS", group.omp_num_threads)
    if omp is not None:
        env["OMP_NUM_THREADS"] = omp
    ids = local_device_ids(worker.local_rank, group.local_world_size, group.num_gpus)
    # Workers of this node given the same GPUs as this one (more than 1: more workers than GPUs).
    sharers = sum(
        local_device_ids(r, group.local_world_size, group.num_gpus) == ids
        for r in range(group.local_world_size)
    )
    if group.virtual_local_rank:
        env["LOCAL_RANK"] = "0"
        visible = environ.get("CUDA_VISIBLE_DEVICES")
        gpus = visible.split(",") if visible is not None else None
        if gpus is not None and worker.local_rank >= len(gpus):
            raise ValueError(
                f"--virtual-local-rank: local rank {worker.local_rank} has no GPU in "
                f"CUDA_VISIBLE_DEVICES={visible}; run fewer workers per node"
            )
        env["CUDA_VISIBLE_DEVICES"] = (
            gpus[worker.local_rank].strip() if gpus is not None else str(worker.local_rank)
        )
        if ids is not None:
            ids = [0]
    else:
        env["LOCAL_RANK"] = str(worker.local_rank)
        if "CUDA_VISIBLE_DEVICES" in environ:
            env["CUDA_VISIBLE_DEVICES"] = environ["CUDA_VISIBLE_DEVICES"]
    if not _user_chose_cpu_devices(environ):
        env["JAX_NUM_CPU_DEVICES"] = "1"
    threads = xla_cpu_threads(group.local_world_size, group.num_gpus, environ)
    if threads is not None:
        env["PJRT_NPROC"] = threads
    if ids is not None:
        env[LOCAL_DEVICE_IDS_ENV] = ",".join(map(str, ids))
        if sharers > 1 and not any(k in environ for k in _GPU_MEMORY_SETTINGS):
            # JAX preallocates 75% of a GPU per process: a second worker on the same GPU would
            # run out of memory at its first array. Split that 75% between the sharers.
            env["XLA_PYTHON_CLIENT_MEM_FRACTION"] = f"{0.75 / sharers:.3f}"
    return env


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def xla_cpu_threads(local_world_size: int, num_gpus: int, environ: dict[str, str]) -> str | None:
    """``PJRT_NPROC`` for the CPU workers of one node, or None to leave XLA's default.

    XLA's CPU client sizes its thread pools from ``PJRT_NPROC`` (default: one thread per core),
    so N workers on one node would run N threads per core, and their threads spin and wait for
    each other's cores; each worker gets its share of the cores instead, as torchrun's
    ``OMP_NUM_THREADS`` does for torch. On 2 cores this took a 4-process DDP step from 72 to
    63 ms and a 4-process 1F1B pipeline step from 54 to 45 ms. Not set for one worker, on GPU
    nodes, when the user set ``PJRT_NPROC`` or chose several CPU devices per process (their
    collectives need a thread per device).

    Example:
        >>> xla_cpu_threads(1, 0, {}) is None
        True
    """
    if local_world_size <= 1 or num_gpus > 0 or "PJRT_NPROC" in environ:
        return None
    if _user_chose_cpu_devices(environ):
        return None
    return str(max(1, _cores() // local_world_size))


def worker_command(
    script: str,
    script_args: Sequence[str],
    *,
    module: bool = False,
    no_python: bool = False,
    run_path: bool = False,
    environ: dict[str, str] | None = None,
) -> list[str]:
    """The worker command line, before ``${local_rank}`` substitution (torchrun's).

    Args:
        script: the training script (or module with ``module``, or program with ``no_python``).
        script_args: its arguments.
        module: run it as ``python -m``.
        no_python: run it directly, not through Python.
        run_path: run it (an absolute path) with ``runpy.run_path`` in a Python started by spx
            (torchrun's ``--run-path``; takes precedence over ``no_python``).
        environ: read for ``PYTHON_EXEC``, the interpreter torchrun uses instead of its own.

    Raises:
        ValueError: ``module`` together with ``no_python``.

    Example:
        >>> worker_command("train.py", ["--lr", "0.1"], environ={"PYTHON_EXEC": "python3"})
        ['python3', '-u', 'train.py', '--lr', '0.1']
    """
    env = os.environ if environ is None else environ
    python = env.get("PYTHON_EXEC", sys.executable)
    if run_path:
        bootstrap = os.path.join(os.path.dirname(__file__), "_run_path.py")
        return [python, "-u", bootstrap, script, *script_args]
    if no_python:
        if module:
            raise ValueError(
                "Don't use both the '--no-python' flag and the '--module' flag at the same time."
            )
        return [script, *script_args]
    return [python, "-u", *(["-m"] if module else []), script, *script_args]


def substitute_local_rank(args: Sequence[str], local_rank: int) -> list[str]:
    """Replace ``${local_rank}`` / ``$local_rank`` in each argument (torchrun's ``macros``)."""
    return [Template(a).safe_substitute(local_rank=str(local_rank)) for a in args]
