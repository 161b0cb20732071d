"""A small pipelined training job that reports its startup timings (compile-cache tests/tools).

Every rank of a torchrun-style job holds one stage (two Linear+Tanh blocks of width 64) of a
1F1B pipeline, trains with AdamW for ``STEPS`` steps and prints one JSON line per rank::

    {"to_first_step": s, "init_to_first_step": s, "rank": r, "cache_hits": n, "cache_misses": n}

``cache_hits``/``cache_misses`` count JAX's persistent compilation cache events of this rank.

``to_first_step`` counts from ``LAUNCH_T0`` (epoch seconds set by the launcher), else from the
start of this script; ``init_to_first_step`` from ``init_process_group``, after the imports.
"""

from __future__ import annotations

import json
import os
import sys
import time

T0 = float(os.environ.get("LAUNCH_T0", time.time()))

import jax  # noqa: E402

import spx  # noqa: E402
import spx.distributed as dist  # noqa: E402
from spx import nn  # noqa: E402
from spx.distributed.pipelining import PipelineStage, Schedule1F1B  # noqa: E402

STEPS = int(os.environ.get("STEPS", "3"))
CACHE_EVENTS = {"/jax/compilation_cache/cache_hits": 0, "/jax/compilation_cache/cache_misses": 0}


def _count(event: str, **_: object) -> None:
    if event in CACHE_EVENTS:
        CACHE_EVENTS[event] += 1


jax.monitoring.register_event_listener(_count)


def main() -> None:
    t_init = time.time()
    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    spx.manual_seed(rank)
    module = nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
    stage = PipelineStage(module, rank, world, spx.device("cpu"))
    schedule = Schedule1F1B(stage, 4, loss_fn=lambda out, t: ((out - t) ** 2).mean())
    opt = spx.optim.AdamW(module.parameters(), lr=1e-3)
    x, t = spx.ones(16, 64), spx.zeros(16, 64)
    first = None
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        step_losses: list = []
        if stage.is_first:
            schedule.step(x)
        elif stage.is_last:
            schedule.step(target=t, losses=step_losses)
        else:
            schedule.step()
        opt.step()
        for p in module.parameters():
            p.sum().item()  # wait for the update (a host read, as torch's .item() syncs)
        if first is None:
            dist.barrier()  # the step is done on every rank
            first = time.time()
        losses.append(sum(float(v) for v in step_losses))
    report = {
        "to_first_step": first - T0,
        "init_to_first_step": first - t_init,
        "rank": rank,
        "cache_hits": CACHE_EVENTS["/jax/compilation_cache/cache_hits"],
        "cache_misses": CACHE_EVENTS["/jax/compilation_cache/cache_misses"],
    }
    print(json.dumps(report), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
