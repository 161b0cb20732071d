"""Error files, @record and the root-cause report match torch's; the automatic exception hook."""

import json
import subprocess
import sys

import pytest

from spx.distributed.elastic.multiprocessing.errors import (
    ChildFailedError,
    ErrorHandler,
    ProcessFailure,
    record,
)
from tests.distributed.elastic._helpers import clean_env

torch_errors = pytest.importorskip("torch.distributed.elastic.multiprocessing.errors")


def _raise(msg):
    raise ValueError(msg)


def test_record_writes_torchs_error_file_format(tmp_path, monkeypatch):
    ours, theirs = tmp_path / "ours.json", tmp_path / "theirs.json"
    for path, deco in ((ours, record), (theirs, torch_errors.record)):
        monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(path))
        with pytest.raises(ValueError):
            deco(lambda: _raise("bad value"))()
    a, b = json.loads(ours.read_text()), json.loads(theirs.read_text())
    assert a["message"].keys() == b["message"].keys()
    assert a["message"]["extraInfo"].keys() == b["message"]["extraInfo"].keys()
    assert a["message"]["message"] == b["message"]["message"] == "ValueError: bad value"
    assert "raise ValueError(msg)" in a["message"]["extraInfo"]["py_callstack"]
    # torch's launcher reads our file as it reads its own.
    failure = torch_errors.ProcessFailure(local_rank=0, pid=1, exitcode=1, error_file=str(ours))
    assert failure.message == a["message"]


def test_record_returns_none_on_sys_exit_0_and_passes_other_exits():
    assert record(lambda: sys.exit(0))() is None
    with pytest.raises(SystemExit):
        record(lambda: sys.exit(2))()


def test_report_is_torchs_text(tmp_path, monkeypatch):
    handler = ErrorHandler()
    path = tmp_path / "e.json"
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(path))
    try:
        _raise("root")
    except ValueError as e:
        handler.record_exception(e)
    failures = [
        (3, dict(local_rank=1, pid=101, exitcode=1, error_file=str(path))),
        (2, dict(local_rank=0, pid=100, exitcode=-15, error_file="/nonexistent")),
    ]
    ours = ChildFailedError("train.py", {r: ProcessFailure(**kw) for r, kw in failures})
    theirs = torch_errors.ChildFailedError(
        "train.py", {r: torch_errors.ProcessFailure(**kw) for r, kw in failures}
    )
    # The failure without an error file is stamped "now": align the seconds before comparing.
    ours.failures[2].timestamp = theirs.failures[2].timestamp = ours.failures[3].timestamp + 1
    assert ours.format_msg() == theirs.format_msg()
    assert "Root Cause (first observed failure):\n[0]:" in ours.format_msg()


def test_failure_without_error_file_shows_stderr_tail():
    f = ProcessFailure(local_rank=0, pid=5, exitcode=2, error_file="", stderr_tail="a\nlast words")
    assert f.error_file == "<N/A>"
    assert "exit code 2 and no error file" in f.message and f.message.endswith("a\nlast words")
    # sys.exit(2) (argparse's error, SystemExit("message")) leaves no file either: say so.
    assert "the worker called sys.exit(2)" in f.message


def _python(code, **env):
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(**env),
    )


def test_importing_spx_records_an_uncaught_exception(tmp_path):
    path = tmp_path / "err.json"
    code = "import spx\ndef f():\n    raise ZeroDivisionError('auto')\nf()\n"
    out = _python(code, TORCHELASTIC_ERROR_FILE=str(path))
    assert out.returncode == 1
    assert "ZeroDivisionError: auto" in out.stderr  # the traceback is still printed
    data = json.loads(path.read_text())
    assert data["message"]["message"] == "ZeroDivisionError: auto"
    assert "in f" in data["message"]["extraInfo"]["py_callstack"]


def test_the_hook_is_only_installed_under_a_launcher(tmp_path):
    out = _python("import spx, sys\nprint(getattr(sys.excepthook, 'spx_autorecord', False))")
    assert out.stdout.strip() == "False"
    code = "import spx, sys\nprint(getattr(sys.excepthook, 'spx_autorecord', False))"
    out = _python(code, TORCHELASTIC_ERROR_FILE=str(tmp_path / "e.json"))
    assert out.stdout.strip() == "True"


def test_record_and_hook_do_not_write_twice(tmp_path):
    path = tmp_path / "err.json"
    code = (
        "import spx\n"
        "from spx.distributed.elastic.multiprocessing.errors import record\n"
        "@record\n"
        "def main():\n"
        "    raise KeyError('once')\n"
        "main()\n"
    )
    out = _python(code, TORCHELASTIC_ERROR_FILE=str(path))
    assert out.returncode == 1
    stack = json.loads(path.read_text())["message"]["extraInfo"]["py_callstack"]
    # record's traceback starts at the decorator; the hook's would start at <module>.
    assert "in wrapper" in stack and "in <module>" not in stack
