"""The validator catches every broken rule; the simulator finds deadlocks and times tables."""

from __future__ import annotations

import io

import pytest

from spx.distributed.pipelining.tables.csv_io import _load_csv
from spx.distributed.pipelining.tables.lowering import _lower_schedule
from spx.distributed.pipelining.tables.orders import get_schedule_order
from spx.distributed.pipelining.tables.simulate import (
    ScheduleDeadlockError,
    _simulate,
    _validate_schedule,
)


def parse(csv_text: str, fmt: str = "compute_only"):
    return _load_csv(io.StringIO(csv_text), format=fmt)  # type: ignore[arg-type]


def strs(order) -> dict[int, list[str]]:
    return {r: ["" if a is None else str(a) for a in acts] for r, acts in order.items()}


# (table, pp, n_stages, n_microbatches, expected message fragment (regex))
BROKEN = {
    "missing forward": ("0F0,0B0\n1F1,1B1\n", 2, 2, 2, r"Stage 0 runs 1 forwards, expected 2; "
                        r"missing F for microbatches \[1\]"),
    "forward twice": ("0F0,0F0,0B0\n1F0,1B0\n", 2, 2, 1, r"Rank 0, step 1: '0F0' runs twice"),
    "B before F": ("0B0,0F0\n1F0,1B0\n", 2, 2, 1, r"Rank 0, step 0: '0B0' runs before its "
                   r"forward '0F0'"),
    "I before F": ("0I0,0F0,0W0\n1F0,1B0\n", 2, 2, 1, r"Rank 0, step 0: '0I0' runs before"),
    "W before I": ("0F0,0W0,0I0\n1F0,1B0\n", 2, 2, 1, r"Rank 0, step 1: '0W0' runs before its "
                   r"backward-input '0I0'"),
    "I without W": ("0F0,0I0\n1F0,1B0\n", 2, 2, 1, r"Stage 0 microbatch 0 has I but no W"),
    "no backward": ("0F0\n1F0,1B0\n", 2, 2, 1, r"Stage 0 microbatch 0 has no backward"),
    "B and I for one microbatch": ("0F0,0I0,0B0,0W0\n1F0,1B0\n", 2, 2, 1,
                                   r"Rank 0, step 2: '0B0' mixes a full backward"),
    "B twice": ("0F0,0B0,0B0\n1F0,1B0\n", 2, 2, 1, r"'0B0' runs twice"),
    "stage on two ranks": ("0F0,0B0\n1F0,0F1,1B0,0B1\n", 2, 2, 2,
                           r"Rank 1, step 1: '0F1' puts stage 0 on rank 1, but rank 0 already "
                           r"runs it \(step 0\)"),
    "too few ranks": ("0F0,1F0,1B0,0B0\n", 2, 2, 1, r"Schedule has ranks \[0\], expected 0\.\.1"),
    "stage out of range": ("0F0,0B0,5F0\n1F0,1B0\n", 2, 2, 1, r"'5F0' names stage 5, but "
                           r"stages are 0\.\.1"),
    "microbatch out of range": ("0F0,0F2,0B0\n1F0,1B0\n", 2, 2, 1,
                                r"'0F2' needs a microbatch index in 0\.\.0, got 2"),
    "reduce_grad too early": ("0F0,0REDUCE_GRAD,0B0\n1F0,1B0\n", 2, 2, 1,
                              r"'0REDUCE_GRAD' runs after 0 of stage 0's 1 backwards"),
    "reduce_grad twice": ("0F0,0B0,0REDUCE_GRAD,0REDUCE_GRAD\n1F0,1B0\n", 2, 2, 1,
                          r"'0REDUCE_GRAD' runs twice"),
}  # fmt: skip


@pytest.mark.parametrize("rule", list(BROKEN))
def test_validator_catches_each_broken_rule(rule):
    text, pp, n_stages, n_mb, fragment = BROKEN[rule]
    with pytest.raises(ValueError, match=fragment) as info:
        _validate_schedule(parse(text), pp, n_stages, n_mb)
    assert "Full pipeline schedule:" in str(info.value)


def test_validator_marks_the_failing_step_in_the_grid():
    with pytest.raises(ValueError) as info:
        _validate_schedule(parse("0F0,0W0,0I0\n1F0,1B0\n"), 2, 2, 1)
    lines = str(info.value).splitlines()
    marked = [line for line in lines if line.endswith("<-- ERROR HERE")]
    assert len(marked) == 1 and marked[0].startswith("Step 1: 0W0")


def test_validator_rejects_non_actions_and_backward_in_forward_only():
    with pytest.raises(ValueError, match=r"Got '0F0' of type str"):
        _validate_schedule({0: ["0F0"]}, 1, 1, 1)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="backward action in a forward-only schedule"):
        _validate_schedule(parse("0F0,0B0\n"), 1, 1, 1, forward_only=True)
    assert _validate_schedule(parse("0F0,0F1\n,1F0,1F1\n"), 2, 2, 2, forward_only=True) == {
        0: 0,
        1: 1,
    }


