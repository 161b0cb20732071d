"""Failures: restarts with the count visible, the root-cause report, and exit code 1."""

import json
import os
import re
from pathlib import Path

from tests.distributed.elastic._helpers import SPX_RUN, free_ports, run, script


def _flags(*extra: str) -> list[str]:
    return ["--master-port", str(free_ports()), "--shutdown-timeout", "5", *extra]


def test_restart_after_an_injected_failure_raises_the_restart_count(tmp_path):
    script(
        tmp_path,
        "flaky.py",
        """
        import os, sys
        attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
        rank = os.environ["RANK"]
        with open(f"seen.{rank}", "a") as f:
            f.write(f"{attempt} {os.environ['TORCHELASTIC_MAX_RESTARTS']}\\n")
        if rank == "1" and attempt < 2:
            sys.exit(3)  # fails twice, then succeeds
        """,
    )
    proc = run(
        [*SPX_RUN, *_flags("--nproc-per-node", "2", "--max-restarts", "3"), "flaky.py"],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    for rank in (0, 1):
        lines = (tmp_path / f"seen.{rank}").read_text().split("\n")
        assert lines[:3] == ["0 3", "1 3", "2 3"], lines  # the whole group restarted each time
    assert proc.stderr.count("Worker group FAILED") == 2
    assert "3/3 attempts left" in proc.stderr and "2/3 attempts left" in proc.stderr


def test_no_restarts_left_gives_the_root_cause_report_and_exit_code_1(tmp_path):
    script(
        tmp_path,
        "boom.py",
        """
        import os, time
        import spx  # its exception hook writes the error file: no @record needed
        if os.environ["RANK"] == "1":
            def inner():
                raise ValueError("boom at rank 1")
            inner()
        time.sleep(60)  # rank 0 waits: spx-run must stop it
        """,
    )
    proc = run(
        [*SPX_RUN, *_flags("--nproc-per-node", "2", "--max-restarts", "1"), "boom.py"],
        cwd=tmp_path,
        timeout=90,
    )
    assert proc.returncode == 1
    err = proc.stderr
    assert "boom.py FAILED" in err
    root = err.split("Root Cause (first observed failure):")[1]
    assert re.search(r"rank\s+: 1 \(local_rank: 1\)", root)
    assert re.search(r"exitcode\s+: 1 \(pid: \d+\)", root)
    assert re.search(r"time\s+: \d{4}-\d\d-\d\d_\d\d:\d\d:\d\d", root)
    assert re.search(r"host\s+: \S+", root)
    assert "attempt_1/1/error.json" in root  # the second attempt's file
    assert 'raise ValueError("boom at rank 1")' in root and "in inner" in root
    assert "ValueError: boom at rank 1" in root
    # The other worker is listed as stopped by spx-run.
    others = err.split("Failures:")[1].split("Root Cause")[0]
    assert re.search(r"rank\s+: 0 .*\n.*exitcode\s+: -15 .*\(SIGTERM\)", others)
    # The error file is torch's format.
    path = re.search(r"error_file: (\S+)", root).group(1)
    data = json.loads(Path(path).read_text())
    assert data["message"]["message"] == "ValueError: boom at rank 1"
    assert "py_callstack" in data["message"]["extraInfo"]


def test_record_decorator_fills_the_report_without_importing_spx_first(tmp_path):
    script(
        tmp_path,
        "rec.py",
        """
        from spx.distributed.elastic.multiprocessing.errors import record

        @record
        def main():
            raise KeyError("missing key")

        main()
        """,
    )
    proc = run([*SPX_RUN, *_flags(), "rec.py"], cwd=tmp_path)
    assert proc.returncode == 1
    root = proc.stderr.split("Root Cause (first observed failure):")[1]
    assert "KeyError: 'missing key'" in root and "in main" in root


def test_a_failure_without_error_file_reports_exit_code_and_stderr_tail(tmp_path):
    prog = script(
        tmp_path,
        "prog.sh",
        """\
        #!/bin/sh
        echo "line one of the last words" >&2
        echo "the very last words of rank $RANK" >&2
        exit 7
        """,
    )
    prog.chmod(0o755)
    proc = run([*SPX_RUN, *_flags("--no-python"), str(prog)], cwd=tmp_path)
    assert proc.returncode == 1
    root = proc.stderr.split("Root Cause (first observed failure):")[1]
    assert re.search(r"exitcode\s+: 7 ", root)
    assert "error_file: <N/A>" in root
    assert "the very last words of rank 0" in root and "line one" in root
    # The worker's stderr also reached the console unchanged (passed through, not swallowed).
    assert proc.stderr.index("the very last words") < proc.stderr.index("Root Cause")


def test_a_worker_killed_by_a_signal_is_reported_with_the_signal(tmp_path):
    script(tmp_path, "kill9.py", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    proc = run([*SPX_RUN, *_flags(), "kill9.py"], cwd=tmp_path)
    assert proc.returncode == 1
    root = proc.stderr.split("Root Cause (first observed failure):")[1]
    assert "exitcode  : -9" in root and "(SIGKILL)" in root
    assert "Signal 9 (SIGKILL) received by PID" in root


def test_success_exits_0_and_removes_its_temporary_log_dir(tmp_path):
    script(tmp_path, "ok.py", "import os\nprint(os.environ['TORCHELASTIC_ERROR_FILE'])\n")
    proc = run([*SPX_RUN, *_flags("--nproc-per-node", "2"), "ok.py"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    paths = proc.stdout.split()
    assert len(paths) == 2 and all(p.startswith("/") for p in paths)
    root = paths[0].split("/none_")[0]
    assert not os.path.exists(root)  # the temporary root spx-run made is gone


def test_run_path_runs_the_script_in_a_python_spx_starts_and_records_the_failure(tmp_path):
    script(tmp_path, "rp.py", "import sys\nraise RuntimeError('via run_path ' + sys.argv[1])\n")
    proc = run([*SPX_RUN, *_flags("--run-path"), "rp.py", "arg1"], cwd=tmp_path)
    assert proc.returncode == 1
    root = proc.stderr.split("Root Cause (first observed failure):")[1]
    assert "RuntimeError: via run_path arg1" in root and "error.json" in root


def test_a_program_that_cannot_start_is_a_clear_error(tmp_path):
    proc = run([*SPX_RUN, *_flags("--no-python"), "./no-such-program"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "could not start local rank 0" in proc.stderr and "Traceback" not in proc.stderr


def test_a_group_restart_after_a_killed_rank_takes_seconds_not_the_grace_period(tmp_path):
    # Rank 1 dies without a word while rank 0 waits for it in a key-value wait (which never
    # notices a dead peer): spx-run must SIGTERM rank 0, which JAX's preemption service would
    # survive until the SIGKILL 30 s later. spx ranks end on SIGTERM, so the restart is prompt.
    script(
        tmp_path,
        "killed.py",
        """
        import os, signal, time
        import spx.distributed as dist
        attempt = os.environ["TORCHELASTIC_RESTART_COUNT"]
        with open(f"start.{os.environ['RANK']}.{attempt}", "w") as f:
            f.write(repr(time.time()))
        dist.init_process_group()
        rank = dist.get_rank()
        dist.barrier()
        if attempt == "0":
            if rank == 1:
                with open("killed", "w") as f:
                    f.write(repr(time.time()))
                os.kill(os.getpid(), signal.SIGKILL)
            dist.all_gather_object([None, None], rank)
        print(f"rank {rank} done in attempt {attempt}", flush=True)
        """,
    )
    flags = ["--nproc-per-node", "2", "--max-restarts", "1", "--shutdown-timeout", "30"]
    proc = run(
        [*SPX_RUN, "--master-port", str(free_ports()), *flags, "killed.py"],
        cwd=tmp_path,
        timeout=150,
    )
    assert proc.returncode == 0, proc.stderr
    assert "rank 0 done in attempt 1" in proc.stdout and "rank 1 done in attempt 1" in proc.stdout
    assert "[rank 0] spx.distributed: received SIGTERM; aborting" in proc.stderr
    killed = float((tmp_path / "killed").read_text())
    restarted = min(float((tmp_path / f"start.{r}.1").read_text()) for r in (0, 1))
    assert restarted - killed < 10.0, f"restart took {restarted - killed:.1f} s\n{proc.stderr}"


def test_the_root_cause_is_the_worker_that_ended_first_within_one_monitor_interval(tmp_path):
    # Rank 1 is killed; rank 0 notices and raises (writing an error file) a moment later. Both
    # exits fall in one monitor interval: the report must name rank 1, not the victim that
    # happens to have the lower rank and an error file.
    script(
        tmp_path,
        "culprit.py",
        """
        import os, signal, time
        import spx  # the error file of rank 0's exception
        if os.environ["RANK"] == "1":
            with open("pid.tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename("pid.tmp", "pid.1")
            time.sleep(0.3)
            os.kill(os.getpid(), signal.SIGKILL)
        while not os.path.exists("pid.1"):
            time.sleep(0.01)
        stat = f"/proc/{open('pid.1').read()}/stat"
        while os.path.exists(stat) and open(stat).read().rsplit(")", 1)[1].split()[0] != "Z":
            time.sleep(0.01)
        raise RuntimeError("rank 0 saw rank 1 die")
        """,
    )
    flags = ["--nproc-per-node", "2", "--monitor-interval", "2"]
    proc = run([*SPX_RUN, *_flags(*flags), "culprit.py"], cwd=tmp_path, timeout=60)
    assert proc.returncode == 1
    assert "RuntimeError: rank 0 saw rank 1 die" in proc.stderr  # both failures were seen
    root = proc.stderr.split("Root Cause (first observed failure):")[1]
    assert re.search(r"rank\s+: 1 \(local_rank: 1\)", root), proc.stderr
    assert "exitcode  : -9" in root
