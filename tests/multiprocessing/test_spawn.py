"""spx.multiprocessing.spawn: real processes, torch's errors, DDP as in torch's tutorial.

The rank functions live at module level (``spawn`` pickles them by name; each child imports
this module). Every test bounds its wait and checks that no child outlives it.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import spx
from tests.distributed._procs import free_port

REPO = pathlib.Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead; only its parent's wait() would remove it.
    try:
        with open(f"/proc/{pid}/stat") as fp:
            return fp.read().split()[2] != "Z"
    except OSError:
        return False


def _wait_gone(pids: list[int], seconds: float = 10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


# -- rank functions (module level: picklable) ----------------------------------------------------
def _report(rank: int, out_dir: str) -> None:
    pathlib.Path(out_dir, f"{rank}.txt").write_text(f"{rank} {os.getpid()} {os.getppid()}")


def _raise_on_1(rank: int, out_dir: str) -> None:
    pathlib.Path(out_dir, f"{rank}.pid").write_text(str(os.getpid()))
    if rank == 1:
        raise ValueError("boom in rank 1")
    time.sleep(60)  # terminated by the parent once rank 1 failed


def _exit_3(rank: int) -> None:
    if rank == 0:
        sys.exit(3)


def _killed(rank: int) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _ddp_rank(rank: int, world: int, port: int, out_dir: str) -> None:
    """torch's multigpu.py shape: set MASTER_ADDR/PORT, init with rank and world_size, DDP."""
    import spx.distributed as dist
    from spx.nn.parallel import DistributedDataParallel as DDP
    from tests.nn.parallel.test_distributed import STEPS, data, make_model, mse, shard

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group(backend="gloo", rank=rank, world_size=world)
    x, y = data(world)
    model = DDP(make_model(rank))
    opt = spx.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for s in range(STEPS):
        opt.zero_grad()
        mse(model(shard(x[s], rank)), shard(y[s], rank)).backward()
        opt.step()
    params = {str(i): np.asarray(p.detach()) for i, p in enumerate(model.module.parameters())}
    np.savez(pathlib.Path(out_dir, f"rank{rank}.npz"), **params)
    dist.destroy_process_group()


# -- tests ---------------------------------------------------------------------------------------
def test_ranks_are_processes_with_their_rank(tmp_path):
    spx.multiprocessing.spawn(_report, args=(str(tmp_path),), nprocs=3)
    seen = [pathlib.Path(tmp_path, f"{r}.txt").read_text().split() for r in range(3)]
    assert [int(s[0]) for s in seen] == [0, 1, 2]
    pids = {int(s[1]) for s in seen}
    assert len(pids) == 3 and os.getpid() not in pids  # processes, not threads
    assert all(int(s[2]) == os.getpid() for s in seen)


def test_a_raising_rank_gives_its_traceback_and_stops_the_others(tmp_path):
    ctx = spx.multiprocessing.spawn(_raise_on_1, args=(str(tmp_path),), nprocs=3, join=False)
    start = time.monotonic()
    with pytest.raises(spx.multiprocessing.ProcessRaisedException) as info:
        while not ctx.join(timeout=30, grace_period=5):
            assert time.monotonic() - start < 60, "spawn did not report the failure"
    err = info.value
    assert err.error_index == 1 and err.pid == ctx.pids()[1]
    text = str(err)
    assert "-- Process 1 terminated with the following error:" in text
    assert "Traceback" in text and "ValueError: boom in rank 1" in text and "_raise_on_1" in text
    assert _wait_gone(ctx.pids()) == []  # the sleeping ranks were terminated


def test_exit_codes_and_signals_are_reported():
    with pytest.raises(spx.multiprocessing.ProcessExitedException) as info:
        spx.multiprocessing.spawn(_exit_3, nprocs=2)
    assert info.value.exit_code == 3 and info.value.error_index == 0
    assert "process 0 terminated with exit code 3" in str(info.value)
    with pytest.raises(spx.multiprocessing.ProcessExitedException) as info:
        spx.multiprocessing.spawn(_killed, nprocs=1)
    assert info.value.signal_name == "SIGKILL"
    assert "terminated with signal SIGKILL" in str(info.value)


def test_bad_arguments_are_rejected_before_starting():
    with pytest.raises(TypeError, match="picklable"):
        spx.multiprocessing.spawn(lambda rank: None, nprocs=2)
    with pytest.raises(ValueError, match=r"nprocs must be a positive int, got 0"):
        spx.multiprocessing.spawn(_exit_3, nprocs=0)
    with pytest.raises(ValueError, match="start_method='threads'"):
        spx.multiprocessing.spawn(_exit_3, nprocs=1, start_method="threads")
    with pytest.raises(TypeError, match="callable"):
        spx.multiprocessing.spawn(3, nprocs=1)


def test_children_die_with_their_parent(tmp_path):
    """A parent killed with SIGKILL (no cleanup code runs) leaves no child behind."""
    script = tmp_path / "parent.py"
    # The parent spawns two sleepers that record their pids, then waits for them.
    script.write_text(
        textwrap.dedent(
            f"""
            import sys, time
            sys.path.insert(0, {str(REPO)!r})
            import spx
            from tests.multiprocessing.test_spawn import _sleeper

            if __name__ == "__main__":
                ctx = spx.multiprocessing.spawn(_sleeper, args=({str(tmp_path)!r},), nprocs=2,
                                                join=False)
                ctx.join()
            """
        )
    )
    parent = subprocess.Popen([sys.executable, str(script)], cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        pid_files = [tmp_path / f"{r}.pid" for r in range(2)]
        while not all(p.exists() and p.read_text() for p in pid_files):
            assert time.monotonic() < deadline, "children did not start"
            assert parent.poll() is None, "parent ended early"
            time.sleep(0.05)
        children = [int(p.read_text()) for p in pid_files]
        assert all(_alive(c) for c in children)
        parent.kill()
        parent.wait(10)
        assert _wait_gone(children) == [], "children outlived their parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(10)


def _sleeper(rank: int, out_dir: str) -> None:
    pathlib.Path(out_dir, f"{rank}.pid").write_text(str(os.getpid()))
    time.sleep(120)


@pytest.mark.parametrize("world", [2, 4])
def test_ddp_in_spawned_processes_matches_the_global_batch(tmp_path, world):
    from tests.nn.parallel.test_distributed import assert_params, reference

    port = free_port()
    spx.multiprocessing.spawn(_ddp_rank, args=(world, port, str(tmp_path)), nprocs=world)
    want = reference(world)
    for r in range(world):
        with np.load(tmp_path / f"rank{r}.npz") as f:
            assert_params([f[str(i)] for i in range(len(want))], want)
