"""``examples/pipeline_gpt.py`` end to end: a GPT over 4 pipeline ranks matches one device.

Runs the script as a user would (its own process, so it configures its own CPU devices) for two
steps — one optimizer update, so the second loss compares the updated weights too — and checks
the exit status and the verdict line. Almost all of the time is XLA compilation; LLVM's
optimisation level 0 roughly halves it and changes no result beyond float rounding.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pipeline_gpt.py"


def test_pipeline_gpt_matches_single_device() -> None:
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_backend_optimization_level=0")
    res = subprocess.run(
        [sys.executable, str(EXAMPLE), "--steps", "2"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert res.returncode == 0, f"stdout:\n{res.stdout[-3000:]}\nstderr:\n{res.stderr[-3000:]}"
    assert "[rank0] pipeline matches the single-device loss curve" in res.stdout
    rows = [line for line in res.stdout.splitlines() if line.startswith("[rank0]    ")]
    assert len(rows) == 2, res.stdout
