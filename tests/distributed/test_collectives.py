"""Collectives on thread ranks and on process ranks, checked against numpy on the inputs.

As in torch, collectives write their results into their tensor arguments in place; the forms
returning a result live in ``spx.distributed.functional``.

Every test runs the same rank function on both backends: ``thread`` (``spawn``) and ``process``
(real processes under a torchrun-style environment; the module's cases run in one batch of 2
and one of 4 processes, see ``tests/distributed/_ranks.py``).
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
import spx.distributed as dist
from spx import nn
from tests.distributed._ranks import run_ranks


def rank_input(rank, shape=(3, 5), dtype=np.float32):
    """Each rank's deterministic input, reproducible outside the ranks for the reference."""
    rng = np.random.default_rng(rank)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-50, 50, shape).astype(dtype)
    return (rng.standard_normal(shape) + 2).astype(dtype)


def on_own_device(x):
    if isinstance(x, spx.Tensor):
        x = x._data
    return x.devices() == {spx.device("cpu")}


def reduced(x, op):
    """torch's form: all_reduce a copy in place, return the copy."""
    t = x.clone()
    assert dist.all_reduce(t, op) is None
    return t


FLOAT_OPS = {
    dist.ReduceOp.SUM: lambda xs: np.sum(xs, 0),
    dist.ReduceOp.AVG: lambda xs: np.mean(xs, 0),
    dist.ReduceOp.PRODUCT: lambda xs: np.prod(xs, 0),
    dist.ReduceOp.MIN: lambda xs: np.min(xs, 0),
    dist.ReduceOp.MAX: lambda xs: np.max(xs, 0),
}
INT_OPS = {
    dist.ReduceOp.SUM: lambda xs: np.sum(xs, 0),
    dist.ReduceOp.BAND: lambda xs: np.bitwise_and.reduce(xs, 0),
    dist.ReduceOp.BOR: lambda xs: np.bitwise_or.reduce(xs, 0),
    dist.ReduceOp.BXOR: lambda xs: np.bitwise_xor.reduce(xs, 0),
    dist.ReduceOp.MAX: lambda xs: np.max(xs, 0),
}


def _all_reduce_every_op(rank, out):
    dist.init_process_group()
    x = spx.as_tensor(rank_input(rank))
    i = spx.as_tensor(rank_input(rank, dtype=np.int32))
    results = {}
    for op in FLOAT_OPS:
        y = reduced(x, op)
        assert on_own_device(y) and y.dtype == spx.float32
        results[("f", op)] = np.asarray(y)
    for op in INT_OPS:
        y = reduced(i, op)
        assert on_own_device(y) and y.dtype == spx.int32
        results[("i", op)] = np.asarray(y)
    with pytest.raises(TypeError, match="AVG needs a floating dtype"):
        dist.all_reduce(i, dist.ReduceOp.AVG)
    # The functional form returns the result and leaves its argument alone.
    f = dist.functional.all_reduce(jnp.asarray(rank_input(rank)))
    assert isinstance(f, spx.Tensor)
    np.testing.assert_array_equal(np.asarray(f), results[("f", dist.ReduceOp.SUM)])
    # Aliases and views of the tensor see the in-place result, as in torch.
    t = spx.as_tensor(rank_input(rank))
    alias, row = t.data, t[0]
    dist.all_reduce(t)
    np.testing.assert_array_equal(np.asarray(alias), results[("f", dist.ReduceOp.SUM)])
    np.testing.assert_array_equal(np.asarray(row), results[("f", dist.ReduceOp.SUM)][0])
    # A view is written through to its base.
    base = spx.as_tensor(rank_input(rank))
    dist.all_reduce(base[1])
    np.testing.assert_array_equal(np.asarray(base[1]), results[("f", dist.ReduceOp.SUM)][1])
    np.testing.assert_array_equal(np.asarray(base[0]), rank_input(rank)[0])
    # numpy arrays are filled in place, as torch fills a tensor sharing numpy's memory.
    a = rank_input(rank)
    dist.all_reduce(a)
    np.testing.assert_allclose(a, results[("f", dist.ReduceOp.SUM)], rtol=1e-6)
    out[rank] = results


BOTH = [("thread", 1), ("thread", 2), ("thread", 4), ("process", 2), ("process", 4)]


