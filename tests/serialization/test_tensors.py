"""spx.serialization.save / load: dtypes bit for bit, interop with torch's reader and writer,
hand-built files, and the errors a user sees."""

from __future__ import annotations

import io
import json
import struct
from collections import OrderedDict

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import spx
from spx import nn
from spx.nn import functional as F
from spx.serialization import load, save

torch = pytest.importorskip("torch")
st_torch = pytest.importorskip("safetensors.torch")


def _bits(x) -> bytes:
    return np.ascontiguousarray(np.asarray(x)).tobytes()


def _sample(dtype, shape=(3, 5)) -> np.ndarray:
    rng = np.random.default_rng(0)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    values = rng.standard_normal(shape).astype(np.float32) * 100
    values.flat[:3] = [np.inf, -0.0, np.nan]
    return values.astype(dtype)


DTYPES = {
    "float32": (np.float32, torch.float32),
    "float16": (np.float16, torch.float16),
    "bfloat16": (ml_dtypes.bfloat16, torch.bfloat16),
    "int32": (np.int32, torch.int32),
    "int8": (np.int8, torch.int8),
    "uint8": (np.uint8, torch.uint8),
    "bool": (np.bool_, torch.bool),
    "float8_e4m3fn": (ml_dtypes.float8_e4m3fn, torch.float8_e4m3fn),
    "float8_e5m2": (ml_dtypes.float8_e5m2, torch.float8_e5m2),
}


@pytest.mark.parametrize("name", list(DTYPES))
def test_dtype_round_trip_is_bit_exact_and_torch_reads_it(tmp_path, name):
    np_dtype, torch_dtype = DTYPES[name]
    host = _sample(np_dtype)
    path = tmp_path / "x.safetensors"
    save({"jax": jnp.asarray(host), "numpy": host, "scalar": host[0, 0]}, path)

    back = load(path)
    for key in ("jax", "numpy"):
        assert isinstance(back[key], spx.Tensor)
        assert back[key].dtype == np_dtype and back[key].shape == host.shape
        assert _bits(back[key]) == _bits(host)
    assert back["scalar"].shape == () and _bits(back["scalar"]) == _bits(host[0, 0])

    # An independent reader (torch's) sees the same dtype and bytes.
    theirs = st_torch.load_file(str(path))
    assert theirs["jax"].dtype == torch_dtype and tuple(theirs["jax"].shape) == host.shape
    assert theirs["numpy"].view(torch.uint8).numpy().tobytes() == _bits(host)


@pytest.mark.parametrize("name", ["float32", "bfloat16", "int8", "bool", "float8_e4m3fn"])
def test_files_written_by_torch_load_bit_exact(tmp_path, name):
    np_dtype, torch_dtype = DTYPES[name]
    host = _sample(np_dtype, (4, 2))
    tensor = torch.from_numpy(host.view(np.uint8).copy()).view(torch_dtype).reshape(4, 2)
    path = tmp_path / "torch.safetensors"
    st_torch.save_file({"t": tensor}, str(path))
    back = load(path)["t"]
    assert back.dtype == np_dtype and _bits(back) == _bits(host)


def test_hand_built_file_loads(tmp_path):
    # The format by hand: u64 header length, JSON header, then the raw little-endian bytes.
    w = np.array([[1.5, -2.0], [0.25, 8.0]], dtype=ml_dtypes.bfloat16)
    i = np.array([7, -9, 1 << 30], dtype=np.int32)
    header = {
        "__metadata__": {"who": "hand"},
        "w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]},
        "i": {"dtype": "I32", "shape": [3], "data_offsets": [8, 20]},
    }
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path = tmp_path / "hand.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + w.tobytes() + i.tobytes())
    back = load(path)
    assert back["w"].dtype == jnp.bfloat16 and _bits(back["w"]) == _bits(w)
    assert back["i"].tolist() == [7, -9, 1 << 30]


