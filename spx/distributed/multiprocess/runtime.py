"""Start JAX's multi-controller runtime from torchrun's environment; one per process.

``init_process_group`` in a process launched by ``spx-run``/``torchrun`` (``WORLD_SIZE`` > 1,
not a thread of ``spx.distributed.spawn``) lands here. :func:`start` calls
``jax.distributed.initialize`` with the coordinator at ``MASTER_ADDR:MASTER_PORT`` (started by
rank 0, bound to that address — never to every interface, JAX's default), makes gloo's sockets
and the transfer server bind to this host's address on the route to the master (loopback stays
loopback; ``SPX_LOCAL_ADDR`` overrides), gives the rank a persistent compilation cache, and
picks the rank's device: the one CPU device of the process (the launcher sets
``JAX_NUM_CPU_DEVICES=1``), or on GPU the GPUs spx-run names in ``SPX_LOCAL_DEVICE_IDS``
(``cuda:LOCAL_RANK`` under other launchers), passed as ``local_device_ids``.

The runtime is process-wide state by nature — one JAX runtime per process, one rank per
process — so it is held in a module attribute; thread ranks (``spawn``) never come here.
``destroy_process_group`` keeps it running (JAX's runtime cannot restart in a process), and a
later ``init_process_group`` with the same rank and world reuses it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import ipaddress
import os
import socket
import time
from typing import Any
from urllib.parse import urlparse

import jax

from spx.distributed.elastic.devices import LOCAL_DEVICE_IDS_ENV
from spx.distributed.multiprocess import compile_cache, lifecycle
from spx.distributed.multiprocess.kvstore import KeyValueStore


@dataclasses.dataclass
class ProcessRuntime:
    """This process's place in the job.

    Attributes:
        rank: global rank (= JAX process index).
        world_size: number of processes.
        local_rank: index among the processes of this host (``LOCAL_RANK``).
        local_addr: the address this process's sockets bind to.
        device: this rank's device.
        devices: every rank's device, indexed by global rank.
        kv: the job's key-value store.
        watchdog: abort flag and blocked-wait supervision (:mod:`.lifecycle`).
        cache_dir: this rank's persistent compilation cache, or None.
        generation: how many default groups this process has created (re-init after destroy).
    """

    rank: int
    world_size: int
    local_rank: int
    local_addr: str
    device: jax.Device
    devices: tuple[jax.Device, ...]
    kv: KeyValueStore
    watchdog: lifecycle.Watchdog
    cache_dir: str | None
    generation: int = 0
    transfers: Any = None  # the p2p layer, started on first use (multiprocess.p2p)
    meshes: dict = dataclasses.field(default_factory=dict)  # member devices -> MeshCollectives

    def collectives(self, devices: tuple[jax.Device, ...]) -> Any:
        """The compiled collectives over ``devices`` (shared by every group with those
        members, across re-initializations, so each program compiles once per process)."""
        mesh = self.meshes.get(devices)
        if mesh is None:
            from spx.distributed.multiprocess.mesh import MeshCollectives

            mesh = self.meshes[devices] = MeshCollectives(devices, devices.index(self.device))
        return mesh

    def p2p(self, timeout: float) -> Any:
        """The process's transfer server and connections (started on first use)."""
        if self.transfers is None:
            from spx.distributed.multiprocess.p2p import Transfers

            self.transfers = Transfers(self, timeout)
        return self.transfers


_RUNTIME: ProcessRuntime | None = None


def current() -> ProcessRuntime | None:
    """The running runtime, or None."""
    return _RUNTIME


