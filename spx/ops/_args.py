"""Arguments of spx's top-level functions: what a Tensor argument may be, and the errors.

torch's functions take tensors; spx's also take ``jax.Array``, numpy arrays and Python numbers
(a JAX user's values), and always return Tensors. Two kinds of argument:

* :func:`tensor_arg` — the tensor a function works on (``input``): anything else becomes a
  Tensor first (a Python float a float32 0-d tensor, an int an int32 one), so methods apply.
* :func:`operand` — the other side of a binary function (``other``, ``exponent``): passed to
  the recorded operation as it is, so a Python number stays a "wrapped number" that does not
  change the tensor's dtype (``spx.mul(half, 2.5)`` stays float16, as in torch).

Lists and tuples are refused with the fix (``spx.tensor(...)``): torch refuses them too, and
converting silently would hide a host-to-device copy in a loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from spx._host import device_array
from spx._tensor.tensor import Tensor

_NUMBERS = (bool, int, float, complex)
_ARRAYS = (jax.Array, np.ndarray, np.generic)


def _refuse(x: Any, fn: str, name: str) -> TypeError:
    if isinstance(x, list | tuple):
        fix = f"make it a tensor first: spx.{fn}(spx.tensor({x!r:.40}), ...)"
    else:
        fix = "pass an spx.Tensor, a jax or numpy array, or a Python number"
    return TypeError(
        f"spx.{fn}(): argument '{name}' must be a Tensor, got {type(x).__name__} ({x!r:.60}); {fix}"
    )


def tensor_arg(x: Any, fn: str, name: str = "input") -> Tensor:
    """``x`` as a Tensor: Tensors as they are; arrays and Python numbers wrapped (copied from
    host memory); anything else a TypeError naming ``fn`` and the argument."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, _ARRAYS):
        return Tensor._of(device_array(x))
    if isinstance(x, _NUMBERS):
        from spx.ops.creation import as_value

        return Tensor._of(as_value(x))
    raise _refuse(x, fn, name)


def first_operand(x: Any, other: Any, fn: str) -> Tensor:
    """The ``input`` of a binary function: a Python number next to a tensor ``other`` becomes
    a weakly typed 0-d Tensor, so ``spx.sub(1, half_tensor)`` is float16 as in torch."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, _NUMBERS) and isinstance(other, (Tensor, *_ARRAYS)):
        return Tensor._of(jax.device_put(x))  # device_put keeps a Python number weakly typed
    return tensor_arg(x, fn)


def operand(x: Any, fn: str, name: str = "other") -> Any:
    """``x`` for a recorded operation: Tensors, arrays and Python numbers as they are."""
    if isinstance(x, (Tensor, *_ARRAYS, *_NUMBERS)):
        return x
    raise _refuse(x, fn, name)


def tensor_list(tensors: Any, fn: str, name: str = "tensors") -> list[Tensor]:
    """A sequence of tensors (``cat``/``stack``-style arguments) as a list of Tensors."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, Sequence):
        raise TypeError(
            f"spx.{fn}(): argument '{name}' must be a tuple or list of Tensors, got "
            f"{type(tensors).__name__}; e.g. spx.{fn}([a, b])"
        )
    return [tensor_arg(t, fn, f"{name}[{i}]") for i, t in enumerate(tensors)]


def is_number(x: Any) -> bool:
    return isinstance(x, _NUMBERS)
