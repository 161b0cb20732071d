"""Schedule generators against hand-written tables, plus validation and simulation of each.

The tables below were written out by hand from the schedules' definitions (and agree with
torch 2.13; test_schedule_torch_parity.py checks the whole grid against torch itself).
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from spx.distributed.pipelining.tables.csv_io import _load_csv
from spx.distributed.pipelining.tables.lowering import _lower_schedule
from spx.distributed.pipelining.tables.orders import (
    SCHEDULES,
    get_schedule_order,
    get_schedule_spec,
    rank_to_stages,
    stage_to_rank_loop,
    stage_to_rank_v,
)
from spx.distributed.pipelining.tables.simulate import _simulate, _validate_schedule


def table(csv_text: str) -> dict[int, list[str]]:
    return strs(_load_csv(io.StringIO(csv_text)))


def strs(order) -> dict[int, list[str]]:
    return {r: ["" if a is None else str(a) for a in acts] for r, acts in order.items()}


HAND_WRITTEN = [
    # TORCH_API.md's example.
    (
        "Interleaved1F1B",
        2,
        4,
        4,
        "0F0,0F1,2F0,2F1,,,0F2,2B0,0F3,2B1,2F2,0B0,2F3,0B1,,2B2,,2B3,,0B2,,0B3\n"
        ",1F0,1F1,,3F0,3B0,3F1,3B1,1F2,1B0,1F3,1B1,3F2,3B2,3F3,3B3,,1B2,,1B3\n",
    ),
    # Fill-drain; gradients climb back 3 steps per hop.
    ("GPipe", 2, 2, 3, "0F0,0F1,0F2,,,,0B0,0B1,0B2\n,1F0,1F1,1F2,1B0,1B1,1B2\n"),
    # pp - rank warm-up forwards, then B/F pairs, then B every other step.
    (
        "1F1B",
        3,
        3,
        4,
        "0F0,0F1,0F2,,,0B0,0F3,0B1,,0B2,,0B3\n"
        ",1F0,1F1,,1B0,1F2,1B1,1F3,1B2,,1B3\n"
        ",,2F0,2B0,2F1,2B1,2F2,2B2,2F3,2B3\n",
    ),
    ("ForwardOnly", 2, 2, 3, "0F0,0F1,0F2\n,1F0,1F1,1F2\n"),
    # All microbatches of a stage at once; backwards in reverse.
    (
        "LoopedBFS",
        2,
        4,
        2,
        "0F0,0F1,2F0,2F1,,,2B1,2B0,0B1,0B0\n,1F0,1F1,3F0,3F1,3B1,3B0,1B1,1B0\n",
    ),
    # One rank holding both halves of the V: F0, then chunk 1 with I/W, then chunk 0's I/W.
    ("ZBVZeroBubble", 1, 2, 2, "0F0,1F0,1I0,1W0,0F1,0I0,0W0,1F1,1I1,1W1,0I1,0W1\n"),
    ("DualPipeV", 1, 2, 2, "0F0,1F0,0F1,1B0,(1F1;0B0)OVERLAP_F_B,1B1,0I1,0W1\n"),
]


@pytest.mark.parametrize(("name", "pp", "n_stages", "n_mb", "csv_text"), HAND_WRITTEN)
def test_generated_table_equals_hand_written(name, pp, n_stages, n_mb, csv_text):
    order = get_schedule_order(name, pp, n_stages, n_mb)
    assert strs(order) == table(csv_text)


def _grid():
    for name, spec in SCHEDULES.items():
        for pp in (1, 2, 4):
            for spr in [spec.stages_per_rank] if spec.stages_per_rank else [1, 2, 3]:
                for n_mb in sorted({pp, 2 * pp, 1, 3, 5, 7, 8}):
                    yield name, pp, pp * spr, n_mb


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_every_accepted_table_validates_lowers_and_simulates(name):
    ran = 0
    for sched, pp, n_stages, n_mb in _grid():
        if sched != name:
            continue
        try:
            order = get_schedule_order(name, pp, n_stages, n_mb)
        except ValueError:
            continue
        forward_only = name == "ForwardOnly"
        mapping = _validate_schedule(order, pp, n_stages, n_mb, forward_only=forward_only)
        assert mapping == get_schedule_spec(name).stage_to_rank(pp, n_stages)
        compute = _simulate(order)
        lowered = _lower_schedule(order, n_stages, n_mb, forward_only=forward_only)
        _validate_schedule(lowered, pp, n_stages, n_mb, forward_only=forward_only)
        result = _simulate(lowered, mapping, n_stages)
        n_compute = sum(a is not None for acts in order.values() for a in acts)
        assert compute.num_steps >= max(len([a for a in acts if a]) for acts in order.values())
        assert sum(a is not None for acts in compute.timeline.values() for a in acts) == n_compute
        assert result.num_steps >= compute.num_steps
        ran += 1
    assert ran >= 5


@pytest.mark.parametrize(
    ("name", "pp", "n_stages", "n_mb", "fragment"),
    [
        ("1F1B", 4, 4, 3, r"number of microbatches \(3\) must be greater than or equal"),
        ("1F1B", 2, 4, 4, r"exactly 1 stage\(s\) per rank .* got 4 stages for 2 ranks"),
        ("GPipe", 2, 3, 4, r"Use n_stages=2"),
        ("Interleaved1F1B", 2, 4, 5, r"multiple of the number of rounds \(2"),
        ("Interleaved1F1B", 4, 8, 9, r"multiple of the number of rounds \(2"),
        ("InterleavedZeroBubble", 3, 6, 7, r"but got 7"),
        ("Interleaved1F1B", 2, 3, 4, r"number of stages \(3\) must be divisible by .* size \(2\)"),
        ("LoopedBFS", 4, 6, 4, r"number of stages \(6\) must be divisible"),
        ("ZBVZeroBubble", 2, 2, 4, r"exactly 2 stage\(s\) per rank .*V placement"),
        ("DualPipeV", 2, 6, 8, r"exactly 2 stage\(s\) per rank"),
        ("DualPipeV", 2, 4, 3, r"at least as many microbatches as stages, but got 3 .* 4 stages"),
        ("GPipe", 0, 0, 4, r"pp_size .* must be a positive int, got 0"),
        ("GPipe", 2, 2, 0, r"n_microbatches must be a positive int, got 0"),
    ],
)
def test_rejections_name_the_bad_value(name, pp, n_stages, n_mb, fragment):
    with pytest.raises(ValueError, match=fragment):
        get_schedule_order(name, pp, n_stages, n_mb)


def test_rejects_non_int_sizes():
    with pytest.raises(TypeError, match="n_microbatches must be an int, got float"):
        get_schedule_order("GPipe", 2, 2, 4.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got the bool True"):
        get_schedule_order("GPipe", True, 1, 4)  # type: ignore[arg-type]
    # numpy integers are sizes, as in torch (its constructors only compare and range over them).
    assert get_schedule_order("GPipe", np.int64(2), 2, np.int32(4)) == get_schedule_order(
        "GPipe", 2, 2, 4
    )


def test_interleaved_accepts_torch_relaxed_microbatch_counts():
    # torch relaxes n % pp == 0: fewer than 2*pp microbatches, or any multiple of the rounds.
    for n_mb in (1, 2, 3, 5, 7, 8, 10, 12):
        get_schedule_order("Interleaved1F1B", 4, 8, n_mb)
    for n_mb in (9, 11, 13, 14):
        with pytest.raises(ValueError):
            get_schedule_order("Interleaved1F1B", 4, 8, n_mb)


def test_placements():
    assert stage_to_rank_loop(2, 4) == {0: 0, 1: 1, 2: 0, 3: 1}
    assert stage_to_rank_v(2, 4) == {0: 0, 1: 1, 2: 1, 3: 0}
    assert stage_to_rank_v(3, 6) == {0: 0, 1: 1, 2: 2, 3: 2, 4: 1, 5: 0}
    # Beyond two stages per rank the V keeps zig-zagging (torch's "v" style).
    assert stage_to_rank_v(2, 8) == {0: 0, 1: 1, 2: 1, 3: 0, 4: 0, 5: 1, 6: 1, 7: 0}
    assert rank_to_stages(stage_to_rank_v(4, 8)) == {0: [0, 7], 1: [1, 6], 2: [2, 5], 3: [3, 4]}
    assert rank_to_stages(stage_to_rank_loop(2, 6)) == {0: [0, 2, 4], 1: [1, 3, 5]}
    with pytest.raises(ValueError, match=r"number of stages \(5\) must be divisible"):
        stage_to_rank_v(2, 5)


def test_registry_lookup_is_case_insensitive_and_accepts_torch_class_names():
    assert get_schedule_spec("interleaved1f1b").name == "Interleaved1F1B"
    assert get_schedule_spec("ScheduleDualPipeV").name == "DualPipeV"
    assert get_schedule_spec("_ScheduleForwardOnly").name == "ForwardOnly"
    assert get_schedule_spec("1f1b").single_stage
    assert get_schedule_spec("ZBVZeroBubble").placement == "v"
    with pytest.raises(ValueError, match=r"Unknown schedule name 'Zigzag'.*'GPipe'"):
        get_schedule_spec("Zigzag")


def test_zbv_with_few_microbatches_turns_extra_work_into_bubbles():
    # Built for max(2*pp - 1, n) = 3 microbatches; actions on microbatch >= 1 become bubbles.
    order = get_schedule_order("ZBVZeroBubble", 2, 4, 1)
    assert [str(a) for acts in order.values() for a in acts if a] == [
        "0F0", "3F0", "3I0", "3W0", "0I0", "0W0",
        "1F0", "2F0", "2I0", "2W0", "1I0", "1W0",
    ]  # fmt: skip
    assert sum(a is None for a in order[0]) > 0
