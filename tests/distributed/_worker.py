"""One rank of a batch of multi-process test cases (started by ``tests.distributed._ranks``).

Usage: ``python -m tests.distributed._worker <test module> <nprocs> <out dir>``, as one rank of
a torchrun-style environment. Runs, in order, every case of the module's ``PROCESS_CASES``
list whose rank count is ``nprocs``: a case is ``(fn, nprocs)`` or ``(fn, nprocs, args)``,
and ``fn(rank, out, *args)`` is the same rank function the thread tests spawn (it usually
calls ``init_process_group()`` itself; the worker destroys the group after each case). After
every case the rank rewrites ``<out dir>/rank<R>.pkl``: case name -> ``("ok", out)`` or
``("error", traceback)``. A case that raises aborts the job, so no rank waits for it.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import pickle
import sys
import traceback
from typing import Any

import jax
import numpy as np


def _plain(value: Any) -> Any:
    """Arrays become numpy (picklable without a JAX backend on the reading side)."""
    if isinstance(value, jax.Array):
        return np.asarray(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value)
    return value


def main(module_name: str, nprocs: int, out_dir: str) -> int:
    import spx.distributed as dist
    from tests.distributed._ranks import case_name

    rank = int(os.environ["RANK"])
    module = importlib.import_module(module_name)
    path = pathlib.Path(out_dir) / f"rank{rank}.pkl"
    results: dict[str, Any] = {}
    for case in module.PROCESS_CASES:
        fn, n, args = (*case, ())[:3]
        if n != nprocs:
            continue
        name = case_name(fn, tuple(args))
        out: dict[Any, Any] = {}
        try:
            fn(rank, out, *args)
            results[name] = ("ok", _plain(out))
        except BaseException as e:
            results[name] = ("error", traceback.format_exc())
            path.write_bytes(pickle.dumps(results))
            if dist.is_initialized():
                from spx.distributed import process_group

                process_group.default_group().backend.abort(
                    f"rank {rank} failed test case {name}: {type(e).__name__}: {e}"
                )
            return 1
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()
        path.write_bytes(pickle.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