def _master(init_method: str | None) -> tuple[str, int]:
    if init_method and init_method.startswith("tcp://"):
        parsed = urlparse(init_method)
        if not parsed.hostname or not parsed.port:
            raise ValueError(
                f"init_method={init_method!r}: expected tcp://<host>:<port>, e.g. "
                "tcp://127.0.0.1:29500"
            )
        return parsed.hostname, parsed.port
    if init_method not in (None, "env://"):
        raise ValueError(
            f"init_method={init_method!r} is not supported across processes; use 'env://' "
            "(MASTER_ADDR/MASTER_PORT, as spx-run and torchrun set) or 'tcp://<host>:<port>'"
        )
    missing = [v for v in ("MASTER_ADDR", "MASTER_PORT") if not os.environ.get(v)]
    if missing:
        raise ValueError(
            f"Error initializing spx.distributed using env:// rendezvous: environment variable "
            f"{missing[0]} expected, but not set. Launch with spx-run (or torchrun), or set "
            "MASTER_ADDR and MASTER_PORT to the address rank 0 listens on."
        )
    port = os.environ["MASTER_PORT"]
    if not port.isdigit():
        raise ValueError(f"MASTER_PORT={port!r} is not a port number")
    return os.environ["MASTER_ADDR"], int(port)


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def local_address(master: str) -> str:
    """The address this process's sockets bind to: ``SPX_LOCAL_ADDR``, loopback when the master
    is on loopback, else this host's address on the route to the master."""
    explicit = os.environ.get("SPX_LOCAL_ADDR")
    if explicit:
        return explicit
    if _is_loopback(master):
        return "127.0.0.1" if master == "localhost" else master
    family = socket.AF_INET6 if ":" in master else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.connect((master, 9))  # UDP: no packet is sent, the kernel just picks the route
        return s.getsockname()[0]


def _has_gpu_plugin() -> bool:
    if os.environ.get("JAX_PLATFORMS", "").strip().lower() == "cpu":
        return False
    import importlib.util

    # find_spec of a dotted name imports the parent: without any jax_plugins package installed
    # (a CPU-only install) that raises instead of returning None.
    if importlib.util.find_spec("jax_plugins") is None:
        return False
    return any(
        importlib.util.find_spec(name) is not None
        for name in ("jax_plugins.xla_cuda12", "jax_plugins.xla_cuda13", "jax_plugins.xla_rocm7")
    )


def _local_gpu_ids(local_rank: int) -> list[int] | None:
    """The GPUs (indices among the visible ones) this rank's JAX runtime may use.

    spx-run names them in ``SPX_LOCAL_DEVICE_IDS`` (the node's GPUs split over its workers).
    Under another launcher (torchrun, a cluster's scheduler) torch's convention holds: rank
    ``LOCAL_RANK`` uses ``cuda:LOCAL_RANK``, unless ``CUDA_VISIBLE_DEVICES`` already shows the
    process a single GPU. Without the ids every rank would see every GPU of the node, take its
    first one (all ranks on GPU 0) and preallocate memory on all of them.
    """
    named = os.environ.get(LOCAL_DEVICE_IDS_ENV, "").strip()
    if named:
        try:
            return [int(i) for i in named.split(",")]
        except ValueError:
            raise ValueError(
                f"{LOCAL_DEVICE_IDS_ENV}={named!r}: expected comma-separated GPU indices such "
                "as '0' or '2,3' (spx-run sets it; unset it to use GPU LOCAL_RANK)"
            ) from None
    if not _has_gpu_plugin():
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and len([v for v in visible.split(",") if v.strip()]) == 1:
        return None
    return [local_rank]


def _bind_gloo(local_addr: str) -> None:
    """Make the CPU backend's gloo collectives listen on ``local_addr`` (JAX lets gloo pick the
    host name's address). Private JAX API: the CPU backend factory is replaced before the
    backend starts, with the same factory given explicit collectives."""
    if jax.config.jax_cpu_collectives_implementation not in (None, "gloo"):
        return
    from jax._src import distributed, xla_bridge
    from jax._src.lib import _jax

    collectives = _jax.make_gloo_tcp_collectives(
        distributed_client=distributed.global_state.client, hostname=local_addr
    )
    registration = xla_bridge._backend_factories["cpu"]
    xla_bridge._backend_factories["cpu"] = dataclasses.replace(
        registration,
        factory=functools.partial(xla_bridge.make_cpu_client, collectives=collectives),
    )


def _backend_started() -> bool:
    from jax._src import xla_bridge

    return bool(xla_bridge.backends_are_initialized())


