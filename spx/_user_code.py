"""Where the user's code is: the first stack or traceback frame outside spx, JAX and Python.

An error raised while spx traces a step happens deep inside JAX, under spx's own frames; the
line worth showing is the user's (``if loss > 1:``), not ``spx/_compile/compiled.py``. These
helpers find that frame so messages and warnings can point at it.
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import os
import sys
import sysconfig
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType, TracebackType

import jax

import spx


def _packages() -> tuple[str, ...]:
    roots = [os.path.dirname(spx.__file__), os.path.dirname(jax.__file__)]
    try:
        import jaxlib

        roots.append(os.path.dirname(jaxlib.__file__))
    except ImportError:  # pragma: no cover - jax always ships with jaxlib
        pass
    return tuple(os.path.realpath(r) + os.sep for r in roots)


def _stdlib() -> tuple[str, ...]:
    paths = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib")}
    return tuple(os.path.realpath(p) + os.sep for p in paths if p)


_PACKAGES = _packages()
_STDLIB = _stdlib()
_SITE = f"{os.sep}site-packages{os.sep}"


@functools.lru_cache(maxsize=4096)
def is_library(filename: str) -> bool:
    """Whether ``filename`` belongs to spx, JAX or the standard library (not site-packages).

    Cached by name (``realpath`` costs a few system calls, and the checks of pending values
    look up the user's line for every operation they record).
    """
    if filename.startswith("<frozen"):
        return True
    path = os.path.realpath(filename)
    if path.startswith(_PACKAGES):
        return True
    return path.startswith(_STDLIB) and _SITE not in path


@dataclass(frozen=True)
class Location:
    """A line of user code.

    Attributes:
        filename: the file.
        lineno: the 1-based line number.
        function: the enclosing function's name.
        line: the source text of the line, stripped ('' when unavailable).
    """

    filename: str
    lineno: int
    function: str
    line: str

    def __str__(self) -> str:
        where = f'File "{self.filename}", line {self.lineno}, in {self.function}'
        return f"{where}\n    {self.line}" if self.line else where


def _location(frame: FrameType, lineno: int) -> Location:
    code = frame.f_code
    line = linecache.getline(code.co_filename, lineno).strip()
    return Location(code.co_filename, lineno, code.co_name, line)


def from_traceback(tb: TracebackType | None) -> Location | None:
    """The innermost frame of ``tb`` that is user code (where the failing call was made).

    Example:
        >>> try:
        ...     float("x")
        ... except ValueError as e:
        ...     loc = from_traceback(e.__traceback__)
    """
    found = None
    while tb is not None:
        if not is_library(tb.tb_frame.f_code.co_filename):
            found = _location(tb.tb_frame, tb.tb_lineno)
        tb = tb.tb_next
    return found


def from_stack(skip: int = 1) -> Location | None:
    """The innermost frame of the current call stack that is user code.

    Args:
        skip: frames to skip first (1: the caller of this function).

    Example:
        >>> loc = from_stack()
    """
    frame: FrameType | None = sys._getframe(skip)
    while frame is not None:
        if not is_library(frame.f_code.co_filename):
            return _location(frame, frame.f_lineno)
        frame = frame.f_back
    return None


_REPLAY = threading.local()


@contextlib.contextmanager
def replaying() -> Iterator[None]:
    """While spx replays recorded operations into a program: their :func:`warn` calls are
    silent (each warned when it was recorded, at the user's line; the replay happens later, at
    whatever line computes the value, e.g. ``loss.item()``)."""
    previous = getattr(_REPLAY, "on", False)
    _REPLAY.on = True
    try:
        yield
    finally:
        _REPLAY.on = previous


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn at the innermost user frame of the stack (not at spx's own code).

    A warning raised while spx records or traces a call (``F.softmax(x)`` inside a model,
    inside ``spx.compile``) is attributed to the user's line that made the call, as torch's
    warnings are.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True):
        ...     warn("deprecated argument")
    """
    if getattr(_REPLAY, "on", False):
        return
    where = from_stack(2)
    if where is None:
        warnings.warn(message, category, stacklevel=3)
    else:
        warnings.warn_explicit(message, category, where.filename, where.lineno)
