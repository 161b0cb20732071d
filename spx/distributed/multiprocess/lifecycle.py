"""How a multi-process job fails fast and exits cleanly.

Four mechanisms, all per process (one rank per process, so process-wide state is the rank's):

* **Abort.** A rank that fails publishes ``spx/abort`` in the job's key-value store. A watchdog
  thread in every process polls that key (every ``SPX_WATCHDOG_INTERVAL`` seconds, default
  0.5). A rank that is computing raises ``DistBackendError`` at its next spx wait; a rank that
  is *blocked* in one (a gloo collective, a transfer pull, a key-value wait — none of which can
  be interrupted from Python) is ended by the watchdog with exit code 1 after printing why, as
  torch's NCCL watchdog ends a rank whose collective cannot finish. The same happens when a
  wait outlives the group's timeout (the whole job is then aborted), or when a rank it waits
  for has been exiting for more than ``SPX_EXIT_GRACE`` seconds (default 5).
* **Uncaught exceptions.** The default ``sys.excepthook`` is wrapped: after the traceback is
  printed, the rank aborts the job, writes torchelastic's error file if
  ``TORCHELASTIC_ERROR_FILE`` is set, and leaves with ``os._exit(1)``. A plain exit would hang:
  JAX's own exit handler waits for every process in a shutdown barrier, and the peers are
  waiting for this rank.
* **Normal exit.** An ``atexit`` handler (it runs before JAX's) waits for this rank's own
  receives to finish, announces ``spx/exiting/<rank>`` and waits until every rank did, so no
  process exits — taking its transfer server down — while a peer still pulls from it.
* **SIGTERM.** Launchers stop workers with SIGTERM (spx-run and torchrun on a failure, before a
  restart, or when they are stopped themselves). JAX's preemption service would catch it and
  keep the rank running until the launcher's SIGKILL, a grace period later (30 s by default), so
  ``init_process_group`` leaves that service off and installs :func:`install_sigterm`'s handler:
  the rank aborts the job (so ranks that got no signal stop too) and ends *by* SIGTERM (exit
  status -15, as a process without a handler) at once — rank 0 after the short linger below —
  even when its main thread is blocked in C++ (a collective, a transfer, a key-value wait),
  where a Python signal handler alone would never run.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from spx.distributed.backend import DistBackendError
from spx.distributed.multiprocess.kvstore import KeyValueStore

ABORT_KEY = "spx/abort"
EXITING_DIR = "spx/exiting/"
_LEAVING = threading.Lock()  # held by the thread that ends the process after a failure
_LEAVING_OWNER: int | None = None  # that thread's ident


def _env_seconds(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return float(value)
    except ValueError:
        raise ValueError(
            f"environment variable {name}={value!r} is not a number of seconds"
        ) from None


class _Blocked:
    __slots__ = ("deadline", "peers", "since", "what")

    def __init__(self, what: str, peers: Sequence[int], timeout: float) -> None:
        self.what = what
        self.peers = tuple(peers)
        self.since = time.monotonic()
        self.deadline = self.since + timeout


class _Blocking:
    __slots__ = ("_entry", "_outer", "_tid", "_watchdog")

    def __init__(self, watchdog: Watchdog, what: str, peers: Sequence[int], timeout: float):
        self._watchdog = watchdog
        self._entry = _Blocked(what, peers, timeout)

    def __enter__(self) -> None:
        w = self._watchdog
        w.check()
        self._tid = threading.get_ident()
        with w._lock:
            self._outer = w._blocked.get(self._tid)
            w._blocked[self._tid] = self._entry

    def __exit__(self, *exc: object) -> None:
        w = self._watchdog
        with w._lock:
            if self._outer is None:
                w._blocked.pop(self._tid, None)
            else:
                w._blocked[self._tid] = self._outer


class Watchdog:
    """Per-process abort flag, registry of blocking waits, and the thread that polls both.

    Args:
        kv: the job's key-value store.
        rank: this process's global rank.
        world_size: number of ranks in the job.
    """

    def __init__(self, kv: KeyValueStore, rank: int, world_size: int) -> None:
        self.kv = kv
        self.rank = rank
        self.world_size = world_size
        self.interval = _env_seconds("SPX_WATCHDOG_INTERVAL", 0.5)
        self.exit_grace = _env_seconds("SPX_EXIT_GRACE", 5.0)
        self.reason: str | None = None
        self._lock = threading.Lock()
        self._blocked: dict[int, _Blocked] = {}  # thread id -> its current wait
        self._stop = threading.Event()
        self._exiting_since: dict[int, float] = {}
        self._thread = threading.Thread(target=self._run, name="spx-watchdog", daemon=True)
        self._thread.start()

    # -- abort --------------------------------------------------------------------------------
    def abort(self, reason: str) -> None:
        """Publish ``reason`` as the job's abort (first one wins) and remember it here."""
        with self._lock:
            if self.reason is not None:
                return
            self.reason = reason
        with contextlib.suppress(Exception):  # the store may already be gone
            self.kv.set(ABORT_KEY, reason)

    def explain(self, what: str, error: BaseException) -> DistBackendError:
        """The error for a wait that failed (a peer's connection closed, a collective failed):
        names the job's abort reason when a rank aborted it, which is the usual cause."""
        if self.reason is None:
            with contextlib.suppress(Exception):
                value = self.kv.try_get(ABORT_KEY)
                if value is not None:
                    self.reason = value.decode(errors="replace")
        if self.reason is not None:
            return DistBackendError(
                f"rank {self.rank}: {what} failed because the job was aborted: {self.reason}"
            )
        return DistBackendError(f"rank {self.rank}: {what} failed: {type(error).__name__}: {error}")

    def check(self) -> None:
        """Raise if the job was aborted (cheap: reads a local flag the watchdog maintains)."""
        if self.reason is not None:
            raise DistBackendError(f"rank {self.rank}: the job was aborted: {self.reason}")

    def blocking(self, what: str, peers: Sequence[int], timeout: float) -> _Blocking:
        """Context manager: the calling thread is blocked in ``what``, waiting for global ranks
        ``peers``.

        Raises at entry if the job was aborted. While inside, the watchdog ends the process if
        the job is aborted, ``timeout`` seconds pass, or a peer exits without taking part.
        (A class, not a generator: it wraps every collective and receive.)
        """
        return _Blocking(self, what, peers, timeout)

    # -- the thread ---------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._poll()
            except Exception:  # the store went away: the process is shutting down
                if self._stop.is_set():
                    return

    def _poll(self) -> None:
        if self.reason is None:
            value = self.kv.try_get(ABORT_KEY)
            if value is not None:
                with self._lock:
                    self.reason = self.reason or value.decode(errors="replace")
        with self._lock:
            blocked = list(self._blocked.values())
        if not blocked:
            return
        if self.reason is not None:
            self._end(blocked[0], f"the job was aborted: {self.reason}")
        now = time.monotonic()
        for entry in blocked:
            if now > entry.deadline:
                self.abort(
                    f"rank {self.rank} timed out after {now - entry.since:.0f} s in {entry.what}"
                )
                self._end(entry, "the wait timed out (raise timeout= in init_process_group)")
        exiting = self._exiting(now)
        for entry in blocked:
            gone = [p for p in entry.peers if now - exiting.get(p, now) > self.exit_grace]
            if gone:
                self.abort(
                    f"rank {self.rank} waited in {entry.what} for rank(s) {gone}, which exited "
                    "without taking part"
                )
                self._end(entry, f"rank(s) {gone} exited without taking part")

    def _exiting(self, now: float) -> dict[int, float]:
        for key, _ in self.kv.dir_get(EXITING_DIR):
            self._exiting_since.setdefault(int(key.rsplit("/", 1)[1]), now)
        return self._exiting_since

    def _end(self, entry: _Blocked, why: str) -> None:
        if _LEAVING.locked():
            return  # this rank is already stopping, with its own report
        print(
            f"[rank {self.rank}] spx.distributed: stopping this rank, blocked for "
            f"{time.monotonic() - entry.since:.1f} s in {entry.what}: {why}",
            file=sys.stderr,
            flush=True,
        )
        _leave_after_failure(self, 1)

    # -- normal exit --------------------------------------------------------------------------
    def exit_barrier(self, timeout: float, drain: Callable[[], None]) -> bool:
        """Finish this rank's receives, announce the exit, wait for every rank to announce.

        Returns:
            True when every rank arrived, False when the job was aborted or ``timeout`` passed.
        """
        if self.reason is None:
            with contextlib.suppress(Exception):
                drain()
        with contextlib.suppress(Exception):
            self.kv.set(f"{EXITING_DIR}{self.rank}", b"1", overwrite=True)
        deadline = time.monotonic() + timeout
        delay = 0.005
        while time.monotonic() < deadline:
            if self.reason is not None:
                return False
            try:
                if len(self.kv.dir_get(EXITING_DIR)) >= self.world_size:
                    return True
                value = self.kv.try_get(ABORT_KEY)
            except Exception:
                return False
            if value is not None:
                self.reason = value.decode(errors="replace")
                return False
            time.sleep(delay)
            delay = min(2 * delay, 0.1)
        return False


