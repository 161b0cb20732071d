"""Point-to-point on thread ranks and process ranks: ordering, tags, templates, failures.

Process ranks (a batch of 2 and one of 4 processes, ``tests/distributed/_ranks.py``) run the
same rank functions over ``jax.experimental.transfer``; what only one backend can do is said
where it is tested.

Handoff cost, measured on the 2-core CPU dev box with (8, 128) f32 arrays, best of 200 x 500
(not a timed test; rerun by timing ``dist.isend(x, 0); dist.recv(x, 0)`` in a one-rank group
against a bare ``jax.device_put(x, d)``):
  * send + recv pair with the transfer stubbed out: ~3.5 µs in the backend, ~5 µs through the
    public functions (group lookup, argument checks, Work, channel bookkeeping);
  * isend + recv to self: ~31 µs vs ~28 µs for the bare ``device_put`` it contains;
  * between two rank threads: device_put to the other device ~49 µs, one-way streaming ~78 µs per
    message, a ping-pong round trip ~150 µs, dominated by the OS waking the other thread (a bare
    Python Condition handoff costs ~43 µs each way on this machine).
"""

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
import spx.distributed as dist
from spx.distributed import process_group
from tests.distributed._ranks import BACKENDS, run_ranks


def _ping_pong(rank, out):
    dist.init_process_group()
    me = spx.device("cpu")
    seen = []
    x = spx.zeros(4, dtype=spx.int32)
    for _ in range(20):
        if rank == 0:
            dist.send(x + 1, dst=1)
            assert dist.recv(x, src=1) == 1  # fills x, returns the sender's rank
        else:
            dist.recv(x, src=0)
            dist.send(x + 1, dst=0)
        assert x._data.devices() == {me}
        seen.append(int(x[0]))
    out[rank] = seen


@pytest.mark.parametrize("backend", BACKENDS)
def test_ping_pong(backend):
    out = run_ranks(_ping_pong, 2, backend=backend)
    assert out[0] == list(range(2, 41, 2))
    assert out[1] == list(range(1, 40, 2))


