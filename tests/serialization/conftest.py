"""Fixtures for the checkpoint tests: a record of which files and tensors were really read."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest
import safetensors


@dataclass
class FileLog:
    """Every ``safetensors.safe_open`` call and every tensor read through it."""

    opened: list[str] = field(default_factory=list)
    reads: list[tuple[str, str]] = field(default_factory=list)

    def opened_names(self) -> list[str]:
        return [os.path.basename(p) for p in self.opened]

    def read_keys(self) -> list[str]:
        return [key for _, key in self.reads]


class _Recorded:
    def __init__(self, handle, path: str, log: FileLog) -> None:
        self._handle, self._path, self._log = handle, path, log

    def get_tensor(self, key: str):
        self._log.reads.append((self._path, key))
        return self._handle.get_tensor(key)

    def __getattr__(self, name: str):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._handle.__exit__(*exc)


@pytest.fixture
def file_log(monkeypatch: pytest.MonkeyPatch) -> FileLog:
    """Wrap ``safetensors.safe_open`` (the public entry point) to count opens and reads."""
    log = FileLog()
    real = safetensors.safe_open

    def recording_open(path, framework, *args, **kwargs):
        handle = real(path, framework, *args, **kwargs)
        log.opened.append(str(path))
        return _Recorded(handle, str(path), log)

    monkeypatch.setattr(safetensors, "safe_open", recording_open)
    return log