@pytest.mark.parametrize(("backend", "nprocs"), BOTH)
def test_all_reduce_matches_numpy(backend, nprocs):
    out = run_ranks(_all_reduce_every_op, nprocs, backend=backend)
    xs = np.stack([rank_input(r) for r in range(nprocs)])
    ints = np.stack([rank_input(r, dtype=np.int32) for r in range(nprocs)])
    for r in range(nprocs):
        for op, ref in FLOAT_OPS.items():
            np.testing.assert_allclose(out[r][("f", op)], ref(xs), rtol=1e-6, err_msg=str(op))
        for op, ref in INT_OPS.items():
            np.testing.assert_array_equal(out[r][("i", op)], ref(ints), err_msg=str(op))
        # Every rank reduces in rank order, so all ranks agree bit for bit.
        np.testing.assert_array_equal(
            out[r][("f", dist.ReduceOp.SUM)], out[0][("f", dist.ReduceOp.SUM)]
        )


def _broadcast_gather_scatter(rank, out):
    dist.init_process_group()
    n = dist.get_world_size()
    x = spx.as_tensor(rank_input(rank, (2, 3)))
    res = {"bcast": x.clone()}
    assert dist.broadcast(res["bcast"], src=n - 1) is None
    buffers = [spx.zeros(2, 3) for _ in range(n)]
    kept = list(buffers)
    res["ag_ret"] = dist.all_gather(buffers, x)
    assert all(a is b for a, b in zip(buffers, kept, strict=True))  # filled, not replaced
    res["ag_list"] = buffers
    res["ag_cat"] = spx.zeros(2 * n, 3)
    dist.all_gather_into_tensor(res["ag_cat"], x)
    res["ag_stack"] = spx.zeros(n, 2, 3)
    dist.all_gather_into_tensor(res["ag_stack"], x)
    gathered = [spx.zeros(2, 3) for _ in range(n)] if rank == 1 % n else None
    res["gather"] = dist.gather(x, gathered, dst=1 % n)
    res["gather_list"] = gathered
    pieces = [spx.full((2,), 10.0 * j) for j in range(n)] if rank == 0 else None
    res["scatter"] = spx.zeros(2)
    dist.scatter(res["scatter"], pieces, src=0)
    res["reduce"] = x.clone()
    dist.reduce(res["reduce"], dst=0, op=dist.ReduceOp.MAX)
    for key in ("bcast", "ag_cat", "ag_stack", "scatter"):
        assert on_own_device(res[key]), key
    if rank == 0:
        assert on_own_device(res["reduce"])
    assert all(on_own_device(a) for a in res["ag_list"])
    out[rank] = jax.tree.map(np.asarray, res, is_leaf=lambda v: isinstance(v, spx.Tensor))


@pytest.mark.parametrize(("backend", "nprocs"), BOTH)
def test_broadcast_all_gather_gather_scatter(backend, nprocs):
    out = run_ranks(_broadcast_gather_scatter, nprocs, backend=backend)
    xs = [rank_input(r, (2, 3)) for r in range(nprocs)]
    for r in range(nprocs):
        res = out[r]
        np.testing.assert_array_equal(res["bcast"], xs[-1])
        assert res["ag_ret"] is None and len(res["ag_list"]) == nprocs
        for got, want in zip(res["ag_list"], xs, strict=True):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(res["ag_cat"], np.concatenate(xs))
        np.testing.assert_array_equal(res["ag_stack"], np.stack(xs))
        assert res["gather"] is None
        if r == 1 % nprocs:
            np.testing.assert_array_equal(np.stack(res["gather_list"]), np.stack(xs))
        np.testing.assert_array_equal(res["scatter"], [10.0 * r] * 2)
        want_reduce = np.max(np.stack(xs), 0) if r == 0 else xs[r]
        np.testing.assert_array_equal(res["reduce"], want_reduce)


def _reduce_scatter(rank, out):
    dist.init_process_group()
    n = dist.get_world_size()
    # Rank q sends q * 100 + j to rank j.
    inputs = [spx.full((2,), float(rank * 100 + j)) for j in range(n)]
    a, b, c = spx.zeros(2), spx.zeros(2), spx.zeros(2)
    dist.reduce_scatter(a, inputs)
    dist.reduce_scatter_tensor(b, spx.cat(inputs), dist.ReduceOp.MAX)
    dist.reduce_scatter_tensor(c, spx.stack(inputs))
    assert on_own_device(a) and on_own_device(b)
    out[rank] = (np.asarray(a), np.asarray(b), np.asarray(c))


