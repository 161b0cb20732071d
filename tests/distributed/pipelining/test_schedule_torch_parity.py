"""Schedule tables against torch 2.13's own schedule objects (no devices, no process group).

torch's multi-stage schedules build ``pipeline_order`` (and the lowered
``pipeline_order_with_comms``) in their constructor from a list of local stages, so a stage
object with just ``stage_index``, ``num_stages``, ``group_size``, ``group_rank`` and ``submod``
is enough (torch's test_schedule.py does the same with its MockPipelineStage). Single-stage
schedules run from ``_step_microbatches``; we run that loop with a recording stage and compare
with what it executes.
"""

from __future__ import annotations

import io

import pytest

torch = pytest.importorskip("torch")
S = pytest.importorskip("torch.distributed.pipelining.schedules")

from spx.distributed.pipelining.tables.csv_io import _dump_csv, _load_csv  # noqa: E402
from spx.distributed.pipelining.tables.ir import _format_pipeline_order  # noqa: E402
from spx.distributed.pipelining.tables.lowering import _add_reduce_grad, _lower_schedule  # noqa: E402
from spx.distributed.pipelining.tables.orders import (  # noqa: E402
    SCHEDULES,
    get_schedule_order,
    stage_to_rank_v,
)
from spx.distributed.pipelining.tables.simulate import _simulate, _validate_schedule  # noqa: E402

MULTI = {
    "Interleaved1F1B": S.ScheduleInterleaved1F1B,
    "LoopedBFS": S.ScheduleLoopedBFS,
    "InterleavedZeroBubble": S.ScheduleInterleavedZeroBubble,
    "ZBVZeroBubble": S.ScheduleZBVZeroBubble,
    "DualPipeV": S.ScheduleDualPipeV,
}
SINGLE = {
    "GPipe": S.ScheduleGPipe,
    "1F1B": S.Schedule1F1B,
    "ForwardOnly": S._ScheduleForwardOnly,
}


class _MockStage:
    """The attributes torch's schedule constructors read from their stages."""

    def __init__(self, stage_index: int, num_stages: int, group_size: int) -> None:
        self.stage_index = stage_index
        self.num_stages = num_stages
        self.group_size = group_size
        self.group_rank = 0
        self.submod = None  # skips torch's torch.compile check
        self.is_first = stage_index == 0
        self.is_last = stage_index == num_stages - 1


def _rank0_stages(name: str, pp: int, n_stages: int) -> list[int]:
    if SCHEDULES[name].placement == "v" and n_stages % pp == 0:
        v = stage_to_rank_v(pp, n_stages)
        return [s for s in range(n_stages) if v[s] == 0]
    return [s for s in range(n_stages) if s % pp == 0] or [0]


def torch_multi(name: str, pp: int, n_stages: int, n_mb: int, **kwargs):
    stages = [_MockStage(s, n_stages, pp) for s in _rank0_stages(name, pp, n_stages)]
    return MULTI[name](stages, n_mb, loss_fn=lambda out, tgt: out, **kwargs)


def to_torch(order) -> dict[int, list]:
    """The same table made of torch's own _Action objects (torch's checks use isinstance)."""
    return {
        r: [None if a is None else S._Action.from_str(str(a)) for a in acts]
        for r, acts in order.items()
    }


def strs(order) -> dict[int, list[str]]:
    return {r: ["" if a is None else str(a) for a in acts] for r, acts in order.items()}


def _grid(name: str) -> list[tuple[int, int, int]]:
    per_rank = {"ZBVZeroBubble": [2], "DualPipeV": [2]}.get(name, [1, 2])
    cases = []
    for pp in (1, 2, 4):
        for spr in per_rank:
            for n_mb in sorted({pp, 2 * pp, 1, 3, 5, 7}):
                cases.append((pp, pp * spr, n_mb))
    return cases


def _accepted(name: str, pp: int, n_stages: int, n_mb: int) -> bool:
    try:
        torch_multi(name, pp, n_stages, n_mb)
    except (ValueError, AssertionError, KeyError, IndexError):
        return False
    return True


