"""Default group lifecycle, rank queries, new_group and barrier (torch.distributed semantics).

Tests that take ``backend`` run on thread ranks and on process ranks (``_ranks.py``).
"""

import sys
import threading
import time
from datetime import timedelta

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
import spx.distributed as dist
from spx import _context
from tests.distributed import _procs
from tests.distributed._ranks import run_ranks


@pytest.fixture
def fresh_thread_context():
    """Run the test body with a fresh context and restore the old one afterwards."""
    previous = _context.set_current(_context.RankContext())
    yield
    _context.set_current(previous)


def test_queries_without_init_raise_torch_error(fresh_thread_context):
    msg = "Default process group has not been initialized"
    assert not dist.is_initialized() and dist.is_available()
    for fn in (dist.get_rank, dist.get_world_size, dist.barrier, dist.get_backend):
        with pytest.raises(ValueError, match=msg):
            fn()
    with pytest.raises(ValueError, match=msg):
        dist.all_reduce(spx.ones(2))


def test_single_process_group(fresh_thread_context, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(ValueError, match="RANK expected"):
        dist.init_process_group()
    dist.init_process_group("gloo", world_size=1)
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "gloo")
    with pytest.raises(ValueError, match="twice"):
        dist.init_process_group("gloo", world_size=1)
    x = spx.arange(3.0)
    dist.all_reduce(x, dist.ReduceOp.AVG)
    np.testing.assert_array_equal(x, [0.0, 1.0, 2.0])
    parts = [spx.zeros(3)]
    dist.all_gather(parts, x)
    np.testing.assert_array_equal(parts[0], [0.0, 1.0, 2.0])
    dist.barrier()
    dist.destroy_process_group()
    assert not dist.is_initialized()


