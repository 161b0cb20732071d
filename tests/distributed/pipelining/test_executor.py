"""RankRunner posts receives ahead of the table, within its window, and runs the last stage's
back-to-back F and B as one program (fake stages and transport).

The numbers the schedules compute are checked against torch and single-device runs in the
conformance suite; this file checks only *when* the runner posts, waits and computes.
"""

from __future__ import annotations

import pytest

from spx.distributed.pipelining.runtime.executor import RankRunner
from spx.distributed.pipelining.tables.ir import _Action
from spx.distributed.pipelining.tables.lowering import _lower_schedule
from spx.distributed.pipelining.tables.orders import (
    gpipe_order,
    interleaved_1f1b_order,
    one_f_one_b_order,
    stage_to_rank_loop,
)


class _Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, tuple]] = []


class _Handle:
    def __init__(self, log: _Log, tag: tuple) -> None:
        self.log, self.tag = log, tag

    def wait(self) -> str:
        self.log.events.append(("wait", self.tag))
        return "value"


class _Transport:
    def __init__(self, log: _Log) -> None:
        self.log = log

    def send(self, tree, dst, tag) -> None:
        self.log.events.append(("send", tag))

    def post_recv(self, src, tag) -> _Handle:
        self.log.events.append(("post", tag))
        return _Handle(self.log, tag)

    def abort(self, reason: str) -> None:
        raise AssertionError(reason)


class _Stage:
    fuses_forward_backward = False

    def __init__(self, log: _Log, index: int) -> None:
        self.log, self.index = log, index

    def forward_one_chunk(self, mb, args, kwargs, target, train, loss_kwargs=None):
        self.log.events.append(("F", (self.index, mb)))
        return "activation"

    def backward_one_chunk(self, mb, grads):
        self.log.events.append(("B", (self.index, mb)))
        return "gradient"


class _FusingStage(_Stage):
    """A last stage with a loss: the runner may run its F and B of a microbatch together."""

    fuses_forward_backward = True

    def forward_backward_one_chunk(self, mb, args, kwargs, target, loss_kwargs):
        self.log.events.append(("FB", (self.index, mb)))
        return "gradient"


def _run(
    order,
    n_stages: int,
    n_mb: int,
    rank: int,
    stage_to_rank: dict,
    ahead: int,
    fusing: bool = False,
):
    table = _lower_schedule(order, n_stages, n_mb, unshard_reshard=False)
    log = _Log()
    last = n_stages - 1
    mine = {
        s: (_FusingStage if fusing and s == last else _Stage)(log, s)
        for s, r in stage_to_rank.items()
        if r == rank
    }
    runner = RankRunner(mine, stage_to_rank, rank, _Transport(log), "test")
    runner.recv_ahead = ahead
    runner.run(table, [((),)] * n_mb, [{}] * n_mb, [None] * n_mb, train=True)
    return table[rank], log.events


def _table_posts_before(actions) -> dict[tuple, int]:
    """How many compute actions the table runs before posting each receive."""
    out, computed = {}, 0
    for a in actions:
        if a is None:
            continue
        kind = str(a.computation_type)
        if kind in ("RECV_F", "RECV_B"):
            out[(kind[-1], a.stage_index, a.microbatch_index)] = computed
        elif kind in ("F", "B"):
            computed += 1
    return out


CASES = [
    ("1F1B rank 0", one_f_one_b_order(2, 2, 8), 2, 8, 0, {0: 0, 1: 1}),
    ("1F1B rank 1", one_f_one_b_order(2, 2, 8), 2, 8, 1, {0: 0, 1: 1}),
    ("1F1B 4 ranks, rank 2", one_f_one_b_order(4, 4, 8), 4, 8, 2, {s: s for s in range(4)}),
    (
        "Interleaved1F1B rank 1",
        interleaved_1f1b_order(2, 4, 4),
        4,
        4,
        1,
        stage_to_rank_loop(2, 4),
    ),
]


