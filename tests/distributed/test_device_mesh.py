"""init_device_mesh / DeviceMesh on thread and process ranks; groups checked by their ranks and
by a collective over each; DistributedSampler's data-parallel default."""

from __future__ import annotations

import pytest

import spx
import spx.distributed as dist
from spx.data import DistributedSampler
from tests.distributed._ranks import run_ranks


def _mesh_2x2(rank, out):
    dist.init_process_group()
    mesh = dist.init_device_mesh("cpu", (2, 2), mesh_dim_names=("pp", "dp"))
    t = spx.tensor(float(rank))
    dist.all_reduce(t, group=mesh.get_group("dp"))
    u = spx.tensor(float(rank))
    dist.all_reduce(u, group=mesh["pp"].get_group())
    dp = mesh["dp"]
    out[rank] = {
        "shape": mesh.shape,
        "ndim": mesh.ndim,
        "names": mesh.mesh_dim_names,
        "mesh": mesh.mesh.tolist(),
        "size": (mesh.size(), mesh.size("pp"), mesh.size(1)),
        "local": (mesh.get_local_rank("pp"), mesh.get_local_rank("dp")),
        "coord": mesh.get_coordinate(),
        "rank": mesh.get_rank(),
        "dp_ranks": dist.get_process_group_ranks(mesh.get_group("dp")),
        "pp_ranks": dist.get_process_group_ranks(mesh.get_group(0)),
        "dp_sum": float(t),
        "pp_sum": float(u),
        "sub": (dp.ndim, dp.size(), dp.get_local_rank(), dp.mesh.tolist(), dp.mesh_dim_names),
        # The sampler's defaults follow the "dp" dimension.
        "sampler": (lambda s: (s.num_replicas, s.rank, list(s)))(
            DistributedSampler(range(8), shuffle=False)
        ),
    }
    with pytest.raises(RuntimeError, match="`mesh_dim` needs to be specified"):
        mesh.get_group()
    with pytest.raises(KeyError, match="'tp' does not exist"):
        mesh["tp"]
    with pytest.raises(RuntimeError, match=r"Mesh shape \(3,\) has 3 ranks but the world has 4"):
        dist.init_device_mesh("cpu", (3,))
    with pytest.raises(RuntimeError, match="same length"):
        dist.init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp",))
    with pytest.raises(RuntimeError, match="unique"):
        dist.init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "dp"))
    with pytest.raises(ValueError, match="device_type='tensor'"):
        dist.init_device_mesh("tensor", (4,))


@pytest.mark.parametrize("backend", ["thread", "process"])
def test_2x2_mesh_groups_ranks_and_sampler(backend):
    out = run_ranks(_mesh_2x2, 4, backend=backend)
    for r in range(4):
        pp, dp = divmod(r, 2)  # torch's row-major layout
        got = out[r]
        assert got["shape"] == (2, 2) and got["ndim"] == 2 and got["names"] == ("pp", "dp")
        assert got["mesh"] == [[0, 1], [2, 3]]
        assert got["size"] == (4, 2, 2)
        assert got["local"] == (pp, dp) and got["coord"] == [pp, dp] and got["rank"] == r
        assert got["dp_ranks"] == [2 * pp, 2 * pp + 1]
        assert got["pp_ranks"] == [dp, dp + 2]
        assert got["dp_sum"] == 4 * pp + 1  # 2pp + (2pp + 1)
        assert got["pp_sum"] == 2 * dp + 2  # dp + (dp + 2)
        assert got["sub"] == (1, 2, dp, [2 * pp, 2 * pp + 1], ("dp",))
        # Both pipeline stages of one replica read the same samples; replicas differ.
        assert got["sampler"] == (2, dp, list(range(dp, 8, 2)))


def _no_dp_dim(rank, out):
    dist.init_process_group()
    mesh = dist.init_device_mesh("cpu", (2,), mesh_dim_names=("tp",))
    s = DistributedSampler(range(4), shuffle=False)
    out[rank] = (s.num_replicas, s.rank, mesh.get_group() is not None)


def test_without_a_dp_dimension_the_sampler_keeps_torchs_default():
    assert run_ranks(_no_dp_dim, 2) == {0: (2, 0, True), 1: (2, 1, True)}


def test_device_mesh_is_exported_where_torch_has_it():
    torch = pytest.importorskip("torch")
    assert hasattr(torch.distributed, "DeviceMesh") and hasattr(dist, "DeviceMesh")
    assert dist.init_device_mesh is dist.device_mesh.init_device_mesh


PROCESS_CASES = [(_mesh_2x2, 4)]
