"""open_checkpoint: a lazy read-only mapping that reads one tensor per access."""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx.serialization import load, open_checkpoint, save, save_sharded

torch = pytest.importorskip("torch")
st_torch = pytest.importorskip("safetensors.torch")


@pytest.fixture
def torch_file(tmp_path):
    tensors = {
        "b": torch.arange(4, dtype=torch.int32),
        "a": torch.randn(2, 3).to(torch.bfloat16),
        "c": torch.ones(5),
    }
    path = tmp_path / "t.safetensors"
    st_torch.save_file(tensors, str(path), metadata={"format": "pt", "epoch": "3"})
    return path, tensors


def test_mapping_reads_one_tensor_per_access(torch_file, file_log):
    path, tensors = torch_file
    with open_checkpoint(path) as ckpt:
        assert isinstance(ckpt, Mapping)
        assert sorted(ckpt) == ["a", "b", "c"] and len(ckpt) == 3
        assert "a" in ckpt and "z" not in ckpt and 3 not in ckpt
        assert ckpt.metadata == {"format": "pt", "epoch": "3"}
        assert ckpt.shape("a") == (2, 3) and not ckpt.sharded
        assert file_log.reads == []  # header-only so far

        b = ckpt["b"]
        assert isinstance(b, spx.Tensor) and b.tolist() == [0, 1, 2, 3]
        assert file_log.read_keys() == ["b"]
        a = ckpt.numpy("a")
        assert isinstance(a, np.ndarray) and a.dtype == jnp.bfloat16
        expected = tensors["a"].view(torch.int16).numpy()
        np.testing.assert_array_equal(a.view(np.int16), expected)
        assert "t.safetensors" in repr(ckpt) and "3 tensors" in repr(ckpt)
    assert file_log.opened_names() == ["t.safetensors"]


def test_device_placement(torch_file):
    path, _ = torch_file
    dev = jax.devices()[5]
    with open_checkpoint(path, device=dev) as ckpt:
        assert ckpt["c"].device == dev
    with open_checkpoint(path, device="cpu:4") as ckpt:
        assert ckpt["c"].device == jax.devices()[4]


def test_missing_key_and_closed_file(torch_file):
    path, _ = torch_file
    ckpt = open_checkpoint(path)
    with pytest.raises(KeyError, match=r"'d'.*It has 'a', 'b', 'c'"):
        ckpt["d"]
    assert ckpt.get("d") is None
    ckpt.close()
    with pytest.raises(ValueError, match=r"closed"):
        ckpt["a"]


def test_sharded_checkpoint_view(tmp_path, file_log):
    sd = {f"layer{i}": jnp.full((100,), float(i)) for i in range(4)}
    save_sharded(sd, tmp_path, max_shard_size=800)
    file_log.opened.clear()
    with open_checkpoint(tmp_path) as ckpt:
        sid = ckpt.metadata["spx_save_id"]
        assert ckpt.sharded and ckpt.metadata == {"spx_save_id": sid, "total_size": 1600}
        assert [p.name for p in ckpt.files()] == [
            "model.safetensors.index.json",
            f"model-00001-of-00002-{sid}.safetensors",
            f"model-00002-of-00002-{sid}.safetensors",
        ]
        assert list(ckpt) == list(sd)
        assert ckpt["layer3"].tolist() == [3.0] * 100
        assert ckpt.shape("layer2") == (100,)
    assert file_log.opened_names() == [f"model-00002-of-00002-{sid}.safetensors"]


def test_open_checkpoint_keeps_reading_the_version_it_opened(tmp_path):
    # A trainer may save over the file a reader still holds: the reader's view stays whole.
    path = tmp_path / "live.safetensors"
    save({"w": jnp.zeros(3), "f8": jnp.zeros(3, jnp.float8_e4m3fn)}, path)
    with open_checkpoint(path) as ckpt:
        save({"w": jnp.ones(7), "f8": jnp.ones(9, jnp.float8_e4m3fn), "new": jnp.ones(1)}, path)
        assert ckpt["w"].tolist() == [0.0] * 3
        assert ckpt["f8"].float().tolist() == [0.0] * 3
        assert "new" not in ckpt
    assert load(path)["w"].tolist() == [1.0] * 7
