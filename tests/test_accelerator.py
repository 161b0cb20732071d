"""spx.accelerator: torch.accelerator's device-generic calls (pytorch/examples' device idiom),
answered from JAX's GPUs; on the CPU machine they answer as torch's CPU build does."""

import jax
import pytest

import spx

torch = pytest.importorskip("torch")


def _has_gpu():
    try:
        return bool(jax.local_devices(backend="gpu"))
    except RuntimeError:
        return False


def test_availability_matches_cuda_and_torchs_cpu_build():
    assert spx.accelerator.is_available() == spx.cuda.is_available()
    assert spx.accelerator.device_count() == spx.cuda.device_count()
    if not _has_gpu():
        assert spx.accelerator.is_available() == torch.accelerator.is_available()
        assert spx.accelerator.device_count() == torch.accelerator.device_count()
        assert spx.accelerator.current_accelerator() is None
        assert torch.accelerator.current_accelerator() is None
        assert spx.accelerator.current_accelerator(check_available=True) is None


def test_the_mnist_example_device_idiom_runs():
    # pytorch/examples mnist/main.py, renamed
    use_accel = spx.accelerator.is_available()
    device = spx.accelerator.current_accelerator() if use_accel else spx.device("cpu")
    model = spx.nn.Linear(3, 2).to(device)
    out = model(spx.ones(4, 3).to(device))
    assert out.device.platform == ("gpu" if use_accel else "cpu")


@pytest.mark.parametrize(
    "call",
    [
        lambda A: A.current_device_index(),
        lambda A: A.set_device_index(0),
        lambda A: A.synchronize(),
        lambda A: A.empty_cache(),
        lambda A: A.memory_allocated(),
        lambda A: A.max_memory_allocated(),
    ],
)
def test_device_calls_without_a_device_raise_torchs_error(call):
    if _has_gpu():
        call(spx.accelerator)  # runs
        return
    with pytest.raises(RuntimeError) as theirs:
        call(torch.accelerator)
    with pytest.raises(RuntimeError) as ours:
        call(spx.accelerator)
    assert str(ours.value) == str(theirs.value)


def test_device_index_context():
    with spx.accelerator.device_index(None):  # None changes nothing, as in torch
        pass
    if _has_gpu():
        with spx.accelerator.device_index(0):
            assert spx.accelerator.current_device_index() == 0
        assert spx.accelerator.current_device_idx() == 0
