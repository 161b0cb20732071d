"""``examples/pipeline_gpt.py`` as a real spx-run job: a GPT over 4 pipeline ranks.

Each test launches the example the way a user would (``spx-run ...``, its own processes, so each
configures its own devices) for a few steps, and checks its verdict: the example itself trains
the whole model on one device on rank 0 and exits non-zero when the pipeline's loss curve
differs. The runs also have to agree with each other on the final loss: one rank per process
uninterrupted, the same job with a rank SIGKILLed midway and restarted by ``--max-restarts``
(it resumes from its last complete checkpoint), thread ranks (``--threads``, and plain
``python`` without a launcher), and two ``spx-run --nnodes 2`` invocations on loopback.

Almost all of the time is XLA compilation: LLVM's optimisation level 0 roughly halves it (it
changes no result beyond float rounding), and every run of the module shares one compilation
cache.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.distributed.elastic._helpers import SPX_RUN, clean_env, finish, free_ports, start

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pipeline_gpt.py"
STEPS, EVERY = 6, 2
ARGS = ["--steps", str(STEPS), "--ckpt-every", str(EVERY)]
VERDICT = "[rank0] pipeline matches the single-device loss curve"
TIMEOUT = 400.0


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    cache = tmp_path_factory.mktemp("xla-cache")
    return clean_env(
        JAX_PLATFORMS="cpu",
        XLA_FLAGS="--xla_backend_optimization_level=0",
        # Process ranks keep a cache per rank under it; thread ranks use JAX's own.
        JAX_COMPILATION_CACHE_DIR=str(cache),
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
        TF_CPP_MIN_LOG_LEVEL="2",
    )


def final_loss(stdout: str) -> float:
    """The final loss the example printed (``repr`` of the float: every digit)."""
    m = re.search(rf"\[rank0\] final loss (\S+) after {STEPS} steps", stdout)
    assert m, stdout[-3000:]
    return float(m.group(1))


def check(proc, what: str) -> float:
    log = (
        f"{what}: exit {proc.returncode}\n"
        f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
    )
    assert proc.returncode == 0, log
    assert VERDICT in proc.stdout, log
    return final_loss(proc.stdout)


def spx_run(tmp_path: Path, env: dict, *flags: str, args: tuple[str, ...] = ()):
    launch = [*SPX_RUN, "--master-port", str(free_ports()), *flags]
    cmd = [*launch, str(EXAMPLE), *ARGS, "--ckpt-dir", str(tmp_path / "ckpt"), *args]
    return finish(start(cmd, env=env, cwd=tmp_path), timeout=TIMEOUT)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, env) -> float:
    """One rank per process, no failure: the final loss every other run must reach."""
    tmp = tmp_path_factory.mktemp("uninterrupted")
    proc = spx_run(tmp, env, "--nproc-per-node", "4", "--tee", "3")
    loss = check(proc, "spx-run --nproc-per-node 4")
    # Output prefixed by rank (--tee); the progress bar only on rank 0.
    for rank in range(4):
        assert f"[default{rank}]:[rank{rank}] stage {rank}/4:" in proc.stdout, proc.stdout
    assert "[default0]:pipeline:" in proc.stderr, proc.stderr
    assert not re.search(r"\[default[123]\]:pipeline:", proc.stderr), proc.stderr
    # Each rank keeps its stage's last two complete checkpoints.
    for rank in range(4):
        names = sorted(p.name for p in (tmp / "ckpt" / f"rank{rank}").iterdir())
        assert names == [
            "step-000004.optim.safetensors",
            "step-000004.safetensors",
            "step-000006.optim.safetensors",
            "step-000006.safetensors",
        ]
    return loss


def test_one_process_per_rank_matches_the_single_device_curve(uninterrupted):
    assert 2.0 < uninterrupted < 4.5  # it trained (the first loss is ~4.3)


def test_a_rank_killed_midway_resumes_from_the_last_checkpoint_to_the_same_final_loss(
    tmp_path, env, uninterrupted
):
    # Rank 2 SIGKILLs itself when it reaches step 3 (checkpoints exist for step 2); spx-run
    # stops the others and restarts the group, which resumes from step 2.
    proc = spx_run(
        tmp_path, env, "--nproc-per-node", "4", "--max-restarts", "1", args=("--crash-at", "2:3")
    )
    loss = check(proc, "spx-run --max-restarts 1, rank 2 killed at step 3")
    assert "[rank2] crashing at step 3 (--crash-at)" in proc.stdout
    assert "failed (exitcode: -9) local_rank: 2" in proc.stderr, proc.stderr
    assert "1/1 attempts left; will restart worker group" in proc.stderr
    assert "attempt 1" in proc.stdout
    for rank in range(4):
        assert f"[rank{rank}] resumed from the checkpoint of step 2 in" in proc.stdout
    assert loss == pytest.approx(uninterrupted, rel=1e-6, abs=0)


def test_thread_ranks_reach_the_same_final_loss(tmp_path, env, uninterrupted):
    proc = spx_run(tmp_path, env, "--threads", "--nproc-per-node", "4")
    loss = check(proc, "spx-run --threads --nproc-per-node 4")
    assert "[default0]:[rank0] stage 0/4:" in proc.stdout
    assert loss == pytest.approx(uninterrupted, rel=1e-6, abs=0)


def test_without_a_launcher_the_example_runs_four_thread_ranks(tmp_path, env, uninterrupted):
    cmd = [sys.executable, str(EXAMPLE), *ARGS, "--ckpt-dir", str(tmp_path / "ckpt")]
    proc = finish(start(cmd, env=env, cwd=tmp_path), timeout=TIMEOUT)
    loss = check(proc, "python examples/pipeline_gpt.py")
    assert "[rank3] stage 3/4:" in proc.stdout
    assert loss == pytest.approx(uninterrupted, rel=1e-6, abs=0)


def test_two_nodes_on_loopback_train_the_pipeline_together(tmp_path, env, uninterrupted):
    # Two spx-run invocations (2 ranks each) form one 4-rank job: ranks 0-1 on node 0, 2-3 on
    # node 1; activations and gradients cross between the "nodes" at ranks 1 -> 2.
    port = free_ports(2)  # MASTER_PORT for rank 0's coordinator, MASTER_PORT + 1 for the agents
    common = [
        *("--nnodes", "2", "--nproc-per-node", "2", "--master-addr", "127.0.0.1"),
        *("--master-port", str(port), "--rdzv-conf", "timeout=120"),
    ]
    cmd = [str(EXAMPLE), *ARGS, "--ckpt-dir", str(tmp_path / "ckpt")]
    procs = [
        start([*SPX_RUN, *common, "--node-rank", str(n), *cmd], env=env, cwd=tmp_path)
        for n in (1, 0)
    ]
    node1, node0 = (finish(p, timeout=TIMEOUT) for p in procs)
    assert node1.returncode == 0, f"node 1:\n{node1.stdout[-3000:]}\n{node1.stderr[-3000:]}"
    loss = check(node0, "node 0 of spx-run --nnodes 2")
    assert "[rank2] stage 2/4:" in node1.stdout and "[rank3] stage 3/4:" in node1.stdout
    assert "[rank1] stage 1/4:" in node0.stdout
    assert loss == pytest.approx(uninterrupted, rel=1e-6, abs=0)
