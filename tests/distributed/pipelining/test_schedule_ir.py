"""The action IR: torch's spellings, parsing, the step x rank grid, and torch's CSV format."""

from __future__ import annotations

import doctest
import importlib
import io

import pytest

from spx.distributed.pipelining.tables.csv_io import _dump_csv, _load_csv
from spx.distributed.pipelining.tables.ir import (
    OVERLAP_F_B,
    REDUCE_GRAD,
    SEND_F,
    B,
    F,
    I,
    W,
    _Action,
    _ComputationType,
    _format_pipeline_order,
)
from spx.distributed.pipelining.tables.lowering import _lower_schedule
from spx.distributed.pipelining.tables.orders import dual_pipe_v_order, get_schedule_order

OVERLAP_TEXT = "(0F3;3B1)OVERLAP_F_B"


@pytest.mark.parametrize(
    ("action", "text"),
    [
        (_Action(2, F, 0), "2F0"),
        (_Action(1, I, 3), "1I3"),
        (_Action(1, W, 3), "1W3"),
        (_Action(0, B, 12), "0B12"),
        (_Action(0, SEND_F, 1), "0SEND_F1"),
        (_Action(1, _ComputationType.RECV_B, 0), "1RECV_B0"),
        (_Action(3, _ComputationType.SEND_B, 2), "3SEND_B2"),
        (_Action(1, _ComputationType.RECV_F, 7), "1RECV_F7"),
        (_Action(0, _ComputationType.UNSHARD), "0UNSHARD"),
        (_Action(0, _ComputationType.RESHARD), "0RESHARD"),
        (_Action(4, REDUCE_GRAD), "4REDUCE_GRAD"),
        (
            _Action(-1, OVERLAP_F_B, None, (_Action(0, F, 3), _Action(3, B, 1))),
            "(0F3;3B1)OVERLAP_F_B",
        ),
    ],
)
def test_action_prints_like_torch_and_parses_back(action, text):
    assert str(action) == text
    assert repr(action) == text
    assert _Action.from_str(text) == action
    assert _Action.from_str(f"  {text} ") == action


def test_computation_type_strings_are_torch_values():
    values = {c.name: c.value for c in _ComputationType}
    assert values == {
        "FORWARD": "F",
        "BACKWARD_INPUT": "I",
        "BACKWARD_WEIGHT": "W",
        "UNSHARD": "UNSHARD",
        "RESHARD": "RESHARD",
        "SEND_F": "SEND_F",
        "RECV_F": "RECV_F",
        "SEND_B": "SEND_B",
        "RECV_B": "RECV_B",
        "FULL_BACKWARD": "B",
        "OVERLAP_F_B": "OVERLAP_F_B",
        "REDUCE_GRAD": "REDUCE_GRAD",
    }
    assert _ComputationType.from_str("SEND_B") is _ComputationType.SEND_B
    with pytest.raises(ValueError, match="'X'"):
        _ComputationType.from_str("X")


def test_action_is_a_frozen_hashable_tuple():
    a = _Action(2, F, 0)
    assert a == _Action(2, F, 0) and hash(a) == hash(_Action(2, F, 0))
    assert len({a, _Action(2, F, 0), _Action(2, F, 1)}) == 2
    with pytest.raises(AttributeError):
        a.stage_index = 3  # type: ignore[misc]
    assert (a.stage_index, a.computation_type, a.microbatch_index) == (2, F, 0)
    assert a.is_compute_op and not a.is_comm_op
    assert _Action(0, SEND_F, 1).is_comm_op and not _Action(0, SEND_F, 1).is_compute_op


