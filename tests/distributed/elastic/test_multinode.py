"""Two spx-run invocations on this host (loopback) form one job: ranks, restarts, failures.

The workers meet the way JAX's runtime will: global rank 0 listens on MASTER_ADDR:MASTER_PORT
(which spx-run must leave free) and every other rank connects and sends its RANK.
"""

import json
import os
import re
import signal

from tests.distributed.elastic._helpers import (
    SPX_RUN,
    finish,
    free_ports,
    script,
    start,
    wait_for_files,
    wait_gone,
)

EXCHANGE = """
import json, os, socket, sys, time
env = {k: os.environ[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK",
       "GROUP_WORLD_SIZE", "LOCAL_WORLD_SIZE", "ROLE_RANK", "TORCHELASTIC_RESTART_COUNT")}
rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
attempt = env["TORCHELASTIC_RESTART_COUNT"]
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
with open(f"pid.{rank}.{attempt}", "w") as f:
    f.write(str(os.getpid()))
if sys.argv[1] == f"{rank}@{attempt}":
    import spx  # records the traceback for the report
    raise RuntimeError(f"injected failure of rank {rank}")
if sys.argv[1] == "hang":  # every rank: the only event is the one the test causes
    time.sleep(120)
deadline = time.monotonic() + 30
if rank == 0:  # where JAX's coordinator would listen
    srv = socket.create_server((addr, port))
    srv.settimeout(30)
    peers, conns = {0: env}, []
    while len(peers) < world:
        c, _ = srv.accept()
        msg = json.loads(c.makefile().readline())
        peers[int(msg["RANK"])] = msg
        conns.append(c)
    for c in conns:
        c.sendall((json.dumps(sorted(peers)) + "\\n").encode())
    seen = sorted(peers)
else:
    while True:
        try:
            c = socket.create_connection((addr, port), timeout=30)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    c.sendall((json.dumps(env) + "\\n").encode())
    seen = json.loads(c.makefile().readline())
with open(f"seen.{rank}.{attempt}", "w") as f:
    json.dump({"env": env, "seen": seen}, f)
"""


def _nodes(tmp_path, mode, *flags, nproc=2):
    script(tmp_path, "x.py", EXCHANGE)
    port = free_ports(2)  # MASTER_PORT for the workers, MASTER_PORT + 1 for the agents
    common = [
        "--nnodes",
        "2",
        "--nproc-per-node",
        str(nproc),
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(port),
        "--rdzv-conf",
        "timeout=30",
        "--shutdown-timeout",
        "2",
        *flags,
    ]
    procs = [
        start([*SPX_RUN, *common, "--node-rank", str(n), "x.py", mode], cwd=tmp_path)
        for n in (1, 0)
    ]
    return procs[::-1], port


def _seen(tmp_path, attempt, world=4):
    return [json.loads((tmp_path / f"seen.{r}.{attempt}").read_text()) for r in range(world)]


def test_two_launchers_form_one_world(tmp_path):
    procs, _ = _nodes(tmp_path, "none")
    done = [finish(p, timeout=90) for p in procs]
    assert [d.returncode for d in done] == [0, 0], [d.stderr for d in done]
    for rank, got in enumerate(_seen(tmp_path, 0)):
        assert got["seen"] == [0, 1, 2, 3]
        env = got["env"]
        assert env["RANK"] == env["ROLE_RANK"] == str(rank)
        assert env["GROUP_RANK"] == str(rank // 2) and env["LOCAL_RANK"] == str(rank % 2)
        assert (env["WORLD_SIZE"], env["GROUP_WORLD_SIZE"], env["LOCAL_WORLD_SIZE"]) == (
            "4",
            "2",
            "2",
        )


def test_a_failure_on_one_node_restarts_the_whole_job(tmp_path):
    procs, _ = _nodes(tmp_path, "3@0", "--max-restarts", "1")
    done = [finish(p, timeout=90) for p in procs]
    assert [d.returncode for d in done] == [0, 0], [d.stderr for d in done]
    assert not (tmp_path / "seen.3.0").exists()
    for got in _seen(tmp_path, 1):  # attempt 1: all four ranks met again
        assert got["seen"] == [0, 1, 2, 3]
        assert got["env"]["TORCHELASTIC_RESTART_COUNT"] == "1"
    assert "rank 3 on node 1" in done[0].stderr  # node 0 stopped its workers for node 1's failure


def test_a_failure_without_restarts_fails_every_node_with_the_same_root_cause(tmp_path):
    procs, _ = _nodes(tmp_path, "2@0")
    done = [finish(p, timeout=90) for p in procs]
    assert [d.returncode for d in done] == [1, 1]
    for d in done:
        root = d.stderr.split("Root Cause (first observed failure):")[1]
        assert re.search(r"rank\s+: 2 \(local_rank: 0\)", root), d.stderr
        assert "RuntimeError: injected failure of rank 2" in root
    pids = [int((tmp_path / f"pid.{r}.0").read_text()) for r in range(4)]
    assert wait_gone(pids) == []


def test_a_killed_node_agent_ends_the_job_on_the_other_node(tmp_path):
    procs, _ = _nodes(tmp_path, "hang")
    try:
        wait_for_files([tmp_path / f"pid.{r}.0" for r in range(4)])
    finally:
        # Node 1's launcher dies without a word. (With the workers exchanging messages, one
        # on node 0 could fail first on a peer killed mid-message, a race CI once lost.)
        os.kill(procs[1].pid, signal.SIGKILL)
    done0 = finish(procs[0], timeout=60)
    finish(procs[1], timeout=30)
    assert done0.returncode == 1
    assert "the spx-run agent of node 1 disconnected" in done0.stderr
    pids = [int((tmp_path / f"pid.{r}.0").read_text()) for r in range(4)]
    assert wait_gone(pids) == []  # node 0's workers stopped; node 1's died with their agent


def test_nodes_started_with_different_flags_are_refused(tmp_path):
    script(tmp_path, "x.py", EXCHANGE)
    port = free_ports(2)
    common = ["--nnodes", "2", "--master-port", str(port), "--rdzv-conf", "timeout=30"]
    procs = [
        start(
            [*SPX_RUN, *common, "--node-rank", "1", "--max-restarts", "1", "x.py", "none"],
            cwd=tmp_path,
        ),
        start([*SPX_RUN, *common, "--node-rank", "0", "x.py", "none"], cwd=tmp_path),
    ]
    done = [finish(p, timeout=60) for p in procs]
    assert [d.returncode for d in done] == [1, 1]
    assert any("start every node with the same flags" in d.stderr for d in done)
    assert not list(tmp_path.glob("pid.*"))  # no worker was started
