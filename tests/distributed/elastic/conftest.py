"""Launchers started by these tests keep their temporary log directories in the test's tmp_path
(a failed run keeps its logs for the report, as torchrun does; /tmp must not collect them)."""

import pytest


@pytest.fixture(autouse=True)
def _launcher_tmpdir(tmp_path, monkeypatch):
    path = tmp_path / "launcher-tmp"
    path.mkdir()
    monkeypatch.setenv("TMPDIR", str(path))
    return path
