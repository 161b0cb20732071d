"""Start ranks as real processes with torchrun's environment, for the multi-process tests.

Each rank is ``python -u <argv>`` with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
MASTER_ADDR=127.0.0.1 and a MASTER_PORT chosen free at run time, one CPU device per process
(``JAX_NUM_CPU_DEVICES=1``), the venv's interpreter, and the repository on ``PYTHONPATH``.
Output goes to files (no pipe can fill up and stall a rank). Bounded: after ``timeout`` seconds
every rank still running is killed and the test fails with each rank's output; nothing is ever
left running, whatever happens in the test.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

REPO = pathlib.Path(__file__).resolve().parents[2]
# One compilation cache for the test session's workers (spx gives each rank a directory in it),
# removed when the session ends.
_CACHE = tempfile.mkdtemp(prefix="spx-test-xla-cache-")
atexit.register(shutil.rmtree, _CACHE, True)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RankRun:
    """What one rank process did."""

    rank: int
    returncode: int | None  # None: it was still running at the deadline and was killed
    stdout: str
    stderr: str
    seconds: float  # from the start of the launch until the process ended

    def log(self) -> str:
        tail = lambda s: s[-4000:]  # noqa: E731
        return (
            f"--- rank {self.rank}: exit {self.returncode} after {self.seconds:.1f} s\n"
            f"[stdout]\n{tail(self.stdout)}\n[stderr]\n{tail(self.stderr)}"
        )


def rank_env(rank: int, nprocs: int, port: int, extra: dict[str, str] | None = None) -> dict:
    env = dict(os.environ)
    for name in list(env):
        if name.startswith(("TORCHELASTIC_", "PET_")) or name == "XLA_FLAGS":
            del env[name]
    env.update(
        RANK=str(rank),
        WORLD_SIZE=str(nprocs),
        LOCAL_RANK=str(rank),
        LOCAL_WORLD_SIZE=str(nprocs),
        GROUP_RANK="0",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        JAX_PLATFORMS="cpu",
        JAX_NUM_CPU_DEVICES="1",
        OMP_NUM_THREADS="1",
        # As spx-run sets it when workers outnumber the cores (the CI box's case): one XLA
        # thread, so programs run inline (spx.distributed.multiprocess.runtime).
        PJRT_NPROC="1",
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
        SPX_COMPILATION_CACHE_DIR=_CACHE,
        TF_CPP_MIN_LOG_LEVEL="2",
    )
    env.update(extra or {})
    return env


def launch(
    argv: Sequence[str],
    nprocs: int,
    timeout: float = 180.0,
    env: dict[str, str] | None = None,
    kill_after: float | None = None,
) -> list[RankRun]:
    """Run ``python -u *argv`` as ``nprocs`` ranks and wait for all of them.

    Args:
        argv: the script (or ``-m module``) and its arguments.
        nprocs: number of ranks.
        timeout: seconds until every rank still running is killed.
        env: extra environment variables for every rank.
        kill_after: if given, stop waiting that many seconds after the first rank ended with
            a non-zero code (and kill the rest), as a launcher would.

    Returns:
        One :class:`RankRun` per rank, in rank order.
    """
    port = free_port()
    logs = pathlib.Path(tempfile.mkdtemp(prefix="spx-ranks-"))
    procs: list[subprocess.Popen] = []
    files = []
    start = time.monotonic()
    ended: dict[int, float] = {}
    try:
        for rank in range(nprocs):
            out = open(logs / f"{rank}.out", "w")  # noqa: SIM115 - closed in finally
            err = open(logs / f"{rank}.err", "w")  # noqa: SIM115
            files += [out, err]
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-u", *argv],
                    env=rank_env(rank, nprocs, port, env),
                    cwd=REPO,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
            )
        deadline = start + timeout
        failed_at: float | None = None
        while time.monotonic() < deadline:
            for rank, p in enumerate(procs):
                if rank not in ended and p.poll() is not None:
                    ended[rank] = time.monotonic() - start
                    if p.returncode != 0 and failed_at is None:
                        failed_at = time.monotonic()
            if len(ended) == nprocs:
                break
            if kill_after is not None and failed_at and time.monotonic() - failed_at > kill_after:
                break
            time.sleep(0.02)
    finally:
        for p in procs:
            if p.poll() is None:
                with_group_kill(p)
        for f in files:
            f.close()
    runs = []
    for rank, p in enumerate(procs):
        runs.append(
            RankRun(
                rank,
                p.returncode if rank in ended else None,
                (logs / f"{rank}.out").read_text(errors="replace"),
                (logs / f"{rank}.err").read_text(errors="replace"),
                ended.get(rank, time.monotonic() - start),
            )
        )
    shutil.rmtree(logs, ignore_errors=True)  # the runs hold what the ranks wrote
    return runs


def with_group_kill(p: subprocess.Popen) -> None:
    """SIGKILL a rank and anything it started (it leads its own session), then reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=10)


def logs(runs: Sequence[RankRun]) -> str:
    return "\n".join(r.log() for r in runs)
