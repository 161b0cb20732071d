"""spx.distributed.spawn: one thread per rank, fresh per-rank context, failures surface fast."""

import os
import subprocess
import sys
import textwrap
import time

import jax
import numpy as np
import pytest

import spx
import spx.distributed as dist
from spx import _context

# torch's default CPU seed: a fresh rank must draw what a fresh process would.
DEFAULT_SEED = 67280421310721


def run_ranks(fn, nprocs, *args, timeout=30.0):
    """Spawn ``fn(rank, out, *args)`` and return ``out``; fails instead of hanging."""
    out = {}
    ctx = dist.spawn(fn, args=(out, *args), nprocs=nprocs, join=False, daemon=True)
    assert ctx.join(timeout=timeout, grace_period=5), "ranks did not finish in time"
    return out


def _identity(rank, out):
    out[rank] = dict(
        cpu=spx.device("cpu"),
        cuda=spx.device(f"cuda:{rank}"),
        initialized=dist.is_initialized(),
        group=_context.current().group,
    )
    dist.init_process_group("gloo")
    out[rank].update(rank=dist.get_rank(), world=dist.get_world_size(), backend=dist.get_backend())
    dist.destroy_process_group()


@pytest.mark.parametrize("nprocs", [1, 2, 4])
def test_ranks_and_devices_are_distinct(nprocs):
    out = run_ranks(_identity, nprocs)
    devices = jax.local_devices()
    assert sorted(out) == list(range(nprocs))
    for r, info in out.items():
        assert info["rank"] == r and info["world"] == nprocs
        assert info["cpu"] == devices[r] and info["cuda"] == devices[r]
        assert not info["initialized"] and info["group"] is None
        assert info["backend"] == "gloo"
    assert len({info["cpu"] for info in out.values()}) == nprocs


def _draws(rank, out):
    default = jax.random.normal(spx.random.next_key(), (3,))
    spx.manual_seed(100 + rank)
    seeded = jax.random.normal(spx.random.next_key(), (3,))
    out[rank] = (np.asarray(default), np.asarray(seeded))


def test_rng_fresh_per_rank_and_reproducible():
    before = spx.initial_seed()
    first = run_ranks(_draws, 4)
    second = run_ranks(_draws, 4)
    fresh = jax.random.normal(jax.random.split(jax.random.key(DEFAULT_SEED))[1], (3,))
    for r in range(4):
        expected = jax.random.normal(jax.random.split(jax.random.key(100 + r))[1], (3,))
        # Every rank starts like a fresh process (default seed), whatever other ranks seed.
        np.testing.assert_array_equal(first[r][0], fresh)
        np.testing.assert_array_equal(first[r][1], expected)
        np.testing.assert_array_equal(second[r][1], first[r][1])
    assert len({first[r][1].tobytes() for r in range(4)}) == 4
    assert spx.initial_seed() == before  # the launching thread's generator is untouched


def _fail_in_rank1(rank, out):
    dist.init_process_group()
    if rank == 1:
        time.sleep(0.2)
        raise ValueError("boom in rank 1")
    try:
        dist.recv(spx.zeros(2), src=1)
    except dist.DistBackendError as e:
        out[rank] = e
        raise


def test_exception_in_one_rank_wakes_a_blocked_recv():
    ctx = dist.spawn(_fail_in_rank1, args=({},), nprocs=2, join=False, daemon=True)
    start = time.monotonic()
    with pytest.raises(dist.ProcessRaisedException) as info:
        ctx.join(timeout=10, grace_period=5)
    assert time.monotonic() - start < 5
    err = info.value
    assert err.error_index == 1
    assert "Process 1 terminated with the following error" in str(err)
    assert "Traceback" in str(err) and "boom in rank 1" in str(err)
    assert isinstance(err.__cause__, ValueError)
    assert not any(t.is_alive() for t in ctx.threads)


def _fail_during_collective(rank, out):
    dist.init_process_group()
    if rank == 2:
        raise KeyError("rank 2 broke")
    try:
        dist.all_reduce(spx.ones(2))
    except dist.DistBackendError as e:
        out[rank] = str(e)


def test_exception_wakes_ranks_in_a_collective():
    out = {}
    ctx = dist.spawn(_fail_during_collective, args=(out,), nprocs=4, join=False, daemon=True)
    with pytest.raises(dist.ProcessRaisedException, match="Process 2"):
        ctx.join(timeout=10, grace_period=5)
    assert sorted(out) == [0, 1, 3]
    assert all("rank 2 failed" in msg for msg in out.values())


def _exit_code(rank, out):
    if rank == 0:
        sys.exit(3)


def test_sys_exit_nonzero_is_reported():
    ctx = dist.spawn(_exit_code, args=({},), nprocs=2, join=False, daemon=True)
    with pytest.raises(dist.ProcessExitedException, match="process 0 terminated with exit code 3"):
        ctx.join(timeout=10, grace_period=5)


def _noop(rank, out):
    out[rank] = True


def test_join_true_returns_none_and_runs_every_rank():
    out = {}
    assert dist.spawn(_noop, args=(out,), nprocs=3) is None
    assert out == {0: True, 1: True, 2: True}


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown backend"):
        dist.spawn(_noop, args=({},), nprocs=2, backend="mpi")
    with pytest.raises(ValueError, match="nprocs"):
        dist.spawn(_noop, args=({},), nprocs=0)


def test_too_many_ranks_after_jax_started():
    jax.devices()  # the backend is running with conftest's 8 devices
    n = len(jax.local_devices()) + 1
    with pytest.raises(RuntimeError, match=r"jax_num_cpu_devices', 9\)") as info:
        dist.spawn(_noop, args=({},), nprocs=n)
    assert "xla_force_host_platform_device_count=9" in str(info.value)


def test_spawn_configures_devices_before_jax_starts():
    # A fresh interpreter: JAX has not started, so spawn may ask for more CPU devices.
    script = textwrap.dedent(
        """
        import jax.numpy as jnp
        import spx, spx.distributed as dist
        out = {}
        def main(rank):
            dist.init_process_group()
            total = spx.tensor(float(rank))
            dist.all_reduce(total)
            out[rank] = (spx.device("cpu").id, float(total))
        dist.spawn(main, nprocs=3)
        print(sorted(out.items()))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["JAX_PLATFORMS"] = "cpu"
    res = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[(0, (0, 3.0)), (1, (1, 3.0)), (2, (2, 3.0))]"
