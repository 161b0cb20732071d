"""Host memory into jax arrays, copied before the call returns.

numpy arrays are mutable and often views of memory someone else writes (``torch_tensor.numpy()``
shares the tensor's storage). On CPU, ``jnp.asarray(numpy)`` may wrap that memory without a
copy, and ``jnp.array(numpy)`` is a zero-copy wrap followed by a copy that runs
*asynchronously*: when the device is busy, a torch ``optimizer.step()`` right after
``model.load_state_dict({k: v.numpy()})`` changes what the spx model loads. Every spx entry point
that takes host data copies it on the host first; jax then owns the only reference.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

# Identity: jax converts the argument (dtype canonicalized as jnp.asarray does) and hands it back.
_to_device = jax.jit(lambda x: x)


def device_array(value: Any, dtype: Any = None) -> jax.Array:
    """A jax array of ``value`` that no later write to ``value``'s memory can change.

    jax arrays are used as they are (immutable); numpy arrays and objects with ``__array__``
    (torch tensors) are copied on the host now; Python numbers and lists go to ``jnp.array``.

    Example:
        >>> import numpy as np
        >>> host = np.ones(3, np.float32)
        >>> x = device_array(host)
        >>> host += 1
        >>> float(x[0])
        1.0
    """
    if isinstance(value, jax.Array):
        return value if dtype is None else jnp.asarray(value, dtype=dtype)
    if dtype is None and type(value) is np.ndarray:
        # jit's C++ argument path moves a numpy array to the device in ~11 us; jnp.asarray
        # goes through a Python-dispatched primitive (~30 us). A training loop calls this per
        # sample (spx.from_numpy, collation). Same result: canonical dtype, uncommitted.
        return _to_device(np.array(value, copy=True))
    if isinstance(value, np.ndarray | np.generic) or hasattr(value, "__array__"):
        return jnp.asarray(np.array(value, copy=True), dtype=dtype)
    return jnp.array(value, dtype=dtype)
