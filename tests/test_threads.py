"""spx's CPU thread settings: torch's checks and messages, the true thread count, a warning
(not silence) where torch would change something spx can't."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import spx

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "2"])
@pytest.mark.parametrize("name", ["set_num_threads", "set_num_interop_threads"])
def test_bad_counts_raise_torchs_error(name, bad):
    with pytest.raises(RuntimeError) as expected:
        getattr(torch, name)(bad)
    with pytest.raises(RuntimeError) as got:
        getattr(spx, name)(bad)
    assert str(got.value) == str(expected.value)


def test_numpy_ints_are_counts_as_in_torch():
    spx.set_num_threads(np.int64(spx.get_num_threads()))  # no error, no warning


def test_the_count_is_the_cpus_this_process_may_use():
    assert spx.get_num_threads() == len(os.sched_getaffinity(0))
    assert spx.get_num_interop_threads() == len(os.sched_getaffinity(0))


def test_a_count_that_differs_warns_once_with_the_way_to_get_it():
    n = spx.get_num_threads() + 1
    with pytest.warns(UserWarning, match=r"has no effect.*taskset") as caught:
        spx.set_num_threads(n)
    assert len(caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spx.set_num_threads(n)  # once per value
        spx.set_num_threads(spx.get_num_threads())  # what JAX uses: nothing to say


def test_the_count_follows_the_cpus_given_at_start_up():
    # The way the warning recommends (taskset): a process started on one CPU reports one.
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("needs sched_setaffinity (Linux)")
    code = "import spx; print(spx.get_num_threads())"
    cpu = sorted(os.sched_getaffinity(0))[0]
    # Pinned by a fresh interpreter that then execs the check (no preexec_fn: forking this
    # multithreaded JAX process and running Python in the child can deadlock).
    pin = (
        f"import os, sys; os.sched_setaffinity(0, {{{cpu}}}); "
        f"os.execv(sys.executable, [sys.executable, '-c', {code!r}])"
    )
    out = subprocess.run(
        [sys.executable, "-c", pin], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "1"