def test_blank_is_a_bubble():
    assert _Action.from_str("") is None
    assert _Action.from_str("   ") is None


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("F0", "Invalid action string 'F0'"),
        ("2X0", "Invalid action string '2X0'"),
        ("2F0x", "Invalid action string '2F0x'"),
        ("2F", "needs a microbatch index"),
        ("1SEND_F", "needs a microbatch index"),
        ("0UNSHARD3", "takes no microbatch"),
        ("-1F0", "Invalid action string"),
        ("(0F0;1B0)", "must be followed by 'OVERLAP_F_B'"),
        ("(0F0;1SEND_F0)OVERLAP_F_B", "may only group compute actions"),
        ("()OVERLAP_F_B", "may only group compute actions"),
    ],
)
def test_junk_action_strings_raise_value_error(text, fragment):
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        _Action.from_str(text)


def test_format_grid_matches_torch_layout():
    order = {0: [_Action(0, F, 0), None], 1: [None, _Action(1, F, 0), _Action(1, B, 0)]}
    # Hand-written from torch's _format_pipeline_order: every column is at least as wide as
    # a step label; a marked row gets " <-- ERROR HERE".
    expected = (
        "        Rank 0 Rank 1\n"
        "Step 0: 0F0          \n"
        "Step 1:        1F0    <-- ERROR HERE\n"
        "Step 2:        1B0   \n"
    )
    assert _format_pipeline_order(order, error_step_number=1) == expected


def test_format_pads_step_numbers():
    order = get_schedule_order("Interleaved1F1B", 2, 4, 4)
    lines = _format_pipeline_order(order).splitlines()
    assert lines[0].split() == ["Rank", "0", "Rank", "1"]
    assert lines[1].startswith("Step 00: 0F0")
    assert lines[-1].startswith("Step 21: 0B3")
    assert len(lines) == 1 + 22


def test_csv_round_trip_compute_only(tmp_path):
    order = get_schedule_order("InterleavedZeroBubble", 2, 4, 4)
    path = tmp_path / "zb.csv"
    _dump_csv(order, path)
    assert _load_csv(path) == order
    assert _load_csv(str(path), format="compute_only") == order


def test_csv_round_trip_with_comms_and_overlap():
    lowered = _lower_schedule(dual_pipe_v_order(2, 4, 5), 4, 5)
    buf = io.StringIO()
    _dump_csv(lowered, buf)
    assert "(0F4;3B2)OVERLAP_F_B" in buf.getvalue()
    assert "SEND_F" in buf.getvalue() and "0REDUCE_GRAD" in buf.getvalue()
    buf.seek(0)
    assert _load_csv(buf, format="compute_comms") == lowered


def test_csv_writes_torch_bytes():
    buf = io.StringIO()
    _dump_csv({0: [_Action(0, F, 0), None, _Action(0, B, 0)], 1: [None, _Action(1, F, 0)]}, buf)
    # csv.writer's default "\r\n" line ends, as torch's _dump_csv writes them.
    assert buf.getvalue() == "0F0,,0B0\r\n,1F0\r\n"


