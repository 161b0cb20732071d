"""Atomic file writes: stage every file as a temp file, fsync it, then ``os.replace`` it in.

A checkpoint that is being overwritten must never be seen half-written: a crash, a full disk
or an exception mid-write has to leave the previous file exactly as it was. POSIX gives that
with one recipe — write a temp file *in the same directory* (``os.replace`` is only atomic
within one filesystem), flush it to disk, rename it over the target, then flush the directory
so the rename itself survives a power loss.

:class:`AtomicWriter` stages several files and moves them in together, so a sharded checkpoint
only starts replacing old shards once every new shard is safely on disk.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

from spx.serialization._leftovers import remove_dead_temps, temp_name


def check_target(path: Path) -> None:
    """Raise a clear error when ``path`` cannot be written as a file.

    Args:
        path: the file a save is about to (re)place.

    Raises:
        IsADirectoryError: ``path`` is an existing directory.
        FileNotFoundError: the parent directory does not exist.
    """
    if path.is_dir():
        raise IsADirectoryError(
            f"cannot save to {str(path)!r}: it is a directory; give a file path such as "
            f"{str(path / 'model.safetensors')!r}"
        )
    parent = path.parent
    if not parent.is_dir():
        raise FileNotFoundError(
            f"cannot save to {str(path)!r}: parent directory {str(parent)!r} does not exist; "
            f"create it first, e.g. os.makedirs({str(parent)!r}, exist_ok=True)"
        )


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    # Makes the rename durable. Some platforms/filesystems cannot open or fsync a directory;
    # the data itself is already on disk then, so this is best effort.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class AtomicWriter:
    """Stage files under temp names and move them all into place on success.

    Use it as a context manager: :meth:`stage` returns the temp path to write; leaving the
    block normally fsyncs every temp file and renames it over its target; leaving it with an
    exception (including ``KeyboardInterrupt``) deletes the temp files and leaves every target
    untouched.

    Example:
        >>> import pathlib, tempfile
        >>> target = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
        >>> with AtomicWriter() as writer:
        ...     _ = writer.stage(target).write_text("hello")
        >>> target.read_text()
        'hello'
    """

    def __init__(self) -> None:
        self._pending: list[tuple[Path, Path]] = []
        self._modes: dict[Path, int] = {}
        self._cleaned: set[Path] = set()

    def stage(self, path: str | os.PathLike[str]) -> Path:
        """Reserve a temp file next to ``path`` and return its name (the file exists, empty).

        Args:
            path: the final file name.

        Returns:
            The temp path to write the content to.
        """
        target = Path(path)
        check_target(target)
        if target.parent not in self._cleaned:
            # Temp files of earlier writers that were killed before their rename.
            self._cleaned.add(target.parent)
            remove_dead_temps(target.parent)
        while True:
            # Hidden, unique per process and call, naming its writer (see _leftovers).
            tmp = temp_name(target)
            try:
                # O_EXCL: never clobber someone else's temp file. Mode 0o666 lets the umask
                # give the usual permissions (mkstemp would make the checkpoint 0600).
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                continue
            os.close(fd)
            break
        # Permissions the file ends up with: the replaced file's, else what the umask gives a
        # new file (read off the temp file just created). Writers may recreate the temp file
        # with their own mode (safetensors' Rust writer makes it 0600), so commit reapplies it.
        try:
            self._modes[tmp] = target.stat().st_mode & 0o7777
        except FileNotFoundError:
            self._modes[tmp] = tmp.stat().st_mode & 0o777
        self._pending.append((tmp, target))
        return tmp

    def commit(self) -> None:
        """fsync every staged file, then rename each over its target; discard on failure."""
        try:
            for tmp, _ in self._pending:
                os.chmod(tmp, self._modes[tmp])
                _fsync_file(tmp)
            directories = []
            while self._pending:
                tmp, target = self._pending[0]
                os.replace(tmp, target)
                self._pending.pop(0)
                if target.parent not in directories:
                    directories.append(target.parent)
            for directory in directories:
                _fsync_dir(directory)
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        """Delete every staged temp file that has not been moved into place."""
        for tmp, _ in self._pending:
            tmp.unlink(missing_ok=True)
        self._pending.clear()

    def __enter__(self) -> AtomicWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()
