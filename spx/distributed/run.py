"""``spx-run``: torchrun's command line for spx (``python -m spx.distributed.run``).

A ``torchrun ...`` command works with the program name changed::

    spx-run --nproc-per-node 4 train.py --lr 0.1             # 4 worker processes on this host
    spx-run --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 --master-port 29500 train.py
    spx-run --max-restarts 3 --tee 3 --log-dir logs train.py # restart on failure, prefixed logs
    spx-run --threads --nproc-per-node 4 train.py            # ranks as threads of one process

Every flag has torchrun's default and both spellings (``--nproc-per-node``/``--nproc_per_node``),
and can come from ``PET_<FLAG>`` (``PET_NPROC_PER_NODE=4``). Workers get torchrun's environment
(:mod:`spx.distributed.elastic.worker_env`); global rank 0 hosts JAX's coordinator at
MASTER_ADDR:MASTER_PORT, which spx-run itself never binds. Failures end in torchrun's root-cause
report and exit code 1. This module only parses and hands over: the agent
(:mod:`spx.distributed.elastic.agent`) spawns and monitors; nothing here starts JAX.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
import uuid
from argparse import REMAINDER, ArgumentParser, Namespace

from spx.distributed.elastic.argparse_util import check_env, env
from spx.distributed.elastic.config import (
    LaunchConfig,
    env_shutdown_timeout,
    parse_endpoint,
    parse_nnodes,
    parse_rdzv_conf,
)
from spx.distributed.elastic.devices import count_gpus, determine_local_world_size
from spx.distributed.elastic.multiprocessing.errors import ChildFailedError, get_error_handler
from spx.distributed.elastic.multiprocessing.logs import LogsSpecs, Std
from spx.distributed.elastic.worker_env import worker_command, xla_cpu_threads

_log = logging.getLogger("spx.distributed.run")

_OMP_WARNING = (
    "\n*****************************************\n"
    "Setting OMP_NUM_THREADS environment variable for each process to be %s in default, to avoid "
    "your system being overloaded, please further tune the variable for optimal performance in "
    "your application as needed. \n"
    "*****************************************"
)


_XLA_THREADS_WARNING = (
    "Setting PJRT_NPROC (the threads of XLA's CPU runtime) for each process to %s, its share of "
    "this node's cores, so that the processes do not oversubscribe them; set PJRT_NPROC to "
    "choose another count."
)


class JobEndedError(RuntimeError):
    """The job ended without a worker failure of this node (another node's agent stopped)."""


def _comma_list(value: str) -> list[str]:
    placeholder = "<COMMA_PLACEHOLDER>"
    return [item.replace(placeholder, ",") for item in value.replace(",,", placeholder).split(",")]


def get_args_parser() -> ArgumentParser:
    """The ``spx-run`` parser: torchrun 2.13's flags and defaults, plus ``--threads``."""
    p = ArgumentParser(prog="spx-run", description="spx launcher (torchrun's command line)")
    a = p.add_argument
    # fmt: off
    a("--nnodes", action=env, type=str, default="1:1",
      help="Number of nodes N (fixed; MIN:MAX only with MIN == MAX).")
    a("--nproc-per-node", "--nproc_per_node", action=env, type=str, default="1",
      help="Workers per node: an int, auto, cpu or gpu.")
    a("--rdzv-backend", "--rdzv_backend", action=env, type=str, default="static",
      help="Rendezvous backend: static (c10d for a single node).")
    a("--rdzv-endpoint", "--rdzv_endpoint", action=env, type=str, default="",
      help="<host>:<port>; for static it replaces --master-addr/--master-port.")
    a("--rdzv-id", "--rdzv_id", action=env, type=str, default="none",
      help="Job id (TORCHELASTIC_RUN_ID); every node of a job gives the same.")
    a("--rdzv-conf", "--rdzv_conf", action=env, type=str, default="",
      help="key=value,... : timeout (seconds to wait for nodes), agent_port (multi-node).")
    a("--standalone", action=check_env,
      help="Single-node job on a free local port with a random run id.")
    a("--max-restarts", "--max_restarts", action=env, type=int, default=0,
      help="Maximum number of worker group restarts before failing.")
    a("--monitor-interval", "--monitor_interval", action=env, type=float, default=0.1,
      help="Seconds between checks of the workers.")
    a("--start-method", "--start_method", action=env, type=str, default="spawn",
      choices=["spawn", "fork", "forkserver"],
      help="Accepted for torchrun compatibility: workers are always fresh processes.")
    a("--event-log-handler", "--event_log_handler", action=env, type=str, default="null",
      help="torchrun's event log handler; spx-run emits no events (only 'null').")
    a("--role", action=env, type=str, default="default", help="Role of the workers (ROLE_NAME).")
    a("-m", "--module", action=check_env, help="Run the script as a module, as 'python -m'.")
    a("--no-python", "--no_python", action=check_env,
      help="Run the script directly, not through Python.")
    a("--run-path", "--run_path", action=check_env,
      help="Run the script (an absolute path) with runpy.run_path.")
    a("--log-dir", "--log_dir", action=env, type=str, default=None,
      help="Base directory of the logs (<log_dir>/<run_id>_*/attempt_<n>/<local_rank>/).")
    a("-r", "--redirects", action=env, type=str, default="0",
      help="Redirect streams to log files: 0 none, 1 stdout, 2 stderr, 3 both, or 0:1,1:2.")
    a("-t", "--tee", action=env, type=str, default="0",
      help="Tee streams to log files and to the console, prefixed [<role><local_rank>]:.")
    a("--local-ranks-filter", "--local_ranks_filter", action=env, type=str, default="",
      help="Show only these local ranks on the console (e.g. 0,1).")
    a("--duplicate-stdout-filters", "--duplicate_stdout_filters", action=env, type=_comma_list,
      default=[], help="Also write tee'd stdout lines containing any of these to a file.")
    a("--duplicate-stderr-filters", "--duplicate_stderr_filters", action=env, type=_comma_list,
      default=[], help="Also write tee'd stderr lines containing any of these to a file.")
    a("--node-rank", "--node_rank", type=int, action=env, default=0,
      help="Rank of this node (static rendezvous).")
    a("--master-addr", "--master_addr", default="127.0.0.1", type=str, action=env,
      help="Address of node 0 (MASTER_ADDR; rank 0's JAX coordinator listens there).")
    a("--master-port", "--master_port", default=None, type=int, action=env,
      help="MASTER_PORT (default 29500; a free port for one node without this flag).")
    a("--local-addr", "--local_addr", default=None, type=str, action=env,
      help="Address of this node (MASTER_ADDR of a single-node job; host in reports).")
    a("--logs-specs", "--logs_specs", default=None, type=str,
      help="torchrun's LogsSpecs plugin; not supported by spx-run.")
    a("--numa-binding", "--numa_binding", type=str, default=None,
      help="torchrun's NUMA binding; not supported by spx-run.")
    a("--signals-to-handle", "--signals_to_handle", action=env, type=str,
      default="SIGTERM,SIGINT,SIGHUP,SIGQUIT", help="Signals forwarded to the workers.")
    a("--shutdown-timeout", "--shutdown_timeout", action=env, type=float, default=None,
      help="Seconds between the death signal and SIGKILL (TORCH_ELASTIC_SHUTDOWN_TIMEOUT, 30).")
    a("--virtual-local-rank", "--virtual_local_rank", action=check_env,
      help="LOCAL_RANK=0 and one GPU per worker in CUDA_VISIBLE_DEVICES.")
    a("--threads", action=check_env,
      help="spx: run the ranks as threads of this process, one JAX device each.")
    a("training_script", type=str, help="The training script (or module, or program).")
    a("training_script_args", nargs=REMAINDER)
    # fmt: on
    return p


def parse_args(args: list[str] | None = None) -> Namespace:
    """Parse a ``spx-run`` command line (``sys.argv[1:]`` by default)."""
    return get_args_parser().parse_args(args)


def free_port(host: str) -> int:
    """A port free on ``host`` now (bound and released; like torch's ``get_free_port``)."""
    family, kind, proto, _, addr = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM)[0]
    with socket.socket(family, kind, proto) as s:
        s.bind(addr[:2])
        return s.getsockname()[1]