def _await_coordinator(host: str, port: int, timeout: float) -> None:
    """Return once rank 0's coordinator accepts connections, or after ``timeout`` seconds.

    A rank whose first attempt finds nothing listening yet (it started before rank 0, or
    imported faster) is retried by gRPC after its reconnect backoff, about a second: every
    launch and restart paid ~1 s in ``init_process_group`` (measured: 1.07 s for two ranks
    started together, 0.015 s with this wait). Probing the port every 10 ms first costs nothing
    once rank 0 is up; on timeout ``jax.distributed.initialize`` runs anyway and reports.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, port), timeout=1.0).close()
            return
        except OSError:
            if time.monotonic() >= deadline:
                return
            time.sleep(0.01)


def start(rank: int, world_size: int, timeout: float, init_method: str | None) -> ProcessRuntime:
    """Start (or reuse) this process's runtime as ``rank`` of ``world_size``.

    Raises:
        ValueError: MASTER_ADDR/MASTER_PORT missing, or a re-init with another rank/world.
        RuntimeError: JAX already ran a computation in this process (its device set is fixed
            by then), or the coordinator could not be reached.
    """
    global _RUNTIME
    if _RUNTIME is not None:
        if (_RUNTIME.rank, _RUNTIME.world_size) != (rank, world_size):
            raise ValueError(
                f"init_process_group(rank={rank}, world_size={world_size}) after this process "
                f"ran as rank {_RUNTIME.rank} of {_RUNTIME.world_size}: JAX's runtime cannot "
                "restart in a process; re-initialize with the same rank and world size"
            )
        _RUNTIME.generation += 1
        return _RUNTIME
    master, port = _master(init_method)
    if _backend_started():
        raise RuntimeError(
            "init_process_group() must run before this process's first JAX computation in a "
            "multi-process job (JAX fixes its devices when it starts, and joining the job "
            "changes them). Call it at the top of the script, before building models or "
            "arrays."
        )
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    local_addr = local_address(master)
    address = _host_port(master, port)
    kwargs: dict[str, Any] = {}
    gpu_ids = _local_gpu_ids(local_rank)
    if gpu_ids is not None:
        kwargs["local_device_ids"] = gpu_ids
    cache_dir = compile_cache.enable(rank)
    # JAX's preemption service exists for multihost_utils.reached_preemption_sync_point; its
    # SIGTERM handler keeps the rank running after a launcher's SIGTERM until the SIGKILL a
    # grace period later. spx ends the rank on SIGTERM instead (lifecycle.install_sigterm),
    # unless the user turned the service on explicitly.
    jax_preemption = "JAX_ENABLE_PREEMPTION_SERVICE" in os.environ
    if not jax_preemption:
        jax.config.update("jax_enable_preemption_service", False)
    if os.environ.get("PJRT_NPROC") == "1":
        # One XLA thread (spx-run's share of the cores when workers outnumber them): run each
        # CPU program inline in the thread that calls it. Dispatching it to XLA's pool thread,
        # on the same core, buys no overlap and costs a thread wake-up per program (~0.1 ms
        # on the 2-core dev box): a 2-process 1F1B step went from ~32.5 to ~25.5 ms. A JAX
        # without the flag only loses that speed.
        with contextlib.suppress(AttributeError):
            jax.config.update("jax_cpu_enable_async_dispatch", False)
    # One budget for the join: what the wait for rank 0 used is not given to initialize again.
    budget = min(timeout, 300)
    deadline = time.monotonic() + budget
    if rank != 0:
        _await_coordinator(master, port, budget)
    try:
        jax.distributed.initialize(
            coordinator_address=address,
            num_processes=world_size,
            process_id=rank,
            coordinator_bind_address=address,
            initialization_timeout=max(1, int(deadline - time.monotonic())),
            **kwargs,
        )
    except Exception as e:
        raise RuntimeError(
            f"rank {rank} could not join the job's coordinator at {address} (world size "
            f"{world_size}): {type(e).__name__}: {e}. Check that every rank uses the same "
            "MASTER_ADDR/MASTER_PORT and WORLD_SIZE and that rank 0 is running."
        ) from e
    _bind_gloo(local_addr)
    device = jax.local_devices()[0]
    first: dict[int, jax.Device] = {}
    for d in jax.devices():
        first.setdefault(d.process_index, d)
    devices = tuple(first[p] for p in range(world_size))
    kv = KeyValueStore()
    watchdog = lifecycle.Watchdog(kv, rank, world_size)
    runtime = ProcessRuntime(
        rank=rank,
        world_size=world_size,
        local_rank=local_rank,
        local_addr=local_addr,
        device=device,
        devices=devices,
        kv=kv,
        watchdog=watchdog,
        cache_dir=cache_dir,
    )
    lifecycle.install(watchdog, timeout, lambda: runtime.transfers and runtime.transfers.drain())
    if not jax_preemption:
        lifecycle.install_sigterm(watchdog)
    _RUNTIME = runtime
    return runtime
