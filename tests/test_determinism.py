"""spx.use_deterministic_algorithms and friends: torch's switches and errors, and what they do
to XLA (its GPU determinism flag in XLA_FLAGS before JAX starts; CPU needs nothing)."""

import dataclasses
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

import spx
from spx import determinism

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _restore_switches(monkeypatch):
    """The switches are process-wide in both libraries, and XLA_FLAGS is the environment's:
    put all of them back after each test."""
    torch_state = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    spx_state = dataclasses.replace(determinism._STATE)
    flags = os.environ.get("XLA_FLAGS")
    yield
    torch.use_deterministic_algorithms(torch_state[0], warn_only=torch_state[1])
    determinism._STATE.__dict__.update(spx_state.__dict__)
    if flags is None:
        os.environ.pop("XLA_FLAGS", None)
    else:
        os.environ["XLA_FLAGS"] = flags


@pytest.mark.parametrize(
    "calls",
    [
        [(True, False)],
        [(True, True)],
        [(False, True)],  # warn_only is kept even when the mode is off, as in torch
        [(True, True), (False, False)],
    ],
)
def test_state_matches_torch(calls):
    for mode, warn_only in calls:
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)
        spx.use_deterministic_algorithms(mode, warn_only=warn_only)
        assert (
            spx.are_deterministic_algorithms_enabled()
            == torch.are_deterministic_algorithms_enabled()
        )
        assert (
            spx.is_deterministic_algorithms_warn_only_enabled()
            == torch.is_deterministic_algorithms_warn_only_enabled()
        )
        assert spx.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()


@pytest.mark.parametrize("mode", ["default", "warn", "error", 0, 1, 2])
def test_debug_mode_matches_torch(mode):
    torch.set_deterministic_debug_mode(mode)
    spx.set_deterministic_debug_mode(mode)
    assert spx.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
    assert (
        spx.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()
    )
    assert (
        spx.is_deterministic_algorithms_warn_only_enabled()
        == torch.is_deterministic_algorithms_warn_only_enabled()
    )


@pytest.mark.parametrize(
    "call,error,match",
    [
        (lambda lib: lib.use_deterministic_algorithms(1), TypeError, "mode"),
        (lambda lib: lib.use_deterministic_algorithms(None), TypeError, "mode"),
        (lambda lib: lib.use_deterministic_algorithms(True, warn_only=1), TypeError, "warn_only"),
        (lambda lib: lib.use_deterministic_algorithms(True, True), TypeError, "positional"),
        (lambda lib: lib.set_deterministic_debug_mode("bogus"), RuntimeError, "but got bogus"),
        (lambda lib: lib.set_deterministic_debug_mode(3), RuntimeError, "0, 1, or 2, but got 3"),
        (lambda lib: lib.set_deterministic_debug_mode(1.0), TypeError, "must be str or int"),
    ],
)
def test_errors_match_torch(call, error, match):
    with pytest.raises(error, match=match):
        call(torch)
    with pytest.raises(error, match=match):
        call(spx)
    assert not spx.are_deterministic_algorithms_enabled()


def test_cpu_backend_needs_no_flag():
    # This process's JAX has started on the CPU: deterministic already, nothing to change.
    spx.ones(1).sum().item()
    before = os.environ.get("XLA_FLAGS")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spx.use_deterministic_algorithms(True)
    assert os.environ.get("XLA_FLAGS") == before
    assert spx.are_deterministic_algorithms_enabled()


def test_gpu_started_without_the_flag_raises_with_the_fix(monkeypatch):
    monkeypatch.setattr(determinism, "_backend_started", lambda: True)
    monkeypatch.setattr(determinism, "_gpu_started", lambda: True)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    with pytest.raises(RuntimeError, match="XLA_FLAGS=--xla_gpu_deterministic_ops=true") as info:
        spx.use_deterministic_algorithms(True)
    assert "before the first tensor operation" in str(info.value)
    assert not spx.are_deterministic_algorithms_enabled()  # nothing changed
    with pytest.warns(UserWarning, match="xla_gpu_deterministic_ops"):
        spx.use_deterministic_algorithms(True, warn_only=True)
    assert spx.are_deterministic_algorithms_enabled()
    assert spx.is_deterministic_algorithms_warn_only_enabled()
    # The flag given at start-up (read by XLA then) is what makes a started GPU deterministic.
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_deterministic_ops=true")
    spx.use_deterministic_algorithms(True)


def test_flag_is_added_before_start_and_taken_out_again(monkeypatch):
    monkeypatch.setattr(determinism, "_backend_started", lambda: False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=/tmp/x --xla_gpu_deterministic_ops=false")
    spx.use_deterministic_algorithms(True)
    assert os.environ["XLA_FLAGS"] == "--xla_dump_to=/tmp/x --xla_gpu_deterministic_ops=true"
    spx.use_deterministic_algorithms(True)  # twice: still one flag
    assert os.environ["XLA_FLAGS"].count("xla_gpu_deterministic_ops") == 1
    spx.use_deterministic_algorithms(False)
    assert os.environ["XLA_FLAGS"] == "--xla_dump_to=/tmp/x"
    # A flag the user set is theirs: False leaves it.
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_deterministic_ops")
    spx.use_deterministic_algorithms(True)
    spx.use_deterministic_algorithms(False)
    assert os.environ["XLA_FLAGS"] == "--xla_gpu_deterministic_ops"


def test_fresh_process_starts_jax_with_the_flag():
    """The real order of a script: seed and switch first, then compute."""
    code = textwrap.dedent(
        """
        import os
        os.environ.pop("XLA_FLAGS", None)
        import spx
        spx.manual_seed(0)
        spx.use_deterministic_algorithms(True)
        assert os.environ["XLA_FLAGS"] == "--xla_gpu_deterministic_ops=true"
        spx.use_deterministic_algorithms(False)
        assert "XLA_FLAGS" not in os.environ
        spx.use_deterministic_algorithms(True)
        x = spx.randn(64, 64)
        print(float((x @ x).sum()))
        # XLA has read its flags: turning the mode off leaves them (and stays deterministic)
        spx.use_deterministic_algorithms(False)
        assert os.environ["XLA_FLAGS"] == "--xla_gpu_deterministic_ops=true"
        """
    )
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    assert runs[0].stdout == runs[1].stdout  # and the same numbers, run to run
