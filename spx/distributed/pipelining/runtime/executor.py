"""Executes one rank's lowered action list: the pipeline runtime.

The schedule is data: the table the executor runs is the *lowered* one
(:func:`spx.distributed.pipelining.tables.lowering._lower_schedule`, torch's
``pipeline_order_with_comms``), whose SEND/RECV actions say where every transfer starts. For
each action the loop does one thing:

* F / B / I / W: take the stage's input (the user's microbatch on stage 0, a value a local stage
  handed over, or the posted receive of that tag, waited on now), run the stage's compiled
  program, and keep the result for the next local stage or for the SEND that follows. When the
  last stage's B of a microbatch follows its F with only receives between them (1F1B's last
  stage, every microbatch), F runs both in one program (:meth:`RankRunner._fused`) and B has
  nothing left to do: the same results up to float rounding (XLA fuses the two differently),
  one program fewer and no residuals kept. If that program fails, F and B run apart from then
  on, so a failure is reported at the action the table has it;
* SEND_F / SEND_B: start the transfer (never blocks);
* RECV_F / RECV_B: post the receive (never blocks; the consumer waits); the loop posts each
  one at the latest here, and up to ``recv_ahead`` receives earlier (:meth:`RankRunner._receives`);
* UNSHARD / RESHARD / REDUCE_GRAD: FSDP bookkeeping in torch; spx stages hold whole parameters
  and the schedule scales gradients after the step, so there is nothing to do.

If an action raises, the error gets a report — the rank, the step, the action and the whole
table as torch's step x rank grid with the failing step marked (torch's
``_format_pipeline_order(..., error_step_number=...)``) — and the pipeline group is aborted, so
the other ranks stop at their next transfer instead of waiting out the group's timeout.

The loop is on the hot path: per action it does a dict lookup, one program call and at most one
transfer, and nothing else.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from spx.distributed.pipelining.runtime.transport import Transport
from spx.distributed.pipelining.stage import FusedProgramFailed, PipelineStage, _as_tuple
from spx.distributed.pipelining.tables.ir import (
    BACKWARD_INPUT,
    BACKWARD_WEIGHT,
    FORWARD,
    FULL_BACKWARD,
    RECV_B,
    RECV_F,
    SEND_B,
    SEND_F,
    _Action,
    _format_pipeline_order,
)

_log = logging.getLogger("spx.distributed.pipelining")


def failure_report(
    schedule: str,
    rank: int,
    step: int,
    action: _Action | None,
    error: BaseException,
    table: Mapping[int, Sequence[_Action | None]],
) -> str:
    """What a rank prints when an action of its table raised.

    Args:
        schedule: the schedule's class name.
        rank: the failing rank (in the pipeline group).
        step: index of the failing action in this rank's list.
        action: the action that raised.
        error: the exception.
        table: the executed table of every rank (rank -> actions).

    Returns:
        A header naming the rank, step and action, then the grid with ``<-- ERROR HERE``.

    Example:
        >>> a = _Action.from_str("0F0")
        >>> print(failure_report("ScheduleGPipe", 0, 0, a, ValueError("x"), {0: [a]}))
        [Rank 0] pipeline schedule ScheduleGPipe failed at step 0 running action 0F0: ValueError: x
        Full schedule (the table this rank executed, with comms):
                Rank 0
        Step 0: 0F0    <-- ERROR HERE
        <BLANKLINE>
    """
    return (
        f"[Rank {rank}] pipeline schedule {schedule} failed at step {step} running action "
        f"{action}: {type(error).__name__}: {error}\n"
        "Full schedule (the table this rank executed, with comms):\n"
        + _format_pipeline_order(table, error_step_number=step)
    )


class RankRunner:
    """Runs a rank's actions for one step.

    Args:
        stages: this rank's stages, by stage index.
        stage_to_rank: group rank of every stage.
        rank: this rank's index in the pipeline group.
        transport: carries values to and from other ranks.
        schedule: the schedule's class name (for failure reports).
    """

    def __init__(
        self,
        stages: dict[int, PipelineStage],
        stage_to_rank: dict[int, int],
        rank: int,
        transport: Transport,
        schedule: str = "",
    ) -> None:
        self.stages = stages
        self.stage_to_rank = stage_to_rank
        self.rank = rank
        self.transport = transport
        self.schedule = schedule
        self.num_stages = len(stage_to_rank)
        # Per-step state: values handed between local stages, posted receives, values waiting
        # for their SEND. Keys: ("F", stage, mb) the input of stage, ("B", stage, mb) the
        # gradient of stage's output.
        self._local: dict[tuple, Any] = {}
        self._posted: dict[tuple, Any] = {}
        self._outbox: dict[tuple, Any] = {}
        self.recv_ahead = 2  # receives kept posted ahead of the table (see _receives)
        self._plan: tuple[Any, dict[int, int]] = ((), {})  # (actions, _fused(actions))
        self.fuse = True  # False after a fused program failed (see _fused)

    def run(
        self,
        table: Mapping[int, Sequence[_Action | None]],
        args_mb: list[tuple],
        kwargs_mb: list[dict],
        target_mb: list[Any],
        train: bool,
        loss_kwargs: dict[str, Any] | None = None,
    ) -> None:
        """Execute this rank's list of the lowered ``table`` for one step.

        Raises:
            Exception: whatever an action raised, with the failure report attached as a note
                (and logged); the pipeline group is aborted first.
        """
        actions = table[self.rank]
        step = 0
        action = None
        try:
            recvs = self._receives(actions)
            fused = self._fused_plan(actions) if train and self.fuse else {}
            done = set()  # positions of backwards that ran with their forward
            ahead = 0  # receives posted so far, in table order
            for step, action in enumerate(actions):
                # Post receives before the table asks for them (see _receives).
                while ahead < len(recvs) and (
                    recvs[ahead][0] <= step or len(self._posted) < self.recv_ahead
                ):
                    self._post(recvs[ahead][1])
                    ahead += 1
                if action is None or step in done:
                    continue
                if step in fused and self.fuse:
                    if self._forward_backward(action, args_mb, kwargs_mb, target_mb, loss_kwargs):
                        done.add(fused[step])
                    else:  # the fused program failed: F now, B at its own step
                        self._run_action(action, args_mb, kwargs_mb, target_mb, train, loss_kwargs)
                else:
                    self._run_action(action, args_mb, kwargs_mb, target_mb, train, loss_kwargs)
        except Exception as e:
            report = failure_report(self.schedule, self.rank, step, action, e, table)
            _log.error("%s", report)
            e.add_note(report)
            self.transport.abort(
                f"pipeline rank {self.rank} failed at step {step} ({action}): "
                f"{type(e).__name__}: {e}"
            )
            raise
        finally:
            self._local.clear()
            self._posted.clear()
            self._outbox.clear()

    @staticmethod
    def _receives(actions: Sequence[_Action | None]) -> list[tuple[int, _Action]]:
        """``(position, RECV)`` of every receive in ``actions``, in table order.

        The table posts a receive just before its consumer or one action ahead of it (rank 0
        of 1F1B posts RECV_B(i) right before B(i)). Across processes a receive posted after
        the peer sent costs a round trip (the pull's request, then the data) on the critical
        path; posted ahead, the pull waits at the sender and the data moves as soon as it is
        sent, while this rank computes. ``recv_ahead`` receives stay posted ahead (each holds
        a receive buffer: the window bounds that memory, as 1F1B bounds activations).
        """
        return [
            (i, leaf)
            for i, a in enumerate(actions)
            if a is not None
            for leaf in a.leaves()
            if leaf.computation_type is RECV_F or leaf.computation_type is RECV_B
        ]

    def _fused_plan(self, actions: Sequence[_Action | None]) -> dict[int, int]:
        """:meth:`_fused` of this table, cached by its contents (a table edited in place gets
        a new plan; comparing the ~30 actions of a step costs ~1 us)."""
        key = tuple(actions)
        if self._plan[0] != key:
            self._plan = (key, self._fused(actions))
        return self._plan[1]

    def _fused(self, actions: Sequence[_Action | None]) -> dict[int, int]:
        """``{position of F: position of its B}`` for the last stage's F/B pairs that run back
        to back: nothing but receives (posted ahead anyway) or bubbles between them.

        Moving B up to its F's position changes no result: B needs only F's residuals and
        the loss's unit cotangent, and nothing between them sends or computes.
        """
        last = self.num_stages - 1
        stage = self.stages.get(last)
        if stage is None or not stage.fuses_forward_backward:
            return {}
        pairs = {}
        for i, a in enumerate(actions):
            if a is None or a.sub_actions is not None or a.stage_index != last:
                continue
            if a.computation_type is not FORWARD:
                continue
            for j in range(i + 1, len(actions)):
                b = actions[j]
                if b is None or b.computation_type is RECV_F or b.computation_type is RECV_B:
                    continue
                if (
                    b.sub_actions is None
                    and b.computation_type is FULL_BACKWARD
                    and b.stage_index == last
                    and b.microbatch_index == a.microbatch_index
                ):
                    pairs[i] = j
                break
        return pairs

    def _post(self, leaf: _Action) -> None:
        s, mb = leaf.stage_index, leaf.microbatch_index
        if leaf.computation_type is RECV_F:
            tag, src = ("F", s, mb), self.stage_to_rank[s - 1]
        else:
            tag, src = ("B", s, mb), self.stage_to_rank[s + 1]
        self._posted[tag] = self.transport.post_recv(src, tag)

    def _take(self, tag: tuple) -> Any:
        value = self._local.pop(tag, _MISSING)
        if value is not _MISSING:
            return value
        handle = self._posted.pop(tag, None)
        if handle is None:
            raise RuntimeError(
                f"rank {self.rank} needs {tag[0]} input of stage {tag[1]} microbatch {tag[2]}, "
                "but no local stage produced it and no RECV for it was posted earlier; the "
                "table is missing a RECV (lower compute-only tables with _lower_schedule)"
            )
        return handle.wait()

    def _hand_over(self, tag: tuple, value: Any) -> None:
        if self.stage_to_rank[tag[1]] == self.rank:
            self._local[tag] = value
        else:
            self._outbox[tag] = value

    def _run_action(
        self,
        a: _Action,
        args_mb: list[tuple],
        kwargs_mb: list[dict],
        target_mb: list[Any],
        train: bool,
        loss_kwargs: dict[str, Any] | None,
    ) -> None:
        for leaf in a.leaves():
            kind = leaf.computation_type
            s = leaf.stage_index
            mb = leaf.microbatch_index
            if kind is FORWARD:
                stage = self._stage(leaf)
                args, kwargs = self._forward_inputs(s, mb, args_mb, kwargs_mb)
                if s == self.num_stages - 1:
                    stage.forward_one_chunk(mb, args, kwargs, target_mb[mb], train, loss_kwargs)
                else:
                    out = stage.forward_one_chunk(mb, args, kwargs, None, train)
                    self._hand_over(("F", s + 1, mb), out)
            elif kind is FULL_BACKWARD or kind is BACKWARD_INPUT:
                stage = self._stage(leaf)
                grads = None if s == self.num_stages - 1 else self._take(("B", s, mb))
                if kind is FULL_BACKWARD:
                    g_in = stage.backward_one_chunk(mb, grads)
                else:
                    g_in = stage.backward_input_one_chunk(mb, grads)
                if s != 0:
                    self._hand_over(("B", s - 1, mb), g_in)
            elif kind is BACKWARD_WEIGHT:
                self._stage(leaf).backward_weight_one_chunk(mb)
            elif kind is SEND_F:
                tag = ("F", s + 1, mb)
                self.transport.send(self._outbox.pop(tag), self.stage_to_rank[s + 1], tag)
            elif kind is SEND_B:
                tag = ("B", s - 1, mb)
                self.transport.send(self._outbox.pop(tag), self.stage_to_rank[s - 1], tag)
            # RECV_F / RECV_B: posted by run(), at or before this point (_receives).
            # UNSHARD / RESHARD / REDUCE_GRAD: nothing to do (see the module docstring).

    def _forward_inputs(
        self, s: int, mb: int, args_mb: list[tuple], kwargs_mb: list[dict]
    ) -> tuple[tuple, dict]:
        if s == 0:
            return args_mb[mb], kwargs_mb[mb]
        return _as_tuple(self._take(("F", s, mb))), {}

    def _forward_backward(
        self,
        a: _Action,
        args_mb: list[tuple],
        kwargs_mb: list[dict],
        target_mb: list[Any],
        loss_kwargs: dict[str, Any] | None,
    ) -> bool:
        """F and B of the last stage in one program (see _fused). False: the program failed
        before anything changed; the caller runs F, and B at its step, as separate programs
        (they raise where the table has the failing action, or work: then fusion stays off)."""
        s, mb = a.stage_index, a.microbatch_index
        stage = self._stage(a)
        if s != 0:
            # Peek: the input stays available to the separate F if the fused program fails.
            key = ("F", s, mb)
            if key not in self._local:
                self._local[key] = self._take(key)
            args, kwargs = _as_tuple(self._local[key]), {}
        else:
            args, kwargs = args_mb[mb], kwargs_mb[mb]
        try:
            g_in = stage.forward_backward_one_chunk(mb, args, kwargs, target_mb[mb], loss_kwargs)
        except FusedProgramFailed as e:
            self.fuse = False
            _log.debug("rank %d: fused F/B program failed (%s); running them apart", self.rank, e)
            return False
        self._local.pop(("F", s, mb), None)
        if s != 0:
            self._hand_over(("B", s - 1, mb), g_in)
        return True

    def _stage(self, a: _Action) -> PipelineStage:
        stage = self.stages.get(a.stage_index)
        if stage is None:
            raise RuntimeError(
                f"Rank {self.rank} was given action {a} for stage {a.stage_index}, which it "
                f"does not hold (it holds stages {sorted(self.stages)})"
            )
        return stage


_MISSING = object()
