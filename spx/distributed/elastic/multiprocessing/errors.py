"""Worker error files, the ``@record`` decorator and the root-cause report.

Mirrors ``torch.distributed.elastic.multiprocessing.errors``. spx-run gives every worker a path
in ``TORCHELASTIC_ERROR_FILE``; a worker that dies of an exception writes it there as JSON, in
torch's format::

    {"message": {"message": "ValueError: boom",
                 "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "1764000000"}}}

Two ways fill it: decorating the entry point with :func:`record` (as with torch), and, with no
change to the script, an exception hook that ``import spx`` installs when the variable is set
(:mod:`spx.distributed.elastic.autorecord`). When a worker fails, the launcher reads the files
into :class:`ProcessFailure` and raises :class:`ChildFailedError`, whose message is torch's
"Root Cause (first observed failure)" report. A worker that left no file (not Python, killed by
a signal, left by ``sys.exit(N)``, failed before ``import spx``) is reported with its exit code
and its last stderr lines.
"""

from __future__ import annotations

import contextlib
import faulthandler
import functools
import json
import logging
import os
import signal
import socket
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from string import Template
from typing import Any, ParamSpec, TypeVar

_log = logging.getLogger(__name__)

ERROR_FILE_ENV = "TORCHELASTIC_ERROR_FILE"
_NOT_AVAILABLE = "<N/A>"
_EMPTY_ERROR_DATA: dict[str, Any] = {"message": "<NONE>"}
# Set on an exception once it is in the error file, so the exception hook does not write it again.
_RECORDED_ATTR = "_spx_error_recorded"

_P = ParamSpec("_P")
_R = TypeVar("_R")


class ErrorHandler:
    """Writes an exception into ``TORCHELASTIC_ERROR_FILE`` as torch's JSON (mirrors torch's).

    Example:
        >>> handler = ErrorHandler()
        >>> handler.initialize()  # enables faulthandler, as torch does
    """

    def _get_error_file_path(self) -> str | None:
        return os.environ.get(ERROR_FILE_ENV) or None

    def initialize(self) -> None:
        """Dump Python stacks of all threads on a fatal signal (SIGSEGV...) to stderr."""
        try:
            faulthandler.enable(all_threads=True)
        except Exception as e:  # e.g. stderr is not a real file
            warnings.warn(f"Unable to enable fault handler. {type(e).__name__}: {e}", stacklevel=2)

    def record_exception(self, e: BaseException, callstack: str | None = None) -> None:
        """Write ``e`` (with ``callstack``, default the traceback being handled) to the file.

        Args:
            e: the exception.
            callstack: its formatted traceback; inside an ``except`` block leave it out.
        """
        path = self._get_error_file_path()
        if not path:
            return
        data = {
            "message": {
                "message": f"{type(e).__name__}: {e}",
                "extraInfo": {
                    "py_callstack": callstack if callstack is not None else traceback.format_exc(),
                    "timestamp": str(int(time.time())),
                },
            }
        }
        try:
            with open(path, "w") as fp:
                json.dump(data, fp)
        except OSError as err:
            warnings.warn(f"Unable to write error to file {path}: {err}", stacklevel=2)
            return
        with contextlib.suppress(AttributeError, TypeError):
            setattr(e, _RECORDED_ATTR, True)

    def dump_error_file(self, rootcause_error_file: str, error_code: int = 0) -> None:
        """Copy a child's error file into this process's own (a launcher run by a launcher)."""
        with open(rootcause_error_file) as fp:
            data = json.load(fp)
        if error_code and isinstance(data.get("message"), dict):
            data["message"]["errorCode"] = error_code
        path = self._get_error_file_path()
        if not path:
            _log.debug("no error file for this process to copy %s into", rootcause_error_file)
            return
        with open(path, "w") as fp:
            json.dump(data, fp)


def get_error_handler() -> ErrorHandler:
    """The default :class:`ErrorHandler` (as torch's ``get_error_handler``)."""
    return ErrorHandler()