def test_non_contiguous_views_are_written_by_value(tmp_path):
    # safetensors.numpy writes raw memory order: a transposed view must be made contiguous.
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    path = tmp_path / "v.safetensors"
    save({"t": base.T, "strided": base[:, ::2], "big_endian": base.astype(">f4")}, path)
    theirs = st_torch.load_file(str(path))
    np.testing.assert_array_equal(theirs["t"].numpy(), base.T)
    np.testing.assert_array_equal(theirs["strided"].numpy(), base[:, ::2])
    np.testing.assert_array_equal(theirs["big_endian"].numpy(), base)


def test_tied_weights_and_parameters_save(tmp_path):
    shared = nn.Parameter(jnp.arange(6.0).reshape(2, 3))
    path = tmp_path / "tied.safetensors"
    save({"embed.weight": shared, "head.weight": shared, "view": shared.data}, path)
    theirs = st_torch.load_file(str(path))
    for key in ("embed.weight", "head.weight", "view"):
        np.testing.assert_array_equal(theirs[key].numpy(), np.arange(6.0).reshape(2, 3))


def test_metadata_round_trips_with_torch_format_tag(tmp_path):
    path = tmp_path / "m.safetensors"
    save({"a": jnp.zeros(1)}, path, metadata={"step": "10"})
    from safetensors import safe_open

    with safe_open(str(path), framework="np") as f:
        order = '{"type":"dict","keys":["a"]}'  # the key order (safetensors sorts its header)
        assert f.metadata() == {"format": "pt", "step": "10", "spx.order": order}


def test_load_reads_only_requested_keys(tmp_path, file_log):
    path = tmp_path / "m.safetensors"
    save({f"layer{i}.w": jnp.full((4,), i, jnp.float32) for i in range(6)}, path)
    out = load(path, keys=["layer4.w", "layer1.w"])
    assert list(out) == ["layer4.w", "layer1.w"]
    assert out["layer4.w"].tolist() == [4.0] * 4
    assert file_log.read_keys() == ["layer4.w", "layer1.w"]


def test_load_to_device_and_map_location(tmp_path):
    path = tmp_path / "m.safetensors"
    save({"a": jnp.ones(2)}, path)
    dev = jax.devices()[1]
    assert load(path, device=dev)["a"].device == dev
    assert load(path, map_location="cpu:2")["a"].device == jax.devices()[2]
    with pytest.raises(ValueError, match=r"pass one"):
        load(path, device="cpu", map_location="cpu")


def test_missing_key_lists_available(tmp_path):
    path = tmp_path / "m.safetensors"
    save({"fc1.weight": jnp.ones(2), "fc1.bias": jnp.ones(2)}, path)
    with pytest.raises(KeyError) as info:
        load(path, keys=["fc1.wieght"])
    message = str(info.value)
    assert "'fc1.wieght'" in message and "did you mean 'fc1.weight'" in message
    assert "fc1.bias" in message and str(path) in message


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.safetensors"):
        load(tmp_path / "nope.safetensors")
    with pytest.raises(FileNotFoundError, match=r"no checkpoint in directory"):
        load(tmp_path)


def test_truncated_and_garbage_files_raise_clear_value_error(tmp_path):
    good = tmp_path / "good.safetensors"
    save({"w": jnp.ones((64, 64))}, good)
    data = good.read_bytes()
    cases = {
        "cut_data.safetensors": data[:-100],
        "cut_header.safetensors": data[:20],
        "garbage.safetensors": b"this is not a safetensors file at all" * 4,
        "empty.safetensors": b"",
    }
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(ValueError, match=r"truncated or corrupt") as info:
            load(path)
        assert str(path) in str(info.value)


@pytest.mark.parametrize(
    ("state_dict", "match"),
    [
        ({"w": torch.ones(1)}, "'w'.*torch.*numpy"),
        ({"w": jnp.ones(2, jnp.int4)}, "'w'.*int4.*not supported"),
        ({"w": nn.UninitializedParameter()}, "'w'.*uninitialized.*forward"),
    ],
)
def test_bad_entries_raise_type_error_naming_the_key(tmp_path, state_dict, match):
    path = tmp_path / "bad.safetensors"
    with pytest.raises(TypeError, match=match):
        save(state_dict, path)
    assert list(tmp_path.iterdir()) == []


