"""Run a rank function on thread ranks or on process ranks, with one calling convention.

A test module's rank functions ``fn(rank, out, *args)`` fill ``out`` (usually ``out[rank]``).
``run_ranks(fn, n)`` runs them as threads (``spx.distributed.spawn``); ``run_ranks(fn, n,
backend="process")`` returns what the same function recorded on ``n`` real processes.

Starting processes that import JAX costs seconds, so process ranks run in *batches*: the first
process-backend call of a module for ``n`` ranks launches ``n`` processes once
(:mod:`tests.distributed._worker`) that run every case of the module's ``PROCESS_CASES``
with ``n`` ranks, one after the other; later calls read their recorded results. A case that
raises on a rank aborts the batch (the other ranks would wait for it); its error and every
case that did not run are reported by the calls that ask for them.
"""

from __future__ import annotations

import pathlib
import pickle
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import pytest

import spx.distributed as dist
from tests.distributed import _procs

BACKENDS = ("thread", "process")
_BATCHES: dict[tuple[str, int], dict[str, Any]] = {}


def case_name(fn: Callable[..., Any], args: tuple = ()) -> str:
    return fn.__name__ + (repr(args) if args else "")


def run_ranks(
    fn: Callable[..., Any],
    nprocs: int,
    *args: Any,
    backend: str = "thread",
    timeout: float = 60.0,
) -> dict[Any, Any]:
    """Run ``fn(rank, out, *args)`` on ``nprocs`` ranks and return the merged ``out``."""
    if backend == "thread":
        out: dict[Any, Any] = {}
        ctx = dist.spawn(fn, args=(out, *args), nprocs=nprocs, join=False, daemon=True)
        assert ctx.join(timeout=timeout, grace_period=5), "ranks did not finish in time"
        return out
    return process_results(fn.__module__, nprocs, case_name(fn, args))


def process_results(module: str, nprocs: int, case: str) -> dict[Any, Any]:
    """The ``out`` of ``case`` from the module's batch on ``nprocs`` processes."""
    key = (module, nprocs)
    if key not in _BATCHES:
        _BATCHES[key] = _run_batch(module, nprocs)
    batch = _BATCHES[key]
    merged: dict[Any, Any] = {}
    problems = []
    for rank, results in enumerate(batch["ranks"]):
        entry = results.get(case)
        if entry is None:
            problems.append(f"rank {rank}: case {case!r} did not run")
        elif entry[0] == "error":
            problems.append(f"rank {rank}: case {case!r} raised:\n{entry[1]}")
        else:
            merged.update(entry[1])
    if not problems:
        # Every case passed: then every rank must also have exited cleanly (exit handshake).
        problems = [
            f"rank {run.rank} exited with {run.returncode} after its cases passed"
            for run in batch["runs"]
            if run.returncode != 0
        ]
    if problems:
        pytest.fail("\n".join(problems) + "\n\n" + batch["log"], pytrace=False)
    return merged


def _dotted(module: str) -> str:
    """The importable name of a test module (pytest may import it under a shorter name)."""
    path = pathlib.Path(sys.modules[module].__file__).resolve().relative_to(_procs.REPO)
    return ".".join(path.with_suffix("").parts)


def _run_batch(module: str, nprocs: int) -> dict[str, Any]:
    out_dir = pathlib.Path(tempfile.mkdtemp(prefix="spx-batch-"))
    timeout = float(getattr(sys.modules[module], "PROCESS_TIMEOUT", 240.0))
    runs = _procs.launch(
        ["-m", "tests.distributed._worker", _dotted(module), str(nprocs), str(out_dir)],
        nprocs,
        timeout=timeout,
    )
    ranks = []
    for r in range(nprocs):
        path = out_dir / f"rank{r}.pkl"
        ranks.append(pickle.loads(path.read_bytes()) if path.exists() else {})
    shutil.rmtree(out_dir, ignore_errors=True)
    return {"ranks": ranks, "log": _procs.logs(runs), "runs": runs}
