"""--tee, --redirects, --log-dir layout and --local-ranks-filter, as torchrun's."""

import io
import os
import re
import time

import pytest

from spx.distributed.elastic.multiprocessing.logs import LogsSpecs, Std
from spx.distributed.elastic.multiprocessing.tail_log import TailLog, line_prefix
from tests.distributed.elastic._helpers import SPX_RUN, TORCHRUN, clean_env, free_ports, run, script

TALK = """
import os, sys
r = os.environ["LOCAL_RANK"]
print(f"out of {r}", flush=True)
print(f"err of {r}", file=sys.stderr, flush=True)
print("partial line without newline", end="")
"""


def _spx(tmp_path, *flags, env=None):
    script(tmp_path, "talk.py", TALK)
    args = [*SPX_RUN, "--nproc-per-node", "2", "--master-port", str(free_ports()), *flags]
    proc = run([*args, "talk.py"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc


def _run_dir(log_dir):
    (run_dir,) = [d for d in os.listdir(log_dir) if d.startswith("none_")]
    return log_dir / run_dir


def test_tee_prefixes_lines_like_torchrun_and_writes_the_layout(tmp_path):
    logs = tmp_path / "logs"
    proc = _spx(tmp_path, "--tee", "3", "--log-dir", str(logs))
    for r in (0, 1):
        assert f"[default{r}]:out of {r}\n" in proc.stdout
        assert f"[default{r}]:err of {r}\n" in proc.stderr
        assert f"[default{r}]:partial line without newline\n" in proc.stdout
    attempt = _run_dir(logs) / "attempt_0"
    assert sorted(os.listdir(attempt)) == ["0", "1"]
    for r in (0, 1):
        assert sorted(os.listdir(attempt / str(r))) == ["stderr.log", "stdout.log"]
        # The files hold the raw lines: no prefix.
        assert (attempt / str(r) / "stdout.log").read_text() == (
            f"out of {r}\npartial line without newline"
        )
        assert (attempt / str(r) / "stderr.log").read_text() == f"err of {r}\n"


def test_tee_prefix_is_torchruns(tmp_path):
    pytest.importorskip("torch")
    # Whole lines only: torchrun writes a partial last line as is (the next prefix then lands
    # mid-line); spx-run ends it with a newline.
    script(tmp_path, "talk.py", TALK.replace('print("partial line without newline", end="")', ""))
    flags = ["--nproc-per-node", "2", "--master-port", str(free_ports()), "--tee", "1"]
    ours = run([*SPX_RUN, *flags, "--role", "trainer", "talk.py"], cwd=tmp_path)
    theirs = run([*TORCHRUN, *flags, "--role", "trainer", "talk.py"], cwd=tmp_path, timeout=120)
    assert sorted(ours.stdout.splitlines()) == sorted(theirs.stdout.splitlines())
    assert "[trainer1]:out of 1" in ours.stdout


def test_redirects_keep_the_console_quiet(tmp_path):
    logs = tmp_path / "logs"
    proc = _spx(tmp_path, "--redirects", "0:1,1:3", "--log-dir", str(logs))
    attempt = _run_dir(logs) / "attempt_0"
    assert "out of" not in proc.stdout
    assert "err of 0" in proc.stderr and "err of 1" not in proc.stderr  # rank 0's stderr stays
    assert (attempt / "0" / "stdout.log").read_text().startswith("out of 0")
    assert not (attempt / "0" / "stderr.log").exists()
    assert (attempt / "1" / "stderr.log").read_text() == "err of 1\n"


def test_local_ranks_filter_shows_only_chosen_ranks_but_logs_all(tmp_path):
    logs = tmp_path / "logs"
    proc = _spx(tmp_path, "--tee", "3", "--local-ranks-filter", "1", "--log-dir", str(logs))
    assert "of 0" not in proc.stdout + proc.stderr
    assert "[default1]:out of 1" in proc.stdout and "[default1]:err of 1" in proc.stderr
    attempt = _run_dir(logs) / "attempt_0"
    assert (attempt / "0" / "stdout.log").read_text().startswith("out of 0")
    # Without tee, a filtered rank's console output is dropped as well.
    proc = _spx(tmp_path, "--local-ranks-filter", "0")
    assert "out of 0" in proc.stdout and "of 1" not in proc.stdout + proc.stderr


def test_restart_writes_a_new_attempt_folder(tmp_path):
    logs = tmp_path / "logs"
    script(
        tmp_path,
        "once.py",
        """
        import os, sys
        print("attempt", os.environ["TORCHELASTIC_RESTART_COUNT"])
        sys.exit(1 if os.environ["TORCHELASTIC_RESTART_COUNT"] == "0" else 0)
        """,
    )
    flags = ["--master-port", str(free_ports()), "--max-restarts", "1", "-r", "1"]
    proc = run(
        [*SPX_RUN, *flags, "--log-dir", str(logs), "--rdzv-id", "job7", "once.py"], cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = os.listdir(logs)
    assert re.fullmatch(r"job7_\w+", run_dir)
    for n in (0, 1):
        assert (
            logs / run_dir / f"attempt_{n}" / "0" / "stdout.log"
        ).read_text() == f"attempt {n}\n"


def test_prefix_template_and_duplicate_filters(tmp_path):
    logs = tmp_path / "logs"
    env = clean_env(TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE="<${role_name}|${rank}|${local_rank}> ")
    proc = _spx(
        tmp_path, "-t", "3", "--duplicate-stdout-filters", "of 1", "--log-dir", str(logs), env=env
    )
    assert "<default|1|1> out of 1" in proc.stdout
    filtered = (_run_dir(logs) / "attempt_0" / "filtered_stdout.log").read_text()
    assert filtered == "<default|1|1> out of 1\n"


def test_log_dir_devnull_gives_an_empty_error_file_variable(tmp_path):
    script(tmp_path, "e.py", "import os\nprint(repr(os.environ['TORCHELASTIC_ERROR_FILE']))\n")
    proc = run(
        [*SPX_RUN, "--master-port", str(free_ports()), "--log-dir", os.devnull, "e.py"],
        cwd=tmp_path,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "''"


def test_tail_log_waits_for_whole_lines(tmp_path):
    path = tmp_path / "f.log"
    out = io.StringIO()
    tail = TailLog({3: str(path)}, out, {3: line_prefix(None, "default", 7, 3)}, interval=0.01)
    tail.start()
    with open(path, "w") as fp:
        fp.write("hel")
        fp.flush()
        time.sleep(0.05)
        fp.write("lo\nwor")
        fp.flush()
        deadline = time.monotonic() + 10
        while not out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # the partial "wor" must keep waiting for its newline
    assert out.getvalue() == "[default3]:hello\n"
    tail.stop()
    assert out.getvalue() == "[default3]:hello\n[default3]:wor\n"


def test_logs_specs_layout_matches_torchs(tmp_path):
    pytest.importorskip("torch")
    from torch.distributed.elastic.multiprocessing.api import DefaultLogsSpecs
    from torch.distributed.elastic.multiprocessing.api import Std as TStd

    base = str(tmp_path)

    def envs():
        return {r: {"TORCHELASTIC_RUN_ID": "j", "TORCHELASTIC_RESTART_COUNT": "2"} for r in (0, 1)}

    ours_env, theirs_env = envs(), envs()
    ours = LogsSpecs(base + "/a", {0: Std.OUT}, {1: Std.ALL}, {1}).reify(ours_env)
    theirs = DefaultLogsSpecs(base + "/b", {0: TStd.OUT}, {1: TStd.ALL}, {1}).reify(theirs_env)

    def rel(d, root):
        return {
            k: (v.split(root)[-1].split("/", 2)[-1] if v.startswith(base) else v)
            for k, v in d.items()
        }

    for field in ("stdouts", "stderrs", "tee_stdouts", "tee_stderrs", "error_files"):
        assert rel(getattr(ours, field), "/a/") == rel(getattr(theirs, field), "/b/"), field
    assert rel({0: ours_env[0]["TORCHELASTIC_ERROR_FILE"]}, "/a/") == rel(
        {0: theirs_env[0]["TORCHELASTIC_ERROR_FILE"]}, "/b/"
    )
