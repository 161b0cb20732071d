"""The launch configuration: torchrun's ``LaunchConfig``, checked when it is built.

:func:`parse_nnodes` and :func:`parse_endpoint` read the command line's values;
:class:`LaunchConfig` holds the resolved settings of one ``spx-run`` and rejects what spx-run does
not do with an error that says what to pass instead:

- ``--nnodes MIN:MAX`` with MIN != MAX (elastic membership): only a fixed number of nodes.
- ``--rdzv-backend``: ``static`` (torchrun's default), and ``c10d`` for a single node, which is
  what torchrun itself picks for ``--standalone`` and for one node without ``--master-port``.
  Several nodes need ``static`` with ``--node-rank``; etcd and custom backends are refused.
"""

from __future__ import annotations

import os
import re
import signal
from dataclasses import dataclass, field

from spx.distributed.elastic.multiprocessing.logs import LogsSpecs

DEFAULT_SIGNALS = "SIGTERM,SIGINT,SIGHUP,SIGQUIT"
BACKENDS = ("static", "c10d")


def parse_nnodes(nnodes: str) -> tuple[int, int]:
    """``"2"`` -> (2, 2); ``"1:4"`` -> (1, 4).

    Raises:
        ValueError: not N or MIN:MAX with 0 < MIN <= MAX.

    Example:
        >>> parse_nnodes("1:1")
        (1, 1)
    """
    parts = nnodes.split(":")
    try:
        if len(parts) == 1:
            lo = hi = int(parts[0])
        elif len(parts) == 2:
            lo, hi = int(parts[0]), int(parts[1])
        else:
            raise ValueError
    except ValueError:
        raise ValueError(
            f"--nnodes={nnodes!r}: expected a number of nodes N or a range MIN:MAX, e.g. --nnodes=2"
        ) from None
    if not 0 < lo <= hi:
        raise ValueError(
            f"--nnodes={nnodes!r}: the number of nodes must be positive (and MIN <= MAX); "
            "pass e.g. --nnodes=1"
        )
    return lo, hi


def parse_endpoint(endpoint: str, default_port: int | None = None) -> tuple[str, int | None]:
    """``"host:port"`` -> (host, port); IPv6 as ``[::1]:29500`` (torch's rules).

    Example:
        >>> parse_endpoint("127.0.0.1:29500")
        ('127.0.0.1', 29500)
        >>> parse_endpoint("[::1]:29400")
        ('::1', 29400)
    """
    endpoint = endpoint.strip()
    if not endpoint:
        return "localhost", default_port
    if endpoint.startswith("[") and endpoint.endswith("]"):
        host, rest = endpoint, []
    else:
        host, *rest = endpoint.rsplit(":", 1)
    if len(host) > 1 and host[0] == "[" and host[-1] == "]":
        host = host[1:-1]
    port = default_port
    if rest:
        if not re.fullmatch(r"[0-9]{1,5}", rest[0]) or int(rest[0]) >= 2**16:
            raise ValueError(
                f"the port of endpoint {endpoint!r} must be an integer between 0 and 65535"
            )
        port = int(rest[0])
    if not re.fullmatch(r"[\w\.:-]+", host):
        raise ValueError(
            f"the host of endpoint {endpoint!r} must be a host name, an IPv4 or an IPv6 address"
        )
    return host, port


def parse_rdzv_conf(config: str) -> dict[str, str]:
    """``--rdzv-conf "timeout=30,agent_port=29601"`` -> a dict (torch's parsing rules).

    Raises:
        ValueError: an empty key or a key without a value.

    Example:
        >>> parse_rdzv_conf("timeout=30, agent_port=29601")
        {'timeout': '30', 'agent_port': '29601'}
    """
    out: dict[str, str] = {}
    config = config.strip()
    if not config:
        return out
    for kv in config.split(","):
        key, *values = kv.split("=", 1)
        key = key.strip()
        if not key:
            raise ValueError(
                f"--rdzv-conf={config!r} must be in format <key1>=<value1>,...,<keyN>=<valueN>"
            )
        value = values[0].strip() if values else ""
        if not value:
            raise ValueError(f"--rdzv-conf: the option {key!r} must have a value specified")
        out[key] = value
    return out


def parse_signals(names: str) -> list[signal.Signals]:
    """``"SIGTERM,SIGINT"`` -> the signals (``--signals-to-handle``)."""
    out = []
    for name in (n.strip() for n in names.split(",")):
        if not name:
            continue
        sig = getattr(signal.Signals, name, None)
        if sig is None:
            raise ValueError(
                f"--signals-to-handle: {name!r} is not a signal name; expected names such as "
                f"{DEFAULT_SIGNALS}"
            )
        out.append(sig)
    return out