def test_env_world_of_one_and_many(fresh_thread_context, monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    dist.init_process_group()
    assert dist.get_world_size() == 1
    dist.destroy_process_group()
    # A larger world is a job of processes: torch's env:// contract needs the master address.
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    with pytest.raises(ValueError, match="environment variable MASTER_ADDR expected"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


def test_default_groups_are_per_thread(fresh_thread_context):
    dist.init_process_group(world_size=1)
    seen = {}
    t = threading.Thread(target=lambda: seen.setdefault("other", dist.is_initialized()))
    t.start()
    t.join(5)
    assert seen == {"other": False} and dist.is_initialized()
    dist.destroy_process_group()


def _init_twice_and_mismatch(rank, out):
    with pytest.raises(ValueError, match=f"rank {rank} of 2; pass world_size=2"):
        dist.init_process_group(world_size=3)
    with pytest.raises(ValueError, match=f"pass rank={rank}"):
        dist.init_process_group(rank=1 - rank)
    dist.init_process_group("gloo", rank=rank, world_size=2, device_id=rank)
    with pytest.raises(ValueError, match="trying to initialize the default process group twice!"):
        dist.init_process_group("gloo")
    out[rank] = dist.get_rank()


def test_init_in_spawned_rank_validates_and_rejects_twice():
    assert run_ranks(_init_twice_and_mismatch, 2) == {0: 0, 1: 1}


def _reinit(rank, out):
    results = []
    for round_ in range(3):
        dist.init_process_group()
        t = spx.tensor(float(rank + round_))
        dist.all_reduce(t)
        results.append(float(t))
        dist.destroy_process_group()
        assert not dist.is_initialized()
    out[rank] = results


@pytest.mark.parametrize(("backend", "nprocs"), [("thread", 3), ("process", 2)])
def test_destroy_and_reinit(backend, nprocs):
    out = run_ranks(_reinit, nprocs, backend=backend)
    base = nprocs * (nprocs - 1) / 2
    assert out == {r: [base + nprocs * k for k in range(3)] for r in range(nprocs)}


_WARN_LOCK = threading.Lock()


def _subgroups(rank, out):
    dist.init_process_group()
    odd = dist.new_group([3, 1])
    everyone = dist.new_group()
    x = spx.full((2,), float(rank + 1))
    info = {"rank": dist.get_rank(odd), "size": dist.get_world_size(odd)}
    if rank % 2:
        total, b = x.clone(), x.clone()
        dist.all_reduce(total, group=odd)
        info["sum"] = np.asarray(total)
        info["ranks"] = dist.get_process_group_ranks(odd)
        dist.broadcast(b, group=odd, group_src=1)
        info["bcast"] = np.asarray(b)
        info["global_of_1"] = dist.get_global_rank(odd, 1)
        dist.barrier(group=odd)
    else:
        assert odd is dist.GroupMember.NON_GROUP_MEMBER
        # warnings.catch_warnings is process-wide: thread ranks take turns recording.
        with _WARN_LOCK, pytest.warns(UserWarning, match="does not belong to the given group"):
            info["sum"] = dist.all_reduce(x, group=odd)
    t = spx.tensor(float(rank))
    dist.all_reduce(t, group=everyone)
    info["all"] = float(t)
    out[rank] = info


@pytest.mark.parametrize("backend", ["thread", "process"])
def test_new_group_subsets(backend):
    out = run_ranks(_subgroups, 4, backend=backend)
    for r in (1, 3):
        assert out[r]["rank"] == (r - 1) // 2 and out[r]["size"] == 2
        np.testing.assert_array_equal(out[r]["sum"], [6.0, 6.0])  # ranks 1, 3 hold 2 and 4
        np.testing.assert_array_equal(out[r]["bcast"], [4.0, 4.0])  # group rank 1 = global 3
        assert out[r]["ranks"] == [1, 3] and out[r]["global_of_1"] == 3
    for r in (0, 2):
        assert out[r]["rank"] == -1 and out[r]["size"] == -1 and out[r]["sum"] is None
    assert all(out[r]["all"] == 6.0 for r in range(4))


def _mismatched_new_group(rank, out):
    dist.init_process_group()
    with pytest.raises(dist.DistBackendError, match="collective mismatch"):
        dist.new_group([0, 1] if rank == 0 else [1, 2])
    out[rank] = True


@pytest.mark.parametrize(("backend", "nprocs"), [("thread", 3), ("process", 4)])
def test_new_group_needs_the_same_ranks_everywhere(backend, nprocs):
    out = run_ranks(_mismatched_new_group, nprocs, backend=backend)
    assert out == dict.fromkeys(range(nprocs), True)


def _barrier(rank, out, events):
    dist.init_process_group()
    if rank == 0:
        time.sleep(0.3)
    events.append((rank, "before", time.monotonic()))
    dist.barrier()
    events.append((rank, "after", time.monotonic()))
    out[rank] = True


def test_barrier_holds_every_rank_until_the_last_arrives():
    events = []
    run_ranks(_barrier, 3, events)
    last_before = max(t for _, kind, t in events if kind == "before")
    first_after = min(t for _, kind, t in events if kind == "after")
    assert first_after >= last_before
    assert sum(1 for _, kind, _ in events if kind == "after") == 3


def _barrier_rounds(rank, out):
    # Processes share the host's wall clock: in every round, no rank may leave the barrier
    # before the last one arrived. The coordinator's barrier is reused under one name per
    # group, so the rounds also check that a round never lets a rank through early.
    dist.init_process_group()
    odd = dist.new_group([1, 3])
    rounds = []
    for i in range(12):
        time.sleep(0.004 * ((rank + i) % 3))  # arrive in a different order each round
        before = time.time()
        dist.barrier()
        rounds.append(("world", before, time.time()))
        if rank % 2:
            time.sleep(0.01 if rank == 1 else 0.0)
            before = time.time()
            dist.barrier(group=odd)  # the even ranks never call it
            rounds.append(("odd", before, time.time()))
    out[rank] = rounds


def test_process_barriers_hold_every_rank_of_the_group_in_every_round():
    out = run_ranks(_barrier_rounds, 4, backend="process")
    for group, members in (("world", [0, 1, 2, 3]), ("odd", [1, 3])):
        rounds = [[r for r in out[m] if r[0] == group] for m in members]
        assert all(len(r) == 12 for r in rounds), group
        for i in range(12):
            last_before = max(r[i][1] for r in rounds)
            first_after = min(r[i][2] for r in rounds)
            assert first_after >= last_before, (group, i)


def _timeout(rank, out):
    dist.init_process_group(timeout=timedelta(seconds=0.3))
    if rank == 0:
        dist.recv(spx.zeros(1), src=1, tag=7)  # never sent
    dist.barrier()


def test_group_timeout_raises_instead_of_hanging():
    ctx = dist.spawn(_timeout, args=({},), nprocs=2, join=False, daemon=True)
    with pytest.raises(dist.ProcessRaisedException, match=r"timed out after 0\.3 s"):
        ctx.join(timeout=10, grace_period=5)


def test_bad_group_arguments(fresh_thread_context):
    dist.init_process_group(world_size=1)
    with pytest.raises(ValueError, match=r"distinct global ranks in \[0, 1\)"):
        dist.new_group([0, 1])
    with pytest.raises(ValueError, match="is not part of group"):
        dist.broadcast(spx.ones(1), src=3)
    with pytest.raises(ValueError, match="Can't specify both src and group_src"):
        dist.broadcast(spx.ones(1), src=0, group_src=0)
    with pytest.raises(TypeError, match="group must be a ProcessGroup"):
        dist.get_rank("world")
    dist.destroy_process_group()
    assert jax.devices()  # nothing above broke the backend


def _ranks_and_devices(rank, out):
    import os

    dist.init_process_group()
    local = int(os.environ.get("LOCAL_RANK", rank))
    # torch scripts pick "cuda:{LOCAL_RANK}": the rank's own device, however ranks are run.
    own = spx.device(f"cuda:{local}")
    out[rank] = (
        dist.get_rank(),
        dist.get_world_size(),
        dist.get_backend(),
        own == spx.device("cpu"),
        _reduced_on(own, rank),
    )


@pytest.mark.parametrize("backend", ["thread", "process"])
def test_rank_queries_and_own_device(backend):
    out = run_ranks(_ranks_and_devices, 2, backend=backend)
    name = {"thread": "thread", "process": "gloo"}[backend]  # no backend name given
    assert out == {0: (0, 2, name, True, 1.0), 1: (1, 2, name, True, 1.0)}


def _listening_addresses() -> list[str]:
    """The local addresses this process's TCP sockets listen on (Linux /proc)."""
    import ipaddress
    import os

    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, width in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[3] != "0A" or cols[9] not in inodes:  # 0A: LISTEN
                    continue
                raw = bytes.fromhex(cols[1].split(":")[0])
                # /proc prints each 32-bit word in host (little-endian) order.
                fixed = b"".join(raw[i : i + 4][::-1] for i in range(0, width, 4))
                addr = ipaddress.ip_address(fixed)
                if addr.version == 6 and addr.ipv4_mapped:
                    addr = addr.ipv4_mapped
                found.append(str(addr))
    return found


def _sockets_bind_to_the_given_address(rank, out):
    # Every socket the job opened (coordinator on rank 0, gloo, the transfer server) listens
    # on MASTER_ADDR's loopback address, none on all interfaces.
    dist.init_process_group()
    dist.all_reduce(spx.ones(2))
    if rank == 0:
        dist.send(spx.ones(2), dst=1)
    else:
        dist.recv(spx.zeros(2), src=0)
    dist.barrier()
    out[rank] = _listening_addresses()


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_sockets_bind_to_the_given_address():
    out = run_ranks(_sockets_bind_to_the_given_address, 2, backend="process")
    # Rank 0: coordinator, gloo, transfer server; rank 1: gloo and transfer server.
    assert len(out[0]) >= 3 and len(out[1]) >= 2, out
    assert all(a == "127.0.0.1" for addrs in out.values() for a in addrs), out


# A program of ~0.1-1 s: dispatched to XLA's pool it is not ready when the call returns; run
# inline, it is. (Warmed up first, so that compiling is not what is timed.)
_DISPATCH = """
import jax, jax.numpy as jnp, spx.distributed as dist
dist.init_process_group()
f = jax.jit(lambda x: jnp.linalg.matrix_power(x, 64).sum())
x = jnp.ones((600, 600), jnp.float32) / 600
jax.block_until_ready(f(x))
y = f(x)
print("inline", y.is_ready(), jax.devices()[0].platform)
"""


@pytest.mark.parametrize(("threads", "expected"), [("1", "True"), ("2", "False")])
def test_a_worker_with_one_xla_thread_runs_its_programs_inline(threads, expected):
    # PJRT_NPROC=1 (spx-run's share when workers outnumber the cores): dispatching a program
    # to XLA's one pool thread only adds a thread wake-up per program.
    runs = _procs.launch(["-c", _DISPATCH], 2, timeout=120, env={"PJRT_NPROC": threads})
    for run in runs:
        assert run.returncode == 0, run.log()
        assert f"inline {expected} cpu" in run.stdout, run.log()


def test_a_rank_waits_for_the_coordinator_to_listen():
    # A rank that reached init_process_group before rank 0 listens waits for the port (gRPC's
    # own retry came ~1 s later); it returns once the port accepts, or after its timeout.
    import socket

    from spx.distributed.multiprocess.runtime import _await_coordinator

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now

    def listen_later(server: socket.socket) -> None:
        time.sleep(0.3)
        server.bind(("127.0.0.1", port))
        server.listen()

    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    thread = threading.Thread(target=listen_later, args=(server,))
    start = time.monotonic()
    thread.start()
    try:
        _await_coordinator("127.0.0.1", port, timeout=30)
        waited = time.monotonic() - start
    finally:
        thread.join()
        server.close()
    assert 0.25 <= waited < 20, waited  # returned after the listener appeared, not at timeout

    start = time.monotonic()
    _await_coordinator("127.0.0.1", port, timeout=0.2)  # nobody listens: gives up
    assert time.monotonic() - start < 5


PROCESS_CASES = [
    (_sockets_bind_to_the_given_address, 2),
    (_reinit, 2),
    (_ranks_and_devices, 2),
    (_subgroups, 4),
    (_mismatched_new_group, 4),
    (_barrier_rounds, 4),
]


def _reduced_on(device, rank):
    t = spx.as_tensor(jax.device_put(jnp.float32(rank), device))
    dist.all_reduce(t)
    return float(t)