def test_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match=r"metadata must be a dict"):
        save({"a": jnp.ones(1)}, tmp_path / "m.safetensors", metadata={"step": 3})
    with pytest.raises(ValueError, match=r"reserved"):
        save({"__metadata__": jnp.ones(1)}, tmp_path / "m.safetensors")
    with pytest.raises(TypeError, match=r"file path.*io.BytesIO.*int"):
        save({"a": jnp.ones(1)}, 3)
    with pytest.raises(TypeError, match=r"\['a'\]"):
        load(tmp_path / "m.safetensors", keys="a")


def test_saving_traced_values_is_refused(tmp_path):
    @jax.jit
    def f(x):
        save({"x": x}, tmp_path / "t.safetensors")
        return x

    with pytest.raises(TypeError, match=r"traced"):
        f(jnp.ones(2))


def test_int64_follows_jax_x64_rules(tmp_path):
    path = tmp_path / "i.safetensors"
    st_torch.save_file({"steps": torch.tensor([5, 1 << 20], dtype=torch.int64)}, str(path))
    back = load(path)["steps"]
    assert back.dtype == jnp.int32 and back.tolist() == [5, 1 << 20]


def test_a_legacy_torch_pickle_is_named_with_the_conversion(tmp_path):
    # Before: "truncated or corrupt ... restore it from a backup". (Zip files load: see
    # test_objects.py.)
    sd = {"fc.weight": torch.randn(3, 4), "fc.bias": torch.randn(3)}
    path = tmp_path / "model.pt"
    torch.save(sd, path, _use_new_zipfile_serialization=False)
    with pytest.raises(ValueError) as info:
        load(path)
    message = str(info.value)
    assert "legacy" in message and "torch.save(torch.load(p), p)" in message
    assert "safetensors.torch.save_file(torch.load(" in message
    # The conversion it shows works, and spx then reads the same numbers.
    out = tmp_path / "model.safetensors"
    st_torch.save_file(torch.load(path), str(out))
    back = load(out)
    for key, value in sd.items():
        np.testing.assert_array_equal(np.asarray(back[key]), value.numpy())


def test_a_directory_of_torch_pickles_says_so(tmp_path):
    torch.save({"w": torch.ones(2)}, tmp_path / "pytorch_model.bin")
    with pytest.raises(FileNotFoundError, match=r"'pytorch_model.bin'.*spx.load\("):
        load(tmp_path)
    assert load(tmp_path / "pytorch_model.bin")["w"].tolist() == [1.0, 1.0]


def test_saving_raw_arrays_kept_across_a_compiled_step_names_the_key_and_fix(tmp_path):
    import spx

    model = nn.Linear(4, 1)
    opt = spx.optim.SGD(model.parameters(), lr=0.1)
    # Raw jax arrays (not the state_dict's Tensors, which follow the parameters) of the
    # parameters' buffers before the step.
    kept = {k: jnp.asarray(v) for k, v in model.state_dict().items()}

    @spx.compile
    def step(model, opt, x):
        opt.zero_grad()
        loss = spx.backward(lambda m: (m(x) ** 2).mean(), model)
        opt.step()
        return loss

    step(model, opt, jnp.ones((2, 4)))  # donates the parameters' old buffers
    # Before: "Array has been deleted with shape=float32[1,4]".
    with pytest.raises(RuntimeError, match=r"(?s)'weight'.*donates.*model\.state_dict\(\) again"):
        save(kept, tmp_path / "m.safetensors")
    save(model.state_dict(), tmp_path / "m.safetensors")  # the fix it names
    np.testing.assert_array_equal(
        np.asarray(load(tmp_path / "m.safetensors")["weight"]), np.asarray(model.weight.data)
    )


