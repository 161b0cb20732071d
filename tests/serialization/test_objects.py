"""spx.save / spx.load of whole objects (torch's checkpoint idiom), file objects, weights_only,
and reading files written by torch.save."""

from __future__ import annotations

import io
import math
import pickle
from collections import OrderedDict

import jax
import ml_dtypes
import numpy as np
import pytest

import spx
from spx import nn
from spx.serialization import load, save

torch = pytest.importorskip("torch")
st_torch = pytest.importorskip("safetensors.torch")


class Config:  # an arbitrary object: needs pickle
    def __init__(self, depth: int) -> None:
        self.depth = depth


def _pair(seed: int = 0):
    torch.manual_seed(seed)
    t = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    s = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    s.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    return t, s


def _batches(n: int):
    rng = np.random.default_rng(1)
    return [(rng.standard_normal((5, 4)), rng.standard_normal((5, 2))) for _ in range(n)]


def _spx_step(model, opt, x, y) -> None:
    opt.zero_grad()
    loss = (model(spx.tensor(x, dtype=spx.float32)) - spx.tensor(y, dtype=spx.float32)) ** 2
    loss.mean().backward()
    opt.step()


def _torch_step(model, opt, x, y) -> None:
    opt.zero_grad()
    x, y = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    ((model(x) - y) ** 2).mean().backward()
    opt.step()


def _weights(model) -> dict[str, np.ndarray]:
    return {k: np.asarray(v.detach().numpy()) for k, v in model.state_dict().items()}


@pytest.mark.parametrize("target", ["path", "bytesio"])
def test_checkpoint_idiom_resumes_exactly(tmp_path, target):
    batches = _batches(6)
    _, straight = _pair()
    _, resumed = _pair()
    opt_a = spx.optim.Adam(straight.parameters(), lr=1e-2)
    opt_b = spx.optim.Adam(resumed.parameters(), lr=1e-2)
    for x, y in batches[:3]:
        _spx_step(straight, opt_a, x, y)
        _spx_step(resumed, opt_b, x, y)

    ckpt = {"epoch": 3, "model": resumed.state_dict(), "optimizer": opt_b.state_dict(), "loss": 0.5}
    f = tmp_path / "ckpt.pt" if target == "path" else io.BytesIO()
    spx.save(ckpt, f)
    if target == "bytesio":
        f.seek(0)
    back = spx.load(f)
    assert back["epoch"] == 3 and back["loss"] == 0.5
    assert type(back["model"]) is OrderedDict and list(back["model"]) == list(ckpt["model"])
    assert back["optimizer"]["param_groups"] == ckpt["optimizer"]["param_groups"]

    _, fresh = _pair(seed=5)  # different initial weights: all of them must come from the file
    opt_c = spx.optim.Adam(fresh.parameters(), lr=1e-2)
    fresh.load_state_dict(back["model"])
    opt_c.load_state_dict(back["optimizer"])
    for x, y in batches[3:]:
        _spx_step(straight, opt_a, x, y)
        _spx_step(fresh, opt_c, x, y)
    for key, value in _weights(straight).items():
        np.testing.assert_array_equal(_weights(fresh)[key], value, err_msg=key)


