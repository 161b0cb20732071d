"""Atomic saves: a failure at any point leaves the previous checkpoint intact and no temp file."""

from __future__ import annotations

import os

import jax.numpy as jnp
import numpy as np
import pytest
import safetensors.numpy

from spx.serialization import save, save_sharded

st_torch = pytest.importorskip("safetensors.torch")


def _old_checkpoint(tmp_path):
    path = tmp_path / "model.safetensors"
    save({"w": jnp.zeros((32, 32))}, path)
    return path, path.read_bytes()


def _assert_untouched(path, old_bytes):
    assert path.read_bytes() == old_bytes
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left
    np.testing.assert_array_equal(st_torch.load_file(str(path))["w"].numpy(), np.zeros((32, 32)))


def test_failure_while_writing_keeps_old_file(tmp_path, monkeypatch):
    path, old = _old_checkpoint(tmp_path)
    real = safetensors.numpy.save_file

    def write_half_then_fail(arrays, filename, metadata=None):
        real(arrays, filename, metadata=metadata)
        with open(filename, "r+b") as f:  # the disk fills up half way through
            f.truncate(os.path.getsize(filename) // 2)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(safetensors.numpy, "save_file", write_half_then_fail)
    with pytest.raises(OSError, match=r"No space left"):
        save({"w": jnp.ones((32, 32))}, path)
    _assert_untouched(path, old)


@pytest.mark.parametrize("step", ["fsync", "replace"])
def test_failure_after_writing_keeps_old_file(tmp_path, monkeypatch, step):
    path, old = _old_checkpoint(tmp_path)

    def fail(*args, **kwargs):
        raise OSError(5, f"Input/output error in {step}")

    monkeypatch.setattr(os, step, fail)
    with pytest.raises(OSError, match=step):
        save({"w": jnp.ones((32, 32))}, path)
    monkeypatch.undo()
    _assert_untouched(path, old)


def test_interrupt_during_write_keeps_old_file(tmp_path, monkeypatch):
    path, old = _old_checkpoint(tmp_path)

    def interrupted(arrays, filename, metadata=None):
        with open(filename, "wb") as f:
            f.write(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(safetensors.numpy, "save_file", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save({"w": jnp.ones((32, 32))}, path)
    _assert_untouched(path, old)


def test_successful_overwrite_replaces_content_with_normal_permissions(tmp_path):
    path, _ = _old_checkpoint(tmp_path)
    save({"w": jnp.ones((32, 32))}, path)
    np.testing.assert_array_equal(st_torch.load_file(str(path))["w"].numpy(), np.ones((32, 32)))
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_bad_targets(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"parent directory .*missing.* does not exist"):
        save({"w": jnp.ones(1)}, tmp_path / "missing" / "m.safetensors")
    with pytest.raises(IsADirectoryError, match=r"is a directory"):
        save({"w": jnp.ones(1)}, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_sharded_failure_while_writing_shards_keeps_old_checkpoint(tmp_path, monkeypatch):
    sd = {f"w{i}": jnp.full((256,), float(i)) for i in range(4)}  # 1 KiB each
    save_sharded(sd, tmp_path, max_shard_size=2048)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert len(before) == 3  # two shards + index

    real = safetensors.numpy.save_file
    calls = []

    def fail_on_second_shard(arrays, filename, metadata=None):
        calls.append(filename)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(arrays, filename, metadata=metadata)

    monkeypatch.setattr(safetensors.numpy, "save_file", fail_on_second_shard)
    with pytest.raises(OSError, match=r"No space left"):
        save_sharded({k: v + 1 for k, v in sd.items()}, tmp_path, max_shard_size=2048)
    # The first new shard was fully written, but only to a temp file: nothing was replaced.
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
