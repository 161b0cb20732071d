"""The local agent: rendezvous, start the workers, watch them, restart or report.

Mirrors torch's ``SimpleElasticAgent._invoke_run`` with ``LocalElasticAgent``:

- every ``monitor_interval`` seconds the agent polls its workers (and, on a multi-node job, the
  other nodes' news through the rendezvous);
- all workers exit 0 -> the node is done (multi-node: once every node is);
- a worker exits non-zero -> the others are stopped (death signal, SIGKILL after
  ``shutdown_timeout``); with restarts left the whole group starts again, on every node, with
  ``TORCHELASTIC_RESTART_COUNT`` one higher; otherwise the run fails with every failure and the
  root cause (the first observed; ties go to the lowest local rank);
- a signal in ``--signals-to-handle`` (SIGTERM, SIGINT, SIGHUP, SIGQUIT) raises
  :class:`SignalException` in the agent, which forwards that signal to every worker, escalates
  to SIGKILL after the grace period, and ends the job on the other nodes too.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from spx.distributed.elastic.config import LaunchConfig, parse_signals
from spx.distributed.elastic.multiprocessing.errors import ProcessFailure
from spx.distributed.elastic.multiprocessing.logs import LogsDest, LogsSpecs
from spx.distributed.elastic.multiprocessing.processes import WorkerProcesses
from spx.distributed.elastic.multiprocessing.tail_log import TailLog, line_prefix
from spx.distributed.elastic.rendezvous import LocalRendezvous, StaticRendezvous
from spx.distributed.elastic.worker_env import (
    GroupInfo,
    NodeInfo,
    Worker,
    assign_worker_ranks,
    launcher_environ,
    substitute_local_rank,
    worker_env,
)

_log = logging.getLogger(__name__)
_MESSAGE_LIMIT = 16_000  # characters of a traceback sent to the other nodes


class SignalException(Exception):
    """The agent received a death signal (torch's ``SignalException``)."""

    def __init__(self, msg: str, sigval: signal.Signals) -> None:
        super().__init__(msg)
        self.sigval = sigval


@dataclass
class RunResult:
    """How the job ended on this node.

    Attributes:
        state: ``"SUCCEEDED"`` or ``"FAILED"``.
        failures: failed workers by global rank (other nodes' root cause included).
        root_rank: the global rank of the first observed failure.
        hosts: the host of a failure that happened on another node.
        reason: why the job ended when no worker failed (another node's signal...).
    """

    state: str
    failures: dict[int, ProcessFailure] = field(default_factory=dict)
    root_rank: int | None = None
    hosts: dict[int, str] = field(default_factory=dict)
    reason: str = ""

    def is_failed(self) -> bool:
        return self.state != "SUCCEEDED"


def host_name(local_addr: str | None = None) -> str:
    """This node's name in reports (``--local-addr`` or the FQDN, as torch)."""
    return local_addr or socket.getfqdn()


def install_signal_handlers(
    names: str,
) -> Callable[[], None]:
    """Make the listed signals raise :class:`SignalException` in the main thread, once.

    Returns:
        A function that restores the previous handlers (a no-op off the main thread).
    """
    if threading.current_thread() is not threading.main_thread():
        _log.warning(
            "spx-run is not on the main thread: it cannot catch signals, and a signal to this "
            "process will not reach the workers before they are killed with it"
        )
        return lambda: None
    fired: list[signal.Signals] = []

    def handler(signum: int, frame: Any) -> None:
        sig = signal.Signals(signum)
        if fired:  # already shutting down: a second Ctrl-C must not abandon the workers
            _log.warning("Received %s again; still shutting down workers", sig.name)
            return
        fired.append(sig)
        raise SignalException(f"Process {os.getpid()} got signal: {sig.name}", sigval=sig)

    previous = {}
    for sig in parse_signals(names):
        try:
            previous[sig] = signal.signal(sig, handler)
        except (OSError, ValueError, RuntimeError):
            _log.warning("Failed to register signal handler for %s", sig.name)

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


def make_rendezvous(config: LaunchConfig) -> LocalRendezvous:
    """The rendezvous for ``config``: local for one node, the agent store for several."""
    if config.nnodes == 1:
        return LocalRendezvous()
    return StaticRendezvous(
        master_addr=config.master_addr,
        agent_port=config.agent_port,
        node_rank=config.node_rank,
        nnodes=config.nnodes,
        run_id=config.run_id,
        settings={"nnodes": config.nnodes, "max_restarts": config.max_restarts},
        timeout=config.rdzv_timeout,
    )


class LocalAgent:
    """Runs one node's workers for ``spx-run`` (see the module docstring).

    Args:
        config: the launch configuration (``master_port`` resolved).
        command: the worker command line (before ``${local_rank}`` substitution).
        environ: the environment workers start from; default :func:`launcher_environ`.
        stdout: where tee'd stdout lines go (default ``sys.stdout``).
        stderr: where tee'd stderr lines go (default ``sys.stderr``).
    """

    def __init__(
        self,
        config: LaunchConfig,
        command: Sequence[str],
        environ: dict[str, str] | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        if config.master_port is None:
            raise ValueError("LocalAgent needs a resolved master_port")
        self.config = config
        self.command = list(command)
        self.environ = launcher_environ() if environ is None else dict(environ)
        self.logs_specs = config.logs_specs or LogsSpecs()
        self.stdout = stdout
        self.stderr = stderr
        self.host = host_name(config.local_addr)
        self._rdzv: LocalRendezvous | None = None
        self._procs: WorkerProcesses | None = None
        self._tails: list[TailLog] = []
        self._filtered: list[TextIO] = []
        self._workers: list[Worker] = []
        self._dest: LogsDest | None = None

    @property
    def _live(self) -> WorkerProcesses:
        if self._procs is None:
            raise RuntimeError("internal: no workers were started")
        return self._procs

    @property
    def _rendezvous(self) -> LocalRendezvous:
        if self._rdzv is None:
            raise RuntimeError("internal: no rendezvous yet")
        return self._rdzv

    # -- one attempt -----------------------------------------------------------------------

    def _start(self, attempt: int, group_rank: int, nodes: Sequence[NodeInfo]) -> None:
        cfg = self.config
        workers = assign_worker_ranks(nodes, group_rank)
        group = GroupInfo(
            role=cfg.role,
            local_world_size=cfg.nproc_per_node,
            group_rank=group_rank,
            group_world_size=len(nodes),
            master_addr=cfg.master_addr,
            master_port=cfg.master_port,  # type: ignore[arg-type]
            restart_count=attempt,
            max_restarts=cfg.max_restarts,
            run_id=cfg.run_id,
            signals_to_handle=cfg.signals_to_handle,
            omp_num_threads=cfg.omp_num_threads,
            num_gpus=cfg.num_gpus,
            virtual_local_rank=cfg.virtual_local_rank,
        )
        envs = {w.local_rank: worker_env(w, group, self.environ) for w in workers}
        dest = self.logs_specs.reify(envs)
        args = {
            w.local_rank: [self.command[0], *substitute_local_rank(self.command[1:], w.local_rank)]
            for w in workers
        }
        prefixes = {
            w.local_rank: line_prefix(
                cfg.log_line_prefix_template, cfg.role, w.global_rank, w.local_rank
            )
            for w in workers
        }
        self._procs = WorkerProcesses(args, envs, dest.stdouts, dest.stderrs, self.environ)
        self._workers, self._dest = workers, dest
        _log.info(
            "[%s] attempt %d: starting workers with global ranks %s",
            cfg.role,
            attempt,
            [w.global_rank for w in workers],
        )
        self._procs.start()
        self._tails = []
        for files, console, filters, path in (
            (dest.tee_stdouts, self.stdout or sys.stdout, cfg.duplicate_stdout_filters,
             dest.filtered_stdout),
            (dest.tee_stderrs, self.stderr or sys.stderr, cfg.duplicate_stderr_filters,
             dest.filtered_stderr),
        ):  # fmt: skip
            dup = None
            if filters and path and dest.attempt_dir != os.devnull:
                dup = open(path, "w", errors="replace", buffering=1)  # noqa: SIM115
                self._filtered.append(dup)
            line_filter = None
            if dup is not None:
                line_filter = lambda line, f=tuple(filters): any(n in line for n in f)  # noqa: E731
            self._tails.append(
                TailLog(files, console, prefixes, duplicate_to=dup, line_filter=line_filter).start()
            )

    def _stop(self, death_sig: signal.Signals = signal.SIGTERM) -> None:
        if self._procs is not None:
            self._procs.close(death_sig, self.config.shutdown_timeout)
        for tail in self._tails:
            tail.stop()
        self._tails = []
        for fp in self._filtered:
            fp.close()
        self._filtered = []

    def _failures(self, codes: dict[int, int]) -> dict[int, ProcessFailure]:
        pids = self._live.pids()
        out = {}
        for w in self._workers:
            code = codes.get(w.local_rank)
            if code is None or code == 0:
                continue
            out[w.global_rank] = ProcessFailure(
                local_rank=w.local_rank,
                pid=pids[w.local_rank],
                exitcode=code,
                error_file=self._dest.error_files.get(w.local_rank, ""),
                stderr_tail=self._live.stderr_tail(w.local_rank) if code > 0 else "",
            )
        return out

    def _summary(self, rank: int, failure: ProcessFailure) -> dict[str, Any]:
        return {
            "node": self.config.node_rank,
            "host": self.host,
            "rank": rank,
            "local_rank": failure.local_rank,
            "pid": failure.pid,
            "exitcode": failure.exitcode,
            "error_file": failure.error_file,
            "timestamp": failure.timestamp,
            "message": failure.traceback_text()[-_MESSAGE_LIMIT:],
        }

    @staticmethod
    def _from_summary(summary: dict[str, Any]) -> ProcessFailure:
        failure = ProcessFailure(
            local_rank=summary["local_rank"],
            pid=summary["pid"],
            exitcode=summary["exitcode"],
            error_file="",
        )
        failure.error_file = summary["error_file"]
        failure.timestamp = summary["timestamp"]
        failure.message = summary["message"]
        return failure

    def _on_local_failure(self, attempt: int, failed: dict[int, int]) -> RunResult:
        first = self._failures(failed)
        self._stop()
        # The first observed failures first (as torch lists them), then the workers stopped.
        failures = dict(first)
        for rank, failure in self._failures(self._live.poll()).items():
            failures.setdefault(rank, failure)
        # The worker that ended first (error files and the report have whole seconds only).
        ended = self._live.exit_times
        root = min(first, key=lambda r: (ended.get(first[r].local_rank, math.inf), r))
        f = failures[root]
        _log.error(
            "failed (exitcode: %s) local_rank: %s (pid: %s) of binary: %s",
            f.exitcode,
            f.local_rank,
            f.pid,
            self.command[0],
        )
        winner = self._rendezvous.post_failure(attempt, self._summary(root, f))  # type: ignore[union-attr]
        hosts: dict[int, str] = {}
        if winner["node"] != self.config.node_rank:
            root = winner["rank"]
            failures[root] = self._from_summary(winner)
            hosts[root] = winner["host"]
        return RunResult("FAILED", failures, root, hosts)

    def _on_remote_failure(self, summary: dict[str, Any]) -> RunResult:
        _log.warning(
            "rank %s on node %s (%s) failed; stopping this node's workers",
            summary["rank"],
            summary["node"],
            summary["host"],
        )
        self._stop()
        failures = self._failures(self._live.poll())
        failures[summary["rank"]] = self._from_summary(summary)
        return RunResult("FAILED", failures, summary["rank"], {summary["rank"]: summary["host"]})

    def _monitor(self, attempt: int) -> RunResult:
        done = False
        n = len(self._workers)
        while True:
            time.sleep(self.config.monitor_interval)
            codes = self._live.poll()
            failed = {r: c for r, c in codes.items() if c != 0}
            if failed:
                return self._on_local_failure(attempt, failed)
            if len(codes) == n and not done:
                self._stop()  # drains the tee'd logs
                self._rendezvous.post_done(attempt)
                done = True
            news = self._rendezvous.poll(attempt)
            if news is not None:
                kind, payload = news
                if kind == "fatal":
                    self._stop()
                    failures = self._failures(self._live.poll())
                    return RunResult("FATAL", failures, reason=str(payload))
                return self._on_remote_failure(payload)
            if done and self._rendezvous.all_done(attempt):
                return RunResult("SUCCEEDED")

    # -- the run ---------------------------------------------------------------------------

    def _invoke_run(self) -> RunResult:
        cfg = self.config
        rdzv = self._rdzv = make_rendezvous(cfg)
        remaining = cfg.max_restarts
        attempt = 0
        me = NodeInfo(cfg.role, cfg.nproc_per_node)
        while True:
            info = rdzv.next_rendezvous(attempt, me)
            self._start(attempt, info.group_rank, info.nodes)
            result = self._monitor(attempt)
            if result.state != "FAILED" or remaining == 0:
                return result
            _log.warning(
                "[%s] Worker group FAILED. %s/%s attempts left; will restart worker group",
                cfg.role,
                remaining,
                cfg.max_restarts,
            )
            remaining -= 1
            attempt += 1

    def run(self) -> RunResult:
        """Run the workers to the end (success, failure without restarts left, or a signal).

        Raises:
            SignalException: a handled signal arrived; workers got it, then SIGKILL.
            RendezvousError: the nodes could not form the job.
        """
        restore = install_signal_handlers(self.config.signals_to_handle)
        try:
            result = self._invoke_run()
            if result.state == "SUCCEEDED":
                self.logs_specs.cleanup()
            return result
        except SignalException as e:
            _log.warning("Received %s death signal, shutting down workers", e.sigval.name)
            if self._rdzv is not None:
                self._rdzv.post_fatal(
                    f"the spx-run agent of node {self.config.node_rank} received {e.sigval.name}"
                )
            self._stop(e.sigval)
            raise
        except BaseException as e:
            if self._rdzv is not None:
                self._rdzv.post_fatal(
                    f"the spx-run agent of node {self.config.node_rank} failed: {e}"
                )
            raise
        finally:
            self._stop()
            if self._rdzv is not None:
                self._rdzv.shutdown()
            restore()