def _leave_after_failure(watchdog: Watchdog, code: int, by_signal: int | None = None) -> None:
    """Exit after this rank failed or was stopped. Rank 0 hosts the job's coordination service,
    whose end makes JAX terminate every other process at once: it lingers for a few watchdog
    periods so that the others first see the abort and stop with their own report."""
    global _LEAVING_OWNER
    if not _LEAVING.acquire(blocking=False):
        if threading.get_ident() == _LEAVING_OWNER:
            # A signal handler (SIGTERM) interrupted this very thread while it was leaving,
            # e.g. during rank 0's linger: waiting for ourselves would never end. Leave now.
            _hard_exit(code, by_signal)
        while True:  # another thread is already ending the process (its way: its exit code)
            time.sleep(60)
    _LEAVING_OWNER = threading.get_ident()
    if watchdog.rank == 0 and watchdog.world_size > 1:
        time.sleep(min(2.0, 3 * watchdog.interval))
    _hard_exit(code, by_signal)


def _hard_exit(code: int, by_signal: int | None = None) -> None:
    """Leave now: flush what was printed, skip JAX's exit barrier (peers may be gone).

    With ``by_signal``, end by that signal with its default action (the exit status a parent
    sees for a process the signal killed), falling back to ``code``.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if by_signal is not None:
        with contextlib.suppress(Exception):
            # signal.signal() works on the main thread only and this may run on another one;
            # libc's signal() has no such limit.
            libc = ctypes.CDLL(None, use_errno=True)
            libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
            libc.signal.restype = ctypes.c_void_p
            libc.signal(by_signal, 0)  # SIG_DFL
            os.kill(os.getpid(), by_signal)
            time.sleep(1.0)  # delivery is asynchronous when another thread has it unblocked
    os._exit(code)


class _SigtermHandler:
    """Ends this rank on SIGTERM: abort the job, then exit by SIGTERM (see the module doc).

    Python runs a signal handler on the main thread between bytecodes, never while that thread
    is blocked in C++. The handler is installed anyway (it runs when the main thread is in
    Python), and a thread waits on the signal module's wakeup file descriptor, to which the
    interpreter's C-level handler writes the signal number at once, whatever the main thread
    does. Whichever comes first stops the rank.
    """

    def __init__(self, watchdog: Watchdog) -> None:
        self._watchdog = watchdog
        self._once = threading.Lock()
        self._read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        if previous != -1:  # someone (an asyncio loop) owns the wakeup fd: leave it to them
            signal.set_wakeup_fd(previous)
            os.close(write_fd)
        else:
            threading.Thread(target=self._wait, name="spx-sigterm", daemon=True).start()
        signal.signal(signal.SIGTERM, self._on_signal)

    def _wait(self) -> None:
        while True:
            try:
                data = os.read(self._read_fd, 64)
            except OSError:
                return
            if not data:
                return
            # One byte per signal, its number. A handler the program installed after ours
            # takes over SIGTERM: then the signal is its business.
            if signal.SIGTERM in data and signal.getsignal(signal.SIGTERM) == self._on_signal:
                self._stop()

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._stop()

    def _stop(self) -> None:
        if not self._once.acquire(blocking=False):
            return  # the other path is already stopping the rank
        w = self._watchdog
        print(
            f"[rank {w.rank}] spx.distributed: received SIGTERM; aborting the job and exiting",
            file=sys.stderr,
            flush=True,
        )
        w.abort(f"rank {w.rank} received SIGTERM")
        _leave_after_failure(w, 128 + signal.SIGTERM, by_signal=signal.SIGTERM)


def install_sigterm(watchdog: Watchdog) -> bool:
    """Make SIGTERM abort the job and end this rank promptly (see the module docstring).

    Leaves SIGTERM alone — returning False — off the main thread (Python allows handlers only
    there) and when the program installed its own Python handler for it; a handler the program
    installs later replaces this one.
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return False
    _SigtermHandler(watchdog)
    return True


