"""spx.cuda: torch.cuda's calls answered from JAX's devices (the CPU machine's answers here;
the GPU branch of each check runs where JAX has a GPU)."""

import threading

import jax
import numpy as np
import pytest

import spx

torch = pytest.importorskip("torch")


def _jax_gpus():
    try:
        return jax.local_devices(backend="gpu")
    except RuntimeError:
        return []


def test_availability_and_count_are_jaxs():
    assert spx.cuda.is_available() == bool(_jax_gpus())
    assert spx.cuda.device_count() == len(_jax_gpus())
    if not _jax_gpus():  # torch's CPU build answers the same
        assert spx.cuda.is_available() == torch.cuda.is_available()
        assert spx.cuda.device_count() == torch.cuda.device_count()


def test_the_device_idiom_of_every_training_script_runs():
    device = "cuda" if spx.cuda.is_available() else "cpu"
    spx.manual_seed(0)
    model = spx.nn.Linear(3, 2).to(device)
    out = model(spx.ones(4, 3, device=device))
    expected_platform = "gpu" if spx.cuda.is_available() else "cpu"
    assert out.device.platform == expected_platform
    np.testing.assert_allclose(
        out.detach().cpu().numpy(),
        np.ones((4, 3)) @ model.weight.detach().cpu().numpy().T + model.bias.detach().cpu().numpy(),
        rtol=1e-5,
        atol=1e-6,  # a float32 sum of four terms against a float64 reference
    )


def test_set_device_chooses_what_cuda_means_per_thread():
    seen = {}

    def rank(i):
        spx.cuda.set_device(i)
        seen[i] = (spx.cuda.current_device(), spx.device("cuda"), spx.device(f"cuda:{i}"))

    threads = [threading.Thread(target=rank, args=(i,)) for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in (1, 2):
        current, plain, indexed = seen[i]
        assert current == i and plain == indexed
    assert spx.cuda.current_device() == 0  # this thread never called it


def test_set_device_rejects_what_it_cannot_use():
    n = len(jax.local_devices(backend="gpu" if spx.cuda.is_available() else "cpu"))
    with pytest.raises(ValueError, match=f"index {n + 5} is out of range"):
        spx.cuda.set_device(n + 5)
    with pytest.raises(ValueError, match="expected a cuda device"):
        spx.cuda.set_device("cpu")
    with pytest.raises(TypeError, match="bool"):
        spx.cuda.set_device(True)
    spx.cuda.set_device(-1)  # torch: a negative index changes nothing
    assert spx.cuda.current_device() == 0


def test_manual_seed_is_ignored_without_a_gpu_as_in_torch():
    spx.manual_seed(0)
    first = spx.randn(4)
    spx.manual_seed(0)
    spx.cuda.manual_seed_all(123)
    second = spx.randn(4)
    spx.manual_seed(123)
    reseeded = spx.randn(4)
    expected = reseeded if spx.cuda.is_available() else first
    np.testing.assert_array_equal(second.numpy(), expected.numpy())


def test_synchronize_waits_for_recorded_and_dispatched_work():
    x = spx.randn(256, 256)
    y = (x @ x).tanh()  # recorded, not computed yet
    spx.cuda.synchronize()
    assert y._s.node.values is not None  # computed
    assert y._s.node.values[y._s.idx].is_ready()  # and finished


def test_device_name_needs_a_gpu():
    if spx.cuda.is_available():
        assert spx.cuda.get_device_name() == _jax_gpus()[0].device_kind
    else:
        with pytest.raises(RuntimeError, match="no GPU"):
            spx.cuda.get_device_name()


def test_memory_and_cache_calls_scripts_make():
    spx.cuda.empty_cache()  # accepted; JAX keeps its pool
    if spx.cuda.is_available():
        x = spx.ones(1024, 1024, device="cuda")
        assert spx.cuda.memory_allocated() >= x.numel() * 4
        assert spx.cuda.max_memory_allocated() >= spx.cuda.memory_allocated()
    else:  # torch's CPU build answers the same
        assert spx.cuda.memory_allocated() == torch.cuda.memory_allocated() == 0
        assert spx.cuda.max_memory_allocated() == 0
        assert spx.cuda.is_bf16_supported() is False