@pytest.mark.parametrize(("backend", "nprocs"), BOTH[1:])
def test_reduce_scatter(backend, nprocs):
    out = run_ranks(_reduce_scatter, nprocs, backend=backend)
    for j in range(nprocs):
        want = np.array([[q * 100 + j for _ in range(2)] for q in range(nprocs)], np.float32)
        np.testing.assert_array_equal(out[j][0], want.sum(0))
        np.testing.assert_array_equal(out[j][1], want.max(0))
        np.testing.assert_array_equal(out[j][2], want.sum(0))


def _objects(rank, out):
    dist.init_process_group()
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, {"rank": rank, "items": [rank]})
    gathered[0]["items"].append("mine")  # a private copy: other ranks must not see this
    dist.barrier()
    objs = ["config", {"lr": 0.1}] if rank == 0 else [None, None]
    dist.broadcast_object_list(objs, src=0)
    out[rank] = (gathered, objs)


@pytest.mark.parametrize(("backend", "nprocs"), [("thread", 3), ("process", 4)])
def test_object_collectives_give_each_rank_its_own_copy(backend, nprocs):
    out = run_ranks(_objects, nprocs, backend=backend)
    for r in range(nprocs):
        gathered, objs = out[r]
        assert [g["rank"] for g in gathered] == list(range(nprocs))
        assert gathered[0]["items"] == [0, "mine"] and gathered[1]["items"] == [1]
        assert objs == ["config", {"lr": 0.1}]
    assert out[0][0][0] is not out[1][0][0]


def _async_then_p2p(rank, out):
    dist.init_process_group()
    x = spx.full((2,), float(rank + 1))
    if rank == 0:
        # torch lets an async collective overlap with p2p that the peer needs first.
        total = x.clone()
        work = dist.all_reduce(total, async_op=True)
        dist.send(x * 10, dst=1)
        parts = [spx.zeros(2), spx.zeros(2)]
        work2 = dist.all_gather(parts, x, async_op=True)
        assert work.wait() is True and work2.wait() is True
        assert work2.result() is parts
        out[rank] = (np.asarray(total), work.is_completed(), [np.asarray(p) for p in parts])
    else:
        got = spx.zeros(2)
        assert dist.recv(got, src=0) == 0  # the sender's rank, as torch returns
        total = x.clone()
        dist.all_reduce(total)
        parts = [spx.zeros(2), spx.zeros(2)]
        dist.all_gather(parts, x)
        out[rank] = (np.asarray(total), np.asarray(got), [np.asarray(p) for p in parts])


@pytest.mark.parametrize("backend", ["thread", "process"])
def test_async_collectives_complete_out_of_order_with_p2p(backend):
    out = run_ranks(_async_then_p2p, 2, backend=backend)
    np.testing.assert_array_equal(out[0][0], [3.0, 3.0])
    assert out[0][1] is True
    np.testing.assert_array_equal(np.stack(out[0][2]), [[1.0, 1.0], [2.0, 2.0]])
    np.testing.assert_array_equal(out[1][0], [3.0, 3.0])
    np.testing.assert_array_equal(out[1][1], [10.0, 10.0])


def _mismatch(rank, out):
    dist.init_process_group()
    with pytest.raises(dist.DistBackendError, match="collective mismatch") as info:
        if rank == 0:
            dist.all_reduce(spx.ones(3))
        else:
            dist.all_reduce(spx.ones(4))
    out[rank] = str(info.value)


def _mismatch_detail(rank, out):
    # Across processes, like torch's gloo/NCCL, mismatches are checked in debug mode only.
    os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    try:
        _mismatch(rank, out)
    finally:
        del os.environ["TORCH_DISTRIBUTED_DEBUG"]


@pytest.mark.parametrize(("backend", "fn"), [("thread", _mismatch), ("process", _mismatch_detail)])
def test_mismatched_collectives_raise_on_every_rank(backend, fn):
    out = run_ranks(fn, 2, backend=backend)
    assert "(3,)" in out[0] and "(4,)" in out[0] and out[0] == out[1]


