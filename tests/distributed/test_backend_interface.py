"""A backend implementing only the five required methods gets every collective from the
defaults of :class:`spx.distributed.Backend`; a multi-process factory plugs into init."""

import jax
import numpy as np

import spx
import spx.distributed as dist
from spx import _context
from spx.distributed import process_group
from spx.distributed._thread_backend import World


class Minimal(dist.Backend):
    """Forwards the required primitives to another backend and nothing else."""

    name = "minimal"

    def __init__(self, inner):
        super().__init__(inner.rank, inner.size, inner.device, inner.ranks, inner.timeout, "m")
        self.inner = inner
        self.calls = []

    def all_gather(self, x, async_op=False):
        self.calls.append("all_gather")
        return self.inner.all_gather(x, async_op)

    def all_gather_object(self, obj):
        self.calls.append("all_gather_object")
        return self.inner.all_gather_object(obj)

    def send(self, x, dst, tag):
        return self.inner.send(x, dst, tag)

    def recv(self, template, src, tag):
        return self.inner.recv(template, src, tag)

    def split(self, ranks, timeout):
        inner = self.inner.split(ranks, timeout)
        return None if inner is None else Minimal(inner)


def run_ranks(fn, nprocs, *args, timeout=30.0):
    """Spawn ``fn(rank, out, *args)`` and return ``out``; fails instead of hanging."""
    out = {}
    ctx = dist.spawn(fn, args=(out, *args), nprocs=nprocs, join=False, daemon=True)
    assert ctx.join(timeout=timeout, grace_period=5), "ranks did not finish in time"
    return out


def _defaults(rank, out):
    dist.init_process_group()
    impl = Minimal(process_group.default_group().backend)
    pg = dist.ProcessGroup(impl, "custom", "m")
    x = spx.full((2,), float(rank + 1))
    res = {k: x.clone() for k in ("sum", "max", "bcast")}
    res.update(rs=spx.zeros(2), scatter=spx.zeros(2))
    res["gather"] = [spx.zeros(2) for _ in range(3)] if rank == 0 else None
    dist.all_reduce(res["sum"], group=pg)
    dist.reduce(res["max"], dst=1, op=dist.ReduceOp.MAX, group=pg)
    dist.broadcast(res["bcast"], src=2, group=pg)
    dist.reduce_scatter(res["rs"], [x * (j + 1) for j in range(3)], group=pg)
    dist.gather(x, res["gather"], dst=0, group=pg)
    pieces = [spx.full((2,), 5.0 * j) for j in range(3)] if rank == 0 else None
    dist.scatter(res["scatter"], pieces, group=pg)
    dist.barrier(group=pg)
    if rank == 0:
        dist.send(x, dst=1, group=pg)
    elif rank == 1:
        res["p2p"] = spx.zeros(2)
        dist.recv(res["p2p"], src=0, group=pg)
    assert "all_gather" in impl.calls and "all_gather_object" in impl.calls
    assert dist.get_backend(pg) == "custom"
    out[rank] = jax.tree.map(
        lambda a: None if a is None else np.asarray(a),
        res,
        is_leaf=lambda a: isinstance(a, spx.Tensor),
    )


def test_defaults_of_the_backend_interface():
    out = run_ranks(_defaults, 3)
    xs = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    for r in range(3):
        res = out[r]
        np.testing.assert_array_equal(res["sum"], xs.sum(0))
        np.testing.assert_array_equal(res["max"], xs.max(0) if r == 1 else xs[r])
        np.testing.assert_array_equal(res["bcast"], xs[2])
        np.testing.assert_array_equal(res["rs"], xs.sum(0) * (r + 1))
        np.testing.assert_array_equal(res["scatter"], [5.0 * r] * 2)
        if r == 0:
            np.testing.assert_array_equal(np.stack(res["gather"]), xs)
        else:
            assert res["gather"] is None
    np.testing.assert_array_equal(out[1]["p2p"], xs[0])


def test_multiprocess_factory_is_used_for_env_worlds(monkeypatch):
    calls = []

    def factory(rank, world_size, timeout, init_method):
        calls.append((rank, world_size, timeout, init_method))
        world = World(jax.local_devices()[:world_size])
        return Minimal(world.join(rank, timeout))

    previous = _context.set_current(_context.RankContext())
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    process_group.register_multiprocess_backend(factory)
    try:
        dist.init_process_group("gloo", init_method="env://")
        assert (dist.get_rank(), dist.get_world_size()) == (1, 2)
        assert calls == [(1, 2, 1800.0, "env://")]
        dist.destroy_process_group()
    finally:
        process_group.register_multiprocess_backend(None)
        _context.set_current(previous)
