"""spx-run --threads: one process, a thread per rank with its own environment, globals, output."""

import os
import re
import signal
import threading

from spx import _context
from spx.distributed.elastic.thread_overlay import ENV_KEY, RankEnviron
from tests.distributed.elastic._helpers import SPX_RUN, finish, run, script, start, wait_for_files

RANKS = """
import os, sys
import spx
import spx.distributed as dist

COUNT = 0  # module globals are per rank: each rank sees its own
COUNT += 1
dist.init_process_group("gloo")
rank = dist.get_rank()
assert str(rank) == os.environ["RANK"] == os.environ["LOCAL_RANK"], (rank, os.environ["RANK"])
os.environ["MINE"] = str(rank)  # stays in this rank's overlay
total = spx.ones(2) * (rank + 1)
dist.all_reduce(total)
assert os.environ["MINE"] == str(rank)
print(f"rank={rank} world={os.environ['WORLD_SIZE']} count={COUNT} sum={float(total[0])} "
      f"name={__name__} argv={sys.argv[1:]} restart={os.environ['TORCHELASTIC_RESTART_COUNT']}")
mode = sys.argv[1]
if mode == f"fail{rank}@{os.environ['TORCHELASTIC_RESTART_COUNT']}":
    raise RuntimeError(f"thread rank {rank} fails")
dist.barrier()
dist.destroy_process_group()
"""


def test_each_rank_thread_has_its_own_env_globals_and_prefix(tmp_path):
    script(tmp_path, "ranks.py", RANKS)
    proc = run([*SPX_RUN, "--threads", "--nproc-per-node", "3", "ranks.py", "ok"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for r in range(3):
        line = f"[default{r}]:rank={r} world=3 count=1 sum=6.0 name=__main__ argv=['ok'] restart=0"
        assert line in proc.stdout.splitlines(), proc.stdout


def test_a_failing_rank_ends_the_run_with_the_report(tmp_path):
    script(tmp_path, "ranks.py", RANKS)
    args = ["--threads", "--nproc-per-node", "3", "--shutdown-timeout", "10"]
    proc = run([*SPX_RUN, *args, "ranks.py", "fail1@0"], cwd=tmp_path, timeout=60)
    assert proc.returncode == 1
    assert "[default1]:RuntimeError: thread rank 1 fails" in proc.stderr
    root = proc.stderr.split("Root Cause (first observed failure):")[1]
    assert re.search(r"rank\s+: 1 \(local_rank: 1\)", root)
    assert "RuntimeError: thread rank 1 fails" in root and "raise RuntimeError" in root
    assert "threads.py" not in root  # the traceback starts in the script


def test_threads_restart_with_the_count_raised(tmp_path):
    script(tmp_path, "ranks.py", RANKS)
    args = ["--threads", "--nproc-per-node", "2", "--max-restarts", "1"]
    proc = run([*SPX_RUN, *args, "ranks.py", "fail0@0"], cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "[default1]:rank=1 world=2 count=1 sum=3.0 name=__main__ argv=['fail0@0'] restart=1" in (
        proc.stdout
    )


def test_threads_run_a_module(tmp_path):
    pkg = tmp_path / "tpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(
        "import os\nprint('module rank', os.environ['RANK'], __name__)\n"
    )
    proc = run([*SPX_RUN, "--threads", "--nproc-per-node", "2", "-m", "tpkg"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "[default1]:module rank 1 __main__" in proc.stdout


def test_sigterm_ends_a_threads_run_blocked_in_a_collective(tmp_path):
    script(
        tmp_path,
        "block.py",
        """
        import os
        import spx.distributed as dist
        dist.init_process_group("gloo")
        open(f"up.{dist.get_rank()}", "w").close()
        if dist.get_rank() == 0:
            dist.barrier()  # rank 1 never comes: blocked until spx-run aborts the world
        else:
            import time
            time.sleep(60)
        """,
    )
    proc = start([*SPX_RUN, "--threads", "--nproc-per-node", "2", "block.py"], cwd=tmp_path)
    try:
        wait_for_files([tmp_path / "up.0", tmp_path / "up.1"])
    finally:
        os.kill(proc.pid, signal.SIGTERM)
    done = finish(proc, timeout=30)
    assert done.returncode == 1 and "got signal: SIGTERM" in done.stderr


def test_rank_environ_overlay_in_process():
    env = RankEnviron({"HOME": "/h", "KEEP": "1"})
    seen = {}

    def rank(r):
        _context.current().extras[ENV_KEY] = {"RANK": str(r)}
        env["OWN"] = f"v{r}"
        del env["KEEP"]
        seen[r] = (env["RANK"], env.get("OWN"), "KEEP" in env, env["HOME"], sorted(env))

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen[1] == ("1", "v1", False, "/h", ["HOME", "OWN", "RANK"])
    assert seen[0][:2] == ("0", "v0")
    assert dict(env) == {"HOME": "/h", "KEEP": "1"}  # a thread without a rank sees the process's


def test_a_script_that_does_not_compile_is_a_clear_error(tmp_path):
    script(tmp_path, "bad.py", "def broken(:\n")
    proc = run([*SPX_RUN, "--threads", "--nproc-per-node", "2", "bad.py"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "--threads could not load 'bad.py'" in proc.stderr and "Traceback" not in proc.stderr