def _unsupported(args: Namespace) -> None:
    if args.logs_specs is not None:
        raise ValueError(
            f"--logs-specs={args.logs_specs}: torchrun's LogsSpecs plugins are not supported; "
            "use --log-dir, --redirects, --tee and --local-ranks-filter"
        )
    if args.numa_binding is not None:
        raise ValueError(
            f"--numa-binding={args.numa_binding} is not supported by spx-run; bind with "
            "numactl/taskset around the command (--no-python) instead"
        )
    if args.event_log_handler != "null":
        raise ValueError(
            f"--event-log-handler={args.event_log_handler}: spx-run records no torchelastic "
            "events; leave it at 'null'"
        )
    if args.threads and args.no_python:
        raise ValueError("--threads runs a Python script in this process; drop --no-python")


def config_from_args(args: Namespace) -> tuple[LaunchConfig, list[str]]:
    """Resolve the command line into a :class:`LaunchConfig` and the worker command.

    Follows ``torch.distributed.run.run``: ``--standalone``, or one node with neither
    ``--master-port`` nor ``--rdzv-endpoint``, is a single-node job on a free local port with a
    random run id; otherwise MASTER_ADDR:MASTER_PORT come from ``--rdzv-endpoint`` or
    ``--master-addr``/``--master-port`` (29500).

    Raises:
        ValueError: a value spx-run cannot use; the message says what to pass.
    """
    _unsupported(args)
    lo, hi = parse_nnodes(args.nnodes)
    if lo != hi:
        raise ValueError(
            f"--nnodes={args.nnodes}: spx-run runs a fixed number of nodes (elastic MIN:MAX "
            f"membership needs a dynamic rendezvous it does not have); pass --nnodes={hi}"
        )
    backend, run_id = args.rdzv_backend, args.rdzv_id
    if args.standalone:
        if hi > 1:
            raise ValueError(f"--standalone is a single-node job; drop --nnodes={args.nnodes}")
        backend, run_id = "c10d", str(uuid.uuid4())
    elif backend == "static" and not args.rdzv_endpoint and args.master_port is None and hi == 1:
        backend, run_id = "c10d", str(uuid.uuid4())
    if backend == "c10d":
        master_addr = args.local_addr or "localhost"
        master_port = free_port(master_addr)
    elif backend == "static" and args.rdzv_endpoint:
        master_addr, port = parse_endpoint(args.rdzv_endpoint)
        if port is None:
            raise ValueError(f"--rdzv-endpoint={args.rdzv_endpoint} has no port; pass host:port")
        master_port = port
    else:
        master_addr = args.master_addr
        master_port = 29500 if args.master_port is None else args.master_port
    nproc = determine_local_world_size(args.nproc_per_node)
    omp = None
    if "OMP_NUM_THREADS" not in os.environ and nproc > 1 and not args.threads:
        omp = "1"
        _log.warning(_OMP_WARNING, omp)
    ranks = None
    if args.local_ranks_filter:
        try:
            ranks = set(map(int, args.local_ranks_filter.split(",")))
        except ValueError:
            raise ValueError(
                "--local_ranks_filter must be a comma-separated list of integers e.g. "
                f"--local_ranks_filter=0,1,2 (got {args.local_ranks_filter!r})"
            ) from None
    gpus = 0 if args.threads else count_gpus()
    xla_threads = None if args.threads else xla_cpu_threads(nproc, gpus, dict(os.environ))
    if xla_threads is not None:
        _log.warning(_XLA_THREADS_WARNING, xla_threads)
    if nproc > gpus > 0 and os.environ.get("JAX_PLATFORMS", "").strip().lower() != "cpu":
        _log.warning(
            "%d workers share %d GPU(s) of this node: JAX's GPU collectives (NCCL: all_reduce, "
            "DistributedDataParallel) need one GPU per rank and will fail; pipeline transfers "
            "work. Use --nproc-per-node gpu for one worker per GPU.",
            nproc,
            gpus,
        )
    redirects, tee = Std.from_str(args.redirects), Std.from_str(args.tee)
    shutdown = args.shutdown_timeout
    if shutdown is None:
        shutdown = env_shutdown_timeout()
    config = LaunchConfig(
        nnodes=hi,
        nproc_per_node=nproc,
        node_rank=args.node_rank if backend == "static" else 0,
        master_addr=master_addr,
        master_port=master_port,
        run_id=run_id,
        role=args.role,
        rdzv_backend=backend,
        rdzv_configs=parse_rdzv_conf(args.rdzv_conf),
        max_restarts=args.max_restarts,
        monitor_interval=args.monitor_interval,
        shutdown_timeout=shutdown,
        signals_to_handle=args.signals_to_handle,
        log_line_prefix_template=os.environ.get("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"),
        virtual_local_rank=args.virtual_local_rank,
        duplicate_stdout_filters=[f for f in args.duplicate_stdout_filters if f],
        duplicate_stderr_filters=[f for f in args.duplicate_stderr_filters if f],
        omp_num_threads=omp,
        num_gpus=gpus,
        threads=args.threads,
        local_addr=args.local_addr,
    )
    command = worker_command(
        os.path.abspath(args.training_script) if args.run_path else args.training_script,
        args.training_script_args,
        module=args.module,
        no_python=args.no_python,
        run_path=args.run_path,
    )
    # Made last: it creates the log directory, which a rejected command line should not leave.
    config.logs_specs = LogsSpecs(args.log_dir, redirects, tee, ranks)
    return config, command


