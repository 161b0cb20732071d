"""Top-level torch-named conveniences: creation ops, dtypes, seeding, devices."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "name, args",
    [("zeros", (2, 3)), ("ones", (2, 3)), ("zeros", ((4,),)), ("ones", ([2, 2],))],
)
def test_constant_creation_matches_torch(name, args):
    ours = getattr(spx, name)(*args)
    ref = getattr(torch, name)(*args)
    assert ours.shape == tuple(ref.shape) and ours.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(ours), ref.numpy())


def test_like_full_arange_match_torch():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(spx.zeros_like(jnp.asarray(x)), torch.zeros_like(torch.tensor(x)))
    np.testing.assert_array_equal(spx.ones_like(jnp.asarray(x)), torch.ones_like(torch.tensor(x)))
    np.testing.assert_array_equal(spx.full((2, 2), 1.5), torch.full((2, 2), 1.5))
    for args in [(5,), (1, 7, 2), (0.0, 1.0, 0.25)]:
        np.testing.assert_allclose(spx.arange(*args), torch.arange(*args).numpy())


def test_cat_stack_match_torch():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a, b = jnp.asarray(x), jnp.asarray(x + 1)
    np.testing.assert_array_equal(
        spx.cat([a, b], dim=1), torch.cat([torch.tensor(x), torch.tensor(x + 1)], dim=1)
    )
    np.testing.assert_array_equal(
        spx.stack([a, b], dim=0), torch.stack([torch.tensor(x), torch.tensor(x + 1)])
    )


def test_tensor_and_from_numpy():
    t = spx.tensor([[1.0, 2.0]], dtype=spx.bfloat16)
    assert t.dtype == jnp.bfloat16 and t.shape == (1, 2)
    p = spx.tensor([1.0, 2.0], requires_grad=True)
    # As torch.tensor: a plain leaf Tensor that requires grad, not a Parameter.
    assert type(p) is spx.Tensor and p.requires_grad and p.is_leaf
    np.testing.assert_array_equal(spx.from_numpy(np.ones(3)), np.ones(3))
    with pytest.raises(TypeError, match=r"numpy\.ndarray"):
        spx.from_numpy([1, 2])


def test_bad_sizes_are_rejected_with_the_fix():
    with pytest.raises(ValueError, match=r"size\[1\] must be a non-negative int, got -1"):
        spx.zeros(2, -1)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        spx.arange(0, 5, 0)
    with pytest.raises(ValueError, match="low < high"):
        spx.randint(5, 5, (2,))
    with pytest.raises(TypeError, match="floating dtype"):
        spx.randn(2, dtype=jnp.int32)


def test_seeding_is_reproducible_and_advances():
    spx.manual_seed(7)
    a, b = spx.randn(4), spx.randn(4)
    spx.manual_seed(7)
    np.testing.assert_array_equal(spx.randn(4), a)
    np.testing.assert_array_equal(spx.randn(4), b)
    assert not np.array_equal(np.asarray(a), np.asarray(b))
    assert spx.initial_seed() == 7
    u = spx.rand(1000)
    assert float(u.min()) >= 0.0 and float(u.max()) < 1.0
    r = spx.randint(0, 3, (1000,))
    assert set(np.unique(np.asarray(r)).tolist()) == {0, 1, 2}
    with pytest.raises(TypeError, match=r"seed must be an int, got float 1\.5"):
        spx.manual_seed(1.5)


def test_device_strings_resolve_to_jax_devices():
    cpus = jax.local_devices(backend="cpu")
    assert spx.device("cpu") == cpus[0]
    assert spx.device("cpu:1") == cpus[1]
    assert spx.device("cpu", 2) == cpus[2]
    # Without an accelerator, cuda:N is the N-th local CPU device (ported scripts keep working).
    assert spx.device("cuda:3") == jax.local_devices()[3]
    assert spx.device(cpus[1]) is cpus[1]
    with pytest.raises(ValueError, match="out of range"):
        spx.device(f"cpu:{len(cpus)}")
    with pytest.raises(ValueError, match="unknown device type"):
        spx.device("tpu7")
    x = spx.zeros(2, device="cpu:1")
    assert x.device == cpus[1]


@pytest.mark.parametrize("fn", [spx.tensor, spx.as_tensor])
@pytest.mark.parametrize("bad", ["abc", [1.0, None], object()])
def test_non_numeric_data_is_a_clear_error(fn, bad):
    with pytest.raises((TypeError, ValueError), match=r"can't make a tensor of .*Pass numbers"):
        fn(bad)


def test_randperm_of_a_negative_n_raises_as_torch():
    # spx returned an empty permutation.
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        torch.randperm(-1)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        spx.randperm(-1)
    assert spx.randperm(0).tolist() == torch.randperm(0).tolist() == []
