"""The worker environment and command line under spx-run equal torchrun's (run side by side)."""

import json
import os
import sys
from pathlib import Path

import pytest

from tests.distributed.elastic._helpers import SPX_RUN, TORCHRUN, clean_env, free_ports, run, script

pytest.importorskip("torch")

DUMP = """
import json, os, sys
out = sys.argv[1]
with open(f"{out}.{os.environ['RANK']}.json", "w") as f:
    json.dump({"env": dict(os.environ), "argv": sys.argv[1:], "orig": sys.orig_argv[1:]}, f)
"""

# Values that legitimately differ between two launches: temp paths (error files), and, where the
# launcher picks them, the run id and the port.
PER_RUN = {"TORCHELASTIC_ERROR_FILE"}
# Deliberate differences (see spx/distributed/elastic/worker_env.py).
SPX_ONLY = {"JAX_NUM_CPU_DEVICES": "1"}
SPX_VALUES = {"TORCHELASTIC_USE_AGENT_STORE": ("False", "True")}


def _dumps(prefix: Path, n: int) -> list[dict]:
    return [json.loads(Path(f"{prefix}.{r}.json").read_text()) for r in range(n)]


def _launch_both(tmp_path, flags, target, nproc, env=None):
    results = {}
    for name, launcher in (("spx", SPX_RUN), ("torch", TORCHRUN)):
        out = tmp_path / name
        proc = run([*launcher, *flags, *target, str(out)], env=env, cwd=tmp_path, timeout=120)
        assert proc.returncode == 0, f"{name}: {proc.stderr}"
        results[name] = (_dumps(out, nproc), proc.stderr)
    return results


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _compare(spx: dict, torch: dict, per_run=frozenset()) -> None:
    # Several CPU workers on one node: each gets its share of the cores for XLA's thread pools.
    local = int(torch["LOCAL_WORLD_SIZE"])
    threads = spx.pop("PJRT_NPROC", None)
    assert threads == (str(max(1, _cores() // local)) if local > 1 else None), threads
    assert "PJRT_NPROC" not in torch
    for key, value in SPX_ONLY.items():
        assert spx.pop(key) == value and key not in torch
    for key, (ours, theirs) in SPX_VALUES.items():
        assert (spx.pop(key), torch.pop(key)) == (ours, theirs)
    assert sorted(spx) == sorted(torch)
    for key in spx:
        if key in PER_RUN | per_run:
            continue
        assert spx[key] == torch[key], (key, spx[key], torch[key])


def test_environment_and_command_equal_torchruns(tmp_path):
    script(tmp_path, "dump.py", DUMP)
    port = free_ports()
    flags = ["--nproc-per-node", "2", "--master-port", str(port), "--max-restarts", "1"]
    got = _launch_both(tmp_path, flags, ["dump.py"], 2)
    for rank in range(2):
        spx, torch = got["spx"][0][rank], got["torch"][0][rank]
        assert spx["orig"][:2] == torch["orig"][:2] == ["-u", "dump.py"]
        assert spx["argv"] == [str(tmp_path / "spx")] and torch["argv"] == [str(tmp_path / "torch")]
        threads = spx["env"]["PJRT_NPROC"]
        _compare(spx["env"], torch["env"])
        assert spx["env"]["RANK"] == spx["env"]["LOCAL_RANK"] == str(rank)
        assert spx["env"]["MASTER_PORT"] == str(port) and spx["env"]["OMP_NUM_THREADS"] == "1"
        assert spx["env"]["TORCHELASTIC_ERROR_FILE"].endswith(f"/attempt_0/{rank}/error.json")
    # torchrun's OMP_NUM_THREADS warning, in the same words, and spx-run's for XLA's threads.
    warning = "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default"
    assert warning in got["spx"][1] and warning in got["torch"][1]
    ours = f"Setting PJRT_NPROC (the threads of XLA's CPU runtime) for each process to {threads},"
    assert ours in got["spx"][1]


def test_single_node_default_rendezvous_matches_torchrun(tmp_path):
    """No --master-port on one node: a free port and a random run id, as torchrun."""
    script(tmp_path, "dump.py", DUMP)
    got = _launch_both(tmp_path, [], ["dump.py"], 1)
    spx, torch = got["spx"][0][0]["env"], got["torch"][0][0]["env"]
    _compare(spx, torch, per_run={"MASTER_PORT", "TORCHELASTIC_RUN_ID", "MASTER_ADDR"})
    assert spx["MASTER_ADDR"] == "localhost"  # torch: socket.getfqdn(); spx keeps one node local
    assert int(spx["MASTER_PORT"]) > 0 and len(spx["TORCHELASTIC_RUN_ID"]) == 36
    assert "OMP_NUM_THREADS" not in spx and "OMP_NUM_THREADS" not in torch


def test_module_and_no_python_commands_equal_torchruns(tmp_path):
    pkg = tmp_path / "dumppkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "dump.py").write_text(DUMP)
    port = str(free_ports())
    env = clean_env(PYTHONPATH=str(tmp_path))
    got = _launch_both(tmp_path, ["--master-port", port, "-m"], ["dumppkg.dump"], 1, env=env)
    spx, torch = got["spx"][0][0], got["torch"][0][0]
    assert spx["orig"][:3] == torch["orig"][:3] == ["-u", "-m", "dumppkg.dump"]
    _compare(spx["env"], torch["env"])

    prog = script(tmp_path, "prog", f"#!{sys.executable}\n{DUMP}")
    prog.chmod(0o755)
    got = _launch_both(tmp_path, ["--master-port", port, "--no-python"], [str(prog)], 1)
    spx, torch = got["spx"][0][0], got["torch"][0][0]
    assert spx["orig"][0] == torch["orig"][0] == str(prog)  # run directly, no "python -u"
    _compare(spx["env"], torch["env"])


def test_user_settings_are_kept(tmp_path):
    """OMP_NUM_THREADS and a JAX CPU device count chosen by the user reach workers unchanged,
    and several CPU devices per process get XLA's default thread pools (their collectives need a
    thread per device)."""
    script(tmp_path, "dump.py", DUMP)
    env = clean_env(OMP_NUM_THREADS="3", XLA_FLAGS="--xla_force_host_platform_device_count=2")
    env.pop("PJRT_NPROC", None)
    out = tmp_path / "o"
    proc = run([*SPX_RUN, "--nproc-per-node", "2", "dump.py", str(out)], env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for dump in _dumps(out, 2):
        assert dump["env"]["OMP_NUM_THREADS"] == "3"
        assert "JAX_NUM_CPU_DEVICES" not in dump["env"]
        assert "PJRT_NPROC" not in dump["env"]
        assert "TPU_SKIP_MDS_QUERY" not in dump["env"]  # what `import jax` adds stays home
    assert "OMP_NUM_THREADS" not in proc.stderr
    assert os.environ.get("RANK") is None


def test_user_pjrt_nproc_is_kept(tmp_path):
    """A PJRT_NPROC the user set reaches every worker unchanged, without spx-run's warning."""
    script(tmp_path, "dump.py", DUMP)
    env = clean_env(PJRT_NPROC="3")
    out = tmp_path / "o"
    proc = run([*SPX_RUN, "--nproc-per-node", "2", "dump.py", str(out)], env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [d["env"]["PJRT_NPROC"] for d in _dumps(out, 2)] == ["3", "3"]
    assert "PJRT_NPROC" not in proc.stderr