def test_values_and_containers_round_trip(tmp_path):
    p = nn.Parameter(spx.ones(2, 3))
    leaf = spx.arange(4.0).requires_grad_()
    obj = {
        "none": None,
        "flags": [True, False],
        "ints": (1, -(2**70), 0),
        "floats": [0.1, math.inf, -math.inf],
        "nan": math.nan,
        "complex": 1 - 2j,
        "text": "héllo",
        "bytes": b"\x00\xff",
        3: "an int key",
        (1, "a"): "a tuple key",
        "set": {1, 2},
        "frozen": frozenset({"x"}),
        "odict": OrderedDict([("b", 1), ("a", 2)]),
        "param": p,
        "again": p,  # the same object twice comes back as one object
        "leaf": leaf,
        "bf16": spx.ones(3, dtype=spx.bfloat16),
        "numpy": np.arange(6, dtype=np.int16).reshape(2, 3),
        "scalar": np.float32(2.5),
        "jax": jax.numpy.ones(2),
        "dtype": spx.float16,
        "size": spx.ones(2, 3).shape,
        "empty": {},
    }
    path = tmp_path / "obj.pt"
    save(obj, path)
    back = load(path)
    assert list(back) == list(obj)
    for key in ("none", "flags", "ints", "complex", "text", "bytes", 3, (1, "a"), "set", "frozen"):
        assert back[key] == obj[key] and type(back[key]) is type(obj[key]), key
    assert back["floats"] == obj["floats"] and math.isnan(back["nan"])
    assert type(back["odict"]) is OrderedDict
    assert list(back["odict"].items()) == [("b", 1), ("a", 2)]
    assert type(back["param"]) is nn.Parameter and back["param"].requires_grad
    assert back["again"] is back["param"]
    assert type(back["leaf"]) is spx.Tensor and back["leaf"].requires_grad
    assert back["leaf"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert back["bf16"].dtype == spx.bfloat16 and not back["bf16"].requires_grad
    assert type(back["numpy"]) is np.ndarray and back["numpy"].dtype == np.int16
    np.testing.assert_array_equal(back["numpy"], obj["numpy"])
    assert type(back["scalar"]) is np.float32 and back["scalar"] == 2.5
    assert isinstance(back["jax"], jax.Array) and back["jax"].tolist() == [1.0, 1.0]
    assert back["dtype"] == spx.float16 and back["size"] == spx.Size([2, 3])
    assert type(back["size"]) is spx.Size and back["empty"] == {}


def test_bare_tensor_and_list(tmp_path):
    save(spx.arange(3), tmp_path / "t.pt")
    t = load(tmp_path / "t.pt")
    assert isinstance(t, spx.Tensor) and t.tolist() == [0, 1, 2]
    save([spx.ones(1), 2], tmp_path / "l.pt")
    assert [type(v) for v in load(tmp_path / "l.pt")] == [spx.Tensor, int]


def test_flat_state_dict_is_still_plain_safetensors(tmp_path):
    model = nn.Linear(3, 2)
    path = tmp_path / "model.safetensors"
    save(model.state_dict(), path)
    from safetensors import safe_open

    with safe_open(str(path), framework="np") as f:
        assert f.metadata()["format"] == "pt" and sorted(f.keys()) == ["bias", "weight"]
        assert set(f.metadata()) == {"format", "spx.order"}  # no structure: plain tensors
    theirs = st_torch.load_file(str(path))
    np.testing.assert_array_equal(theirs["weight"].numpy(), model.weight.detach().numpy())
    # The general format is safetensors too: torch's reader sees its tensors.
    save({"step": 3, "w": model.weight}, tmp_path / "obj.safetensors")
    assert list(st_torch.load_file(str(tmp_path / "obj.safetensors"))) == ["t0"]


def test_bytesio_flat_and_keys():
    buffer = io.BytesIO()
    save({"a": spx.zeros(2), "b": spx.ones(3, dtype=spx.bfloat16)}, buffer)
    buffer.seek(0)
    back = load(buffer, keys=["b"])
    assert list(back) == ["b"] and back["b"].dtype == spx.bfloat16


def test_weights_only_refuses_pickled_objects_with_a_clear_error(tmp_path):
    model = nn.Linear(2, 2)
    path = tmp_path / "ckpt.pt"
    save({"config": Config(3), "model": model}, path)
    with pytest.raises(pickle.UnpicklingError) as info:
        load(path)
    message = str(info.value)
    assert "Weights only load failed" in message and "test_objects.Config" in message
    assert "['config']" in message and "weights_only=False" in message
    back = load(path, weights_only=False)
    assert back["config"].depth == 3
    assert isinstance(back["model"], nn.Linear)
    loaded = back["model"].weight
    np.testing.assert_array_equal(loaded.detach().numpy(), model.weight.detach().numpy())
    assert type(back["model"].weight) is nn.Parameter


def test_save_errors_name_the_value(tmp_path):
    with pytest.raises(TypeError, match=r"\['opt'\]\['w'\].*torch\.Tensor.*numpy"):
        save({"opt": {"w": torch.ones(1)}}, tmp_path / "x.pt")
    with pytest.raises(TypeError, match=r"\['gen'\].*generator.*pickling it failed"):
        save({"gen": (i for i in range(2))}, tmp_path / "x.pt")
    assert list(tmp_path.iterdir()) == []
    save({"a": 1}, tmp_path / "x.pt")
    with pytest.raises(TypeError, match=r"holds a saved object.*\['model'\]"):
        load(tmp_path / "x.pt", keys=["a"])


def test_map_location_forms(tmp_path):
    path = tmp_path / "x.pt"
    save({"w": spx.ones(2), "n": 1}, path)
    dev = jax.devices()[1]
    assert load(path, map_location=dev)["w"].device == dev
    assert load(path, "cpu:1")["w"].device == dev  # torch.load(f, "cpu") positionally
    assert load(path, map_location=torch.device("cpu"))["w"].device == jax.devices()[0]
    assert load(path, map_location=lambda storage, loc: storage)["n"] == 1
    assert load(path, map_location={"cuda:0": "cpu:1"})["w"].device == dev


# -- files written by torch.save --------------------------------------------------------------


def test_reads_torch_save_checkpoint_and_resumes_like_torch(tmp_path):
    batches = _batches(6)
    t, s = _pair()
    topt = torch.optim.Adam(t.parameters(), lr=1e-2)
    for x, y in batches[:3]:
        _torch_step(t, topt, x, y)
    path = tmp_path / "ckpt.pt"
    torch.save({"epoch": 3, "model": t.state_dict(), "optimizer": topt.state_dict()}, path)

    back = spx.load(path)
    assert back["epoch"] == 3 and type(back["model"]) is OrderedDict
    sopt = spx.optim.Adam(s.parameters(), lr=1e-2)
    s.load_state_dict(back["model"])
    sopt.load_state_dict(back["optimizer"])
    for x, y in batches[3:]:
        _torch_step(t, topt, x, y)
        _spx_step(s, sopt, x, y)
    for key, value in _weights(s).items():
        np.testing.assert_allclose(value, t.state_dict()[key].numpy(), rtol=1e-5, atol=1e-6)


def test_reads_torch_tensor_kinds(tmp_path):
    base = torch.arange(24.0).reshape(4, 6)
    obj = {
        "view": base.t()[1:, ::2],  # offset and strides into a shared storage
        "same": base,
        "param": torch.nn.Parameter(torch.ones(2)),
        "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False),
        "leaf": torch.ones(3, requires_grad=True),
        "bf16": torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
        "f8": torch.tensor([0.5, 2.0]).to(torch.float8_e4m3fn),
        "int8": torch.tensor([-3, 7], dtype=torch.int8),
        "bool": torch.tensor([True, False]),
        "scalar": torch.tensor(3.25),
        "empty": torch.ones(0, 3),
        "dtype": torch.float16,
        "size": torch.Size([2, 3]),
        "device": torch.device("cpu"),
        "list": [1, 2.5, "x", None, (True,)],
    }
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    back = spx.load(buffer)
    np.testing.assert_array_equal(back["view"].numpy(), obj["view"].numpy())
    np.testing.assert_array_equal(back["same"].numpy(), base.numpy())
    assert type(back["param"]) is nn.Parameter and back["param"].requires_grad
    assert type(back["frozen"]) is nn.Parameter and not back["frozen"].requires_grad
    assert type(back["leaf"]) is spx.Tensor and back["leaf"].requires_grad
    assert back["bf16"].dtype == spx.bfloat16 and back["bf16"].tolist() == [1.5, -2.0]
    assert back["f8"].dtype == ml_dtypes.float8_e4m3fn
    assert back["f8"].numpy().astype(np.float32).tolist() == [0.5, 2.0]
    assert back["int8"].tolist() == [-3, 7] and back["bool"].tolist() == [True, False]
    assert back["scalar"].shape == () and back["scalar"].item() == 3.25
    assert back["empty"].shape == (0, 3)
    assert back["dtype"] == spx.float16 and back["size"] == spx.Size([2, 3])
    assert back["device"] == "cpu" and back["list"] == obj["list"]


def test_torch_file_with_arbitrary_objects_is_refused(tmp_path):
    path = tmp_path / "x.pt"
    torch.save({"config": Config(2), "w": torch.ones(1)}, path)
    with pytest.raises(pickle.UnpicklingError, match=r"(?s)test_objects.Config.*never runs code"):
        spx.load(path)


def test_torch_file_with_out_of_bounds_strides_is_refused(tmp_path):
    # A tampered file must not make as_strided read outside the storage.
    path = tmp_path / "x.pt"
    torch.save({"w": torch.ones(4)}, path)
    import zipfile

    with zipfile.ZipFile(path) as archive:
        entries = {n: archive.read(n) for n in archive.namelist()}
    pkl = next(n for n in entries if n.endswith("data.pkl"))
    # size (4,) -> (400,): K\x04 (BININT1 4) followed by TUPLE1 in the size argument.
    entries[pkl] = entries[pkl].replace(b"K\x04\x85", b"M\x90\x01\x85", 1)
    bad = tmp_path / "bad.pt"
    with zipfile.ZipFile(bad, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    with pytest.raises(pickle.UnpicklingError, match=r"does not fit its storage"):
        spx.load(bad)