def _entrypoint_name(args: Namespace) -> str:
    return args.training_script


def run(args: Namespace) -> None:
    """Launch the job described by parsed ``args`` and wait for it (torch's ``run``).

    Raises:
        ValueError: a flag spx-run cannot use.
        ChildFailedError: workers failed and no restarts were left (the root-cause report).
        JobEndedError: another node ended the job.
        SignalException: spx-run received a handled signal.
    """
    config, command = config_from_args(args)
    launch(config, command, args)


def launch(config: LaunchConfig, command: list[str], args: Namespace) -> None:
    """Run a resolved configuration (see :func:`run`)."""
    if config.threads:
        from spx.distributed.elastic.threads import run_threads

        result = run_threads(config, args.training_script, args.training_script_args, args.module)
    else:
        from spx.distributed.elastic.agent import LocalAgent

        result = LocalAgent(config, command).run()
    if result.state == "FATAL":
        raise JobEndedError(f"the job was ended: {result.reason}")
    if result.is_failed():
        name = _entrypoint_name(args)
        raise ChildFailedError(name, result.failures, result.root_rank, result.hosts)


class _GlogFormatter(logging.Formatter):
    """torchrun's log line: ``W1124 08:13:44.419000 6525 spx/distributed/run.py:95] msg``."""

    def format(self, record: logging.LogRecord) -> str:
        t = time.localtime(record.created)
        micros = int((record.created % 1) * 1e6)
        where = record.name.replace(".", "/") + ".py"
        head = (
            f"{record.levelname[0]}{time.strftime('%m%d %H:%M:%S', t)}.{micros:06d} "
            f"{record.process} {where}:{record.lineno}] "
        )
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return "\n".join(head + line for line in text.split("\n"))