@pytest.mark.parametrize("name", list(MULTI))
def test_multi_stage_tables_equal_torch_pipeline_order(name):
    checked = 0
    for pp, n_stages, n_mb in _grid(name):
        if not _accepted(name, pp, n_stages, n_mb):
            with pytest.raises(ValueError):
                get_schedule_order(name, pp, n_stages, n_mb)
            continue
        ref = torch_multi(name, pp, n_stages, n_mb)
        ours = get_schedule_order(name, pp, n_stages, n_mb)
        assert strs(ours) == strs(ref.pipeline_order), (name, pp, n_stages, n_mb)
        mapping = _validate_schedule(ours, pp, n_stages, n_mb)
        assert mapping == S._validate_schedule(ref.pipeline_order, pp, n_stages, n_mb)
        assert mapping == dict(ref.stage_index_to_group_rank)
        _simulate(ours)
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("name", list(MULTI))
@pytest.mark.parametrize("defer", [False, True])
def test_lowering_equals_torch_pipeline_order_with_comms(name, defer):
    for pp, n_stages, n_mb in _grid(name):
        if not _accepted(name, pp, n_stages, n_mb):
            continue
        ref = torch_multi(name, pp, n_stages, n_mb, defer_pp_recv=defer)
        ours = get_schedule_order(name, pp, n_stages, n_mb)
        lowered = _lower_schedule(ours, n_stages, n_mb, defer_recv=defer)
        assert strs(lowered) == strs(ref.pipeline_order_with_comms), (name, pp, n_stages, n_mb)
        _validate_schedule(lowered, pp, n_stages, n_mb)
        _simulate(lowered)
        if name != "DualPipeV":
            # torch's own dry run accepts our lowered table too; it knows only F/I/W/B and
            # SEND/RECV (not bookkeeping actions or OVERLAP_F_B).
            comms_only = {
                r: [a for a in acts if a.is_compute_op or a.is_comm_op]
                for r, acts in lowered.items()
            }
            stage_to_rank = ref.stage_index_to_group_rank.get
            S._simulate_comms_compute(to_torch(comms_only), stage_to_rank, n_stages)


@pytest.mark.parametrize("name", list(MULTI))
def test_multi_stage_accepts_and_rejects_exactly_where_torch_does(name):
    for pp in (1, 2, 3, 4):
        for n_stages in sorted({max(1, pp - 1), pp, pp + 1, 2 * pp, 2 * pp + 1, 3 * pp}):
            for n_mb in range(1, 11):
                torch_ok = _accepted(name, pp, n_stages, n_mb)
                try:
                    get_schedule_order(name, pp, n_stages, n_mb)
                    ours_ok = True
                except ValueError:
                    ours_ok = False
                assert ours_ok == torch_ok, (name, pp, n_stages, n_mb)


# The compute-only example of TORCH_API.md: Interleaved1F1B, pp=2, 4 stages, 4 microbatches.
TORCH_API_INTERLEAVED = (
    "0F0,0F1,2F0,2F1,,,0F2,2B0,0F3,2B1,2F2,0B0,2F3,0B1,,2B2,,2B3,,0B2,,0B3\n"
    ",1F0,1F1,,3F0,3B0,3F1,3B1,1F2,1B0,1F3,1B1,3F2,3B2,3F3,3B3,,1B2,,1B3\n"
)


def test_torch_api_interleaved_example_literal():
    expected = strs(_load_csv(io.StringIO(TORCH_API_INTERLEAVED)))
    assert strs(torch_multi("Interleaved1F1B", 2, 4, 4).pipeline_order) == expected
    assert strs(get_schedule_order("Interleaved1F1B", 2, 4, 4)) == expected


# --- single-stage schedules: compare with what torch's _step_microbatches executes -------------


class _RecordingStage:
    """Stands in for a PipelineStage: no communication, records the compute it is asked for."""

    def __init__(self, stage_index: int, num_stages: int) -> None:
        self.stage_index, self.num_stages = stage_index, num_stages
        self.group_size, self.group_rank = num_stages, stage_index
        self.is_first, self.is_last = stage_index == 0, stage_index == num_stages - 1
        self.log: list[str] = []
        self.output_chunks: list = []
        self.has_backward = True

    def _no_ops(self, mb):
        return []

    get_fwd_recv_ops = get_fwd_send_ops = get_bwd_recv_ops = get_bwd_send_ops = _no_ops

    def forward_one_chunk(self, mb, *args, **kwargs):
        self.log.append(f"{self.stage_index}F{mb}")
        return 0.0

    def backward_one_chunk(self, mb, loss=None, last_backward=False, **kwargs):
        self.log.append(f"{self.stage_index}B{mb}")

    def perform_reduce_grad(self, scale):
        self.log.append(f"{self.stage_index}REDUCE_GRAD")

    def clear_runtime_states(self):
        pass


def torch_single_run(name: str, pp: int, n_mb: int) -> tuple[dict[int, list[str]], object]:
    """Per rank, the compute torch's loop executes; plus torch's pipeline_order."""
    executed, table = {}, None
    train = name != "ForwardOnly"
    for rank in range(pp):
        stage = _RecordingStage(rank, pp)
        sched = SINGLE[name](stage, n_mb, loss_fn=(lambda out, tgt: out) if train else None)
        # Shape inference and P2P warm-up need real tensors and a process group; skip them.
        sched._initialize_stage = lambda *args, **kwargs: None
        targets = [0.0] * n_mb if train and stage.is_last else None
        sched._step_microbatches(target_mbs=targets)
        executed[rank], table = stage.log, sched.pipeline_order
    return executed, table


