"""Atomic saves: a failure at any point leaves the previous checkpoint intact and no temp file."""

from __future__ import annotations

import os
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest
import safetensors.numpy

from spx.serialization import load, save, save_sharded
from spx.serialization._atomic import AtomicWriter
from tests.serialization._shards import save_id, shard_names

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


def _four_tensors(offset: float) -> dict:
    return {f"w{i}": jnp.full((256,), float(i) + offset) for i in range(4)}  # 1 KiB each


def _assert_loads(directory, expected) -> None:
    back = load(directory)
    assert list(back) == list(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(np.asarray(back[key]), np.asarray(value), err_msg=key)


def test_sharded_save_interrupted_between_renames_leaves_the_old_checkpoint(tmp_path, monkeypatch):
    # Before: the first shard was already replaced by the new one, and load() silently
    # returned new w0, w1 with old w2, w3.
    old = _four_tensors(0.0)
    save_sharded(old, tmp_path, max_shard_size=2048)
    real = os.replace
    calls = []

    def interrupted(src, dst):
        calls.append(dst)
        if len(calls) == 2:  # the first new shard is in place, the second is not
            raise KeyboardInterrupt
        real(src, dst)

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_sharded(_four_tensors(100.0), tmp_path, max_shard_size=2048)
    monkeypatch.undo()
    _assert_loads(tmp_path, old)
    new = _four_tensors(200.0)
    save_sharded(new, tmp_path, max_shard_size=2048)  # and the next save cleans up
    _assert_loads(tmp_path, new)
    assert len(list(tmp_path.iterdir())) == 3  # two shards + index, nothing left over


def test_a_shard_of_another_save_is_refused_naming_it(tmp_path):
    save_sharded(_four_tensors(0.0), tmp_path / "a", max_shard_size=2048)
    save_sharded(_four_tensors(1.0), tmp_path / "b", max_shard_size=2048)
    first_a = shard_names(tmp_path / "a")[0]
    first_b = shard_names(tmp_path / "b")[0]
    # A shard restored from another save, under the name this index expects.
    (tmp_path / "a" / first_a).write_bytes((tmp_path / "b" / first_b).read_bytes())
    b_id, a_id = save_id(tmp_path / "b"), save_id(tmp_path / "a")
    with pytest.raises(ValueError, match=rf"(?s)shard .*{first_a}.*save {b_id}.*is save {a_id}"):
        load(tmp_path / "a")
    assert load(tmp_path / "a", keys=["w3"])["w3"].tolist() == [3.0] * 256  # other shard fine


_KILLED_WRITER = """
import os, sys
import jax.numpy as jnp
from spx.serialization import save, save_sharded
target, kind = sys.argv[1], sys.argv[2]
os.replace = lambda src, dst: os._exit(9)  # killed after writing, before the rename
if kind == "file":
    save({"w": jnp.ones(4096)}, target)
else:
    save_sharded({f"w{i}": jnp.ones(256) for i in range(4)}, target, max_shard_size=2048)
"""


def _killed_writer(target, kind: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITER, str(target), kind], capture_output=True, timeout=120
    )
    assert done.returncode == 9, done.stderr.decode()


def _temps(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_temp_files_of_killed_writers_are_removed_by_the_next_save(tmp_path):
    path, old = _old_checkpoint(tmp_path)
    _killed_writer(path, "file")
    (leftover,) = _temps(tmp_path)  # before: a full-size temp file, forever
    assert leftover.startswith(".model.safetensors.")
    assert path.read_bytes() == old
    # A temp file whose writer is alive (this process, mid-save) is left alone.
    live = AtomicWriter()
    live_tmp = live.stage(tmp_path / "other.safetensors")
    save({"w": jnp.ones((32, 32))}, path)
    assert _temps(tmp_path) == [live_tmp.name]
    live.discard()
    np.testing.assert_array_equal(np.asarray(load(path)["w"]), np.ones((32, 32)))


def test_temp_files_of_killed_writers_are_removed_by_load(tmp_path):
    old = _four_tensors(0.0)
    save_sharded(old, tmp_path, max_shard_size=2048)
    _killed_writer(tmp_path, "sharded")
    assert len(_temps(tmp_path)) == 2  # both new shards were staged, none renamed
    _assert_loads(tmp_path, old)
    assert _temps(tmp_path) == []


def test_temp_files_of_other_hosts_or_unknown_writers_are_kept(tmp_path):
    path, _ = _old_checkpoint(tmp_path)
    foreign = [
        ".model.safetensors.otherhost-ns1.12345.0123abcd.tmp",  # another machine
        ".model.safetensors.4242.0123abcd.tmp",  # no writer recorded (an older spx)
        ".notes.txt.swp.tmp",
    ]
    for name in foreign:
        (tmp_path / name).write_bytes(b"x")
    save({"w": jnp.ones(2)}, path)
    load(path)
    assert _temps(tmp_path) == sorted(foreign)
