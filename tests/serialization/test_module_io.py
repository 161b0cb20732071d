"""load_checkpoint: torch checkpoints into spx modules, partial (pipeline-stage) loads that read
only the stage's tensors, and all-or-nothing failure."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.nn import functional as F
from spx.serialization import load_checkpoint, save, save_sharded
from tests.serialization._shards import shard_names

torch = pytest.importorskip("torch")
st_torch = pytest.importorskip("safetensors.torch")


class TorchMLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 16)
        self.fc2 = torch.nn.Linear(16, 16)
        self.head = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.head(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class MLP(nn.Module):
    def __init__(self, in_features: int | None = 6) -> None:
        super().__init__()
        self.fc1 = nn.Linear(in_features, 16)
        self.fc2 = nn.Linear(16, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(F.relu(self.fc2(F.relu(self.fc1(x)))))


class _Holder(nn.Module):
    """A container keeping the original names, as a pipeline stage's module does."""

    def __init__(self, **children: nn.Module) -> None:
        super().__init__()
        for name, child in children.items():
            self.add_module(name, child)


def _torch_checkpoint(tmp_path, model=None):
    torch.manual_seed(0)
    model = model or TorchMLP()
    path = tmp_path / "torch.safetensors"
    st_torch.save_file(model.state_dict(), str(path))
    return model, path


def _snapshot(module: nn.Module) -> dict[str, tuple]:
    # Objects and values: a failed load must neither replace nor change anything.
    return {
        k: (id(v), v.detach().numpy().copy()) for k, v in module.state_dict(keep_vars=True).items()
    }


def _assert_same(module: nn.Module, snapshot: dict[str, tuple]) -> None:
    now = module.state_dict(keep_vars=True)
    assert list(now) == list(snapshot)
    for key, (ident, value) in snapshot.items():
        assert id(now[key]) == ident
        np.testing.assert_array_equal(now[key].detach().numpy(), value, err_msg=key)


def test_torch_checkpoint_loads_strictly_and_matches_outputs(tmp_path):
    theirs, path = _torch_checkpoint(tmp_path)
    ours = MLP()
    result = load_checkpoint(ours, path)
    assert result.missing_keys == [] and result.unexpected_keys == []

    x = np.random.default_rng(1).standard_normal((5, 6)).astype(np.float32)
    with torch.no_grad():
        expected = theirs(torch.from_numpy(x)).numpy()
    with spx.no_grad():
        got = ours(spx.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_spx_checkpoint_loads_into_torch(tmp_path):
    ours = MLP()
    path = tmp_path / "spx.safetensors"
    save(ours.state_dict(), path)
    theirs = TorchMLP()
    theirs.load_state_dict(st_torch.load_file(str(path)))
    x = np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32)
    with torch.no_grad():
        expected = theirs(torch.from_numpy(x)).numpy()
    with spx.no_grad():
        got = ours(spx.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_embedding_layernorm_and_int64_buffers_from_torch(tmp_path):
    torch.manual_seed(0)
    theirs = torch.nn.Sequential()  # only used as a state_dict source, names set below
    theirs.add_module("embed", torch.nn.Embedding(11, 8))
    theirs.add_module("norm", torch.nn.LayerNorm(8))
    theirs.add_module("bn", torch.nn.BatchNorm1d(8))
    with torch.no_grad():
        theirs.norm.weight.uniform_(0.5, 1.5)
        theirs.bn.running_mean.uniform_()
        theirs.bn.num_batches_tracked.fill_(12)
    path = tmp_path / "t.safetensors"
    st_torch.save_file(theirs.state_dict(), str(path))

    ours = _Holder(embed=nn.Embedding(11, 8), norm=nn.LayerNorm(8), bn=nn.BatchNorm1d(8))
    assert load_checkpoint(ours, path) == ([], [])
    for key, value in theirs.state_dict().items():
        np.testing.assert_array_equal(np.asarray(ours.state_dict()[key]), value.numpy())
    idx = torch.tensor([[1, 4, 10]])
    with torch.no_grad():
        expected = theirs.norm(theirs.embed(idx)).numpy()
    with spx.no_grad():
        got = ours.norm(ours.embed(spx.from_numpy(idx.numpy()))).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_strict_reports_like_torch(tmp_path):
    theirs, _ = _torch_checkpoint(tmp_path)
    sd = theirs.state_dict()
    sd["fc3.weight"] = torch.ones(2)
    del sd["head.bias"]
    path = tmp_path / "odd.safetensors"
    st_torch.save_file(sd, str(path))

    ours = MLP()
    before = _snapshot(ours)
    with pytest.raises(RuntimeError) as info:
        load_checkpoint(ours, path)
    assert '"head.bias"' in str(info.value) and '"fc3.weight"' in str(info.value)
    _assert_same(ours, before)

    expected = TorchMLP().load_state_dict(sd, strict=False)
    got = load_checkpoint(ours, path, strict=False)
    assert got.missing_keys == expected.missing_keys
    assert got.unexpected_keys == expected.unexpected_keys
    np.testing.assert_array_equal(ours.fc1.weight.detach().numpy(), sd["fc1.weight"].numpy())


def test_partial_load_reads_only_the_stage_tensors(tmp_path, file_log):
    _, path = _torch_checkpoint(tmp_path)
    stage = _Holder(fc2=nn.Linear(16, 16), head=nn.Linear(16, 3))
    file_log.reads.clear()

    assert load_checkpoint(stage, path, partial=True) == ([], [])
    assert sorted(file_log.read_keys()) == ["fc2.bias", "fc2.weight", "head.bias", "head.weight"]
    full = st_torch.load_file(str(path))
    for key, value in stage.state_dict().items():
        np.testing.assert_array_equal(np.asarray(value), full[key].numpy())

    # partial allows extra tensors in the file, not missing ones.
    with pytest.raises(RuntimeError, match=r'Missing key\(s\).*"extra.weight"'):
        load_checkpoint(_Holder(extra=nn.Linear(2, 2)), path, partial=True)
    # Without partial, the other stage's tensors are unexpected (and still not read).
    file_log.reads.clear()
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\).*"fc1.weight"'):
        load_checkpoint(stage, path)
    assert "fc1.weight" not in file_log.read_keys()


