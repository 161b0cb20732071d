"""Shared helpers of the spx-run tests: launch with timeouts, free ports, pid checks.

Every launch runs in its own session and is killed (whole process group) if it overruns, so a
failing test never leaves processes behind.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

SPX_RUN = [sys.executable, "-m", "spx.distributed.run"]
TORCHRUN = [str(Path(sys.executable).with_name("torchrun"))]


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without launcher variables (PET_*, TORCHELASTIC_*...), plus ``extra``."""
    drop = ("PET_", "TORCHELASTIC_", "RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.pop("OMP_NUM_THREADS", None)
    env.pop("PJRT_NPROC", None)
    # `import jax` in this test process added these; a user's shell would not have them.
    for key in ("TPU_SKIP_MDS_QUERY", "TF_CPP_MIN_LOG_LEVEL"):
        env.pop(key, None)
    env.update(extra)
    return env


def free_ports(count: int = 1) -> int:
    """A port ``p`` such that ``p .. p + count - 1`` are free on 127.0.0.1 right now."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count >= 65536:
            continue
        socks = []
        try:
            for p in range(base, base + count):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free port range found")


def script(tmp_path: Path, name: str, text: str) -> Path:
    """Write a worker script and return its path."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def start(args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None):
    """Start a launcher (own session, pipes); the caller must :func:`finish` it."""
    return subprocess.Popen(
        [str(a) for a in args],
        env=clean_env() if env is None else env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finish(proc: subprocess.Popen, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """Wait for ``proc``; on timeout kill its process group and fail."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        try:  # a process outside the group may still hold the pipes: do not wait for it
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = "<unavailable>", "<unavailable>"
        raise AssertionError(
            f"launcher timed out after {timeout}s\nstdout:\n{out}\nstderr:\n{err}"
        ) from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run(
    args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess:
    """Run a launcher to the end (bounded by ``timeout``)."""
    return finish(start(args, env, cwd), timeout)


def alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fp:
            return fp.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pids: list[int], timeout: float = 10.0) -> list[int]:
    """Wait until none of ``pids`` runs; return those still alive after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def wait_for_files(paths: list[Path], timeout: float = 30.0) -> None:
    """Wait until every path exists (workers announce themselves by writing files)."""
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        if time.monotonic() > deadline:
            missing = [str(p) for p in paths if not p.exists()]
            raise AssertionError(f"workers did not start in {timeout}s: missing {missing}")
        time.sleep(0.05)