def _bad_inputs(rank, out):
    dist.init_process_group()
    with pytest.raises(ValueError, match=r"tensor_list must hold one tensor per rank \(2\)"):
        dist.all_gather([spx.zeros(2)], spx.zeros(2))
    with pytest.raises(ValueError, match=r"tensor_list\[1\] has shape \(3,\)"):
        dist.all_gather([spx.zeros(2), spx.zeros(3)], spx.zeros(2))
    with pytest.raises(ValueError, match=r"output_tensor has shape \(5,\)"):
        dist.all_gather_into_tensor(spx.zeros(5), spx.zeros(2))
    with pytest.raises(TypeError, match=r"must be an spx\.Tensor"):
        dist.all_reduce([1.0, 2.0])
    # A jax.Array cannot take torch's in-place result: the error names both fixes.
    with pytest.raises(TypeError, match=r"(?s)spx\.as_tensor.*functional\.all_reduce"):
        dist.all_reduce(jnp.ones(2))
    with pytest.raises(TypeError, match=r"functional\.broadcast"):
        dist.broadcast(jnp.ones(2), src=0)
    with pytest.raises(TypeError, match=r"(?s)irecv: tensor is a jax\.Array.*spx\.as_tensor"):
        dist.irecv(jnp.ones(2), src=0)
    with pytest.raises(TypeError, match=r"cannot be called inside jax\.jit"):
        jax.jit(lambda v: dist.functional.all_reduce(v))(jnp.ones(2))
    with pytest.raises(ValueError, match="unknown reduce op"):
        dist.all_reduce(spx.ones(2), op="median")
    out[rank] = True


@pytest.mark.parametrize("backend", ["thread", "process"])
def test_bad_inputs_raise_clear_errors(backend):
    assert run_ranks(_bad_inputs, 2, backend=backend) == {0: True, 1: True}


def _all_to_all(rank, out):
    dist.init_process_group()
    n = dist.get_world_size()
    # Rank q sends q * 100 + j to rank j, as a list and as one array.
    inputs = [spx.full((2, 3), float(rank * 100 + j)) for j in range(n)]
    buffers = [spx.zeros(2, 3) for _ in range(n)]
    assert dist.all_to_all(buffers, inputs) is None
    single = spx.zeros(2 * n, 3)
    dist.all_to_all_single(single, spx.cat(inputs))
    later = [spx.zeros(2, 3) for _ in range(n)]
    work = dist.all_to_all(later, inputs, async_op=True)
    work.wait()
    functional = dist.functional.all_to_all_single(
        jnp.concatenate([jnp.asarray(i) for i in inputs])
    )
    assert all(on_own_device(x) for x in buffers) and on_own_device(single)
    out[rank] = (
        [np.asarray(x) for x in buffers],
        np.asarray(single),
        [np.asarray(x) for x in later],
        np.asarray(functional),
    )


@pytest.mark.parametrize(("backend", "nprocs"), BOTH[1:])
def test_all_to_all(backend, nprocs):
    out = run_ranks(_all_to_all, nprocs, backend=backend)
    for j in range(nprocs):
        want = [np.full((2, 3), q * 100.0 + j) for q in range(nprocs)]
        listed, single, waited, functional = out[j]
        np.testing.assert_array_equal(np.stack(listed), np.stack(want))
        np.testing.assert_array_equal(single, np.concatenate(want))
        np.testing.assert_array_equal(functional, np.concatenate(want))
        np.testing.assert_array_equal(np.stack(waited), np.stack(want))


def _rows(i: int, j: int) -> int:
    """Rows group rank i sends to group rank j in the uneven all_to_all_single (0 included)."""
    return (i + 2 * j) % 3


def _uneven_all_to_all_single(rank, out):
    dist.init_process_group()
    n = dist.get_world_size()
    sends = [_rows(rank, j) for j in range(n)]
    gets = [_rows(i, rank) for i in range(n)]
    values = [rank * 100.0 + j * 10 + k for j in range(n) for k in range(sends[j])]
    x = spx.tensor(values).reshape(-1, 1).expand(-1, 2).contiguous()
    y = spx.zeros(sum(gets), 2)
    dist.all_to_all_single(y, x, gets, sends)
    z = spx.zeros(sum(gets), 2)
    dist.all_to_all_single(z, x, gets, sends, async_op=True).wait()
    with pytest.raises(ValueError, match="expects"):  # every rank sees the mismatch
        dist.all_to_all_single(spx.zeros(sum(gets) + 1, 2), x, [*gets[:-1], gets[-1] + 1], sends)
    out[rank] = (np.asarray(y), np.asarray(z))