def was_recorded(e: BaseException) -> bool:
    """Whether ``e`` is already in this process's error file."""
    return bool(getattr(e, _RECORDED_ATTR, False))


@dataclass
class ProcessFailure:
    """One failed worker, read back from its error file (mirrors torch's ``ProcessFailure``).

    Args:
        local_rank: the worker's rank on its node.
        pid: its process id.
        exitcode: its exit status; negative for a signal (``-15`` is SIGTERM).
        error_file: the file it was told to write; a missing file reads as ``<N/A>``.
        stderr_tail: the last lines it wrote to stderr, shown when it left no error file.

    Example:
        >>> f = ProcessFailure(local_rank=0, pid=123, exitcode=-9, error_file="/nonexistent")
        >>> f.message, f.signal_name()
        ('Signal 9 (SIGKILL) received by PID 123', 'SIGKILL')
    """

    local_rank: int
    pid: int
    exitcode: int
    error_file: str
    stderr_tail: str = ""
    error_file_data: dict[str, Any] = field(init=False)
    message: Any = field(init=False)
    timestamp: int = field(init=False)

    def __post_init__(self) -> None:
        self.error_file_data = dict(_EMPTY_ERROR_DATA)
        self.message = ""
        self.timestamp = int(time.time())
        data = None
        if self.error_file and os.path.isfile(self.error_file):
            try:
                with open(self.error_file) as fp:
                    data = json.load(fp)
            except (OSError, ValueError) as e:  # a half-written file must not hide the failure
                _log.warning("could not read error file %s: %s", self.error_file, e)
        if isinstance(data, dict) and "message" in data:
            self.error_file_data = data
            message = data["message"]
            self.message = message
            if isinstance(message, str):
                self.timestamp = int(data.get("timestamp", 0))
            else:
                self.timestamp = int(message.get("extraInfo", {}).get("timestamp", 0))
        else:
            self.error_file = _NOT_AVAILABLE
        if not self.message:
            if self.exitcode < 0:
                self.message = (
                    f"Signal {-self.exitcode} ({self.signal_name()}) received by PID {self.pid}"
                )
            else:
                self.message = (
                    f"exit code {self.exitcode} and no error file: the worker called "
                    f"sys.exit({self.exitcode}), failed before `import spx`, or is not Python "
                    "(decorate its main with spx.distributed.elastic.multiprocessing.errors."
                    "record to record its exceptions in any case)"
                )
            if self.stderr_tail:
                self.message += "\nLast lines of its stderr:\n" + self.stderr_tail.rstrip("\n")

    def signal_name(self) -> str:
        """``SIGTERM`` etc. for a worker killed by a signal, else ``<N/A>``."""
        if self.exitcode < 0:
            try:
                return signal.Signals(-self.exitcode).name
            except ValueError:
                return _NOT_AVAILABLE
        return _NOT_AVAILABLE

    def timestamp_isoformat(self) -> str:
        """The failure time as ``YYYY-MM-DD_HH:MM:SS`` (torch's format)."""
        return datetime.fromtimestamp(self.timestamp).isoformat(sep="_")

    def traceback_text(self) -> str:
        """The worker's traceback (or the message standing in for it)."""
        msg = self.message
        if isinstance(msg, dict):
            msg = msg.get("extraInfo", {}).get("py_callstack", msg.get("message", _NOT_AVAILABLE))
        return str(msg)


_FAILURE_FORMAT_TEMPLATE = """[${idx}]:
  time      : ${time}
  host      : ${hostname}
  rank      : ${rank} (local_rank: ${local_rank})
  exitcode  : ${exitcode} (pid: ${pid}) ${signal_name}
  error_file: ${error_file}
  traceback : ${message}"""

_MSG_FORMAT_TEMPLATE = """
${boarder}
${title}
${section}
Failures:
${other_failures}
${section}
Root Cause (first observed failure):
${root_failure}
${boarder}"""


