"""Per-rank ``os.environ`` and per-rank output for ranks that are threads (``spx-run --threads``).

A process has one environment and one stdout, but each rank thread must read its own ``RANK``,
``LOCAL_RANK``... and its prints must be told apart. While a threads run is on, ``os.environ`` is
a :class:`RankEnviron` and ``sys.stdout``/``sys.stderr`` are :class:`RoutedStream`: both look up
the calling thread's rank in its :class:`spx._context.RankContext` (``extras``), which
DataLoader worker threads share with their rank, and fall back to the real process-wide object
for every other thread.

A rank's writes to the environment stay in its overlay. Not covered: C code calling ``getenv``,
child processes started with ``env=None`` (they get the process environment), and modules that
bound ``os.environ`` or ``sys.stdout`` to a name before the run.
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Iterator, MutableMapping
from typing import Any, TextIO

from spx import _context

ENV_KEY = "spx.elastic.environ"
STREAMS_KEY = "spx.elastic.streams"
_DELETED = object()


def _overlay() -> dict[str, Any] | None:
    return _context.current().extras.get(ENV_KEY)


class RankEnviron(MutableMapping[str, str]):
    """``os.environ`` as seen by the calling rank: its variables over the process's.

    Args:
        base: the real ``os.environ``.

    Example:
        >>> env = RankEnviron({"HOME": "/root"})
        >>> _context.current().extras[ENV_KEY] = {"RANK": "1"}
        >>> env["RANK"], env["HOME"]
        ('1', '/root')
        >>> del _context.current().extras[ENV_KEY]
    """

    def __init__(self, base: MutableMapping[str, str]) -> None:
        self.base = base

    def __getitem__(self, key: str) -> str:
        ov = _overlay()
        if ov is not None and key in ov:
            value = ov[key]
            if value is _DELETED:
                raise KeyError(key)
            return value
        return self.base[key]

    def __setitem__(self, key: str, value: str) -> None:
        ov = _overlay()
        if ov is None:
            self.base[key] = value
            return
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"str expected, not {type(value).__name__}")
        ov[key] = value

    def __delitem__(self, key: str) -> None:
        ov = _overlay()
        if ov is None:
            del self.base[key]
            return
        if key not in self:
            raise KeyError(key)
        ov[key] = _DELETED

    def __iter__(self) -> Iterator[str]:
        ov = _overlay()
        if ov is None:
            yield from list(self.base)
            return
        yield from [k for k in self.base if k not in ov]
        yield from [k for k, v in list(ov.items()) if v is not _DELETED]

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def copy(self) -> dict[str, str]:
        """A plain dict of what the calling rank sees (as ``os.environ.copy()``)."""
        return dict(self)

    def __repr__(self) -> str:
        return f"RankEnviron({dict(self)!r})"


class LineSink:
    """One rank's stream: whole lines go to the console with its prefix and/or to its log file.

    Args:
        console: the real console stream, or None when the rank is not shown.
        prefix: e.g. ``[default1]:``.
        file: the rank's log file, or None.
        lock: serializes console writes of all ranks.
    """

    def __init__(
        self, console: TextIO | None, prefix: str, file: TextIO | None, lock: threading.Lock
    ) -> None:
        self.console = console
        self.prefix = prefix
        self.file = file
        self.lock = lock
        self._partial = ""
        self._tail: list[str] = []

    def write(self, text: str) -> int:
        data = self._partial + text
        cut = data.rfind("\n") + 1
        self._partial = data[cut:]
        if cut:
            self._emit(data[:cut])
        return len(text)

    def _emit(self, text: str) -> None:
        lines = text.splitlines(keepends=True)
        self._tail = (self._tail + lines)[-20:]
        if self.file is not None:
            self.file.write(text)
            self.file.flush()
        if self.console is not None:
            with self.lock:
                self.console.write("".join(self.prefix + line for line in lines))
                self.console.flush()

    def flush_partial(self) -> None:
        """Write a pending partial line (ended with a newline)."""
        if self._partial:
            rest, self._partial = self._partial, ""
            self._emit(rest + "\n")

    def close(self) -> None:
        """Write a pending partial line and close the file."""
        self.flush_partial()
        if self.file is not None:
            self.file.close()
            self.file = None

    def tail(self) -> str:
        """The last lines written (for the failure report)."""
        return "".join(self._tail)


class RoutedStream(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` that sends a rank thread's writes to its :class:`LineSink`.

    Args:
        real: the process's stream.
        which: ``"stdout"`` or ``"stderr"``.
    """

    def __init__(self, real: TextIO, which: str) -> None:
        self.real = real
        self.which = which

    def _sink(self) -> LineSink | None:
        sinks = _context.current().extras.get(STREAMS_KEY)
        return None if sinks is None else sinks[self.which]

    def write(self, text: str) -> int:
        sink = self._sink()
        if sink is None:
            return self.real.write(text)
        return sink.write(text)

    def flush(self) -> None:
        if self._sink() is None:
            self.real.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.real.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.real, "encoding", "utf-8")

    def writable(self) -> bool:
        return True


class Overlay:
    """Install :class:`RankEnviron` and :class:`RoutedStream` for the length of a ``with``."""

    def __init__(self) -> None:
        self._saved: tuple[Any, Any, Any] | None = None

    def __enter__(self) -> Overlay:
        import sys

        self._saved = (os.environ, sys.stdout, sys.stderr)
        # Rebinding (not clearing) os.environ is the point: os.getenv reads this name.
        os.environ = RankEnviron(os.environ)  # type: ignore[assignment]  # noqa: B003
        sys.stdout = RoutedStream(sys.stdout, "stdout")
        sys.stderr = RoutedStream(sys.stderr, "stderr")
        return self

    def __exit__(self, *exc: object) -> None:
        import sys

        if self._saved is not None:
            os.environ, sys.stdout, sys.stderr = self._saved  # type: ignore[assignment]
            self._saved = None
