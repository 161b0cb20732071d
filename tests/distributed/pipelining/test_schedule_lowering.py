"""Lowering compute-only tables to executable ones: SEND/RECV, REDUCE_GRAD, UNSHARD/RESHARD."""

from __future__ import annotations

import io
from collections import Counter

import pytest

from spx.distributed.pipelining.tables.csv_io import _load_csv
from spx.distributed.pipelining.tables.ir import (
    RECV_B,
    RECV_F,
    REDUCE_GRAD,
    RESHARD,
    SEND_B,
    SEND_F,
    UNSHARD,
    B,
    F,
    I,
    W,
    _Action,
)
from spx.distributed.pipelining.tables.lowering import (
    _add_reduce_grad,
    _add_send_recv,
    _add_unshard_reshard,
    _defer_recv_ops,
    _lower_schedule,
    _strip_backward,
)
from spx.distributed.pipelining.tables.orders import get_schedule_order, get_schedule_spec
from spx.distributed.pipelining.tables.simulate import _simulate, _validate_schedule

COMMS = (SEND_F, RECV_F, SEND_B, RECV_B)


def parse(csv_text: str, fmt="compute_only"):
    return _load_csv(io.StringIO(csv_text), format=fmt)


def strs(order) -> dict[int, list[str]]:
    return {r: ["" if a is None else str(a) for a in acts] for r, acts in order.items()}


def test_gpipe_lowered_by_hand():
    lowered = _lower_schedule(get_schedule_order("GPipe", 2, 2, 2), 2, 2, unshard_reshard=False)
    expected = parse(
        "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD\n"
        "1RECV_F0,1F0,1RECV_F1,1F1,1B0,1SEND_B0,1B1,1SEND_B1,1REDUCE_GRAD\n",
        "compute_comms",
    )
    assert lowered == expected


def test_stages_on_one_rank_exchange_locally_without_comm_actions():
    order = get_schedule_order("Interleaved1F1B", 1, 3, 2)
    lowered = _lower_schedule(order, 3, 2)
    assert not [a for a in lowered[0] if a.computation_type in COMMS]
    _simulate(lowered)


def test_v_turn_needs_no_comms_but_every_cross_rank_edge_does():
    pp, n_stages, n_mb = 2, 4, 4
    lowered = _lower_schedule(get_schedule_order("ZBVZeroBubble", pp, n_stages, n_mb), 4, n_mb)
    rank_of = get_schedule_spec("ZBVZeroBubble").stage_to_rank(pp, n_stages)
    comms = Counter(
        (a.stage_index, a.computation_type, r)
        for r, acts in lowered.items()
        for a in acts
        if a.computation_type in COMMS
    )
    # Stages 1 and 2 share rank 1 (the turn of the V): no comms between them.
    assert (1, SEND_F, 1) not in comms and (2, RECV_F, 1) not in comms
    assert (2, SEND_B, 1) not in comms and (1, RECV_B, 1) not in comms
    # Edges 0->1 and 2->3 cross ranks: one SEND on the sender's rank, one RECV on the
    # receiver's, per microbatch and direction.
    for src, dst in ((0, 1), (2, 3)):
        assert comms[src, SEND_F, rank_of[src]] == n_mb
        assert comms[dst, RECV_F, rank_of[dst]] == n_mb
        assert comms[dst, SEND_B, rank_of[dst]] == n_mb
        assert comms[src, RECV_B, rank_of[src]] == n_mb
    assert sum(comms.values()) == 8 * n_mb


def test_every_recv_follows_its_send_in_a_consistent_global_order():
    lowered = _lower_schedule(get_schedule_order("Interleaved1F1B", 4, 8, 8), 8, 8)
    result = _simulate(lowered)
    step_of = {a: t for acts in result.timeline.values() for t, a in enumerate(acts) if a}
    for a, t in step_of.items():
        if a.computation_type == RECV_F:
            assert step_of[_Action(a.stage_index - 1, SEND_F, a.microbatch_index)] < t
        if a.computation_type == RECV_B:
            assert step_of[_Action(a.stage_index + 1, SEND_B, a.microbatch_index)] < t