def _configure_logging() -> None:
    logger = logging.getLogger("spx.distributed")
    if any(getattr(h, "_spx_run", False) for h in logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_GlogFormatter())
    handler._spx_run = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(os.environ.get("LOGLEVEL", "WARNING").upper())
    logger.propagate = False


def main(args: list[str] | None = None) -> None:
    """``spx-run``'s entry point: parse, run, report; exit 1 on failure (as torchrun).

    Example:
        >>> main(["--nproc-per-node", "2", "-m", "json.tool", "--help"])  # doctest: +SKIP
    """
    _configure_logging()
    parser = get_args_parser()
    parsed = parser.parse_args(args)
    from spx.distributed.elastic.agent import SignalException
    from spx.distributed.elastic.multiprocessing.processes import WorkerStartError
    from spx.distributed.elastic.rendezvous import RendezvousError

    try:
        config, command = config_from_args(parsed)
    except (ValueError, OSError) as e:
        parser.error(str(e))
    try:
        launch(config, command, parsed)
    except ChildFailedError as e:
        _, failure = e.get_first_failure()
        if failure.error_file not in ("", "<N/A>") and os.path.isfile(failure.error_file):
            get_error_handler().dump_error_file(failure.error_file, failure.exitcode)
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
    except (JobEndedError, RendezvousError, SignalException, WorkerStartError) as e:
        print(f"spx-run: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
