"""Where each worker's stdout, stderr and error file go: torchrun's ``--log-dir``/``-r``/``-t``.

Mirrors ``DefaultLogsSpecs`` in ``torch.distributed.elastic.multiprocessing.api``. One run writes
under ``<log_dir>/<run_id>_<random>/``, one folder per attempt (restart) and local rank::

    <log_dir>/<run_id>_<random>/attempt_<n>/<local_rank>/stdout.log   (redirected or tee'd)
    <log_dir>/<run_id>_<random>/attempt_<n>/<local_rank>/stderr.log
    <log_dir>/<run_id>_<random>/attempt_<n>/<local_rank>/error.json   (TORCHELASTIC_ERROR_FILE)

Without ``--log-dir`` the run folder goes in a fresh temporary directory. ``-r``/``--redirects``
sends a stream to its file only; ``-t``/``--tee`` to the file and to the console with a
``[<role><local_rank>]:`` prefix (``[default1]:``). Values: ``0`` none, ``1`` stdout, ``2``
stderr, ``3`` both, or per local rank ``0:1,1:2``. ``--local-ranks-filter 0,2`` shows only those
ranks on the console; their files are written all the same.
"""

from __future__ import annotations

import enum
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field

_MAPPING_REGEX = r"^(\d:[0123],)*(\d:[0123])$"
_VALUE_REGEX = r"^[0123]$"
# A destination of "" means the launcher's own console stream.
CONSOLE = ""


