"""``spawn``: run ``fn(rank, *args)`` in ``nprocs`` new processes (mirrors
``torch.multiprocessing.spawn``).

Each rank is a real process started with ``multiprocessing`` (``start_method="spawn"`` by
default: a fresh interpreter that imports the main module, so scripts keep torch's
``if __name__ == "__main__":`` guard). ``fn`` and ``args`` must be picklable. The processes
typically join a job with ``spx.distributed.init_process_group(rank=rank,
world_size=nprocs)`` after setting ``MASTER_ADDR``/``MASTER_PORT``, as in torch's DDP tutorial.

Failures are torch's: when a rank raises, ``join`` terminates the others and raises
:class:`ProcessRaisedException` with the rank's traceback; a rank that exits non-zero or is
killed by a signal gives :class:`ProcessExitedException` (``exit_code``, ``signal_name``). No
process outlives the parent: each child asks the kernel to kill it when its parent dies
(``PR_SET_PDEATHSIG`` on Linux), and an interrupted ``join`` terminates the children.

Each child sees ``JAX_NUM_CPU_DEVICES=1`` (one CPU device per rank, as ``spx-run`` gives its
workers) unless the environment already chooses a device count.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from spx._validate import as_int

__all__ = [
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "spawn",
    "start_processes",
]


class ProcessException(Exception):
    """Base of the errors :func:`spawn` raises for a failed rank (as torch's)."""

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = error_pid


class ProcessRaisedException(ProcessException):
    """A rank raised an exception; the message holds its traceback (for thread ranks
    ``__cause__`` is the exception itself)."""


class ProcessExitedException(ProcessException):
    """A rank exited with a non-zero code (``exit_code``) or was killed by a signal
    (``signal_name``, e.g. ``"SIGKILL"``)."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = None


_ENV_LOCK = threading.Lock()
_GRACE = 30.0  # seconds between SIGTERM and SIGKILL for the survivors of a failure


def _die_with_parent() -> None:
    """Have the kernel SIGKILL this process when its parent exits (Linux; a no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        return


def _wrap(fn: Callable[..., Any], i: int, args: tuple, error_file: str, parent: int) -> None:
    _die_with_parent()
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # SIGINT: the parent is stopping us
    except SystemExit:
        raise
    except BaseException:
        import traceback

        with open(error_file, "wb") as fp:
            pickle.dump(traceback.format_exc(), fp)
        sys.exit(1)


class ProcessContext:
    """The spawned processes (mirrors ``torch.multiprocessing.ProcessContext``).

    Attributes:
        processes: the ``multiprocessing.Process`` of each rank.
        error_files: where each rank writes its traceback if it raises.
    """

    def __init__(self, processes: list[Any], error_files: list[str]) -> None:
        self.processes = processes
        self.error_files = error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        return [int(p.pid) for p in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait for the processes; raise if one failed (torch's ``ProcessContext.join``).

        Args:
            timeout: seconds to wait for a process to end; None waits.
            grace_period: after a failure, seconds the others get after SIGTERM before
                SIGKILL (default 30).

        Returns:
            True when every process ended successfully, False if ``timeout`` expired first
            (call again to keep waiting).

        Raises:
            ProcessRaisedException: a rank raised; the message holds its traceback.
            ProcessExitedException: a rank exited non-zero or was killed by a signal.
        """
        if not self.sentinels:
            return True
        try:
            ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        except KeyboardInterrupt:
            self._terminate(grace_period)
            raise
        failed = None
        for sentinel in ready:
            i = self.sentinels.pop(sentinel)
            p = self.processes[i]
            p.join()
            if p.exitcode != 0 and failed is None:
                failed = i
        if failed is None:
            return not self.sentinels
        self._terminate(grace_period)
        self._raise(failed)
        return False  # unreachable

    def _terminate(self, grace_period: float | None) -> None:
        alive = [p for p in self.processes if p.is_alive()]
        for p in alive:
            p.terminate()
        deadline = time.monotonic() + (_GRACE if grace_period is None else grace_period)
        for p in alive:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in alive:
            if p.is_alive():
                p.kill()
                p.join()
        self.sentinels.clear()

    def _raise(self, i: int) -> None:
        p = self.processes[i]
        path = self.error_files[i]
        if os.path.exists(path) and os.path.getsize(path):
            with open(path, "rb") as fp:
                text = pickle.load(fp)
            msg = f"\n\n-- Process {i} terminated with the following error:\n{text}"
            raise ProcessRaisedException(msg, i, int(p.pid))
        code = int(p.exitcode)
        if code < 0:
            name = signal.Signals(-code).name
            err = ProcessExitedException(
                f"process {i} terminated with signal {name}", i, int(p.pid), code
            )
            err.signal_name = name
            raise err
        raise ProcessExitedException(
            f"process {i} terminated with exit code {code}", i, int(p.pid), code
        )

    def __del__(self) -> None:
        for path in getattr(self, "error_files", ()):
            with contextlib.suppress(OSError):
                os.remove(path)


def start_processes(
    fn: Callable[..., Any],
    args: tuple = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:
    """:func:`spawn` with any ``start_method`` (``"spawn"``, ``"forkserver"``, ``"fork"``)."""
    nprocs = as_int(nprocs, "nprocs", "spawn", minimum=1, wrong_type=ValueError)
    if not callable(fn):
        raise TypeError(f"spawn: fn must be callable, got {type(fn).__name__}")
    methods = multiprocessing.get_all_start_methods()
    if start_method not in methods:
        raise ValueError(
            f"spawn(start_method={start_method!r}): not available here; expected one of {methods}"
        )
    try:
        pickle.dumps((fn, tuple(args)))
    except Exception as e:
        raise TypeError(
            f"spawn: fn and args must be picklable to reach new processes ({e}). Define fn at "
            "module level (not a lambda or a nested function) and pass picklable args."
        ) from e
    mp = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    with _ENV_LOCK, _child_environ():
        for i in range(nprocs):
            fd, path = tempfile.mkstemp(prefix=f"spx-spawn-{i}-", suffix=".err")
            os.close(fd)
            p = mp.Process(
                target=_wrap, args=(fn, i, tuple(args), path, os.getpid()), daemon=daemon
            )
            p.start()
            processes.append(p)
            error_files.append(path)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(
    fn: Callable[..., Any],
    args: tuple = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:
    """Run ``fn(i, *args)`` for ``i`` in ``range(nprocs)``, each in a new process.

    Args:
        fn: module-level function, called as ``fn(i, *args)``.
        args: picklable extra arguments.
        nprocs: number of processes.
        join: wait for them (True) or return a :class:`ProcessContext` at once.
        daemon: make them daemonic (killed when the parent exits normally).
        start_method: ``"spawn"`` (torch's default and requirement for ``spawn``),
            ``"forkserver"`` or ``"fork"``.

    Returns:
        None when ``join`` is True, else the :class:`ProcessContext`.

    Raises:
        ProcessRaisedException: a rank raised (its traceback is in the message).
        ProcessExitedException: a rank exited non-zero or was killed by a signal.

    Example:
        >>> def main(rank, world):  # at module level
        ...     os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", "29500"
        ...     dist.init_process_group("gloo", rank=rank, world_size=world)
        ...     ...
        >>> if __name__ == "__main__":  # doctest: +SKIP
        ...     spx.multiprocessing.spawn(main, args=(2,), nprocs=2)
    """
    return start_processes(fn, args, nprocs, join, daemon, start_method)


class _child_environ:
    """One CPU device per child unless the environment chooses (restored after the starts)."""

    def __enter__(self) -> None:
        env = os.environ
        self.saved = env.get("JAX_NUM_CPU_DEVICES")
        chosen = "JAX_NUM_CPU_DEVICES" in env or (
            "xla_force_host_platform_device_count" in env.get("XLA_FLAGS", "")
        )
        self.set = not chosen
        if self.set:
            env["JAX_NUM_CPU_DEVICES"] = "1"

    def __exit__(self, *exc: Any) -> None:
        if self.set:
            os.environ.pop("JAX_NUM_CPU_DEVICES", None)