def test_partial_load_from_sharded_checkpoint_opens_only_stage_shards(tmp_path, file_log):
    full = _Holder(**{str(i): nn.Linear(32, 32) for i in range(6)})  # 4.2 KB per layer
    save_sharded(full.state_dict(), tmp_path, max_shard_size=9000)  # two layers per shard
    file_log.opened.clear()

    stage = _Holder(**{str(i): nn.Linear(32, 32) for i in (2, 3)})
    assert load_checkpoint(stage, tmp_path, partial=True) == ([], [])
    assert file_log.opened_names() == [shard_names(tmp_path)[1]]
    for key, value in stage.state_dict().items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(full.state_dict()[key]))


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_corrupt_file_leaves_module_unchanged(tmp_path, damage):
    _, path = _torch_checkpoint(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if damage == "truncate" else b"\x13\x37" * 500)
    ours = MLP()
    before = _snapshot(ours)
    with pytest.raises(ValueError, match=r"truncated or corrupt"):
        load_checkpoint(ours, path)
    _assert_same(ours, before)


def test_corrupt_shard_found_mid_load_leaves_module_unchanged(tmp_path):
    full = _Holder(**{str(i): nn.Linear(32, 32) for i in range(4)})
    save_sharded(full.state_dict(), tmp_path, max_shard_size=9000)
    last = tmp_path / shard_names(tmp_path)[1]
    last.write_bytes(last.read_bytes()[:-64])  # the first shard reads fine, the second not
    target = _Holder(**{str(i): nn.Linear(32, 32) for i in range(4)})
    before = _snapshot(target)
    with pytest.raises(ValueError, match=r"model-00002-of-00002.*truncated or corrupt"):
        load_checkpoint(target, tmp_path)
    _assert_same(target, before)


def test_size_mismatch_leaves_module_unchanged(tmp_path):
    _, path = _torch_checkpoint(tmp_path)
    ours = MLP()
    ours.fc2 = nn.Linear(16, 15)
    before = _snapshot(ours)
    with pytest.raises(RuntimeError, match=r"size mismatch for fc2.weight.*\(15, 16\)"):
        load_checkpoint(ours, path)
    _assert_same(ours, before)


def test_lazy_parameters_take_the_checkpoint_shape(tmp_path):
    theirs, path = _torch_checkpoint(tmp_path)
    ours = MLP(in_features=None)
    optimizer_params = list(ours.parameters())
    assert load_checkpoint(ours, path) == ([], [])
    assert ours.fc1.weight.shape == (16, 6)
    assert optimizer_params[0] is ours.fc1.weight  # the same Parameter object, materialized
    np.testing.assert_array_equal(
        ours.fc1.weight.detach().numpy(), theirs.fc1.weight.detach().numpy()
    )


def test_dtype_cast_device_and_assign(tmp_path):
    theirs, _ = _torch_checkpoint(tmp_path)
    path = tmp_path / "bf16.safetensors"
    st_torch.save_file(theirs.to(torch.bfloat16).state_dict(), str(path))

    device = jax.devices()[3]
    ours = MLP().to(device)
    load_checkpoint(ours, path)
    assert ours.fc1.weight.dtype == jnp.float32 and ours.fc1.weight.device == device
    expected = theirs.fc1.weight.detach().float().numpy()
    np.testing.assert_array_equal(ours.fc1.weight.detach().numpy(), expected)

    load_checkpoint(ours, path, assign=True)
    assert ours.fc1.weight.dtype == jnp.bfloat16


def test_argument_errors(tmp_path):
    with pytest.raises(TypeError, match=r"spx.nn.Module.*dict"):
        load_checkpoint({"w": 1}, tmp_path / "x.safetensors")
    with pytest.raises(FileNotFoundError, match=r"x\.safetensors"):
        load_checkpoint(MLP(), tmp_path / "x.safetensors")
