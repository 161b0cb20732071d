"""Temp files of writers that died: named so their owner can be checked, removed when it is dead.

An atomic save writes ``.model.safetensors.<tag>.tmp`` beside its target and renames it in at
the end. A process killed before the rename (``kill -9``, an OOM kill, a node lost) leaves that
file behind — a full-size copy of the checkpoint, one per kill. The temp name therefore carries
its writer: the host, the PID namespace (containers on one host can reuse PIDs) and the PID.
The next save into the same directory, and every load from it, removes the temp files whose
writer is *provably* dead: written on this host, in this PID namespace, by a PID that no longer
exists. A temp file of a live writer (another process saving right now), of another host or of
an unknown writer is never touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import socket
from pathlib import Path


def _pid_namespace() -> str:
    # Linux: the inode of the PID namespace; elsewhere PIDs are host-wide ("0").
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def _host() -> str:
    # Letters, digits and '-' only: the tag is split on '.'.
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:63] or "unknown"


_TAG = re.compile(
    r"^\.(?P<target>.+)\.(?P<host>[A-Za-z0-9-]+)-ns(?P<ns>\d+)\.(?P<pid>\d+)\.[0-9a-f]{8}\.tmp$"
)


def temp_name(target: Path) -> Path:
    """A fresh temp path beside ``target`` that names this process as its writer.

    Hidden and never ending in ``.safetensors``, so directory scans for checkpoints skip it.

    Example:
        >>> temp_name(Path("/ckpt/model.safetensors")).name.startswith(".model.safetensors.")
        True
    """
    tag = f"{_host()}-ns{_pid_namespace()}.{os.getpid()}.{secrets.token_hex(4)}"
    return target.with_name(f".{target.name}.{tag}.tmp")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else (EPERM), or unknowable: keep the file
    return True


def dead_writer(name: str) -> bool:
    """Whether ``name`` is an spx temp file whose writer is provably dead.

    Args:
        name: a file name (no directory).
    """
    match = _TAG.match(name)
    if match is None:
        return False
    if match["host"] != _host() or match["ns"] != _pid_namespace():
        return False  # another machine or container: its PIDs mean nothing here
    return not _alive(int(match["pid"]))


def remove_dead_temps(directory: Path) -> list[Path]:
    """Delete the temp files in ``directory`` left by writers that died; return them.

    Errors (a read-only directory, a file that vanished meanwhile) are ignored: cleaning up
    must never fail a save or a load.

    Args:
        directory: the directory to scan (not recursively).
    """
    removed: list[Path] = []
    try:
        names = [n for n in os.listdir(directory) if n.startswith(".") and n.endswith(".tmp")]
    except OSError:
        return removed
    for name in names:
        if dead_writer(name):
            path = Path(directory) / name
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path)
    return removed
