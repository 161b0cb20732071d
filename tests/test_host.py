"""Host data entering spx is copied at once: later writes to that memory change nothing.

On CPU, ``jnp.array(numpy)`` wraps the numpy memory and copies it asynchronously; with a busy
device the copy runs after the caller's next line. ``torch_tensor.numpy()`` shares the tensor's
storage, so a torch ``optimizer.step()`` right after a load used to leak into spx.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx._host import device_array

torch = pytest.importorskip("torch")

_busy = jax.jit(lambda a: [a @ a for _ in range(20)])
_big = jnp.ones((300, 300))


def _check(make, read, rounds=30, dtype=np.float32):
    """``make(numpy view of a torch tensor)``, then write the tensor at once; ``read`` -> array."""
    for _ in range(rounds):
        t = torch.randn(16, 64)
        expected = t.numpy().astype(dtype)
        _busy(_big)  # queue work so that an asynchronous copy would run late
        made = make(t.numpy())
        t.add_(1.0)
        np.testing.assert_array_equal(np.asarray(read(made)), expected)


def test_device_array_copies_host_memory_now():
    _check(device_array, lambda x: x)
    _check(lambda a: device_array(a, jnp.bfloat16), lambda x: x, rounds=5, dtype=jnp.bfloat16)


@pytest.mark.parametrize(
    "make",
    [spx.tensor, spx.as_tensor, spx.from_numpy, spx.nn.Parameter],
    ids=["tensor", "as_tensor", "from_numpy", "Parameter"],
)
def test_creation_ops_copy_host_memory(make):
    _check(make, lambda x: x.data if isinstance(x, spx.nn.Parameter) else x)


def test_load_state_dict_copies_host_memory():
    def load(array):
        m = spx.nn.Linear(64, 16, bias=False)
        m.load_state_dict({"weight": array})
        return m

    _check(load, lambda m: m.weight.data)


def test_register_buffer_copies_host_memory():
    def register(array):
        m = spx.nn.Module()
        m.register_buffer("b", array)
        return m

    _check(register, lambda m: m.b)


def test_optimizer_load_state_dict_copies_host_memory():
    def load(array):
        p = spx.nn.Parameter(jnp.zeros((16, 64)))
        opt = spx.optim.SGD([p], lr=0.1, momentum=0.9)
        opt.load_state_dict(
            {
                "state": {0: {"momentum_buffer": array}},
                "param_groups": opt.state_dict()["param_groups"],
            }
        )
        return opt.state[p]["momentum_buffer"]

    _check(load, lambda x: x)


def test_tensor_of_a_jax_array_is_a_copy_like_torch():
    x = jnp.arange(3.0)
    y = spx.tensor(x)
    assert y is not x and np.array_equal(np.asarray(y), np.asarray(x))
