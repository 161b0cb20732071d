"""Small jobs that fail (or exit) in one particular way, for tests/distributed/test_failures.py.

Usage (every rank of a torchrun-style job): ``python failures.py <mode>``; each rank prints
``rank <r> reached <point>`` at the points the test looks for.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from datetime import timedelta

import spx
import spx.distributed as dist


def say(what: str) -> None:
    print(f"rank {dist.get_rank()} reached {what}", flush=True)


def main(mode: str) -> None:
    timeout = timedelta(seconds=3) if mode == "timeout" else None
    dist.init_process_group(timeout=timeout)
    rank = dist.get_rank()
    x = spx.ones(4) * rank
    dist.all_reduce(x)  # everyone is up and connected
    say("start")
    if mode == "raise":
        # Rank 1 raises while the others wait for it in a collective.
        if rank == 1:
            time.sleep(0.5)
            raise RuntimeError("rank 1 broke before the all_reduce")
        dist.all_reduce(x)
    elif mode == "exit":
        # Rank 1 leaves with sys.exit(3) while rank 0 waits for a message from it.
        if rank == 1:
            sys.exit(3)
        dist.recv(spx.zeros(4), src=1)
    elif mode == "kill":
        # Rank 1 dies (SIGKILL: no Python code runs) while rank 0 waits in a collective.
        if rank == 1:
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGKILL)
        dist.all_reduce(x)
    elif mode == "timeout":
        # A receive that is never matched, under a 3 s group timeout.
        if rank == 0:
            dist.recv(spx.zeros(4), src=1, tag=9)
        else:
            time.sleep(60)
    elif mode == "sigterm":
        # Rank 1 sends SIGTERM to rank 0 while rank 0 waits for it in an object collective (a
        # key-value wait inside C++, which a Python signal handler alone cannot interrupt).
        pids: list = [None, None]
        dist.all_gather_object(pids, os.getpid())
        if rank == 1:
            time.sleep(0.5)
            os.kill(pids[0], signal.SIGTERM)
            dist.barrier()  # rank 0 never comes: ended by the watchdog once rank 0 aborted
        else:
            dist.all_gather_object([None, None], "rank 1 never sends this")
    elif mode == "own-sigterm":
        # The program handles SIGTERM itself (installed after init_process_group): spx's
        # handler must step aside, and the job goes on.
        got = []
        signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
        pids: list = [None, None]
        dist.all_gather_object(pids, os.getpid())
        if rank == 1:
            os.kill(pids[0], signal.SIGTERM)
        else:
            deadline = time.monotonic() + 30
            while not got and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(1.0)  # time enough for spx's watcher thread to act, if it wrongly did
            say(f"handled signal {got}")
        dist.barrier()
    elif mode == "late-pull":
        # Rank 0 sends and is done at once; rank 1 pulls a second later: the exit handshake
        # must keep rank 0's transfer server up until then.
        if rank == 0:
            dist.send(spx.arange(4.0), dst=1)
            dist.send(spx.arange(1 << 20, dtype=spx.float32), dst=1, tag=1)
        else:
            time.sleep(1.0)
            a, b = spx.zeros(4), spx.zeros(1 << 20)
            dist.recv(a, src=0)
            dist.recv(b, src=0, tag=1)
            assert float(a[3]) == 3.0 and float(b[-1]) == (1 << 20) - 1
    say("end")


if __name__ == "__main__":
    main(sys.argv[1])