def _tags_in_flight(rank, out):
    dist.init_process_group()
    if rank == 0:
        works = []
        for i in range(5):
            works.append(dist.isend(spx.tensor(float(i)), dst=1, tag=0))
            works.append(dist.isend(spx.tensor(100.0 + i), dst=1, tag=1))
        assert all(w.is_completed() for w in works)
        dist.barrier()
    else:
        b1 = [spx.tensor(0.0) for _ in range(5)]
        b0 = [spx.tensor(0.0) for _ in range(5)]
        t1 = [dist.irecv(b, src=0, tag=1) for b in b1]
        t0 = [dist.irecv(b, src=0, tag=0) for b in b0]
        dist.barrier()
        # Waiting in reverse still yields the posting order within each tag.
        assert all(w.wait() is True for w in reversed(t0))
        assert all(w.wait() is True for w in reversed(t1))
        got0, got1 = [float(b) for b in b0], [float(b) for b in b1]
        out[rank] = (got0, got1, [w.source_rank for w in t0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_several_in_flight_keep_order_per_tag(backend):
    out = run_ranks(_tags_in_flight, 2, backend=backend)
    assert out[1] == ([0, 1, 2, 3, 4], [100, 101, 102, 103, 104], [0] * 5)


def _many_tags(rank, out):
    dist.init_process_group()
    if rank == 0:
        for tag in range(50):
            dist.send(spx.tensor(tag, dtype=spx.int32), dst=1, tag=tag)
    else:
        got = []
        for tag in reversed(range(50)):
            buf = spx.tensor(0, dtype=spx.int32)
            dist.recv(buf, src=0, tag=tag)
            got.append(int(buf))
        backend = process_group.default_group().backend
        # Thread ranks drop drained channels, so per-step tags do not accumulate state.
        # (Across processes a channel keeps its sequence number and the message shapes.)
        left = len(backend._box.channels) if hasattr(backend, "_box") else 0
        out[rank] = (got, left)


@pytest.mark.parametrize("backend", BACKENDS)
def test_distinct_tags_match_and_leave_no_state(backend):
    assert run_ranks(_many_tags, 2, backend=backend)[1] == (list(reversed(range(50))), 0)


def _ring(rank, out):
    dist.init_process_group()
    n = dist.get_world_size()
    got = spx.zeros(3)
    works = dist.batch_isend_irecv(
        [
            dist.P2POp(dist.irecv, got, (rank - 1) % n),
            dist.P2POp(dist.isend, spx.full((3,), float(rank)), (rank + 1) % n),
        ]
    )
    assert works[0].wait() is True and works[1].wait() is True
    out[rank] = (np.asarray(got), got._data.devices() == {spx.device("cpu")})


@pytest.mark.parametrize("backend", BACKENDS)
def test_ring_with_batch_isend_irecv(backend):
    out = run_ranks(_ring, 4, backend=backend)
    for r in range(4):
        np.testing.assert_array_equal(out[r][0], [float((r - 1) % 4)] * 3)
        assert out[r][1]


def _any_source(rank, out):
    dist.init_process_group()
    if rank == 0:
        got = {}
        for _ in range(3):
            buf = spx.tensor(0.0)
            work = dist.irecv(buf, tag=5)
            work.wait()
            got[work.source_rank] = float(buf)
        out[rank] = got
    else:
        dist.send(spx.tensor(rank * 1.5), dst=0, tag=5)


def test_recv_from_any_source():
    assert run_ranks(_any_source, 4)[0] == {1: 1.5, 2: 3.0, 3: 4.5}


def _any_source_across_processes(rank, out):
    dist.init_process_group()
    if rank == 0:
        with pytest.raises(NotImplementedError, match="any source"):
            dist.irecv(spx.tensor(0.0), tag=5)
    out[rank] = True


def test_recv_from_any_source_is_refused_across_processes():
    """The receiver must know whom to pull from: a clear error, not a hang."""
    assert run_ranks(_any_source_across_processes, 2, backend="process")[0] is True


def _poll_and_self(rank, out):
    dist.init_process_group()
    if rank == 1:
        buf = spx.zeros(2)
        work = dist.irecv(buf, src=0)
        before = work.is_completed()
        dist.barrier()  # rank 0 sends only after this
        dist.barrier()  # ... and before this
        # Thread ranks hold the message now; across processes the bytes still have to move,
        # so is_completed() turns True soon after, without a wait().
        deadline = time.monotonic() + 10
        while not work.is_completed() and time.monotonic() < deadline:
            time.sleep(0.005)
        done = work.is_completed()
        work.wait()
        out[rank] = (before, done, np.asarray(buf))
    else:
        dist.barrier()
        dist.isend(spx.ones(2), dst=1)
        dist.barrier()
        with pytest.raises(ValueError, match="destination rank should not be the same"):
            dist.send(spx.ones(2), dst=0)
        dist.isend(spx.arange(2.0), dst=0, tag=3)
        buf = spx.zeros(2)
        dist.recv(buf, src=0, tag=3)
        out[rank] = np.asarray(buf)


@pytest.mark.parametrize("backend", BACKENDS)
def test_is_completed_and_send_to_self(backend):
    out = run_ranks(_poll_and_self, 2, backend=backend)
    assert out[1][0] is False and out[1][1] is True
    np.testing.assert_array_equal(out[1][2], [1.0, 1.0])
    np.testing.assert_array_equal(out[0], [0.0, 1.0])


def _template_mismatch(rank, out):
    dist.init_process_group()
    if rank == 0:
        dist.send(spx.zeros(2, 3), dst=1)
        dist.send(spx.ones(2, 3), dst=1)
    else:
        work = dist.irecv(spx.zeros(3, 2), src=0)
        with pytest.raises(ValueError, match=r"sent shape \(2, 3\) float32.*\(3, 2\) float32"):
            work.wait()
        assert work.is_completed() and not work.is_success()
        # The mismatched message was consumed; the next receive gets the next message.
        buf = np.zeros((2, 3), np.float32)  # numpy buffers are filled in place too
        dist.recv(buf, src=0)
        out[rank] = buf
    dist.barrier()


@pytest.mark.parametrize("backend", BACKENDS)
def test_recv_checks_the_template(backend):
    np.testing.assert_array_equal(
        run_ranks(_template_mismatch, 2, backend=backend)[1], np.ones((2, 3))
    )


def _sender_exits(rank, out):
    dist.init_process_group()
    if rank == 1:
        start = time.monotonic()
        with pytest.raises(dist.DistBackendError, match=r"rank\(s\) \[0\] already exited"):
            dist.recv(spx.zeros(1), src=0)
        out[rank] = time.monotonic() - start


def test_recv_from_a_rank_that_ended_raises_at_once():
    # Thread ranks; a process that exits is covered by tests/distributed/test_failures.py.
    assert run_ranks(_sender_exits, 2)[1] < 5


def _subgroup_p2p(rank, out):
    dist.init_process_group()
    g = dist.new_group([1, 2])
    if rank == 1:
        dist.send(spx.tensor(7.0), group=g, group_dst=1)
        dist.send(spx.tensor(8.0), dst=2, group=g)
    elif rank == 2:
        a, b = spx.tensor(0.0), spx.tensor(0.0)
        assert dist.recv(a, group=g, group_src=0) == 1  # the sender's global rank
        dist.recv(b, src=1, group=g)
        out[rank] = (float(a), float(b))
    elif rank == 0:
        with pytest.warns(UserWarning, match="does not belong"):
            assert dist.recv(spx.tensor(0.0), src=1, group=g) == -1  # torch's value


@pytest.mark.parametrize(("backend", "nprocs"), [("thread", 3), ("process", 4)])
def test_p2p_in_a_subgroup_uses_global_or_group_ranks(backend, nprocs):
    assert run_ranks(_subgroup_p2p, nprocs, backend=backend)[2] == (7.0, 8.0)


def _shapes_change_on_a_channel(rank, out):
    """A tag whose messages change shape and structure (pipeline transfers of a new
    schedule, say): every message arrives with its own shapes."""
    dist.init_process_group()
    backend = process_group.default_group().backend
    trees = [
        jnp.ones(3),
        jnp.ones(3) * 2,
        {"a": jnp.ones((2, 2)), "b": (jnp.zeros(1, jnp.int32),)},
        jnp.arange(5.0),
        jnp.arange(5.0) + 1,
    ]
    if rank == 0:
        for tree in trees:
            backend.send_tree(tree, 1, ("pp", "F", 1, 0))
    else:
        works = [backend.irecv_tree(0, ("pp", "F", 1, 0)) for _ in trees]
        out[rank] = [jax.tree.map(np.asarray, w.wait()) for w in works]
    dist.barrier()


@pytest.mark.parametrize("backend", BACKENDS)
def test_message_shapes_may_change_on_one_tag(backend):
    got = run_ranks(_shapes_change_on_a_channel, 2, backend=backend)[1]
    assert [jax.tree.structure(g) for g in got][2] == jax.tree.structure({"a": 0, "b": (0,)})
    np.testing.assert_array_equal(got[1], [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(got[2]["a"], np.ones((2, 2)))
    np.testing.assert_array_equal(got[4], np.arange(5.0) + 1)


PROCESS_CASES = [
    (_ping_pong, 2),
    (_tags_in_flight, 2),
    (_many_tags, 2),
    (_poll_and_self, 2),
    (_template_mismatch, 2),
    (_any_source_across_processes, 2),
    (_shapes_change_on_a_channel, 2),
    (_ring, 4),
    (_subgroup_p2p, 4),
]
