"""``examples/ddp_gpt.py`` as a real spx-run job: DDP over 2 ranks with snapshots.

The uninterrupted run (one process per rank) fixes the final loss; a run whose rank 1 is
SIGKILLed midway and restarted by ``--max-restarts 1`` must resume from the last snapshot and
reach the same final loss, and so must thread ranks (``--threads``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.distributed.elastic._helpers import SPX_RUN, clean_env, finish, free_ports, start

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ddp_gpt.py"
EPOCHS = 6
TIMEOUT = 300.0


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    return clean_env(
        JAX_PLATFORMS="cpu",
        XLA_FLAGS="--xla_backend_optimization_level=0",
        JAX_COMPILATION_CACHE_DIR=str(tmp_path_factory.mktemp("xla-cache")),
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
        TF_CPP_MIN_LOG_LEVEL="2",
    )


def spx_run(tmp_path: Path, env: dict, *flags: str, args: tuple[str, ...] = ()):
    launch = [*SPX_RUN, "--master-port", str(free_ports()), "--nproc-per-node", "2", *flags]
    cmd = [*launch, str(EXAMPLE), "--epochs", str(EPOCHS), "--snapshot-dir", str(tmp_path), *args]
    proc = finish(start(cmd, env=env, cwd=tmp_path), timeout=TIMEOUT)
    log = f"exit {proc.returncode}\nstdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, log
    m = re.search(rf"\[rank0\] final loss (\S+) after {EPOCHS} epochs", proc.stdout)
    assert m, log
    return proc, float(m.group(1))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, env) -> float:
    tmp = tmp_path_factory.mktemp("uninterrupted")
    proc, loss = spx_run(tmp, env)
    assert "resuming" not in proc.stdout
    # Snapshots every 2 epochs, the last two kept, each complete (model + optimizer).
    names = sorted(p.name for p in tmp.iterdir())
    assert names == [
        "epoch-0004.optim.safetensors",
        "epoch-0004.safetensors",
        "epoch-0006.optim.safetensors",
        "epoch-0006.safetensors",
    ]
    losses = [float(v) for v in re.findall(r"\| loss (\S+)", proc.stdout)]
    assert len(losses) == EPOCHS and losses[-1] < losses[0]  # it learns
    return loss


def test_a_rank_killed_midway_resumes_from_the_last_snapshot_to_the_same_final_loss(
    tmp_path, env, uninterrupted
):
    proc, loss = spx_run(tmp_path, env, "--max-restarts", "1", args=("--crash-at", "1:3"))
    assert "[rank1] crashing at epoch 3 (--crash-at)" in proc.stdout
    assert "1/1 attempts left; will restart worker group" in proc.stderr
    for rank in range(2):
        assert f"[rank{rank}] resuming training from snapshot at epoch 2" in proc.stdout
    assert loss == pytest.approx(uninterrupted, rel=1e-6, abs=0)


def test_thread_ranks_reach_the_same_final_loss(tmp_path, env, uninterrupted):
    _, loss = spx_run(tmp_path, env, "--threads")
    assert loss == pytest.approx(uninterrupted, rel=1e-6, abs=0)
