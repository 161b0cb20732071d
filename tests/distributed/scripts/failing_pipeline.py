"""A pipelined training job in which one rank fails mid-schedule (fault injection for tests).

Usage (as every rank of a torchrun-style job): ``python failing_pipeline.py <schedule>
<failing rank> <step> <microbatch>``. Every rank holds one stage of a 1F1B-style pipeline of
``WORLD_SIZE`` stages; the failing rank's backward of ``<microbatch>`` raises in training step
``<step>``. Each rank prints ``step <k> done`` after each step.

1F1B's last stage runs F and B of a microbatch as one program; there the injected failure
first makes that program fail (``FusedProgramFailed``, what a failing program raises), so the
runtime runs F and B apart and the separate backward raises, at its own action.
"""

from __future__ import annotations

import sys

import spx
import spx.distributed as dist
from spx.distributed.pipelining import PipelineStage, get_schedule_class
from spx.distributed.pipelining.stage import FusedProgramFailed


def main(schedule_name: str, fail_rank: int, fail_step: int, fail_mb: int) -> None:
    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    spx.manual_seed(rank)
    stage = PipelineStage(
        spx.nn.Sequential(spx.nn.Linear(8, 8), spx.nn.Tanh()), rank, world, spx.device("cpu")
    )
    schedule = get_schedule_class(schedule_name)(
        stage, 4, loss_fn=lambda out, t: ((out - t) ** 2).mean()
    )
    current = {"step": 0}
    if rank == fail_rank:
        backward = stage.backward_one_chunk

        def failing_backward(mb, grads):
            if current["step"] == fail_step and mb == fail_mb:
                raise RuntimeError(f"injected failure in the backward of microbatch {mb}")
            return backward(mb, grads)

        stage.backward_one_chunk = failing_backward
        fused = stage.forward_backward_one_chunk

        def failing_fused(mb, *args, **kwargs):
            if current["step"] == fail_step and mb == fail_mb:
                raise FusedProgramFailed("injected: the fused program fails")
            return fused(mb, *args, **kwargs)

        stage.forward_backward_one_chunk = failing_fused
    x, t = spx.ones(8, 8), spx.zeros(8, 8)
    for step in range(fail_step + 2):
        current["step"] = step
        if stage.is_first:
            schedule.step(x)
        elif stage.is_last:
            schedule.step(target=t)
        else:
            schedule.step()
        print(f"step {step} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