@pytest.mark.parametrize(("backend", "nprocs"), [("thread", 2), ("process", 2), ("process", 4)])
def test_all_to_all_single_with_uneven_splits(backend, nprocs):
    out = run_ranks(_uneven_all_to_all_single, nprocs, backend=backend)
    for j in range(nprocs):
        want = [i * 100.0 + j * 10 + k for i in range(nprocs) for k in range(_rows(i, j))]
        want = np.repeat(np.array(want, np.float32).reshape(-1, 1), 2, axis=1)
        np.testing.assert_array_equal(out[j][0], want)
        np.testing.assert_array_equal(out[j][1], want)


def _object_ops(rank, out):
    dist.init_process_group()
    n = dist.get_world_size()
    gathered = [None] * n if rank == 1 else None
    dist.gather_object({"rank": rank}, gathered, dst=1)
    got = [None]
    dist.scatter_object_list(got, [f"to {r}" for r in range(n)] if rank == 0 else None, src=0)
    if rank != 1:
        with pytest.raises(ValueError, match="must NOT be specified"):
            dist.gather_object(rank, [None] * n, dst=1)
    received, sender = [None, None], None
    if rank == 0:
        dist.send_object_list([("a", 1), {"b": np.arange(3)}], dst=n - 1)
    elif rank == n - 1:
        sender = dist.recv_object_list(received, src=0)
    out[rank] = (gathered, got[0], received[0], sender)
    out[rank] += (None if received[1] is None else received[1]["b"].tolist(),)


@pytest.mark.parametrize(("backend", "nprocs"), [("thread", 3), ("process", 2)])
def test_gather_scatter_send_and_recv_objects(backend, nprocs):
    # torch's contracts: dst's list filled; each rank's own item; the sender's rank returned.
    out = run_ranks(_object_ops, nprocs, backend=backend)
    for r in range(nprocs):
        gathered, scattered, first, sender, second = out[r]
        assert gathered == ([{"rank": q} for q in range(nprocs)] if r == 1 else None)
        assert scattered == f"to {r}"
        if r == nprocs - 1:
            assert (first, sender, second) == (("a", 1), 0, [0, 1, 2])
        else:
            assert (first, sender) == (None, None)


def _large_all_reduce(rank, out):
    # 4 MiB per rank: across processes, past the size where SUM/AVG/MIN/MAX switch from
    # gather-and-fold to XLA's ring collectives (psum/pmin/pmax).
    dist.init_process_group()
    x = spx.as_tensor(rank_input(rank, (1024, 1024)))
    ops = (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MIN, dist.ReduceOp.MAX)
    out[rank] = {op: np.asarray(reduced(x, op)) for op in ops}


@pytest.mark.parametrize(("backend", "nprocs"), [("thread", 2), ("process", 2), ("process", 4)])
def test_large_all_reduce(backend, nprocs):
    out = run_ranks(_large_all_reduce, nprocs, backend=backend)
    xs = np.stack([rank_input(r, (1024, 1024)) for r in range(nprocs)])
    for r in range(nprocs):
        for op, got in out[r].items():
            np.testing.assert_allclose(got, FLOAT_OPS[op](xs), rtol=1e-5, err_msg=str(op))
            np.testing.assert_array_equal(got, out[0][op])  # the same bits on every rank


def _bucketed_all_reduce(rank, out):
    # DDP's gradient averaging: each bucket summed over ranks as one flat buffer, then scaled.
    from spx.distributed.backend import Backend
    from spx.distributed.process_group import resolve_group

    dist.init_process_group()
    backend = resolve_group(None).backend
    arrays = [
        jnp.asarray(rank_input(rank, (3, 5))),
        jnp.asarray(rank_input(rank, ())),
        jnp.asarray(rank_input(rank, (1024, 1024))),  # 4 MiB: the ring path between processes
        jnp.asarray(rank_input(rank, (4,))).astype(jnp.bfloat16),
        jnp.asarray(rank_input(rank, (2,))),  # in no bucket: returned as given
    ]
    buckets = [[2], [0, 1], [3]]
    fused = backend.all_reduce_buckets(arrays, buckets, 0.25).wait()
    # The portable form (one all_reduce per bucket): the fused program must agree bit for bit.
    portable = Backend.all_reduce_buckets(backend, arrays, buckets, 0.25).wait()
    out[rank] = ([np.asarray(a.astype(jnp.float32)) for a in fused], portable)


