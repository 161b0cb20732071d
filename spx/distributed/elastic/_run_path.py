"""Worker bootstrap for ``spx-run --run-path``: run a script with ``runpy.run_path``.

Usage (what spx-run runs): ``python -u _run_path.py /abs/path/script.py [args...]``.

torchrun's ``--run-path`` runs the script through ``runpy.run_path`` in a worker started by the
launcher rather than as ``python script.py``, and records a failure in the worker's error file as
its function entry points do. This file is executed by path, so it imports only the standard
library (not the spx package, which would import JAX before the script asks for it); it writes
the error file in the format of
:class:`spx.distributed.elastic.multiprocessing.errors.ErrorHandler`.
"""

import contextlib
import json
import os
import runpy
import sys
import time
import traceback


def _record(e: BaseException) -> None:
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if not path:
        return
    data = {
        "message": {
            "message": f"{type(e).__name__}: {e}",
            "extraInfo": {
                "py_callstack": traceback.format_exc(),
                "timestamp": str(int(time.time())),
            },
        }
    }
    try:
        with open(path, "w") as fp:
            json.dump(data, fp)
    except OSError:
        return
    # The spx exception hook (if the script imported spx) need not write it again.
    with contextlib.suppress(AttributeError, TypeError):
        e._spx_error_recorded = True  # type: ignore[attr-defined]


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: _run_path.py SCRIPT [ARGS...]")
    script = sys.argv[1]
    if not os.path.isabs(script):
        sys.exit(
            f"spx-run --run-path: the training script must be an absolute path, got {script!r}; "
            f"pass {os.path.abspath(script)}"
        )
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(script)
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit:
        raise
    except Exception as e:
        _record(e)
        raise


if __name__ == "__main__":
    main()