def write_error_file(error: BaseException, text: str) -> None:
    """torchelastic's error file (``TORCHELASTIC_ERROR_FILE``), as ``@record`` writes it."""
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if not path or os.path.exists(path):
        return
    payload = {
        "message": {
            "message": f"{type(error).__name__}: {error}",
            "extraInfo": {"py_callstack": text, "timestamp": str(int(time.time()))},
        }
    }
    with contextlib.suppress(OSError), open(path, "w") as f:
        json.dump(payload, f)


def install(watchdog: Watchdog, timeout: float, drain: Callable[[], None]) -> None:
    """Wrap ``sys.excepthook`` and register the exit handshake for this process's rank."""
    previous = sys.excepthook

    def excepthook(kind: type[BaseException], error: BaseException, tb: Any) -> None:
        previous(kind, error, tb)
        if isinstance(error, KeyboardInterrupt):
            watchdog.abort(f"rank {watchdog.rank} was interrupted")
        else:
            watchdog.abort(f"rank {watchdog.rank} failed: {kind.__name__}: {error}")
        write_error_file(error, "".join(traceback.format_exception(kind, error, tb)))
        _leave_after_failure(watchdog, 1)

    sys.excepthook = excepthook

    def at_exit() -> None:
        clean = watchdog.exit_barrier(timeout, drain)
        watchdog.stop()
        if not clean:
            # A peer failed or never arrived: JAX's shutdown barrier would wait for it.
            _leave_after_failure(watchdog, 1)

    # atexit runs handlers last-registered first: this one runs before JAX's clean-up, which
    # was registered when jax was imported.
    atexit.register(at_exit)
