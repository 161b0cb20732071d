"""Start, watch and stop one node's worker processes.

Each worker is a subprocess in its own session (``start_new_session``, as torchrun), so a
terminal's Ctrl-C reaches only the launcher, which forwards it; stopping a worker signals its
whole process group, so helpers the worker started stop with it. On Linux every worker also gets
``PR_SET_PDEATHSIG=SIGKILL``: if the launcher itself is killed (SIGKILL, OOM), the kernel kills
its workers, so no worker outlives spx-run.

Stopping is two-step: the death signal (SIGTERM, or the signal the launcher received), then, after
``timeout`` seconds, SIGKILL for whoever is left (a worker may catch SIGTERM: JAX's preemption
service does, unless spx's multi-process runtime turned it off).

A worker's stderr that goes to the console is passed through the launcher unchanged, byte for
byte, keeping its last lines for the failure report; redirected stderr is read back from its file.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import IO

from spx.distributed.elastic.multiprocessing.logs import CONSOLE

_log = logging.getLogger(__name__)
_TAIL_BYTES = 4096
_PR_SET_PDEATHSIG = 1


class WorkerStartError(RuntimeError):
    """A worker process could not be started (the command does not exist...)."""


def _pdeathsig_setter() -> object | None:
    """A ``preexec_fn`` that asks Linux to SIGKILL the child when the launcher dies."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
        if os.getppid() != parent:  # the launcher died before prctl took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


class _StderrPump:
    """Copy a worker's stderr pipe to the console (or nowhere) and keep its tail."""

    def __init__(self, pipe: IO[bytes], echo: bool) -> None:
        self._pipe = pipe
        self._echo = echo
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="spx-stderr", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        out = getattr(sys.stderr, "buffer", None)
        fd = self._pipe.fileno()
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except OSError:
                break
            if not data:
                break
            if self._echo:
                try:
                    if out is not None:
                        sys.stderr.flush()
                        out.write(data)
                        out.flush()
                    else:
                        sys.stderr.write(data.decode(errors="replace"))
                        sys.stderr.flush()
                except (OSError, ValueError):  # the console went away: keep draining
                    self._echo = False
            with self._lock:
                self._tail += data
                del self._tail[:-_TAIL_BYTES]
        self._pipe.close()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def tail(self) -> bytes:
        with self._lock:
            return bytes(self._tail)


def _tail_lines(data: bytes, lines: int) -> str:
    text = data.decode(errors="replace")
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