@dataclass
class LaunchConfig:
    """Everything one ``spx-run`` needs (mirrors ``torch.distributed.launcher.api.LaunchConfig``).

    Args:
        nnodes: the fixed number of nodes.
        nproc_per_node: workers on this node.
        node_rank: this node's rank (static rendezvous).
        master_addr: what workers get as MASTER_ADDR (rank 0's JAX coordinator listens there).
        master_port: MASTER_PORT; None picks a free port on ``master_addr`` (one node only).
        run_id: TORCHELASTIC_RUN_ID (``--rdzv-id``).
        role: ROLE_NAME and the log prefix (``[<role><local_rank>]:``).
        rdzv_backend: ``static`` or (one node) ``c10d``.
        rdzv_configs: ``--rdzv-conf`` pairs; spx-run reads ``timeout`` (or ``join_timeout``)
            and ``agent_port``.
        max_restarts: how many times the worker group may restart after a failure.
        monitor_interval: seconds between checks of the workers.
        shutdown_timeout: seconds between the death signal and SIGKILL.
        signals_to_handle: signals spx-run forwards to its workers.
        logs_specs: where logs go.
        log_line_prefix_template: ``TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE``.
        virtual_local_rank: LOCAL_RANK=0 with one GPU per worker in CUDA_VISIBLE_DEVICES.
        duplicate_stdout_filters: tee'd stdout lines containing any of these also go to
            ``filtered_stdout.log``.
        duplicate_stderr_filters: the same for stderr.
        omp_num_threads: OMP_NUM_THREADS for workers when the environment has none.
        num_gpus: GPUs on this node (for SPX_LOCAL_DEVICE_IDS).
        threads: run ranks as threads of this process (``--threads``).
        local_addr: this node's address, shown as ``host`` in reports.

    Example:
        >>> LaunchConfig(nnodes=1, nproc_per_node=2, master_port=29500).agent_port
        29501
    """

    nnodes: int = 1
    nproc_per_node: int = 1
    node_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int | None = 29500
    run_id: str = "none"
    role: str = "default"
    rdzv_backend: str = "static"
    rdzv_configs: dict[str, str] = field(default_factory=dict)
    max_restarts: int = 0
    monitor_interval: float = 0.1
    shutdown_timeout: float = 30.0
    signals_to_handle: str = DEFAULT_SIGNALS
    logs_specs: LogsSpecs | None = None
    log_line_prefix_template: str | None = None
    virtual_local_rank: bool = False
    duplicate_stdout_filters: list[str] = field(default_factory=list)
    duplicate_stderr_filters: list[str] = field(default_factory=list)
    omp_num_threads: str | None = None
    num_gpus: int = 0
    threads: bool = False
    local_addr: str | None = None

    def __post_init__(self) -> None:
        if self.nnodes < 1:
            raise ValueError(f"nnodes={self.nnodes}: expected at least 1 node")
        if self.nproc_per_node < 1:
            raise ValueError(
                f"--nproc-per-node={self.nproc_per_node}: expected at least 1 worker per node"
            )
        if not 0 <= self.node_rank < self.nnodes:
            raise ValueError(
                f"--node-rank={self.node_rank} is out of range for --nnodes={self.nnodes}; "
                f"expected 0 <= node rank < {self.nnodes}"
            )
        if self.rdzv_backend not in BACKENDS:
            raise ValueError(
                f"--rdzv-backend={self.rdzv_backend!r} is not supported by spx-run; use "
                "--rdzv-backend=static with --nnodes N --node-rank i --master-addr/--master-port"
            )
        if self.rdzv_backend == "c10d" and self.nnodes > 1:
            raise ValueError(
                f"--rdzv-backend=c10d with --nnodes={self.nnodes}: spx-run forms multi-node jobs "
                "with the static rendezvous only; pass --rdzv-backend=static and give each node "
                "--node-rank i with the same --master-addr/--master-port"
            )
        if self.nnodes > 1 and self.master_port is None:
            raise ValueError("a multi-node job needs --master-port (the same on every node)")
        if self.max_restarts < 0:
            raise ValueError(f"--max-restarts={self.max_restarts}: expected 0 or more")
        if not self.monitor_interval > 0:
            raise ValueError(f"--monitor-interval={self.monitor_interval}: expected seconds > 0")
        if self.shutdown_timeout < 0:
            raise ValueError(f"--shutdown-timeout={self.shutdown_timeout}: expected seconds >= 0")
        if self.threads and self.nnodes > 1:
            raise ValueError(
                "--threads runs every rank in this one process; it cannot span "
                f"--nnodes={self.nnodes}. Drop --threads for a multi-node job"
            )
        parse_signals(self.signals_to_handle)
        if self.nnodes > 1:
            _ = self.agent_port, self.rdzv_timeout  # validated here, used by the rendezvous

    @property
    def agent_port(self) -> int:
        """The port of node 0's agent store (multi-node only): MASTER_PORT + 1 by default."""
        raw = self.rdzv_configs.get("agent_port")
        if raw is not None:
            try:
                port = int(raw)
            except ValueError:
                port = -1
            if not 0 < port < 2**16:
                raise ValueError(
                    f"--rdzv-conf agent_port={raw}: expected a port number between 1 and 65535"
                )
            return port
        base = self.master_port if self.master_port is not None else 0
        if self.nnodes > 1 and base + 1 >= 2**16:
            raise ValueError(
                f"--master-port={base}: the agent store uses MASTER_PORT + 1, which does not "
                "exist; pick a lower --master-port or set --rdzv-conf agent_port=PORT"
            )
        return base + 1

    @property
    def rdzv_timeout(self) -> float:
        """Seconds to wait for the other nodes (``--rdzv-conf timeout=`` or ``join_timeout=``)."""
        raw = self.rdzv_configs.get("timeout", self.rdzv_configs.get("join_timeout", "600"))
        try:
            value = float(raw)
        except ValueError:
            value = -1.0
        if value <= 0:
            raise ValueError(f"--rdzv-conf timeout={raw}: expected a positive number of seconds")
        return value


def env_shutdown_timeout(default: float = 30.0) -> float:
    """``TORCH_ELASTIC_SHUTDOWN_TIMEOUT`` (torchrun's fallback for ``--shutdown-timeout``)."""
    raw = os.environ.get("TORCH_ELASTIC_SHUTDOWN_TIMEOUT")
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ValueError(
            f"TORCH_ELASTIC_SHUTDOWN_TIMEOUT={raw!r}: expected a number of seconds"
        ) from None
