"""Every rank reuses its compiled executables across launches (JAX alone caches rank 0's).

A 2-process pipelined training job (1F1B + AdamW) is launched twice with one fresh cache
directory: the first launch compiles and fills a directory per rank, the second finds every
executable of every rank there (JAX's cache events: hits, no misses) and writes nothing new.
What that saves in time is a benchmark's business (``tools/bench_pp_vs_torch.py`` measures the
time to first step of a first and a second launch), not a timed test's.
"""

from __future__ import annotations

import json
import os
import pathlib

from tests.distributed import _procs

SCRIPT = "tests/distributed/scripts/pipeline_train.py"


def _launch(cache: str) -> list[dict]:
    runs = _procs.launch([SCRIPT], 2, timeout=240, env={"SPX_COMPILATION_CACHE_DIR": cache})
    assert all(r.returncode == 0 for r in runs), _procs.logs(runs)
    reports = [
        json.loads(next(x for x in r.stdout.splitlines() if x.startswith("{"))) for r in runs
    ]
    return sorted(reports, key=lambda r: r["rank"])


def _entries(cache: str) -> dict[str, set[str]]:
    return {p.name: set(os.listdir(p)) for p in pathlib.Path(cache).iterdir()}


def test_second_launch_loads_every_ranks_executables_from_the_cache(tmp_path):
    (tmp_path / "cache").mkdir()
    cache = str(tmp_path / "cache")
    cold = _launch(cache)
    assert all(r["cache_misses"] > 0 for r in cold), cold  # a fresh cache: everything compiled
    entries = _entries(cache)
    # Both ranks wrote their own entries (JAX alone writes from process 0 only).
    assert set(entries) == {"rank0", "rank1"} and all(entries.values()), entries
    warm = _launch(cache)
    for r in warm:
        assert r["cache_misses"] == 0 and r["cache_hits"] > 0, warm
    assert _entries(cache) == entries  # nothing compiled again, so nothing written


def test_the_rank_writer_takes_the_arguments_of_every_supported_jax(monkeypatch):
    """JAX 0.10 calls its cache writer with host_callbacks, 0.11 without (on 0.11 the old
    replacement raised a TypeError at every rank's first compile, found on a GPU machine)."""
    from jax._src import compilation_cache, compiler

    from spx.distributed.multiprocess import compile_cache

    monkeypatch.setattr(compiler, "_cache_write", compiler._cache_write)
    monkeypatch.setattr(compile_cache, "_patched", False)
    written = []
    monkeypatch.setattr(
        compilation_cache,
        "put_executable_and_time",
        lambda key, name, exe, backend, secs: written.append((key, name, secs)),
    )
    compile_cache._let_this_process_write()
    compiler._cache_write("k10", 1.5, "jit_a", None, object(), [])  # JAX 0.10
    compiler._cache_write("k11", 2.5, "jit_b", None, object())  # JAX 0.11
    compiler._cache_write("kcb", 2.5, "jit_c", None, object(), ["callback"])  # refused
    assert written == [("k10", "jit_a", 1), ("k11", "jit_b", 2)]