@pytest.mark.parametrize(("backend", "nprocs"), [("thread", 2), ("process", 2), ("process", 4)])
def test_bucketed_all_reduce_sums_and_scales_each_bucket(backend, nprocs):
    out = run_ranks(_bucketed_all_reduce, nprocs, backend=backend)
    shapes = [(3, 5), (), (1024, 1024), (4,)]
    for r in range(nprocs):
        fused, portable = out[r]
        for i, shape in enumerate(shapes):
            xs = np.stack([rank_input(q, shape) for q in range(nprocs)])
            if i == 3:
                xs = xs.astype(jnp.bfloat16).astype(np.float32)
            tol = 2e-2 if i == 3 else 1e-5
            np.testing.assert_allclose(fused[i], xs.sum(0) * 0.25, rtol=tol, err_msg=f"array {i}")
            np.testing.assert_array_equal(fused[i], np.asarray(portable[i], np.float32))
            np.testing.assert_array_equal(fused[i], out[0][0][i])  # the same bits on every rank
        np.testing.assert_array_equal(fused[4], rank_input(r, (2,)))


# One batch of 2 and one of 4 processes runs these, in this order.
def _in_place_on_history(rank, out):
    dist.init_process_group()
    x = spx.tensor([1.0, 2.0], requires_grad=True)
    y = x * (rank + 1)
    dist.all_reduce(y)  # torch keeps y's history: the gradient passes through unchanged
    z = x * 3
    with spx.no_grad():  # torch keeps the history under no_grad as well
        dist.broadcast(z, 1)
    (y.sum() + x.sum() + z.sum()).backward()
    p = nn.Parameter(spx.ones(2) * (rank + 1))
    dist.all_reduce(p)  # a leaf stays a trainable leaf
    q = nn.Parameter(spx.ones(4) * (rank + 1))
    head = q[:2]  # a view of a leaf, made with grad on
    with spx.no_grad():
        dist.all_reduce(head)  # torch: written as data, [3, 3, rank + 1, rank + 1]
    w = x * 2
    dist.broadcast(w, 0)  # grad mode on: history kept
    assert w.grad_fn is not None
    out[rank + 10] = np.asarray(q.detach())
    out[rank] = (np.asarray(y.detach()), y.grad_fn is not None, np.asarray(x.grad), p.is_leaf)
    out[rank] += (p.requires_grad, np.asarray(p.detach()))


@pytest.mark.parametrize("backend", ["thread", "process"])
def test_in_place_collectives_keep_autograd_history_as_torch(backend):
    # torch 2.13 (gloo): y = [3, 6] on both ranks, grad_fn kept; x.grad = (rank + 1) + 1 + 3.
    out = run_ranks(_in_place_on_history, 2, backend=backend)
    for r in range(2):
        np.testing.assert_array_equal(out[r + 10], [3.0, 3.0, r + 1.0, r + 1.0])
        y, has_history, grad, leaf, trainable, p = out[r]
        np.testing.assert_array_equal(y, [3.0, 6.0])
        assert has_history and leaf and trainable
        np.testing.assert_array_equal(grad, np.full(2, r + 1.0 + 1.0 + 3.0))
        np.testing.assert_array_equal(p, [3.0, 3.0])


PROCESS_CASES = [
    *[(fn, n) for n in (2, 4) for fn in (_all_reduce_every_op, _broadcast_gather_scatter)],
    *[(fn, n) for n in (2, 4) for fn in (_reduce_scatter, _all_to_all, _large_all_reduce)],
    *[(_bucketed_all_reduce, n) for n in (2, 4)],
    (_objects, 4),
    (_async_then_p2p, 2),
    (_bad_inputs, 2),
    (_mismatch_detail, 2),
    (_in_place_on_history, 2),
    *[(_uneven_all_to_all_single, n) for n in (2, 4)],
    (_object_ops, 2),
]