def test_validator_accepts_lowered_tables_and_returns_the_placement():
    lowered = _lower_schedule(get_schedule_order("ZBVZeroBubble", 2, 4, 4), 4, 4)
    assert _validate_schedule(lowered, 2, 4, 4) == {0: 0, 3: 0, 1: 1, 2: 1}


def test_simulated_gpipe_timeline_by_hand():
    result = _simulate(get_schedule_order("GPipe", 2, 2, 2))
    # Rank 0's first backward waits for rank 1's; every hand-off is visible one step later.
    assert strs(result.timeline) == {
        0: ["0F0", "0F1", "", "", "0B0", "0B1"],
        1: ["", "1F0", "1F1", "1B0", "1B1"],
    }
    assert result.num_steps == 6
    assert result.idle_steps() == {0: 2, 1: 1}
    assert str(result).splitlines()[0].split() == ["Rank", "0", "Rank", "1"]


def test_simulator_reports_a_hand_made_deadlock():
    # Rank 0 waits for 1B0 before sending 0F1; rank 1 waits for 0F1 before running 1B0.
    order = parse("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n")
    with pytest.raises(ScheduleDeadlockError) as info:
        _simulate(order)
    err = info.value
    assert {r: str(a) for r, (a, _) in err.stuck.items()} == {0: "0B0", 1: "1F1"}
    assert [tuple(map(str, alts)) for alts in err.stuck[0][1]] == [("1B0", "1I0")]
    assert [tuple(map(str, alts)) for alts in err.stuck[1][1]] == [("0F1",)]
    message = str(err)
    assert "deadlocks at simulated step 1" in message
    assert "rank 0: '0B0' (its action #1) waits for '1B0' or '1I0' (scheduled on rank 1 as its " \
           "action #3)" in message  # fmt: skip
    assert "rank 1: '1F1' (its action #0) waits for '0F1' (scheduled on rank 0" in message
    assert "Step 1:" in message and "<-- ERROR HERE" in message
    assert strs(err.timeline) == {0: ["0F0", ""], 1: ["", ""]}
    assert isinstance(err, ValueError)


def test_simulator_reports_a_missing_recv():
    lowered = _lower_schedule(get_schedule_order("1F1B", 2, 2, 2), 2, 2)
    lowered[1] = [a for a in lowered[1] if str(a) != "1RECV_F1"]
    with pytest.raises(ScheduleDeadlockError, match=r"'1F1' .* waits for '1RECV_F1' \(which no "
                       r"rank schedules\)"):  # fmt: skip
        _simulate(lowered)


def test_simulator_reports_a_recv_before_the_matching_send_can_happen():
    # Rank 1 insists on receiving microbatch 1 first; rank 0 sends microbatch 0 first and
    # then blocks on a gradient that rank 1 only produces after that receive.
    table = parse(
        "0F0,0SEND_F0,0RECV_B0,0B0,0F1,0SEND_F1,0RECV_B1,0B1\n"
        "1RECV_F1,1RECV_F0,1F0,1B0,1SEND_B0,1F1,1B1,1SEND_B1\n",
        "compute_comms",
    )
    with pytest.raises(ScheduleDeadlockError) as info:
        _simulate(table)
    assert {r: str(a) for r, (a, _) in info.value.stuck.items()} == {0: "0RECV_B0", 1: "1RECV_F1"}


def test_simulator_reports_a_send_nobody_receives():
    # Both stages live on rank 0, so a SEND_F between them has no receiver.
    table = parse("0F0,0SEND_F0,1F0,1B0,0B0\n", "compute_comms")
    with pytest.raises(ValueError, match=r"'0SEND_F0' is never received: add '1RECV_F0'"):
        _simulate(table)


def test_simulator_rejects_a_stage_on_two_ranks():
    with pytest.raises(ValueError, match="Stage 0 appears on rank 0 and on rank 1"):
        _simulate(parse("0F0\n0F1\n"))


def test_overlap_runs_its_sub_actions_in_order_within_one_step():
    # 1F0 needs 0F0, which the same OVERLAP_F_B runs first.
    order = parse("(0F0;1F0)OVERLAP_F_B,1B0,0B0\n")
    assert _simulate(order).num_steps == 3
    _validate_schedule(order, 1, 2, 1)


def test_simulator_takes_an_explicit_placement_as_mapping_or_function():
    lowered = _lower_schedule(get_schedule_order("Interleaved1F1B", 2, 4, 2), 4, 2)
    inferred = _simulate(lowered)
    placement = {0: 0, 1: 1, 2: 0, 3: 1}
    assert _simulate(lowered, placement, 4) == inferred
    assert _simulate(lowered, placement.__getitem__, 4) == inferred