@pytest.mark.parametrize("ahead", [0, 1, 2, 4])
@pytest.mark.parametrize(("name", "order", "n_stages", "n_mb", "rank", "where"), CASES)
def test_receives_are_posted_no_later_than_the_table_and_within_the_window(
    name, order, n_stages, n_mb, rank, where, ahead
):
    actions, events = _run(order, n_stages, n_mb, rank, where, ahead)
    table_at = _table_posts_before(actions)
    assert table_at, name  # every case receives something
    posted, computed, outstanding = {}, 0, 0
    for kind, tag in events:
        if kind == "post":
            posted[tag] = computed
            outstanding += 1
            if computed < table_at[tag]:  # posted before the table would: within the window
                assert outstanding <= ahead, (name, tag, outstanding)
        elif kind == "wait":
            assert tag in posted, (name, tag)  # waited only on a posted receive
            outstanding -= 1
        elif kind in ("F", "B"):
            computed += 1
    assert set(posted) == set(table_at), name  # every receive posted exactly once
    for tag, at in table_at.items():
        assert posted[tag] <= at, (name, tag)  # never later than the table posts it
    if ahead == 0:
        assert posted == table_at, name  # no window: exactly where the table posts


def test_rank_0_of_1f1b_posts_its_first_gradients_before_computing():
    # The table posts RECV_B0 only after F0 and F1; with the window both first gradient
    # receives are posted before the first forward, so their pulls wait at rank 1.
    _, events = _run(one_f_one_b_order(2, 2, 8), 2, 8, 0, {0: 0, 1: 1}, ahead=2)
    assert events[:2] == [("post", ("B", 0, 0)), ("post", ("B", 0, 1))]
    assert events[2] == ("F", (0, 0))


# -- the last stage's F and B as one program ---------------------------------------------------
def test_1f1b_last_stage_runs_each_forward_with_its_backward():
    # Rank 1 of 1F1B runs F(i), posts RECV_F(i+1), runs B(i): one program per microbatch,
    # and the gradient goes out after it, in microbatch order.
    _, events = _run(one_f_one_b_order(2, 2, 8), 2, 8, 1, {0: 0, 1: 1}, ahead=2, fusing=True)
    computed = [e for e in events if e[0] in ("F", "B", "FB")]
    assert computed == [("FB", (1, mb)) for mb in range(8)]
    sends = [e for e in events if e[0] == "send"]
    assert sends == [("send", ("B", 0, mb)) for mb in range(8)]
    for mb in range(8):
        assert events.index(("FB", (1, mb))) < events.index(("send", ("B", 0, mb)))
        # Its input was waited on before the program ran.
        assert events.index(("wait", ("F", 1, mb))) < events.index(("FB", (1, mb)))


def test_forward_and_backward_apart_stay_two_programs():
    # GPipe's last stage runs every F, then every B: nothing to fuse.
    _, events = _run(gpipe_order(2, 2, 4), 2, 4, 1, {0: 0, 1: 1}, ahead=2, fusing=True)
    computed = [e for e in events if e[0] in ("F", "B", "FB")]
    assert computed == [("F", (1, mb)) for mb in range(4)] + [("B", (1, mb)) for mb in range(4)]


@pytest.mark.parametrize(
    ("spelled", "pairs"),
    [
        (["3F0", "3RECV_F1", "3B0"], {0: 2}),  # only a receive between them
        (["3F0", None, "3B0"], {0: 2}),  # a bubble
        (["3F0", "1SEND_F0", "3B0"], {}),  # a send would wait for the backward
        (["3F0", "1F0", "3B0"], {}),  # another computation
        (["3F0", "3B1"], {}),  # another microbatch
        (["3F0", "3I0", "3W0"], {}),  # zero-bubble halves stay apart
        (["2F0", "2B0"], {}),  # not the last stage
    ],
)
def test_which_forward_backward_pairs_fuse(spelled, pairs):
    log = _Log()
    runner = RankRunner({3: _FusingStage(log, 3)}, {s: 0 for s in range(4)}, 0, _Transport(log))
    actions = [None if a is None else _Action.from_str(a) for a in spelled]
    assert runner._fused(actions) == pairs


def test_a_stage_without_a_loss_is_never_fused():
    log = _Log()
    runner = RankRunner({1: _Stage(log, 1)}, {0: 0, 1: 0}, 0, _Transport(log))
    assert runner._fused([_Action.from_str("1F0"), _Action.from_str("1B0")]) == {}
