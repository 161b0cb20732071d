"""A failing rank stops the whole multi-process job within seconds, and says where it failed.

Real processes under a torchrun-style environment, no launcher: the ranks must stop by
themselves (a launcher would also kill them). Each test launches one small job from
``tests/distributed/scripts/`` and checks exit codes, what the ranks printed, and how long the
other ranks outlived the failure.
"""

from __future__ import annotations

import re
import signal

import pytest

from spx.distributed.pipelining.tables.ir import FULL_BACKWARD, _Action
from spx.distributed.pipelining.tables.lowering import _lower_schedule
from spx.distributed.pipelining.tables.orders import one_f_one_b_order
from tests.distributed import _procs

SCRIPTS = "tests/distributed/scripts"
# The others may outlive the failing rank by a watchdog period or two, plus rank 0's linger
# (it hosts the coordination service) and scheduling noise on a loaded 2-core machine.
STOP_WITHIN = 6.0


@pytest.mark.parametrize(("pp", "fail_rank", "mb"), [(2, 1, 0), (4, 2, 1)])
def test_pipeline_failure_reports_the_step_and_stops_every_rank(pp, fail_rank, mb):
    argv = [f"{SCRIPTS}/failing_pipeline.py", "1F1B", str(fail_rank), "1", str(mb)]
    runs = _procs.launch(argv, pp, timeout=120)
    log = _procs.logs(runs)
    assert all(r.returncode == 1 for r in runs), log
    # Step 0 ran everywhere; the failure is in step 1.
    assert all("step 0 done" in r.stdout and "step 1 done" not in r.stdout for r in runs), log
    # The step is the index of the failing B in the rank's lowered table (computed here from
    # the schedule's table, independently of the runtime).
    table = _lower_schedule(one_f_one_b_order(pp, pp, 4), pp, 4, unshard_reshard=False)
    action = _Action(fail_rank, FULL_BACKWARD, mb)
    step = table[fail_rank].index(action)
    failing = runs[fail_rank].stderr
    header = (
        f"[Rank {fail_rank}] pipeline schedule Schedule1F1B failed at step {step} running "
        f"action {action}: RuntimeError: injected failure in the backward of microbatch {mb}"
    )
    assert header in failing, log
    marked = [line for line in failing.splitlines() if line.endswith("<-- ERROR HERE")]
    assert marked and re.match(rf"Step {step:02d}: .*\b{action}\b", marked[0]), log
    # The others stop on their own, soon, and name the root cause.
    for r in runs:
        assert r.seconds - runs[fail_rank].seconds < STOP_WITHIN, log
        if r.rank != fail_rank:
            assert f"the job was aborted: pipeline rank {fail_rank} failed" in r.stderr, log


def _launch(mode: str, env: dict | None = None) -> list[_procs.RankRun]:
    return _procs.launch([f"{SCRIPTS}/failures.py", mode], 2, timeout=90, env=env)


def test_uncaught_exception_stops_a_peer_blocked_in_a_collective():
    runs = _launch("raise")
    log = _procs.logs(runs)
    assert [r.returncode for r in runs] == [1, 1], log
    assert "RuntimeError: rank 1 broke before the all_reduce" in runs[1].stderr, log
    assert "failed because the job was aborted: rank 1 failed: RuntimeError" in runs[0].stderr
    assert abs(runs[0].seconds - runs[1].seconds) < STOP_WITHIN, log


def test_killed_peer_fails_a_collective_at_once():
    runs = _launch("kill")
    log = _procs.logs(runs)
    assert runs[1].returncode == -9 and runs[0].returncode == 1, log
    assert "Connection closed by peer" in runs[0].stderr, log
    assert runs[0].seconds - runs[1].seconds < STOP_WITHIN, log


def test_peer_that_exits_midway_stops_a_rank_waiting_for_it():
    runs = _launch("exit", env={"SPX_EXIT_GRACE": "1"})
    log = _procs.logs(runs)
    assert runs[0].returncode == 1 and runs[1].returncode != 0, log
    assert "rank(s) [1] exited without taking part" in runs[0].stderr, log
    assert "rank 0 reached end" not in runs[0].stdout, log


def test_sigterm_ends_a_rank_blocked_in_a_wait_at_once_and_aborts_the_job():
    # JAX's preemption service would swallow SIGTERM; spx ends the rank by it, promptly, even
    # while its main thread is blocked in C++, and tells the other ranks why.
    runs = _launch("sigterm")
    log = _procs.logs(runs)
    assert runs[0].returncode == -15, log  # ended by SIGTERM, as a process without handler
    assert "[rank 0] spx.distributed: received SIGTERM; aborting" in runs[0].stderr, log
    assert runs[1].returncode == 1, log
    assert "the job was aborted: rank 0 received SIGTERM" in runs[1].stderr, log
    start = max(r.seconds for r in runs) - min(r.seconds for r in runs)
    assert start < STOP_WITHIN, log


def test_a_sigterm_handler_of_the_program_takes_precedence():
    runs = _launch("own-sigterm")
    log = _procs.logs(runs)
    assert [r.returncode for r in runs] == [0, 0], log
    assert f"rank 0 reached handled signal [{int(signal.SIGTERM)}]" in runs[0].stdout, log
    assert all(f"rank {r.rank} reached end" in r.stdout for r in runs), log


def test_unmatched_receive_times_out():
    runs = _launch("timeout")
    log = _procs.logs(runs)
    assert runs[0].returncode == 1, log
    assert re.search(r"timed out after 3 s", runs[0].stderr), log


def test_a_sender_that_finished_first_stays_up_until_its_messages_are_pulled():
    runs = _launch("late-pull")
    log = _procs.logs(runs)
    assert [r.returncode for r in runs] == [0, 0], log
    assert all(f"rank {r.rank} reached end" in r.stdout for r in runs), log
