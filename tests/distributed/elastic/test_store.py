"""The agent store binds the address it is given; spx-run listens on nothing else.

Bound addresses are read from /proc/net/tcp{,6}, matched to a process through the socket inodes
in /proc/<pid>/fd.
"""

import os
import socket
import sys
import time

import pytest

from spx.distributed.elastic.store import AgentStoreClient, AgentStoreServer, StoreError
from tests.distributed.elastic._helpers import (
    SPX_RUN,
    finish,
    free_ports,
    script,
    start,
    wait_for_files,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _hex_addr(text: str) -> tuple[str, int]:
    addr, port = text.split(":")
    raw = bytes.fromhex(addr)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1]), int(port, 16)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words), int(port, 16)


def listening(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state held by ``pid``."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fp:
            for line in fp.readlines()[1:]:
                cols = line.split()
                if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                    out.append(_hex_addr(cols[1]))
    return out


def test_server_binds_exactly_the_given_address():
    srv = AgentStoreServer("127.0.0.1", 0, "job").start()
    try:
        port = srv.server_address[1]
        assert ("127.0.0.1", port) in listening(os.getpid())
        assert ("0.0.0.0", port) not in listening(os.getpid())
        client = AgentStoreClient("127.0.0.1", port, "job", node=0, timeout=5)
        assert client.setnx("k", 1) == 1 and client.setnx("k", 2) == 1
        client.set("j", {"a": [1]})
        assert client.get("k", "j", "missing") == {"k": 1, "j": {"a": [1]}, "missing": None}
        with pytest.raises(StoreError, match="give every node the same --rdzv-id"):
            AgentStoreClient("127.0.0.1", port, "other-job", node=1, timeout=5)
        # A client that vanishes without goodbye is reported as fatal; a goodbye is not.
        other = AgentStoreClient("127.0.0.1", port, "job", node=1, timeout=5)
        other.close(bye=False)
        deadline = time.monotonic() + 5
        while client.get("fatal")["fatal"] is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "node 1 disconnected" in client.get("fatal")["fatal"]["reason"]
        client.close()
    finally:
        srv.stop()


def test_client_gives_up_with_a_clear_message():
    port = free_ports()
    with pytest.raises(StoreError, match="could not reach the spx-run agent of node 0"):
        AgentStoreClient("127.0.0.1", port, "job", node=1, timeout=0.3)


SLEEP = "import os, time\nopen(f'up.{os.environ[\"RANK\"]}', 'w').close()\ntime.sleep(30)\n"


def _stop(proc):
    proc.terminate()
    return finish(proc, timeout=30)


def test_single_node_spx_run_listens_on_nothing(tmp_path):
    script(tmp_path, "s.py", SLEEP)
    proc = start([*SPX_RUN, "--master-port", str(free_ports()), "s.py"], cwd=tmp_path)
    try:
        wait_for_files([tmp_path / "up.0"])
        assert listening(proc.pid) == []
    finally:
        _stop(proc)


def test_multi_node_agents_listen_only_on_master_addr_at_the_agent_port(tmp_path):
    script(tmp_path, "s.py", SLEEP)
    port = free_ports(2)
    common = [
        "--nnodes",
        "2",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(port),
        "--rdzv-conf",
        "timeout=30",
        "--shutdown-timeout",
        "2",
        "s.py",
    ]
    node1 = start([*SPX_RUN, "--node-rank", "1", *common], cwd=tmp_path)
    node0 = start([*SPX_RUN, "--node-rank", "0", *common], cwd=tmp_path)
    try:
        wait_for_files([tmp_path / "up.0", tmp_path / "up.1"])
        assert listening(node0.pid) == [("127.0.0.1", port + 1)]  # never MASTER_PORT itself
        assert listening(node1.pid) == []
    finally:
        _stop(node0)
        _stop(node1)
