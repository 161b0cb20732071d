"""Record a worker's uncaught exception into its error file with no change to the script.

torch only writes ``TORCHELASTIC_ERROR_FILE`` for entry points decorated with ``@record``; a
plain script that raises shows up in torchrun's report as "To enable traceback see ...". Under
spx-run every worker that imports spx gets its traceback into the report anyway: ``import spx``
imports this module, which, when ``TORCHELASTIC_ERROR_FILE`` is set (only launchers set it),
chains an exception hook that writes the uncaught exception in torch's format
(:class:`~spx.distributed.elastic.multiprocessing.errors.ErrorHandler`) and then prints the
traceback as before. An exception that ``@record`` already wrote is not written twice.
"""

from __future__ import annotations

import os
import sys
import traceback
from types import TracebackType

from spx.distributed.elastic.multiprocessing.errors import (
    ERROR_FILE_ENV,
    ErrorHandler,
    was_recorded,
)

_installed = False


def _hook_for(previous):
    def excepthook(
        exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None:
        if isinstance(exc, Exception) and not was_recorded(exc):
            callstack = "".join(traceback.format_exception(exc_type, exc, tb))
            ErrorHandler().record_exception(exc, callstack=callstack)
        previous(exc_type, exc, tb)

    excepthook.spx_autorecord = True  # type: ignore[attr-defined]
    return excepthook


def install() -> bool:
    """Chain the recording hook onto ``sys.excepthook`` if this process has an error file.

    Returns:
        True when the hook is (now or already) installed.

    Example:
        >>> install() in (True, False)
        True
    """
    global _installed
    if _installed:
        return True
    if not os.environ.get(ERROR_FILE_ENV):
        return False
    sys.excepthook = _hook_for(sys.excepthook)
    _installed = True
    return True


install()
