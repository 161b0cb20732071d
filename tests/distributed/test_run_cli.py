"""spx.distributed.run: torchrun's flags and defaults, PET_* variables, and clear errors."""

import ast
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from spx.distributed import run
from spx.distributed.elastic.multiprocessing.logs import Std
from tests.distributed.elastic._helpers import SPX_RUN, clean_env

torch_run = pytest.importorskip("torch.distributed.run")


@pytest.fixture(autouse=True)
def _tmpdir(tmp_path, monkeypatch):
    """Log directories made while resolving configurations go to tmp_path, not /tmp."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))


def _options(parser):
    return {tuple(a.option_strings) or (a.dest,): a for a in parser._actions if a.dest != "help"}


def test_every_torchrun_flag_with_both_spellings_and_its_default(monkeypatch):
    for key in [k for k in os.environ if k.startswith("PET_")]:
        monkeypatch.delenv(key)
    ours = _options(run.get_args_parser())
    theirs = _options(torch_run.get_args_parser())
    missing = set(theirs) - set(ours)
    assert not missing, f"torchrun flags spx-run lacks: {missing}"
    for names, action in theirs.items():
        assert ours[names].default == action.default, names
        assert ours[names].dest == action.dest, names
    assert set(ours) - set(theirs) == {("--threads",)}


def test_parse_matches_torchrun_on_a_full_command_line(monkeypatch):
    for key in [k for k in os.environ if k.startswith("PET_")]:
        monkeypatch.delenv(key)
    argv = shlex.split(
        "--nnodes=2 --nproc_per_node=3 --node_rank 1 --master_addr 10.0.0.2 --master-port 1234 "
        "--max_restarts 2 --monitor_interval 0.5 --role trainer --log_dir /tmp/x -r 0:1,1:2 "
        "-t 3 --local_ranks_filter 0,2 --rdzv_conf timeout=5 --rdzv_id job -m pkg.mod --lr 1"
    )
    ours, theirs = vars(run.parse_args(argv)), vars(torch_run.parse_args(argv))
    for key, value in theirs.items():
        assert ours[key] == value, key  # shutdown_timeout: float here, int in torch, both None
    assert ours["training_script"] == "pkg.mod" and ours["training_script_args"] == ["--lr", "1"]


def test_pet_environment_variables_give_defaults(monkeypatch):
    monkeypatch.setenv("PET_NPROC_PER_NODE", "3")
    monkeypatch.setenv("PET_MAX_RESTARTS", "4")
    monkeypatch.setenv("PET_STANDALONE", "1")
    monkeypatch.setenv("PET_TEE", "3")
    args = run.parse_args(["train.py"])
    assert (args.nproc_per_node, args.max_restarts, args.standalone, args.tee) == (
        "3",
        4,
        True,
        "3",
    )
    # The command line wins over the variable.
    assert run.parse_args(["--max-restarts", "1", "train.py"]).max_restarts == 1


def _config(argv, monkeypatch):
    for key in [k for k in os.environ if k.startswith(("PET_", "OMP_NUM"))]:
        monkeypatch.delenv(key)
    return run.config_from_args(run.parse_args(argv))


def test_static_and_single_node_defaults_follow_torchrun(monkeypatch):
    config, cmd = _config(
        ["--nproc-per-node", "2", "--master-port", "29400", "t.py", "a"], monkeypatch
    )
    assert (config.rdzv_backend, config.master_addr, config.master_port) == (
        "static",
        "127.0.0.1",
        29400,
    )
    assert config.run_id == "none" and config.omp_num_threads == "1"
    assert cmd == [sys.executable, "-u", "t.py", "a"]
    # One node without --master-port: torchrun's "c10d on localhost:0" (free port, random id).
    config, _ = _config(["t.py"], monkeypatch)
    assert config.rdzv_backend == "c10d" and config.master_addr == "localhost"
    assert config.master_port > 0 and len(config.run_id) == 36 and config.omp_num_threads is None
    config, _ = _config(["--rdzv-endpoint", "127.0.0.2:29411", "t.py"], monkeypatch)
    assert (config.master_addr, config.master_port) == ("127.0.0.2", 29411)


def test_worker_command_matches_torchrun(monkeypatch):
    for argv in (["t.py", "--x", "1"], ["-m", "pkg.mod", "y"], ["--no-python", "./prog", "z"]):
        args = run.parse_args(["--master-port", "29400", *argv])
        _, cmd = run.config_from_args(args)
        _, t_cmd, t_args = torch_run.config_from_args(torch_run.parse_args(argv))
        assert cmd == [t_cmd, *t_args], argv


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--rdzv-backend", "etcd", "t.py"], "--rdzv-backend='etcd' is not supported"),
        (["--nproc-per-node", "0", "t.py"], "--nproc-per-node=0"),
        (["--nproc-per-node", "xpu", "t.py"], "'xpu' is not supported"),
        (["--nnodes", "0", "t.py"], "must be positive"),
        (["--nnodes", "two", "t.py"], "expected a number of nodes N"),
        (["--nnodes", "1:4", "t.py"], "fixed number of nodes"),
        (["--nnodes", "2", "--node-rank", "2", "t.py"], "--node-rank=2 is out of range"),
        (["--nnodes", "2", "--rdzv-backend", "c10d", "t.py"], "static rendezvous only"),
        (["--no-python", "-m", "t.py"], "--no-python' flag and the '--module'"),
        (["--redirects", "4", "t.py"], "is not a stream setting"),
        (["--local-ranks-filter", "a,b", "t.py"], "comma-separated list of integers"),
        (["--max-restarts", "-1", "t.py"], "--max-restarts=-1"),
        (["--threads", "--nnodes", "2", "t.py"], "--threads runs every rank"),
        (["--numa-binding", "node", "t.py"], "not supported by spx-run"),
        (["--rdzv-conf", "timeout", "t.py"], "must have a value"),
        (["--nnodes", "2", "--master-port", "65535", "t.py"], "MASTER_PORT + 1"),
    ],
)
def test_bad_input_is_rejected_with_a_clear_message(argv, needle, monkeypatch):
    with pytest.raises(ValueError, match=None) as info:
        _config(argv, monkeypatch)
    assert needle in str(info.value)


def test_cli_reports_bad_input_with_exit_code_2():
    out = subprocess.run(
        [*SPX_RUN, "--rdzv-backend", "etcd", "--nproc-per-node", "0", "t.py"],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
    )
    assert out.returncode == 2
    assert "spx-run: error:" in out.stderr and "--nproc-per-node=0" in out.stderr


def test_stream_settings():
    assert Std.from_str("3") == Std.ALL
    assert Std.from_str("0:1,1:2") == {0: Std.OUT, 1: Std.ERR}


def test_parsing_never_starts_jax():
    """The launcher resolves a full configuration without initializing a JAX backend."""
    code = (
        "from spx.distributed import run\n"
        "run.config_from_args(run.parse_args(['--nproc-per-node', 'auto', 't.py']))\n"
        "from jax._src import xla_bridge\n"
        "assert not xla_bridge.backends_are_initialized()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_launcher_modules_import_only_the_standard_library_and_each_other():
    """spx-run's own modules never import jax (nor spx modules that do) at import time."""
    root = Path(run.__file__).parent
    files = [root / "run.py", *sorted((root / "elastic").rglob("*.py"))]
    allowed_spx = ("spx.distributed.elastic",)
    lazy_ok = {"threads.py", "thread_overlay.py"}  # --threads needs JAX by definition
    for path in files:
        if path.name in lazy_ok:
            continue
        tree = ast.parse(path.read_text())
        for node in tree.body:  # module level only: function-level imports are lazy
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert not name.startswith(("jax", "numpy")), (path, name)
                if name.startswith("spx"):
                    assert name.startswith(allowed_spx), (path, name)


def test_console_script_with_pet_variables(tmp_path):
    """The installed ``spx-run`` entry point, configured only through PET_* variables."""
    exe = Path(sys.executable).with_name("spx-run")
    (tmp_path / "w.py").write_text("import os\nprint('rank', os.environ['RANK'], flush=True)\n")
    env = clean_env(PET_NPROC_PER_NODE="3", PET_TEE="1", PET_MASTER_PORT="29555")
    out = subprocess.run(
        [str(exe), "w.py"], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.splitlines()) == [f"[default{r}]:rank {r}" for r in range(3)]
