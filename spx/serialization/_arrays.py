"""Arrays in and out of safetensors: validation and host conversion for saving, placement
for loading.

safetensors writes raw bytes from a pointer, so what we hand it must be a C-contiguous,
little-endian numpy array in one of its dtypes. ``safetensors.numpy`` trusts the caller on
contiguity: a transposed view is silently written in memory order (wrong values), which is
why every array goes through :func:`to_host` first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

from spx import _context
from spx._tensor.tensor import Tensor
from spx.nn.parameter import Parameter

# dtype names (numpy / ml_dtypes spelling) the safetensors writer accepts.
SAVABLE_DTYPES = frozenset(
    {
        *("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"),
        *("float16", "float32", "float64", "bfloat16", "complex64"),
        *("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"),
    }
)

# Reserved by the format for the text metadata block.
_METADATA_KEY = "__metadata__"


_DELETED = (
    "cannot save {key!r}: its array was deleted. It was most likely read from "
    "model.state_dict() (or a parameter's .data) before a step compiled with spx.compile, which "
    "donates the buffers of the state it updates so XLA can reuse their memory; torch's "
    "state_dict() tensors follow later in-place updates, spx's are snapshots. Fix: call "
    "model.state_dict() again after the step, right before saving, e.g. "
    "spx.save(model.state_dict(), path); or compile the step with spx.compile(step, "
    "donate=False) to keep old arrays alive."
)


def _describe(value: Any) -> str:
    return f"{type(value).__module__}.{type(value).__qualname__}"


def to_host(key: str, value: Any) -> np.ndarray:
    """Validate one state-dict entry and return it as a contiguous little-endian numpy array.

    Args:
        key: the entry's name (named in every error).
        value: an ``spx.Tensor`` (a Parameter too), ``jax.Array`` or ``numpy.ndarray``/scalar.

    Returns:
        A numpy array safe to hand to the safetensors writer.

    Raises:
        TypeError: ``value`` is not an array, is a lazy parameter with no value yet, is traced
            inside a compiled function, or has a dtype safetensors cannot store.
        ValueError: a sharded ``jax.Array`` that this process cannot see whole.
    """
    if isinstance(value, Tensor):
        if isinstance(value, Parameter) and value.is_uninitialized:
            raise TypeError(
                f"cannot save {key!r}: it is an uninitialized (lazy) parameter with no value "
                "yet; run one forward pass (model(example_input)) before saving"
            )
        value = value._data
    if isinstance(value, jax.core.Tracer):
        raise TypeError(
            f"cannot save {key!r}: it is a traced value inside jax.jit/grad/spx.compile; save "
            "outside the compiled function, on the concrete arrays it returns"
        )
    if isinstance(value, jax.Array):
        if value.is_deleted():
            raise RuntimeError(_DELETED.format(key=key))
        if not value.is_fully_addressable:
            raise ValueError(
                f"cannot save {key!r}: it is sharded across processes and this process holds "
                "only part of it; gather it first (e.g. jax.experimental.multihost_utils."
                "process_allgather) or save each process's shards under its own keys"
            )
        array = np.asarray(value)
    elif isinstance(value, np.ndarray | np.generic):
        array = np.asarray(value)
    elif isinstance(value, Mapping):
        raise TypeError(
            f"cannot save {key!r}: its value is a nested {type(value).__name__}; a safetensors "
            "file holds a flat dict of arrays. Save a model with spx.save(model.state_dict(), "
            "path) and an optimizer with spx.serialization.save_optimizer(optimizer, path)"
        )
    else:
        hint = ""
        if type(value).__module__.startswith("torch"):
            hint = "; convert torch tensors with .numpy() (or use safetensors.torch.save_file)"
        elif isinstance(value, int | float | bool | list | tuple):
            hint = "; wrap Python values as arrays first, e.g. np.asarray(value)"
        raise TypeError(
            f"cannot save {key!r}: expected an spx.Tensor, jax.Array or numpy.ndarray, "
            f"got {_describe(value)}{hint}"
        )
    if array.dtype.name not in SAVABLE_DTYPES:
        raise TypeError(
            f"cannot save {key!r}: dtype {array.dtype.name} is not supported by safetensors "
            f"(supported: {', '.join(sorted(SAVABLE_DTYPES))}); cast it first, e.g. "
            f"x.astype(jnp.float32)"
        )
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    if not array.flags.c_contiguous:
        # Not np.ascontiguousarray: that turns a 0-d array into shape (1,).
        array = array.copy(order="C")
    return array


def check_key(key: Any) -> str:
    """Return ``key`` if it can name a tensor in a safetensors file, else raise.

    Args:
        key: the candidate tensor name.

    Returns:
        ``key`` unchanged.

    Raises:
        TypeError: ``key`` is not a ``str``.
        ValueError: ``key`` is the format's reserved ``"__metadata__"``.
    """
    if not isinstance(key, str):
        raise TypeError(
            f"state_dict keys must be str (safetensors names tensors by string), got "
            f"{type(key).__name__} key {key!r}; convert it, e.g. str({key!r})"
        )
    if key == _METADATA_KEY:
        raise ValueError(
            f"{_METADATA_KEY!r} is reserved by the safetensors format for the metadata block; "
            "rename that entry or pass text through the metadata argument instead"
        )
    return key


def check_metadata(metadata: Any) -> dict[str, str]:
    """Validate the free-text metadata of a safetensors header (``dict[str, str]``).

    Args:
        metadata: ``None`` or a mapping of str to str.

    Returns:
        A plain dict copy (empty for ``None``).

    Raises:
        TypeError: not a mapping, or a key/value that is not a ``str``.
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a dict[str, str], got {type(metadata).__name__}")
    out = {}
    for k, v in metadata.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError(
                f"metadata must be a dict[str, str] (safetensors stores text only), got entry "
                f"{k!r}: {type(v).__name__}; encode other values, e.g. json.dumps(value)"
            )
        out[k] = v
    return out


def resolve_device(device: Any) -> jax.Device | None:
    """The device loaded arrays go to: ``device`` if given, else the calling rank's device.

    Args:
        device: ``None``, a torch-style spec (``"cpu"``, ``"cuda:1"``) or a ``jax.Device``.

    Returns:
        A device, or ``None`` for JAX's default placement.
    """
    if device is None:
        return _context.current().device
    from spx._device import device as to_device

    return to_device(device)


def to_device(array: np.ndarray, device: jax.Device | None) -> Tensor:
    """Move a host array to ``device`` as a Tensor, with JAX's dtype rules.

    64-bit dtypes become 32-bit unless ``jax_enable_x64`` is on, as for every JAX array; the
    cast happens here on the host so JAX does not warn once per tensor.

    Args:
        array: the host array read from a file.
        device: target device, or ``None`` for the default one.

    Returns:
        The tensor on the device.
    """
    dtype = jax.dtypes.canonicalize_dtype(array.dtype)
    if dtype != array.dtype:
        array = array.astype(dtype)
    return Tensor._of(jax.device_put(array, device))