@pytest.mark.parametrize("name", list(SINGLE))
def test_single_stage_orders_are_what_torch_executes(name):
    for pp in (1, 2, 4):
        for n_mb in sorted({pp, 2 * pp, 1, 3, 5, 7}):
            try:
                executed, table = torch_single_run(name, pp, n_mb)
            except ValueError:
                with pytest.raises(ValueError):
                    get_schedule_order(name, pp, pp, n_mb)
                continue
            ours = get_schedule_order(name, pp, pp, n_mb)
            with_reduce = {
                r: [str(a) for a in _add_reduce_grad(acts, n_mb)] for r, acts in ours.items()
            }
            assert with_reduce == executed, (name, pp, n_mb)
            if name == "GPipe":
                # torch 2.13 builds GPipe's table as ours plus its REDUCE_GRAD pass.
                assert strs(table) == with_reduce
            if name == "ForwardOnly":
                assert table is None
                _validate_schedule(ours, pp, pp, n_mb, forward_only=True)
            else:
                _validate_schedule(ours, pp, pp, n_mb)
            _simulate(ours)
            _simulate(_lower_schedule(ours, pp, n_mb, forward_only=name == "ForwardOnly"))


@pytest.mark.parametrize("name", list(SINGLE))
def test_single_stage_accepts_and_rejects_exactly_where_torch_does(name):
    for pp in (1, 2, 3, 4):
        for n_mb in range(1, 9):
            try:
                torch_single_run(name, pp, n_mb)
                torch_ok = True
            except ValueError:
                torch_ok = False
            try:
                get_schedule_order(name, pp, pp, n_mb)
                ours_ok = True
            except ValueError:
                ours_ok = False
            assert ours_ok == torch_ok, (name, pp, n_mb)


def test_torch_1f1b_table_last_rank_is_off_by_one_and_ours_is_what_it_executes():
    """torch 2.13's Schedule1F1B.pipeline_order starts its last rank at F1 and runs F{n}.

    Every other rank matches ours; the last rank matches ours with forwards shifted by one,
    and torch's own validator rejects torch's table while accepting ours.
    """
    pp, n_mb = 4, 6
    executed, table = torch_single_run("1F1B", pp, n_mb)
    ours = get_schedule_order("1F1B", pp, pp, n_mb)
    ours_reduced = {r: _add_reduce_grad(acts, n_mb) for r, acts in ours.items()}
    for rank in range(pp - 1):
        assert [str(a) for a in table[rank]] == [str(a) for a in ours_reduced[rank]]
    shifted = [
        S._Action(a.stage_index, a.computation_type, a.microbatch_index + 1)
        if a.computation_type == S.F
        else a
        for a in ours_reduced[pp - 1]
    ]
    assert [str(a) for a in table[pp - 1]] == [str(a) for a in shifted]
    assert [str(a) for a in ours_reduced[pp - 1]] == executed[pp - 1]
    with pytest.raises(AssertionError):
        S._validate_schedule(table, pp, pp, n_mb)
    S._validate_schedule(to_torch(ours), pp, pp, n_mb)


# --- printing and CSV ---------------------------------------------------------------------------


@pytest.mark.parametrize("error_step", [None, 0, 5])
def test_format_pipeline_order_is_character_for_character_torch(error_step):
    for name, pp, n_stages, n_mb in [
        ("Interleaved1F1B", 2, 4, 4),
        ("DualPipeV", 2, 4, 4),
        ("ZBVZeroBubble", 4, 8, 8),
    ]:
        ref = torch_multi(name, pp, n_stages, n_mb)
        ours = get_schedule_order(name, pp, n_stages, n_mb)
        assert _format_pipeline_order(ours, error_step) == S._format_pipeline_order(
            ref.pipeline_order, error_step
        )
        lowered = _lower_schedule(ours, n_stages, n_mb)
        assert _format_pipeline_order(lowered, error_step) == S._format_pipeline_order(
            ref.pipeline_order_with_comms, error_step
        )


@pytest.mark.parametrize("fmt", ["compute_only", "compute_comms"])
def test_csv_text_equals_torch_dump_and_loads_back(tmp_path, fmt):
    ref = torch_multi("InterleavedZeroBubble", 2, 4, 4)
    torch_file = tmp_path / "torch.csv"
    ref._dump_csv(str(torch_file), format=fmt)
    ours = get_schedule_order("InterleavedZeroBubble", 2, 4, 4)
    table = ours if fmt == "compute_only" else _lower_schedule(ours, 4, 4)
    buf = io.StringIO()
    _dump_csv(table, buf)
    assert buf.getvalue() == torch_file.read_bytes().decode()  # same bytes, "\r\n" included
    assert strs(_load_csv(torch_file, format=fmt)) == strs(table)


def test_torch_loads_our_csv_into_the_same_lowered_schedule(tmp_path):
    ours = get_schedule_order("ZBVZeroBubble", 2, 4, 6)
    path = tmp_path / "zbv.csv"
    _dump_csv(ours, path)
    ref = torch_multi("ZBVZeroBubble", 2, 4, 6)
    ref._load_csv(str(path), format="compute_only")
    assert strs(ref.pipeline_order_with_comms) == strs(_lower_schedule(ours, 4, 6))