class ChildFailedError(Exception):
    """Workers failed; the message is torch's root-cause report (mirrors torch's).

    Args:
        name: the entry point's name (the script), shown as ``<name> FAILED``.
        failures: the failed workers by global rank.
        root_rank: the first observed failure; default the earliest timestamp, as torch.
        hosts: the host of each failure when not this one (failures reported by other nodes).
    """

    def __init__(
        self,
        name: str,
        failures: dict[int, ProcessFailure],
        root_rank: int | None = None,
        hosts: dict[int, str] | None = None,
    ) -> None:
        if not failures:
            raise ValueError("ChildFailedError needs at least one failure")
        self.name = name
        self.failures = failures
        self.hosts = dict(hosts or {})
        self._root_rank = root_rank if root_rank in failures else None
        super().__init__(self.format_msg())

    def get_first_failure(self) -> tuple[int, ProcessFailure]:
        """The root cause: (global rank, failure)."""
        if self._root_rank is not None:
            return self._root_rank, self.failures[self._root_rank]
        rank = min(self.failures, key=lambda r: self.failures[r].timestamp)
        return rank, self.failures[rank]

    def format_msg(self, boarder_delim: str = "=", section_delim: str = "-") -> str:
        """The report, laid out exactly as torchrun's."""
        title = f"{self.name} FAILED"
        root_rank, _ = self.get_first_failure()
        root_fmt = ""
        others: list[str] = []
        width = len(title)
        for idx, (rank, failure) in enumerate(self.failures.items()):
            fmt, w = self._format_failure(idx, rank, failure)
            width = max(width, w)
            if rank == root_rank:
                root_fmt = fmt
            else:
                others.append(fmt)
        width = min(width, 60)
        return Template(_MSG_FORMAT_TEMPLATE).substitute(
            boarder=boarder_delim * width,
            title=title,
            section=section_delim * width,
            root_failure=root_fmt,
            other_failures="\n".join(others or ["  <NO_OTHER_FAILURES>"]),
        )

    def _format_failure(self, idx: int, rank: int, failure: ProcessFailure) -> tuple[str, int]:
        signal_name = failure.signal_name()
        fmt = Template(_FAILURE_FORMAT_TEMPLATE).substitute(
            idx=idx,
            time=failure.timestamp_isoformat(),
            hostname=self.hosts.get(rank) or socket.getfqdn(),
            rank=rank,
            local_rank=failure.local_rank,
            exitcode=failure.exitcode,
            pid=failure.pid,
            signal_name=f" ({signal_name})" if signal_name != _NOT_AVAILABLE else "",
            error_file=failure.error_file,
            message=failure.traceback_text().replace("\n", "\n  "),
        )
        return fmt, max(len(line) for line in fmt.split("\n"))


def record(
    fn: Callable[_P, _R], error_handler: ErrorHandler | None = None
) -> Callable[_P, _R | None]:
    """Record an exception escaping ``fn`` into ``TORCHELASTIC_ERROR_FILE`` (mirrors torch's).

    Use it once per process, on the top-level function. ``sys.exit(0)`` inside ``fn`` returns
    None; a :class:`ChildFailedError` (a launcher inside a worker) copies its root cause's file.

    Args:
        fn: the entry point.
        error_handler: what writes the file; default :func:`get_error_handler`.

    Example:
        >>> from spx.distributed.elastic.multiprocessing.errors import record
        >>> @record
        ... def main():
        ...     return 0
        >>> main()
        0
    """
    handler = error_handler or get_error_handler()

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R | None:
        handler.initialize()
        try:
            return fn(*args, **kwargs)
        except SystemExit as se:
            if se.code == 0:
                return None
            raise
        except ChildFailedError as e:
            _, failure = e.get_first_failure()
            if failure.error_file != _NOT_AVAILABLE:
                handler.dump_error_file(failure.error_file, failure.exitcode)
            raise
        except Exception as e:
            handler.record_exception(e)
            raise

    return wrapper