class Std(enum.IntFlag):
    """Which standard streams a setting applies to (torch's ``Std``)."""

    NONE = 0
    OUT = 1
    ERR = 2
    ALL = OUT | ERR

    @classmethod
    def from_str(cls, vm: str) -> Std | dict[int, Std]:
        """Parse ``-r``/``-t``: ``"3"`` -> ``Std.ALL``; ``"0:1,1:2"`` -> per local rank.

        Raises:
            ValueError: anything else, naming the accepted forms.

        Example:
            >>> Std.from_str("0:3,1:0")
            {0: <Std.ALL: 3>, 1: <Std.NONE: 0>}
        """
        if re.match(_VALUE_REGEX, vm):
            return cls(int(vm))
        if re.match(_MAPPING_REGEX, vm):
            return {int(i): cls(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
        raise ValueError(
            f"{vm!r} is not a stream setting: expected 0 (none), 1 (stdout), 2 (stderr), 3 (both) "
            "or a per-local-rank list such as 0:1,1:2"
        )


def to_map(val_or_map: Std | dict[int, Std], local_world_size: int) -> dict[int, Std]:
    """A setting for every local rank (ranks a mapping leaves out get ``Std.NONE``)."""
    if isinstance(val_or_map, Std):
        return dict.fromkeys(range(local_world_size), val_or_map)
    return {i: val_or_map.get(i, Std.NONE) for i in range(local_world_size)}


@dataclass
class LogsDest:
    """Per local rank: stdout/stderr destination (a path, :data:`CONSOLE` or ``os.devnull``),
    the files to tee to the console, and the error file."""

    stdouts: dict[int, str] = field(default_factory=dict)
    stderrs: dict[int, str] = field(default_factory=dict)
    tee_stdouts: dict[int, str] = field(default_factory=dict)
    tee_stderrs: dict[int, str] = field(default_factory=dict)
    error_files: dict[int, str] = field(default_factory=dict)
    filtered_stdout: str = ""
    filtered_stderr: str = ""
    attempt_dir: str = ""


class LogsSpecs:
    """Builds each attempt's log folders (mirrors torch's ``DefaultLogsSpecs``).

    Args:
        log_dir: base directory; None makes a temporary one; ``os.devnull`` writes nothing
            (and gives workers an empty ``TORCHELASTIC_ERROR_FILE``).
        redirects: streams that go to files only.
        tee: streams that go to files and to the console, prefixed.
        local_ranks_filter: local ranks shown on the console; None shows all.

    Example:
        >>> specs = LogsSpecs(log_dir=tempfile.mkdtemp(), tee=Std.ALL)
        >>> envs = {0: {"TORCHELASTIC_RUN_ID": "job", "TORCHELASTIC_RESTART_COUNT": "0"}}
        >>> dest = specs.reify(envs)
        >>> os.path.basename(dest.stdouts[0])
        'stdout.log'
    """

    def __init__(
        self,
        log_dir: str | None = None,
        redirects: Std | dict[int, Std] = Std.NONE,
        tee: Std | dict[int, Std] = Std.NONE,
        local_ranks_filter: set[int] | None = None,
    ) -> None:
        self.created_root = False
        if log_dir != os.devnull:
            if not log_dir:
                log_dir = tempfile.mkdtemp(prefix="spxrun_")
                self.created_root = True
            elif os.path.isfile(log_dir):
                raise NotADirectoryError(f"--log-dir={log_dir} is a file; pass a directory")
            else:
                os.makedirs(log_dir, exist_ok=True)
        self.root_log_dir = log_dir
        self.redirects = redirects
        self.tee = tee
        self.local_ranks_filter = local_ranks_filter
        self.run_log_dir: str | None = None

    def reify(self, envs: dict[int, dict[str, str]]) -> LogsDest:
        """Make this attempt's folders and set each worker's ``TORCHELASTIC_ERROR_FILE``.

        Args:
            envs: each local rank's worker environment (read for the run id and restart count,
                updated with the error file).
        """
        nprocs = len(envs)
        first = envs[0] if nprocs else {}
        run_id = first.get("TORCHELASTIC_RUN_ID", "test_run_id")
        restart_count = first.get("TORCHELASTIC_RESTART_COUNT", "0")
        devnull = self.root_log_dir == os.devnull
        attempt_dir = os.devnull
        if not devnull:
            if self.run_log_dir is None:
                self.run_log_dir = tempfile.mkdtemp(prefix=f"{run_id}_", dir=self.root_log_dir)
            attempt_dir = os.path.join(self.run_log_dir, f"attempt_{restart_count}")
            shutil.rmtree(attempt_dir, ignore_errors=True)
            os.makedirs(attempt_dir)
        redirs = to_map(self.redirects, nprocs)
        tees = to_map(self.tee, nprocs)
        dest = LogsDest(
            stdouts=dict.fromkeys(range(nprocs), CONSOLE),
            stderrs=dict.fromkeys(range(nprocs), CONSOLE),
            filtered_stdout=os.path.join(attempt_dir, "filtered_stdout.log"),
            filtered_stderr=os.path.join(attempt_dir, "filtered_stderr.log"),
            attempt_dir=attempt_dir,
        )
        for rank in range(nprocs):
            if devnull:
                dest.tee_stdouts[rank] = dest.tee_stderrs[rank] = os.devnull
                dest.error_files[rank] = os.devnull
                envs[rank]["TORCHELASTIC_ERROR_FILE"] = ""
                continue
            rank_dir = os.path.join(attempt_dir, str(rank))
            os.mkdir(rank_dir)
            to_file = redirs[rank] | tees[rank]
            if to_file & Std.OUT:
                dest.stdouts[rank] = os.path.join(rank_dir, "stdout.log")
            if to_file & Std.ERR:
                dest.stderrs[rank] = os.path.join(rank_dir, "stderr.log")
            shown = self.local_ranks_filter is None or rank in self.local_ranks_filter
            if tees[rank] & Std.OUT and shown:
                dest.tee_stdouts[rank] = dest.stdouts[rank]
            if tees[rank] & Std.ERR and shown:
                dest.tee_stderrs[rank] = dest.stderrs[rank]
            if not shown:
                for streams in (dest.stdouts, dest.stderrs):
                    if streams[rank] == CONSOLE:
                        streams[rank] = os.devnull
            error_file = os.path.join(rank_dir, "error.json")
            dest.error_files[rank] = error_file
            envs[rank]["TORCHELASTIC_ERROR_FILE"] = error_file
        return dest

    def cleanup(self) -> None:
        """Remove the temporary root this object made (after a successful run)."""
        if self.created_root and self.root_log_dir:
            shutil.rmtree(self.root_log_dir, ignore_errors=True)