# torch's regression artifact test/distributed/pipelining/artifacts/dualpipev_4rank_10mb.csv,
# dumped by torch's ScheduleDualPipeV(pp=4, 8 stages, 10 microbatches)._dump_csv.
TORCH_DUALPIPEV_4RANK_10MB = """\
0F0,0F1,0F2,0F3,0F4,0F5,0F6,7F0,7I0,7W0,7F1,7I1,7W1,7F2,7I2,7W2,7F3,(0F7;7B3)OVERLAP_F_B,\
(7F4;0B0)OVERLAP_F_B,(0F8;7B4)OVERLAP_F_B,(7F5;0B1)OVERLAP_F_B,(0F9;7B5)OVERLAP_F_B,\
(7F6;0B2)OVERLAP_F_B,7B6,(7F7;0B3)OVERLAP_F_B,7B7,(7F8;0B4)OVERLAP_F_B,7B8,\
(7F9;0B5)OVERLAP_F_B,7B9,0I6,0W6,0I7,0W7,0I8,0W8,0I9,0W9
1F0,1F1,1F2,1F3,1F4,6F0,1F5,6F1,6I0,6W0,6F2,6I1,6W1,6F3,(1F6;6B2)OVERLAP_F_B,\
(6F4;1B0)OVERLAP_F_B,(1F7;6B3)OVERLAP_F_B,(6F5;1B1)OVERLAP_F_B,(1F8;6B4)OVERLAP_F_B,\
(6F6;1B2)OVERLAP_F_B,(1F9;6B5)OVERLAP_F_B,(6F7;1B3)OVERLAP_F_B,6B6,(6F8;1B4)OVERLAP_F_B,6B7,\
(6F9;1B5)OVERLAP_F_B,6B8,1B6,6I9,1I7,6W9,1I8,1W7,1I9,1W8,1W9
2F0,2F1,2F2,5F0,2F3,5F1,2F4,5F2,5I0,5W0,5F3,(2F5;5B1)OVERLAP_F_B,(5F4;2B0)OVERLAP_F_B,\
(2F6;5B2)OVERLAP_F_B,(5F5;2B1)OVERLAP_F_B,(2F7;5B3)OVERLAP_F_B,(5F6;2B2)OVERLAP_F_B,\
(2F8;5B4)OVERLAP_F_B,(5F7;2B3)OVERLAP_F_B,(2F9;5B5)OVERLAP_F_B,(5F8;2B4)OVERLAP_F_B,5B6,\
(5F9;2B5)OVERLAP_F_B,5B7,2B6,5B8,2I7,5I9,2I8,2W7,2I9,5W9,2W8,2W9
3F0,4F0,3F1,4F1,3F2,4F2,3F3,4F3,3F4,4B0,(4F4;3B0)OVERLAP_F_B,(3F5;4B1)OVERLAP_F_B,\
(4F5;3B1)OVERLAP_F_B,(3F6;4B2)OVERLAP_F_B,(4F6;3B2)OVERLAP_F_B,(3F7;4B3)OVERLAP_F_B,\
(4F7;3B3)OVERLAP_F_B,(3F8;4B4)OVERLAP_F_B,(4F8;3B4)OVERLAP_F_B,(3F9;4B5)OVERLAP_F_B,\
(4F9;3B5)OVERLAP_F_B,4B6,3B6,4B7,3B7,4I8,3I8,4I9,3I9,4W8,3W8,4W9,3W9
"""


def test_load_torch_dumped_csv_equals_generated_dualpipev():
    loaded = _load_csv(io.StringIO(TORCH_DUALPIPEV_4RANK_10MB))
    assert loaded == dual_pipe_v_order(4, 8, 10)


def test_load_csv_reports_bad_cells_by_rank_and_step():
    with pytest.raises(ValueError, match=r"Rank 1, step 2: Invalid action string '1Q0'"):
        _load_csv(io.StringIO("0F0,0B0\n,1F0,1Q0\n"))


def test_load_csv_rejects_comms_in_compute_only_and_bubbles_in_compute_comms():
    with pytest.raises(ValueError, match=r"'0SEND_F0'.*format='compute_comms'"):
        _load_csv(io.StringIO("0F0,0SEND_F0\n"))
    with pytest.raises(ValueError, match="Rank 0, step 1: empty cell"):
        _load_csv(io.StringIO("0F0,,0B0\n"), format="compute_comms")
    with pytest.raises(ValueError, match="format must be"):
        _load_csv(io.StringIO(""), format="comms")  # type: ignore[arg-type]


def test_dump_csv_needs_ranks_zero_to_n():
    with pytest.raises(ValueError, match=r"ranks are \[0, 2\]"):
        _dump_csv({0: [], 2: []}, io.StringIO())


@pytest.mark.parametrize(
    "module",
    ["ir", "csv_io", "orders.common", "orders.single", "orders.interleaved", "orders.v",
     "orders.registry", "lowering", "validate", "simulate"],
)  # fmt: skip
def test_docstring_examples_run(module):
    mod = importlib.import_module(f"spx.distributed.pipelining.tables.{module}")
    result = doctest.testmod(mod)
    assert result.attempted > 0 and result.failed == 0
