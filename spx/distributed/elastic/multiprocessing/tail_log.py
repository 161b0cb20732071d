"""``--tee``: follow workers' log files and copy their lines to the console with a rank prefix.

As torchrun does, a tee'd stream is a redirect to the worker's log file (the worker writes it
directly, so the file is complete even if the launcher dies) plus a reader that follows the file
like ``tail -f`` and writes each line to the console as ``[default1]:<line>``. The prefix is
``[<role><local_rank>]:``, or ``TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE`` with ``${role_name}``,
``${rank}`` and ``${local_rank}`` substituted. Partial lines wait for their newline (or the
final drain), so a prefix never lands in the middle of a line.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from string import Template
from typing import TextIO

_CHUNK = 1 << 16


def line_prefix(template: str | None, role: str, rank: int, local_rank: int) -> str:
    """The console prefix of a worker's lines.

    Example:
        >>> line_prefix(None, "default", 3, 1)
        '[default1]:'
        >>> line_prefix("[${role_name}${rank}|${local_rank}]:", "trainer", 3, 1)
        '[trainer3|1]:'
    """
    if not template:
        return f"[{role}{local_rank}]:"
    return Template(template).safe_substitute(role_name=role, rank=rank, local_rank=local_rank)


class TailLog:
    """Follow several log files in one thread and write their lines, prefixed, to ``dst``.

    Args:
        log_files: local rank -> file (the file may not exist yet).
        dst: where lines go (the launcher's stdout or stderr).
        prefixes: local rank -> prefix.
        interval: seconds between polls when every file is at its end.
        duplicate_to: optional second stream that gets the lines ``line_filter`` accepts
            (torchrun's ``--duplicate-stdout-filters``).
        line_filter: which lines go to ``duplicate_to``.

    Example:
        >>> import io, tempfile
        >>> path = tempfile.mktemp()
        >>> _ = open(path, "w").write("hello\\n")
        >>> out = io.StringIO()
        >>> tail = TailLog({1: path}, out, {1: "[default1]:"}).start()
        >>> tail.stop()
        >>> out.getvalue()
        '[default1]:hello\\n'
    """

    def __init__(
        self,
        log_files: dict[int, str],
        dst: TextIO,
        prefixes: dict[int, str],
        interval: float = 0.1,
        duplicate_to: TextIO | None = None,
        line_filter: Callable[[str], bool] | None = None,
    ) -> None:
        self._files = {r: p for r, p in log_files.items() if p and p != os.devnull}
        self._dst = dst
        self._prefixes = prefixes
        self._interval = interval
        self._duplicate_to = duplicate_to
        self._line_filter = line_filter
        self._finished = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> TailLog:
        """Start following (a no-op without files)."""
        if self._files:
            self._thread = threading.Thread(target=self._run, name="spx-tail-log", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Copy what is left in the files, then stop."""
        self._finished.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _emit(self, rank: int, text: str) -> None:
        prefix = self._prefixes.get(rank, f"[{rank}]:")
        lines = text.splitlines(keepends=True)
        self._dst.write("".join(prefix + line for line in lines))
        self._dst.flush()
        if self._duplicate_to is not None and self._line_filter is not None:
            picked = [prefix + line for line in lines if self._line_filter(line)]
            if picked:
                self._duplicate_to.write("".join(picked))
                self._duplicate_to.flush()

    def _run(self) -> None:
        handles: dict[int, TextIO] = {}
        partial = dict.fromkeys(self._files, "")
        try:
            while True:
                finishing = self._finished.is_set()  # read before the pass: nothing is missed
                progressed = False
                for rank, path in self._files.items():
                    fp = handles.get(rank)
                    if fp is None:
                        try:
                            fp = handles[rank] = open(path, errors="replace")  # noqa: SIM115
                        except FileNotFoundError:
                            continue
                    data = fp.read(_CHUNK)
                    if not data:
                        continue
                    progressed = True
                    data = partial[rank] + data
                    cut = data.rfind("\n") + 1
                    partial[rank] = data[cut:]
                    if cut:
                        self._emit(rank, data[:cut])
                if finishing and not progressed:
                    break
                if not progressed:
                    time.sleep(self._interval)
            for rank, rest in partial.items():
                if rest:
                    self._emit(rank, rest + "\n")
        finally:
            for fp in handles.values():
                fp.close()
