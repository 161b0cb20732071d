"""Hugging Face-style sharded checkpoints: the layout written, hand-built directories read,
and only the shards holding the requested tensors opened."""

from __future__ import annotations

import json
import re

import jax.numpy as jnp
import numpy as np
import pytest

from spx.serialization import load, open_checkpoint, save, save_sharded
from spx.serialization.sharded import parse_size
from tests.serialization._shards import save_id, shard_names

torch = pytest.importorskip("torch")
st_torch = pytest.importorskip("safetensors.torch")


def _state_dict():
    # Four 1000-byte tensors, one 4000-byte tensor (over the 2500-byte limit), one bf16.
    sd = {f"layers.{i}.w": jnp.full((250,), float(i), jnp.float32) for i in range(4)}
    sd["embed.weight"] = jnp.arange(1000, dtype=jnp.float32)
    sd["norm.weight"] = jnp.ones((10,), jnp.bfloat16)
    return sd


def test_layout_matches_hugging_face(tmp_path):
    sd = _state_dict()
    index_path = save_sharded(sd, tmp_path, max_shard_size=2500, metadata={"step": "7"})
    assert index_path == tmp_path / "model.safetensors.index.json"
    sid = save_id(tmp_path)
    assert re.fullmatch(r"[0-9a-f]{8}", sid)
    # Hugging Face's names with the save's id appended (a new save never overwrites them).
    names = [f"model-0000{i}-of-00004-{sid}.safetensors" for i in (1, 2, 3, 4)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*names, index_path.name])

    index = json.loads(index_path.read_text())
    assert index == {
        "metadata": {"step": "7", "spx_save_id": sid, "total_size": 4 * 1000 + 4000 + 20},
        "weight_map": {
            "layers.0.w": names[0],
            "layers.1.w": names[0],
            "layers.2.w": names[1],
            "layers.3.w": names[1],
            "embed.weight": names[2],  # larger than the limit: a shard of its own
            "norm.weight": names[3],
        },
    }
    # Every shard is a plain safetensors file torch reads, tagged as transformers expects.
    from safetensors import safe_open

    for name in names:
        with safe_open(str(tmp_path / name), framework="pt") as f:
            assert f.metadata() == {"format": "pt", "step": "7", "spx_save_id": sid}
    shard = st_torch.load_file(str(tmp_path / names[1]))
    np.testing.assert_array_equal(shard["layers.3.w"].numpy(), np.full(250, 3.0, np.float32))

    back = load(tmp_path)
    assert list(back) == list(index["weight_map"])
    for key, value in sd.items():
        assert back[key].dtype == value.dtype
        np.testing.assert_array_equal(np.asarray(back[key]), np.asarray(value))


def test_only_shards_holding_requested_keys_are_opened(tmp_path, file_log):
    save_sharded(_state_dict(), tmp_path, max_shard_size=2500)
    file_log.opened.clear()

    names = shard_names(tmp_path)
    out = load(tmp_path, keys=["layers.3.w"])
    assert out["layers.3.w"].tolist() == [3.0] * 250
    assert file_log.opened_names() == [names[1]]
    assert file_log.read_keys() == ["layers.3.w"]

    file_log.opened.clear()
    with open_checkpoint(tmp_path / "model.safetensors.index.json") as ckpt:
        assert len(ckpt) == 6 and "embed.weight" in ckpt
        assert file_log.opened == []  # keys come from the index alone
        ckpt["layers.0.w"], ckpt["layers.1.w"], ckpt["norm.weight"]
    assert file_log.opened_names() == [names[0], names[3]]


