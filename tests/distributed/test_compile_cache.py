"""Every rank reuses its compiled executables across launches (JAX alone caches rank 0's).

A 2-process pipelined training job (1F1B + AdamW) is launched twice with one fresh cache
directory: the first launch compiles and fills a directory per rank, the second loads them and
reaches its first step in at most half the time (counted from ``init_process_group``: the
imports before it take as long either way).
"""

from __future__ import annotations

import json
import os
import pathlib
import tempfile

from tests.distributed import _procs

SCRIPT = "tests/distributed/scripts/pipeline_train.py"


def _first_step(cache: str) -> float:
    runs = _procs.launch([SCRIPT], 2, timeout=240, env={"SPX_COMPILATION_CACHE_DIR": cache})
    assert all(r.returncode == 0 for r in runs), _procs.logs(runs)
    line = next(x for x in runs[0].stdout.splitlines() if x.startswith("{"))
    return json.loads(line)["init_to_first_step"]


def test_second_launch_reaches_its_first_step_in_half_the_time():
    cache = tempfile.mkdtemp(prefix="spx-cache-test-")
    cold = _first_step(cache)
    entries = {p.name: len(os.listdir(p)) for p in pathlib.Path(cache).iterdir()}
    # Both ranks wrote their own entries (JAX alone writes from process 0 only).
    assert set(entries) == {"rank0", "rank1"} and min(entries.values()) > 0, entries
    warm = _first_step(cache)
    assert warm <= 0.5 * cold, f"first launch {cold:.2f} s, second {warm:.2f} s to first step"
