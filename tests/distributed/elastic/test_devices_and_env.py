"""GPU counting without JAX, --nproc-per-node words, device ids per worker, rank assignment."""

import json
import os
import stat

import pytest

from spx.distributed.elastic import devices
from spx.distributed.elastic import worker_env as worker_env_module
from spx.distributed.elastic.worker_env import (
    GroupInfo,
    NodeInfo,
    assign_worker_ranks,
    substitute_local_rank,
    worker_env,
    xla_cpu_threads,
)
from tests.distributed.elastic._helpers import SPX_RUN, clean_env, free_ports, run, script

FAKE_SMI = """#!/bin/sh
[ "$1" = "-L" ] || exit 2
echo "GPU 0: NVIDIA H200 (UUID: GPU-aaaa)"
echo "  MIG 1g.18gb     Device  0: (UUID: MIG-bbbb)"
echo "GPU 1: NVIDIA H200 (UUID: GPU-cccc)"
echo "GPU 2: NVIDIA H200 (UUID: GPU-dddd)"
echo "GPU 3: NVIDIA H200 (UUID: GPU-eeee)"
"""


@pytest.fixture
def fake_gpus(tmp_path, monkeypatch):
    """A fake ``nvidia-smi`` listing 4 GPUs first on PATH (this machine has none)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    path = f"{bindir}:{os.environ['PATH']}"
    monkeypatch.setenv("PATH", path)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return path


def test_gpus_are_counted_from_nvidia_smi_and_narrowed_by_cuda_visible_devices(
    fake_gpus, monkeypatch
):
    assert devices.count_gpus() == 4  # MIG lines are not GPUs
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert devices.count_gpus() == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,-1,3")  # CUDA stops at an invalid entry
    assert devices.count_gpus() == 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert devices.count_gpus() == 0


def test_nproc_words(fake_gpus, monkeypatch):
    assert devices.determine_local_world_size("gpu") == 4
    assert devices.determine_local_world_size("auto") == 4
    assert devices.determine_local_world_size("cpu") == len(os.sched_getaffinity(0))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(ValueError, match="no NVIDIA GPU found on this node"):
        devices.determine_local_world_size("gpu")
    assert devices.determine_local_world_size("auto") == len(os.sched_getaffinity(0))


def test_local_device_ids_split_gpus_evenly():
    assert [devices.local_device_ids(r, 2, 4) for r in range(2)] == [[0, 1], [2, 3]]
    assert [devices.local_device_ids(r, 4, 4) for r in range(4)] == [[0], [1], [2], [3]]
    assert [devices.local_device_ids(r, 3, 2) for r in range(3)] == [[0], [1], [0]]
    assert devices.local_device_ids(0, 2, 0) is None


def _workers_env(tmp_path, env, args, keys):
    """Run spx-run with ``args`` on a script that dumps ``keys`` of each worker's environment;
    returns the launcher's process and one dict per global rank."""
    script(
        tmp_path,
        "d.py",
        "import json, os\n"
        f"json.dump({{k: os.environ.get(k) for k in {tuple(keys)!r}}}, "
        "open('d.' + os.environ['RANK'], 'w'))\n",
    )
    proc = run([*SPX_RUN, *args, "d.py"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    n = len(list(tmp_path.glob("d.[0-9]*")))
    return proc, [json.loads((tmp_path / f"d.{r}").read_text()) for r in range(n)]


def test_workers_get_their_device_ids(tmp_path, fake_gpus):
    keys = ("SPX_LOCAL_DEVICE_IDS", "LOCAL_RANK", "CUDA_VISIBLE_DEVICES")
    env = clean_env(PATH=fake_gpus)
    port = str(free_ports())
    _, got = _workers_env(tmp_path, env, ["--nproc-per-node", "gpu", "--master-port", port], keys)
    assert [g["SPX_LOCAL_DEVICE_IDS"] for g in got] == ["0", "1", "2", "3"]
    assert all(g["CUDA_VISIBLE_DEVICES"] is None for g in got)  # as torchrun: not narrowed
    # --virtual-local-rank: one GPU per worker, seen as device 0.
    proc = run(
        [*SPX_RUN, "--nproc-per-node", "2", "--virtual-local-rank", "--master-port", port, "d.py"],
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    got = [json.loads((tmp_path / f"d.{r}").read_text()) for r in range(2)]
    assert [
        (g["LOCAL_RANK"], g["CUDA_VISIBLE_DEVICES"], g["SPX_LOCAL_DEVICE_IDS"]) for g in got
    ] == [
        ("0", "0", "0"),
        ("0", "1", "0"),
    ]


def test_no_device_ids_on_a_cpu_node():
    group = GroupInfo("default", 2, 0, 1, "127.0.0.1", 29500, 0, 0, "none")
    env = worker_env(assign_worker_ranks([NodeInfo("default", 2)], 0)[1], group, {})
    assert "SPX_LOCAL_DEVICE_IDS" not in env and env["JAX_NUM_CPU_DEVICES"] == "1"


def test_rank_assignment_matches_torchs_for_mixed_nodes():
    """Nodes of different sizes and roles: torch's cumulative-sum algorithm."""
    nodes = [NodeInfo("trainer", 2), NodeInfo("reader", 3), NodeInfo("trainer", 1)]
    w = assign_worker_ranks(nodes, 2)
    assert [(x.global_rank, x.role_rank, x.world_size, x.role_world_size) for x in w] == [
        (5, 2, 6, 3)
    ]
    w = assign_worker_ranks(nodes, 1)
    assert [(x.global_rank, x.role_rank) for x in w] == [(2, 0), (3, 1), (4, 2)]


def test_local_rank_macro():
    assert substitute_local_rank(["--local-rank=${local_rank}", "$local_rank", "x"], 3) == [
        "--local-rank=3",
        "3",
        "x",
    ]


def test_workers_sharing_a_gpu_split_jaxs_preallocation():
    """2 workers on 1 GPU: each takes 0.375 of it instead of JAX's 0.75 (the second would OOM)."""
    group = GroupInfo("default", 2, 0, 1, "127.0.0.1", 29500, 0, 0, "none", num_gpus=1)
    workers = assign_worker_ranks([NodeInfo("default", 2)], 0)
    envs = [worker_env(w, group, {}) for w in workers]
    assert [e["SPX_LOCAL_DEVICE_IDS"] for e in envs] == ["0", "0"]
    assert [e["XLA_PYTHON_CLIENT_MEM_FRACTION"] for e in envs] == ["0.375", "0.375"]
    # One GPU each: JAX's default stays.
    group4 = GroupInfo("default", 2, 0, 1, "127.0.0.1", 29500, 0, 0, "none", num_gpus=4)
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" not in worker_env(workers[1], group4, {})
    # The user's own memory setting wins.
    env = worker_env(workers[1], group, {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" not in env


def test_the_runtime_takes_the_gpus_spx_run_names(monkeypatch):
    """init_process_group passes SPX_LOCAL_DEVICE_IDS to jax.distributed.initialize; before, it
    ignored them, and with CUDA_VISIBLE_DEVICES set every rank took the node's first GPU."""
    from spx.distributed.multiprocess import runtime

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    monkeypatch.setenv("SPX_LOCAL_DEVICE_IDS", "2,3")
    assert runtime._local_gpu_ids(local_rank=1) == [2, 3]
    monkeypatch.setenv("SPX_LOCAL_DEVICE_IDS", "two")
    with pytest.raises(ValueError, match=r"SPX_LOCAL_DEVICE_IDS='two': expected comma-separated"):
        runtime._local_gpu_ids(local_rank=1)
    # Under torchrun (no ids named), torch's convention: GPU LOCAL_RANK.
    monkeypatch.delenv("SPX_LOCAL_DEVICE_IDS")
    monkeypatch.setattr(runtime, "_has_gpu_plugin", lambda: True)
    assert runtime._local_gpu_ids(local_rank=1) == [1]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")  # the scheduler already gave it one GPU
    assert runtime._local_gpu_ids(local_rank=1) is None
    monkeypatch.setattr(runtime, "_has_gpu_plugin", lambda: False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert runtime._local_gpu_ids(local_rank=1) is None


def test_more_workers_than_gpus_warn_and_share_memory(tmp_path, fake_gpus):
    """6 workers on 4 GPUs: spx-run says collectives will fail (NCCL: one GPU per rank), the
    workers share GPUs round-robin and split JAX's preallocation."""
    keys = ("SPX_LOCAL_DEVICE_IDS", "XLA_PYTHON_CLIENT_MEM_FRACTION")
    env = clean_env(PATH=fake_gpus)
    port = str(free_ports())
    proc, got = _workers_env(tmp_path, env, ["--nproc-per-node", "6", "--master-port", port], keys)
    assert "6 workers share 4 GPU(s) of this node" in proc.stderr
    assert [g["SPX_LOCAL_DEVICE_IDS"] for g in got] == ["0", "1", "2", "3", "0", "1"]
    # GPUs 0 and 1 hold two workers each, GPUs 2 and 3 one: only the sharers split memory.
    assert [g["XLA_PYTHON_CLIENT_MEM_FRACTION"] for g in got] == [
        "0.375",
        "0.375",
        None,
        None,
        "0.375",
        "0.375",
    ]


def test_xla_threads_are_each_cpu_workers_share_of_the_cores():
    share = str(max(1, worker_env_module._cores() // 2))
    assert xla_cpu_threads(2, 0, {}) == share
    assert xla_cpu_threads(1, 0, {}) is None  # one worker: XLA's default
    assert xla_cpu_threads(2, 4, {}) is None  # a GPU node
    assert xla_cpu_threads(2, 0, {"PJRT_NPROC": "3"}) is None  # the user's, passed through
    assert xla_cpu_threads(2, 0, {"JAX_NUM_CPU_DEVICES": "4"}) is None  # a thread per device
    assert xla_cpu_threads(64, 0, {}) == "1"  # never below one