class WorkerProcesses:
    """One attempt's worker processes on this node.

    Args:
        args: local rank -> full command line (``[python, "-u", script, ...]``).
        envs: local rank -> variables added to this process's environment for the worker.
        stdouts: local rank -> ``stdout`` destination: a file path, :data:`CONSOLE` (inherit),
            or ``os.devnull``.
        stderrs: the same for stderr.
        base_env: the environment the variables are added to; default ``os.environ``.

    Example:
        >>> procs = WorkerProcesses({0: [sys.executable, "-c", "pass"]}, {0: {}}, {0: ""}, {0: ""})
        >>> procs.start(); procs.wait_all(10)
        {0: 0}
    """

    def __init__(
        self,
        args: dict[int, Sequence[str]],
        envs: dict[int, dict[str, str]],
        stdouts: dict[int, str],
        stderrs: dict[int, str],
        base_env: dict[str, str] | None = None,
    ) -> None:
        self.args = args
        self.envs = envs
        self.stdouts = stdouts
        self.stderrs = stderrs
        self.base_env = dict(os.environ if base_env is None else base_env)
        self.procs: dict[int, subprocess.Popen] = {}
        self._pumps: dict[int, _StderrPump] = {}
        self._files: list[IO] = []
        self.exit_times: dict[int, float] = {}  # local rank -> when it exited (epoch seconds)

    def _open(self, dest: str) -> IO | None:
        if dest == CONSOLE:
            return None
        fp = open(dest, "wb")  # noqa: SIM115 - closed in close()
        self._files.append(fp)
        return fp

    def start(self) -> None:
        """Start every worker (in local-rank order)."""
        if self.procs:
            raise RuntimeError("WorkerProcesses.start() was called twice")
        preexec = _pdeathsig_setter()
        for rank in sorted(self.args):
            env = {**self.base_env, **self.envs[rank]}
            stdout = self._open(self.stdouts[rank])
            pipe_stderr = self.stderrs[rank] in (CONSOLE, os.devnull)
            stderr = subprocess.PIPE if pipe_stderr else self._open(self.stderrs[rank])
            try:
                proc = subprocess.Popen(
                    list(self.args[rank]),
                    env=env,
                    stdout=stdout,
                    stderr=stderr,
                    start_new_session=True,
                    preexec_fn=preexec,
                )
            except OSError as e:
                self.close(signal.SIGKILL, 0)
                raise WorkerStartError(
                    f"could not start local rank {rank}: {e} (command: {list(self.args[rank])}); "
                    "check the script path, or drop --no-python for a Python script"
                ) from e
            self.procs[rank] = proc
            threading.Thread(
                target=self._note_exit, args=(rank, proc.pid), name="spx-exit", daemon=True
            ).start()
            if pipe_stderr:
                self._pumps[rank] = _StderrPump(proc.stderr, echo=self.stderrs[rank] == CONSOLE)

    def _note_exit(self, rank: int, pid: int) -> None:
        """Record when the worker exits, to the millisecond: several workers often end within
        one monitor interval (a crash, then the peers that noticed it), and the report must
        name the one that ended first. ``WNOWAIT`` leaves the reaping to :meth:`poll`."""
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        self.exit_times.setdefault(rank, time.time())

    def pids(self) -> dict[int, int]:
        """Local rank -> pid."""
        return {rank: p.pid for rank, p in self.procs.items()}

    def poll(self) -> dict[int, int]:
        """Exit codes of the workers that have ended (negative: killed by that signal)."""
        done = {}
        now = time.time()
        for rank, proc in self.procs.items():
            code = proc.poll()
            if code is not None:
                self.exit_times.setdefault(rank, now)
                done[rank] = code
        return done

    def wait_all(self, timeout: float) -> dict[int, int]:
        """Wait up to ``timeout`` seconds for every worker; return the exit codes so far."""
        deadline = time.monotonic() + timeout
        while len(self.poll()) < len(self.procs) and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.poll()

    def _signal_all(self, sig: signal.Signals) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                _log.warning("Sending process %s closing signal %s", proc.pid, sig.name)
            # The group may outlive its leader (a helper the worker started): signal it anyway.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)

    def close(self, death_sig: signal.Signals = signal.SIGTERM, timeout: float = 30.0) -> None:
        """Stop every worker: ``death_sig``, then SIGKILL after ``timeout`` seconds.

        Args:
            death_sig: the first signal (torchrun forwards the one it received).
            timeout: grace period before SIGKILL.
        """
        if not self.procs:
            return
        if any(p.poll() is None for p in self.procs.values()):
            self._signal_all(death_sig)
        deadline = time.monotonic() + timeout
        while any(p.poll() is None for p in self.procs.values()):
            if time.monotonic() >= deadline:
                for proc in self.procs.values():
                    if proc.poll() is None:
                        _log.warning(
                            "Unable to shutdown process %s via %s, forcefully exiting via %s",
                            proc.pid,
                            death_sig.name,
                            signal.SIGKILL.name,
                        )
                break
            time.sleep(0.02)
        # SIGKILL the groups even when the leaders are gone: their helpers must not linger.
        for proc in self.procs.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        for rank, proc in self.procs.items():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                _log.error("process %s (local rank %s) did not exit after SIGKILL", proc.pid, rank)
        self.poll()
        for pump in self._pumps.values():
            pump.join(timeout=2.0)
        for fp in self._files:
            fp.close()
        self._files.clear()

    def stderr_tail(self, rank: int, lines: int = 20) -> str:
        """The last ``lines`` lines the worker wrote to stderr ("" if none were kept)."""
        pump = self._pumps.get(rank)
        if pump is not None:
            pump.join(timeout=1.0)
            return _tail_lines(pump.tail(), lines)
        path = self.stderrs.get(rank, CONSOLE)
        if path in (CONSOLE, os.devnull):
            return ""
        try:
            with open(path, "rb") as fp:
                fp.seek(0, os.SEEK_END)
                fp.seek(max(0, fp.tell() - _TAIL_BYTES))
                return _tail_lines(fp.read(), lines)
        except OSError:
            return ""
