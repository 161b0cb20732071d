"""torch's launch and availability queries, against torch.distributed's own answers."""

import pytest

import spx.distributed as dist

tdist = pytest.importorskip("torch.distributed")


def test_launch_queries_read_the_environment_as_torch(monkeypatch):
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert dist.is_torchelastic_launched() is tdist.is_torchelastic_launched() is False
    assert dist.get_node_local_rank(3) == tdist.get_node_local_rank(3) == 3
    with pytest.raises(RuntimeError) as ours:
        dist.get_node_local_rank()
    with pytest.raises(RuntimeError) as theirs:
        tdist.get_node_local_rank()
    assert str(ours.value) == str(theirs.value)
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert dist.is_torchelastic_launched() is tdist.is_torchelastic_launched() is True
    assert dist.get_node_local_rank(3) == tdist.get_node_local_rank(3) == 1


def test_backend_names_and_defaults_are_torchs():
    for name in ("GLOO", "NCCL", "MPI", "UCC", "UNDEFINED"):
        assert getattr(dist.Backend, name) == getattr(tdist.Backend, name)
    for device in ("cpu", "cuda", "cuda:1"):
        got = dist.get_default_backend_for_device(device)
        assert got == tdist.get_default_backend_for_device(device)
    with pytest.raises(ValueError, match="'tpu'"):
        dist.get_default_backend_for_device("tpu")
    assert dist.is_gloo_available() and dist.is_backend_available("gloo")
    assert dist.is_nccl_available()  # JAX's GPU collectives (torch: True in a CUDA build)
    assert not dist.is_mpi_available() and not dist.is_backend_available("mpi")


def _world(rank, out):
    assert dist.group.WORLD is None  # torch: None before init_process_group
    dist.init_process_group(dist.Backend.GLOO)
    world = dist.group.WORLD
    out[rank] = (world.rank(), world.size(), dist.get_world_size(world), dist.get_backend())


def test_group_world_is_each_ranks_default_group():
    out: dict = {}
    ctx = dist.spawn(_world, args=(out,), nprocs=2, join=False, daemon=True)
    assert ctx.join(timeout=60, grace_period=5)
    assert out == {0: (0, 2, 2, "gloo"), 1: (1, 2, 2, "gloo")}