@pytest.mark.parametrize("name", ["Interleaved1F1B", "InterleavedZeroBubble", "DualPipeV"])
def test_reduce_grad_follows_each_stages_last_backward_once(name):
    n_mb = 4
    order = get_schedule_order(name, 2, 4, n_mb)
    for rank, acts in order.items():
        out = _add_reduce_grad(acts, n_mb)
        assert None not in out
        reduced = [a.stage_index for a in out if a.computation_type == REDUCE_GRAD]
        assert sorted(reduced) == sorted({x.stage_index for a in acts if a for x in a.leaves()})
        for stage in reduced:
            at = out.index(_Action(stage, REDUCE_GRAD, None))
            before = [x for a in out[:at] for x in a.leaves() if x.stage_index == stage]
            after = [x for a in out[at + 1 :] for x in a.leaves() if x.stage_index == stage]
            assert sum(x.computation_type in (B, W) for x in before) == n_mb
            assert after == [], (rank, stage)
            # Right after the action holding the n-th backward.
            assert any(x.computation_type in (B, W) for x in out[at - 1].leaves())


def test_unshard_reshard_prefetches_at_most_three_stages():
    acts = parse("0F0,2F0,4F0,6F0,6B0,4B0,2B0,0B0\n")[0]
    out = _add_unshard_reshard(acts)
    active: set[int] = set()
    for a in out:
        if a.computation_type == UNSHARD:
            assert a.stage_index not in active
            active.add(a.stage_index)
        elif a.computation_type == RESHARD:
            active.remove(a.stage_index)
        else:
            assert a.stage_index in active, f"{a} runs on a sharded stage"
        assert len(active) <= 3
    assert active == set()
    assert [str(a) for a in out[:4]] == ["0UNSHARD", "2UNSHARD", "4UNSHARD", "0F0"]


@pytest.mark.parametrize(
    ("name", "pp", "n_stages"), [("Interleaved1F1B", 4, 8), ("ZBVZeroBubble", 2, 4)]
)
def test_deferred_recvs_sit_just_before_their_consumer_or_a_send(name, pp, n_stages):
    order = get_schedule_order(name, pp, n_stages, 2 * pp)
    eager = _lower_schedule(order, n_stages, 2 * pp)
    rank_of = get_schedule_spec(name).stage_to_rank(pp, n_stages)
    lazy = _defer_recv_ops(eager, rank_of)
    assert lazy == _lower_schedule(order, n_stages, 2 * pp, defer_recv=True)
    for rank, acts in lazy.items():
        assert Counter(acts) == Counter(eager[rank])
        for i, a in enumerate(acts):
            if a.computation_type in (RECV_F, RECV_B):
                following = next(
                    x for x in acts[i + 1 :] if x.computation_type not in (RECV_F, RECV_B)
                )
                assert following.computation_type in (F, B, I, SEND_F, SEND_B), (rank, str(a))
    _simulate(lazy)


def test_strip_backward_gives_a_runnable_forward_only_table():
    lowered = _lower_schedule(get_schedule_order("DualPipeV", 2, 4, 4), 4, 4)
    fwd = _strip_backward(lowered)
    kinds = {a.computation_type for acts in fwd.values() for a in acts if a}
    assert kinds <= {F, SEND_F, RECV_F, UNSHARD, RESHARD}
    _validate_schedule(fwd, 2, 4, 4, forward_only=True)
    _simulate(fwd)


def test_crossing_order_cannot_be_lowered():
    # Valid per stage, but rank 0 waits for 1B0 while rank 1 first waits for 0F1.
    order = parse("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n")
    _validate_schedule(order, 2, 2, 2)
    with pytest.raises(ValueError, match=r"cannot place sends/recvs.*\{0: '0B0', 1: '1F1'\}"):
        _lower_schedule(order, 2, 2)
    with pytest.raises(ValueError, match="Malformed compute schedule"):
        _add_send_recv(order, {0: 0, 1: 1}, 2)


def test_lowering_rejects_tables_that_already_have_comms_or_fail_validation():
    lowered = _lower_schedule(get_schedule_order("GPipe", 2, 2, 1), 2, 1)
    with pytest.raises(ValueError, match="Expected a compute-only schedule but found"):
        _lower_schedule(lowered, 2, 1)
    with pytest.raises(ValueError, match=r"Stage 1 runs 0 forwards, expected 1"):
        _lower_schedule(parse("0F0,0B0\n\n"), 2, 1)


def test_defer_recv_rejects_a_recv_nobody_consumes():
    with pytest.raises(ValueError, match=r"RECV ops \['1RECV_F0'\] have no later compute"):
        _defer_recv_ops({1: [_Action(1, RECV_F, 0)]}, {0: 0, 1: 1})
