"""Executes one rank's action list: the pipeline runtime.

The schedule is data (a list of ``_Action`` per rank); this loop only carries it out. For each
compute action it takes the stage's input (the user's microbatch on stage 0, a value a local
stage handed over, or a receive from the neighbour's rank), runs the stage's compiled program
and passes the result on (to a local stage, or as a non-blocking send). Tables that already
contain SEND/RECV actions (torch's lowered format, or a custom CSV) have those executed where
they stand; compute-only tables get their transfers implicitly, right after the producing
action and right before the consuming one — deadlock-free for every table the simulator
accepts, because sends never block.

The loop is on the hot path: per action it does a dict lookup, one program call and at most one
transfer, and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spx.distributed.pipelining.runtime.transport import Transport
from spx.distributed.pipelining.stage import PipelineStage, _as_tuple
from spx.distributed.pipelining.tables.ir import (
    BACKWARD_INPUT,
    BACKWARD_WEIGHT,
    FORWARD,
    FULL_BACKWARD,
    RECV_B,
    RECV_F,
    REDUCE_GRAD,
    RESHARD,
    SEND_B,
    SEND_F,
    UNSHARD,
    _Action,
)


class RankRunner:
    """Runs a rank's actions for one step.

    Args:
        stages: this rank's stages, by stage index.
        stage_to_rank: group rank of every stage.
        rank: this rank's index in the pipeline group.
        transport: carries values to and from other ranks.
    """

    def __init__(
        self,
        stages: dict[int, PipelineStage],
        stage_to_rank: dict[int, int],
        rank: int,
        transport: Transport,
    ) -> None:
        self.stages = stages
        self.stage_to_rank = stage_to_rank
        self.rank = rank
        self.transport = transport
        self.num_stages = len(stage_to_rank)

    def run(
        self,
        actions: Sequence[_Action | None],
        args_mb: list[tuple],
        kwargs_mb: list[dict],
        target_mb: list[Any],
        train: bool,
        loss_kwargs: dict[str, Any] | None = None,
    ) -> None:
        """Execute ``actions`` (already filtered to this rank) for one step."""
        explicit = any(
            a is not None and a.computation_type in (SEND_F, RECV_F, SEND_B, RECV_B)
            for a in actions
        )
        # inbox: values waiting for a local compute action; outbox: values waiting for an
        # explicit SEND action. Keys: ("F", stage, mb) input of stage / ("B", stage, mb)
        # output gradient of stage.
        inbox: dict[tuple, Any] = {}
        outbox: dict[tuple, Any] = {}
        stages = self.stages
        stage_to_rank = self.stage_to_rank
        transport = self.transport
        last = self.num_stages - 1

        def deliver(tag: tuple, value: Any) -> None:
            dst = stage_to_rank[tag[1]]
            if dst == self.rank:
                inbox[tag] = value
            elif explicit:
                outbox[tag] = value
            else:
                transport.send(value, dst, tag)

        def take(tag: tuple) -> Any:
            value = inbox.pop(tag, None)
            if value is None:
                value = transport.recv(
                    stage_to_rank[tag[1] - 1 if tag[0] == "F" else tag[1] + 1], tag
                )
            return value

        for action in actions:
            if action is None:
                continue
            for a in action.leaves():
                kind = a.computation_type
                s = a.stage_index
                mb = a.microbatch_index
                stage = stages.get(s)
                if stage is None and kind not in (REDUCE_GRAD, UNSHARD, RESHARD):
                    raise RuntimeError(
                        f"Rank {self.rank} was given action {a} for stage {s}, which it does "
                        f"not hold (it holds stages {sorted(stages)})"
                    )
                if kind is FORWARD:
                    if s == 0:
                        args = args_mb[mb]
                        kwargs = kwargs_mb[mb]
                    else:
                        args = _as_tuple(take(("F", s, mb)))
                        kwargs = {}
                    if s == last:
                        out = stage.forward_one_chunk(
                            mb, args, kwargs, target_mb[mb], train, loss_kwargs
                        )
                    else:
                        out = stage.forward_one_chunk(mb, args, kwargs, None, train)
                    if s != last:
                        deliver(("F", s + 1, mb), out)
                elif kind is FULL_BACKWARD or kind is BACKWARD_INPUT:
                    grads = None if s == last else take(("B", s, mb))
                    if kind is FULL_BACKWARD:
                        g_in = stage.backward_one_chunk(mb, grads)
                    else:
                        g_in = stage.backward_input_one_chunk(mb, grads)
                    if s != 0:
                        deliver(("B", s - 1, mb), g_in)
                elif kind is BACKWARD_WEIGHT:
                    stage.backward_weight_one_chunk(mb)
                elif kind is SEND_F:
                    tag = ("F", s + 1, mb)
                    transport.send(outbox.pop(tag), stage_to_rank[s + 1], tag)
                elif kind is SEND_B:
                    tag = ("B", s - 1, mb)
                    transport.send(outbox.pop(tag), stage_to_rank[s - 1], tag)
                elif kind is RECV_F:
                    tag = ("F", s, mb)
                    inbox[tag] = transport.recv(stage_to_rank[s - 1], tag)
                elif kind is RECV_B:
                    tag = ("B", s, mb)
                    inbox[tag] = transport.recv(stage_to_rank[s + 1], tag)
                # UNSHARD / RESHARD / REDUCE_GRAD are FSDP bookkeeping in torch's lowered
                # tables; spx stages hold whole parameters, so there is nothing to do.
