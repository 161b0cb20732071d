"""spx.set_default_dtype / get_default_dtype against torch: what follows the default dtype,
what torch refuses, and float64's requirement of jax_enable_x64."""

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _restore_default_dtype():
    """The default dtype is process-wide in both libraries: put both back after each test."""
    spx_before, torch_before = spx.get_default_dtype(), torch.get_default_dtype()
    yield
    spx.set_default_dtype(spx_before)
    torch.set_default_dtype(torch_before)


# Creation calls that take the default dtype in torch; each is called as fn(library).
CREATIONS = {
    "tensor(list)": lambda L: L.tensor([1.0, 2.5]),
    "tensor(float)": lambda L: L.tensor(1.5),
    "tensor(mixed list)": lambda L: L.tensor([1, 2.5, True]),
    "as_tensor": lambda L: L.as_tensor([0.5]),
    "Tensor(list)": lambda L: L.Tensor([1, 2]),
    "Tensor(size)": lambda L: L.Tensor(2, 3),
    "zeros": lambda L: L.zeros(2),
    "ones": lambda L: L.ones(2, 2),
    "empty": lambda L: L.empty(3),
    "full(float)": lambda L: L.full((2,), 1.5),
    "arange(float)": lambda L: L.arange(0.0, 3.0),
    "linspace": lambda L: L.linspace(0, 1, 5),
    "logspace": lambda L: L.logspace(0, 1, 3),
    "eye": lambda L: L.eye(2),
    "rand": lambda L: L.rand(3),
    "randn": lambda L: L.randn(3),
    "scalar_tensor": lambda L: L.scalar_tensor(2),
    "hann_window": lambda L: L.hann_window(4),
}
# Calls that do not follow it, in either library.
UNAFFECTED = {
    "tensor(ints)": lambda L: L.tensor([1, 2]),
    "arange(ints)": lambda L: L.arange(3),
    "tensor(bools)": lambda L: L.tensor([True]),
    "explicit dtype": lambda L: L.zeros(2, dtype=L.float32),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_creation_follows_the_default_dtype_as_in_torch(dtype):
    torch.set_default_dtype(getattr(torch, dtype))
    spx.set_default_dtype(getattr(spx, dtype))
    assert spx.get_default_dtype() == getattr(spx, dtype)
    assert str(torch.get_default_dtype()) == f"torch.{spx.get_default_dtype().name}"
    for name, make in CREATIONS.items():
        t, s = make(torch), make(spx)
        assert s.dtype == getattr(spx, dtype), name
        assert str(t.dtype) == f"torch.{s.dtype.name}", name
    for name, make in UNAFFECTED.items():
        t, s = make(torch), make(spx)
        want = {"int64": "int32"}.get(str(t.dtype)[6:], str(t.dtype)[6:])  # spx's long
        assert s.dtype.name == want, name


def test_values_are_rounded_once_to_the_default_dtype():
    spx.set_default_dtype(spx.bfloat16)
    torch.set_default_dtype(torch.bfloat16)
    values = [1.0 + 2**-8 + 2**-30, 3.14159, -1e-3]
    assert spx.tensor(values).tolist() == torch.tensor(values).tolist()
    assert spx.tensor(values[0]).item() == torch.tensor(values[0]).item()


@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy.ndarrays")
def test_python_complex_and_numpy_arrays():
    spx.set_default_dtype(spx.float16)
    assert spx.tensor([1j]).dtype == spx.complex64  # no complex32 in JAX (torch: complex32)
    # A numpy array keeps its own dtype rule (torch: float64; spx without x64: float32).
    assert spx.tensor(np.array([1.0])).dtype == jnp.asarray(np.array([1.0])).dtype
    # So do numpy values inside a list, as in torch.
    torch.set_default_dtype(torch.float16)
    halves = [np.float16(1.0), np.float16(2.0)]
    for data in (halves, [np.array(halves)]):
        assert spx.tensor(data).dtype == spx.float16
        assert torch.tensor(data).dtype == torch.float16
    spx.set_default_dtype(spx.bfloat16)
    torch.set_default_dtype(torch.bfloat16)
    assert spx.tensor(halves).dtype == spx.float16 and torch.tensor(halves).dtype == torch.float16


@pytest.mark.parametrize(
    "bad", [spx.int32, spx.int64, spx.bool, spx.complex64, "float32", None, float]
)
def test_non_floating_dtypes_raise_type_error_as_torch(bad):
    torch_bad = getattr(torch, bad.name) if isinstance(bad, np.dtype) else bad
    with pytest.raises(TypeError, match="only floating-point types are supported"):
        torch.set_default_dtype(torch_bad)
    with pytest.raises(TypeError, match="only floating-point types are supported as the default"):
        spx.set_default_dtype(bad)
    assert spx.get_default_dtype() == spx.float32


def test_numpy_and_jax_scalar_types_are_dtypes():
    spx.set_default_dtype(jnp.bfloat16)
    assert spx.get_default_dtype() == spx.bfloat16
    spx.set_default_dtype(np.float16)
    assert spx.get_default_dtype() == spx.float16


@pytest.mark.skipif(jax.config.jax_enable_x64, reason="the error is for 32-bit JAX")
def test_float64_without_x64_names_the_fix():
    with pytest.raises(ValueError, match=r'jax.config.update\("jax_enable_x64", True\)'):
        spx.set_default_dtype(spx.float64)
    assert spx.get_default_dtype() == spx.float32


def test_float64_with_x64_in_a_fresh_process():
    code = textwrap.dedent(
        """
        import jax
        jax.config.update("jax_enable_x64", True)
        import spx
        assert spx.tensor([1.0]).dtype == spx.float32  # torch's default, x64 or not
        assert spx.tensor([1j]).dtype == spx.complex64
        spx.set_default_dtype(spx.float64)
        assert spx.get_default_dtype() == spx.float64
        for t in (spx.tensor([0.1]), spx.zeros(2), spx.randn(2), spx.hann_window(3)):
            assert t.dtype == spx.float64, t.dtype
        assert spx.tensor([1j]).dtype == spx.complex128
        assert spx.tensor([0.1]).item() == 0.1
        assert "dtype" not in repr(spx.tensor([0.5]))
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")


LAYERS = {
    "Linear": lambda L: L.nn.Linear(3, 2),
    "Bilinear": lambda L: L.nn.Bilinear(2, 2, 3),
    "Conv2d": lambda L: L.nn.Conv2d(1, 2, 3),
    "ConvTranspose1d": lambda L: L.nn.ConvTranspose1d(2, 1, 3),
    "Embedding": lambda L: L.nn.Embedding(5, 3),
    "LayerNorm": lambda L: L.nn.LayerNorm(3),
    "GroupNorm": lambda L: L.nn.GroupNorm(1, 2),
    "BatchNorm1d": lambda L: L.nn.BatchNorm1d(3),
    "PReLU": lambda L: L.nn.PReLU(),
    "LSTM": lambda L: L.nn.LSTM(2, 3),
    "MultiheadAttention": lambda L: L.nn.MultiheadAttention(4, 2),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layers_create_parameters_and_float_buffers_in_the_default_dtype(name):
    for lib, dtype in ((torch, torch.bfloat16), (spx, spx.bfloat16)):
        lib.set_default_dtype(dtype)
    got = {k: str(v.dtype) for k, v in LAYERS[name](spx).state_dict().items()}
    want = {
        k: str(v.dtype).replace("torch.", "") for k, v in LAYERS[name](torch).state_dict().items()
    }
    # num_batches_tracked is int64 in torch and int32 in spx (no x64): compare float entries.
    assert {k: v for k, v in got.items() if "int" not in v} == {
        k: v for k, v in want.items() if "int" not in v
    }
    mask = spx.nn.Transformer.generate_square_subsequent_mask(2)
    assert (
        mask.dtype is spx.bfloat16
        and torch.nn.Transformer.generate_square_subsequent_mask(2).dtype is torch.bfloat16
    )
