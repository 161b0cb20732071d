"""The runnable examples in the launcher's docstrings run."""

import doctest
import importlib
import tempfile

import pytest

MODULES = [
    "spx.distributed.elastic.argparse_util",
    "spx.distributed.elastic.config",
    "spx.distributed.elastic.devices",
    "spx.distributed.elastic.worker_env",
    "spx.distributed.elastic.store",
    "spx.distributed.elastic.multiprocessing.errors",
    "spx.distributed.elastic.multiprocessing.logs",
    "spx.distributed.elastic.multiprocessing.tail_log",
    "spx.distributed.elastic.multiprocessing.processes",
    "spx.distributed.elastic.thread_overlay",
]


# processes.py's example starts a worker from this test process, where JAX runs: JAX warns about
# any fork, but the child only calls prctl and execs (spx-run itself never starts JAX).
@pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning")
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    # The examples make temporary files and directories (log dirs, a tailed file): in
    # tmp_path, so that the test leaves nothing in /tmp.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result