def test_hand_built_transformers_directory_loads(tmp_path):
    # What transformers' save_pretrained writes, built here with torch's writer and json.
    a = torch.randn(3, 4)
    b = torch.randn(5).to(torch.bfloat16)
    st_torch.save_file(
        {"a": a}, str(tmp_path / "model-00001-of-00002.safetensors"), {"format": "pt"}
    )
    st_torch.save_file(
        {"b": b}, str(tmp_path / "model-00002-of-00002.safetensors"), {"format": "pt"}
    )
    index = {
        "metadata": {"total_size": 58},
        "weight_map": {
            "a": "model-00001-of-00002.safetensors",
            "b": "model-00002-of-00002.safetensors",
        },
    }
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    (tmp_path / "config.json").write_text("{}")

    back = load(tmp_path)
    np.testing.assert_array_equal(np.asarray(back["a"]), a.numpy())
    assert back["b"].dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(back["b"], np.float32), b.float().numpy())
    with open_checkpoint(tmp_path) as ckpt:
        assert ckpt.sharded and ckpt.metadata == {"total_size": 58}


def test_resaving_with_fewer_shards_removes_stale_ones(tmp_path):
    save_sharded(_state_dict(), tmp_path, max_shard_size=2500)
    (tmp_path / "notes.txt").write_text("keep me")
    # Hugging Face-named shards of another tool's save with the same prefix go too.
    (tmp_path / "model-00007-of-00009.safetensors").write_bytes(b"old")
    save_sharded({"only": jnp.ones(3)}, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"model-00001-of-00001-{save_id(tmp_path)}.safetensors",
        "model.safetensors.index.json",
        "notes.txt",
    ]
    assert list(load(tmp_path)) == ["only"]


def test_directory_with_single_file(tmp_path):
    save({"w": jnp.ones(2)}, tmp_path / "model.safetensors")
    save({"v": jnp.ones(2)}, tmp_path / "other.safetensors")
    assert list(load(tmp_path)) == ["w"]  # model.safetensors is the conventional name
    (tmp_path / "model.safetensors").unlink()
    assert list(load(tmp_path)) == ["v"]  # else the only checkpoint there
    save({"u": jnp.ones(2)}, tmp_path / "third.safetensors")
    with pytest.raises(ValueError, match=r"several checkpoints.*other.safetensors"):
        load(tmp_path)


def test_broken_sharded_checkpoints(tmp_path):
    save_sharded(_state_dict(), tmp_path, max_shard_size=2500)
    index_path = tmp_path / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    names = shard_names(tmp_path)

    (tmp_path / names[2]).unlink()
    with pytest.raises(FileNotFoundError, match=r"model-00003-of-00004.*embed.weight.*incomplete"):
        load(tmp_path, keys=["embed.weight"])
    assert load(tmp_path, keys=["layers.0.w"])  # the other shards still read

    index["weight_map"]["layers.0.w"] = names[1]
    index_path.write_text(json.dumps(index))
    with pytest.raises(ValueError, match=r"out of sync"):
        load(tmp_path, keys=["layers.0.w"])

    index["weight_map"]["layers.0.w"] = "../elsewhere.safetensors"
    index_path.write_text(json.dumps(index))
    with pytest.raises(ValueError, match=r"not a shard file name"):
        load(tmp_path)

    index_path.write_text(json.dumps(index)[:40])
    with pytest.raises(ValueError, match=r"truncated or corrupt"):
        load(tmp_path)
    index_path.write_text(json.dumps({"metadata": {}}))
    with pytest.raises(ValueError, match=r"weight_map"):
        load(tmp_path)

    shard = tmp_path / names[1]
    index_path.write_text(json.dumps({"weight_map": {"layers.2.w": shard.name}}))
    shard.write_bytes(shard.read_bytes()[:-10])
    with pytest.raises(ValueError, match=r"model-00002-of-00004.*truncated or corrupt"):
        load(tmp_path)


def test_parse_size():
    assert parse_size("5GB") == 5 * 10**9
    assert parse_size("500MiB") == 500 * 2**20
    assert parse_size("1.5kb") == 1500
    assert parse_size(123) == 123
    for bad in ("5 parsecs", "GB", "-1GB", 0, True):
        with pytest.raises((ValueError, TypeError), match=r"max_shard_size"):
            parse_size(bad)


def test_save_sharded_argument_errors(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match=r"is a file"):
        save_sharded({"a": jnp.ones(1)}, tmp_path / "file")
    with pytest.raises(TypeError, match=r"'a'"):
        save_sharded({"a": 1.0}, tmp_path / "d")
    assert not (tmp_path / "d").exists()