def test_a_state_dict_taken_before_compiled_steps_saves_the_current_values(tmp_path):
    # torch: state_dict() tensors share the parameters' storage, so saving them after training
    # saves the trained values. spx's compiled steps donate (free) the old arrays; the
    # state_dict entries follow the parameters' new values instead of dangling.
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    s = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 4))
    s.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    topt = torch.optim.AdamW(t.parameters(), lr=1e-2)
    sopt = spx.optim.AdamW(s.parameters(), lr=1e-2)
    t_sd, s_sd = t.state_dict(), s.state_dict()
    s_vars = s.state_dict(keep_vars=True)  # the Parameters themselves
    before = {k: v.numpy().copy() for k, v in s_sd.items()}

    @spx.compile
    def step(model, opt, x, y):
        opt.zero_grad()
        loss = spx.backward(lambda m: F.cross_entropy(m(x), y), model)
        opt.step()
        return loss

    rng = np.random.default_rng(0)
    for _ in range(4):  # the second program (with optimizer state) donates parameters
        x = rng.standard_normal((8, 6)).astype(np.float32)
        y = rng.integers(0, 4, 8)
        topt.zero_grad()
        torch.nn.functional.cross_entropy(t(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        topt.step()
        step(s, sopt, spx.from_numpy(x), spx.from_numpy(y.astype(np.int32)))

    st_torch.save_file(t_sd, str(tmp_path / "torch.safetensors"))
    save(s_sd, tmp_path / "spx.safetensors")
    save(s_vars, tmp_path / "vars.safetensors")
    theirs = st_torch.load_file(str(tmp_path / "torch.safetensors"))
    for path in ("spx.safetensors", "vars.safetensors"):
        back = load(tmp_path / path)
        for key, value in back.items():
            assert isinstance(value, spx.Tensor) and not value.requires_grad
            current = s.get_parameter(key).detach().numpy()
            np.testing.assert_array_equal(value.numpy(), current, err_msg=key)
            assert not np.array_equal(value.numpy(), before[key]), key
            np.testing.assert_allclose(
                value.numpy(), theirs[key].numpy(), rtol=1e-5, atol=1e-6, err_msg=key
            )


def test_save_computes_recorded_values(tmp_path):
    w = nn.Parameter(jnp.arange(6.0).reshape(2, 3))
    doubled = w.detach() * 2  # recorded, not computed yet
    view = w.data.T  # a view of the parameter's storage
    save({"doubled": doubled, "view": view}, tmp_path / "r.safetensors")
    theirs = st_torch.load_file(str(tmp_path / "r.safetensors"))
    np.testing.assert_array_equal(theirs["doubled"].numpy(), np.arange(6.0).reshape(2, 3) * 2)
    np.testing.assert_array_equal(theirs["view"].numpy(), np.arange(6.0).reshape(2, 3).T)


@pytest.mark.parametrize("to", ["path", "bytes"])
def test_a_state_dict_comes_back_in_its_order_and_type_as_torchs(tmp_path, to):
    # safetensors orders its header by dtype and name; torch.load gives the dict back as saved
    # (code that zips ckpt.values() with model.parameters() depends on it).
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.Linear(3, 1))
    ordered = OrderedDict([("z", spx.ones(2)), ("a", spx.zeros(1)), ("m", spx.arange(3))])
    for obj in (model.state_dict(), ordered, dict(ordered)):
        torch_obj = type(obj)((k, torch.from_numpy(np.asarray(v))) for k, v in obj.items())
        want = torch.load(_round_trip(torch.save, torch_obj, tmp_path / "t.pt", to))
        got = load(_round_trip(save, obj, tmp_path / "s.pt", to))
        assert type(got) is type(want) is type(obj)
        assert list(got) == list(want) == list(obj)
    path = tmp_path / "plain.safetensors"  # another writer's file: its own order, a dict
    st_torch.save_file({"b": torch.ones(1), "a": torch.ones(1)}, str(path))
    assert sorted(load(path)) == ["a", "b"]
    # A file another tool rewrote with a tensor less, spx's metadata kept: loads, in its order.
    save(ordered, path)
    kept = st_torch.load_file(str(path))
    del kept["a"]
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
    st_torch.save_file(kept, str(path), metadata=meta)
    assert sorted(load(path)) == ["m", "z"]
    loaded = load(path)  # saved again with that metadata: the order written is the dict's
    save({"z": loaded["z"], "m": loaded["m"]}, path, metadata=meta)
    assert list(load(path)) == ["z", "m"]


def _round_trip(save_fn, obj, path, to):
    if to == "path":
        save_fn(obj, path)
        return path
    buffer = io.BytesIO()
    save_fn(obj, buffer)
    buffer.seek(0)
    return buffer
