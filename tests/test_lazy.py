"""spx-run's own process imports spx lazily (spx._lazy); every other process eagerly.

Checked in fresh processes: what a process imports depends on how it was started.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

import spx
from spx._lazy import launcher_process

REPO = pathlib.Path(__file__).resolve().parents[1]


def _fresh(*argv: str) -> subprocess.CompletedProcess:
    out = subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
        env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    return out


def _imported(importtime_stderr: str) -> set[str]:
    # -X importtime lines: "import time: self [us] | cumulative | imported package"
    return {
        line.rsplit("|", 1)[1].strip()
        for line in importtime_stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_the_launcher_starts_without_jax():
    # spx-run never computes: before, importing it imported jax and all of spx (~1 s a launch).
    modules = _imported(_fresh("-X", "importtime", "-m", "spx.distributed.run", "--help").stderr)
    assert "spx.distributed.elastic.config" in modules  # the launcher's own modules did load
    assert not {m for m in modules if m == "jax" or m.startswith(("jax.", "spx.nn"))}


def test_the_spx_run_script_starts_without_jax():
    script = pathlib.Path(sys.executable).with_name("spx-run")
    if not script.exists():
        pytest.skip(f"no spx-run script beside {sys.executable} (spx not pip-installed)")
    modules = _imported(_fresh("-X", "importtime", str(script), "--help").stderr)
    assert "spx.distributed.elastic.config" in modules and "jax" not in modules


@pytest.mark.parametrize("first", ["spx.ops", "spx.special", "spx.fft", "spx.ops.creation"])
def test_any_submodule_imports_first_in_a_normal_process(first):
    # Outside the launcher, import spx runs every name's import in the canonical order first;
    # importing these first on their own meets an import cycle (found on a GPU machine).
    out = _fresh("-c", f"import {first}, spx; print(spx.zeros(2).tolist(), spx.nn.Linear)")
    assert out.stdout.startswith("[0.0, 0.0] <class 'spx.nn.")


def test_ranks_as_threads_load_the_namespace_before_the_script(tmp_path):
    # --threads runs the ranks' script in the (lazy) launcher process.
    script = tmp_path / "rank.py"
    script.write_text(
        "import spx.special, spx.ops, spx\n"
        "import spx.distributed as dist\n"
        "dist.init_process_group()\n"
        "t = spx.ones(2) * (dist.get_rank() + 1)\n"
        "dist.all_reduce(t)\n"
        "print('sum', t.tolist(), type(spx.compile).__name__)\n"
    )
    out = _fresh("-m", "spx.distributed.run", "--threads", "--nproc-per-node", "2", str(script))
    assert out.stdout.count("sum [3.0, 3.0] function") == 2, out.stdout + out.stderr


@pytest.mark.parametrize(
    ("argv", "script", "expected"),
    [
        (["python", "-m", "spx.distributed.run", "t.py"], "-m", True),
        (["python", "-u", "-X", "importtime", "-m", "spx.distributed.run"], "-m", True),
        (["python", "-mspx.distributed.run"], "-m", True),
        (["/venv/bin/python", "/venv/bin/spx-run", "t.py"], "/venv/bin/spx-run", True),
        (["python", "-m", "pytest"], "-m", False),
        (["python", "t.py", "-m", "spx.distributed.run"], "t.py", False),
        (["python", "-c", "import spx"], "-c", False),
        (["python"], "", False),
    ],
)
def test_launcher_process_reads_the_interpreters_command_line(argv, script, expected):
    assert launcher_process(argv, script) is expected


def test_a_normal_process_has_every_name_at_once():
    assert "spx._namespace" in sys.modules
    names = {}
    exec("from spx import *", names)
    for name in ("zeros", "Tensor", "nn", "optim", "compile", "float32", "no_grad", "device"):
        assert name in names, name
    assert names["zeros"] is spx.zeros
    assert callable(spx.compile) and callable(spx.device)
    assert "all_reduce" in dir(spx.distributed)
