"""Signals to spx-run reach every worker, escalate to SIGKILL, and no worker outlives spx-run."""

import os
import signal
import time

import pytest

from tests.distributed.elastic._helpers import (
    SPX_RUN,
    finish,
    free_ports,
    script,
    start,
    wait_for_files,
    wait_gone,
)

WORKER = """
import os, signal, subprocess, sys, time
mode = sys.argv[1]
rank = os.environ["RANK"]
def note(signum, frame):
    with open(f"got.{rank}", "w") as f:
        f.write(signal.Signals(signum).name)
    if mode != "ignore":
        sys.exit(0)
signal.signal(signal.SIGTERM, note)
signal.signal(signal.SIGINT, note)
pids = [os.getpid()]
if mode != "nohelper":  # a grandchild in the worker's process group
    pids.append(subprocess.Popen(["sleep", "60"], stdout=subprocess.DEVNULL).pid)
with open(f"pid.{rank}", "w") as f:
    f.write(" ".join(map(str, pids)))
while True:
    time.sleep(0.1)
"""


def _start(tmp_path, mode, grace="1"):
    script(tmp_path, "w.py", WORKER)
    flags = [
        "--nproc-per-node",
        "2",
        "--master-port",
        str(free_ports()),
        "--shutdown-timeout",
        grace,
    ]
    proc = start([*SPX_RUN, *flags, "w.py", mode], cwd=tmp_path)
    files = [tmp_path / f"pid.{r}" for r in (0, 1)]
    try:
        wait_for_files(files)
        time.sleep(0.2)  # the pid files are written after the handlers are installed
    except AssertionError:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    pids = [int(p) for f in files for p in f.read_text().split()]
    return proc, pids


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_is_forwarded_to_every_worker_and_spx_run_exits_1(tmp_path, sig):
    proc, pids = _start(tmp_path, "exit")
    os.kill(proc.pid, sig)
    done = finish(proc, timeout=30)
    assert done.returncode == 1
    assert f"got signal: {sig.name}" in done.stderr
    for rank in (0, 1):  # the launcher forwarded the very signal it got
        assert (tmp_path / f"got.{rank}").read_text() == sig.name
    assert wait_gone(pids) == []  # workers and their helpers


def test_a_worker_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path):
    proc, pids = _start(tmp_path, "ignore", grace="1")
    t0 = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)
    done = finish(proc, timeout=30)
    elapsed = time.monotonic() - t0
    assert done.returncode == 1
    assert (tmp_path / "got.0").read_text() == "SIGTERM"  # it got SIGTERM and ignored it
    assert "forcefully exiting via SIGKILL" in done.stderr
    assert 1.0 <= elapsed < 15
    assert wait_gone(pids) == []


def test_workers_die_with_a_killed_launcher(tmp_path):
    """SIGKILL cannot be forwarded; the kernel kills the workers (PR_SET_PDEATHSIG).

    Their own children are theirs to stop: a worker killed outright cannot, so none here.
    """
    proc, pids = _start(tmp_path, "nohelper")
    os.kill(proc.pid, signal.SIGKILL)
    finish(proc, timeout=30)
    assert wait_gone(pids) == []


def test_a_failing_worker_takes_down_helpers_of_its_siblings(tmp_path):
    """When one worker fails, the others' process groups (helpers included) are stopped."""
    script(tmp_path, "w.py", WORKER)
    script(
        tmp_path,
        "main.py",
        """
        import os, runpy, sys, time
        if os.environ["RANK"] == "1":
            while not os.path.exists("pid.0"):
                time.sleep(0.05)
            sys.exit(5)
        sys.argv = ["w.py", "exit"]
        runpy.run_path("w.py", run_name="__main__")
        """,
    )
    flags = ["--nproc-per-node", "2", "--master-port", str(free_ports()), "--shutdown-timeout", "1"]
    done = finish(start([*SPX_RUN, *flags, "main.py"], cwd=tmp_path), timeout=30)
    assert done.returncode == 1
    pids = [int(p) for p in (tmp_path / "pid.0").read_text().split()]
    assert wait_gone(pids) == []
