"""``save`` / ``load``: a flat ``dict[str, array]`` to and from safetensors.

The spx counterparts of ``torch.save(model.state_dict(), path)`` and ``torch.load(path)``, with
safetensors instead of pickle (nothing executable is ever read back). ``save`` is atomic;
``load`` reads only the tensors asked for and accepts single files and Hugging Face sharded
directories alike.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import jax

from spx._tensor.tensor import Tensor
from spx.serialization._arrays import check_key, check_metadata, to_host
from spx.serialization._atomic import AtomicWriter
from spx.serialization._file import write_file
from spx.serialization.checkpoint import open_checkpoint


def _check_path(path: Any, what: str) -> str | os.PathLike[str]:
    if isinstance(path, str | os.PathLike):
        return path
    raise TypeError(
        f"{what} takes a file path (str or os.PathLike), got {type(path).__name__}; spx "
        "checkpoints are written atomically by path, so file objects and buffers are not "
        "supported (use safetensors.numpy.save for bytes)"
    )


def save(
    state_dict: Mapping[str, Any],
    path: str | os.PathLike[str],
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Save a flat dict of arrays to one ``.safetensors`` file, atomically.

    dtypes are kept exactly (bf16 and float8 included); values may be ``spx.Tensor`` (a
    Parameter, a ``state_dict()`` alias: its current value is saved), ``jax.Array`` or numpy.
    Entries that share memory (tied weights) are stored as separate copies. The file is
    written to a temp file beside ``path``, fsynced, then renamed over ``path``: on any failure
    the previous file is untouched and the temp file removed. The header's metadata gets
    ``"format": "pt"`` unless given, because spx arrays have torch's layout and
    ``transformers`` refuses files without it.

    Mirrors ``torch.save(model.state_dict(), path)`` / ``safetensors.torch.save_file``.

    Args:
        state_dict: flat mapping of names to arrays, e.g. ``model.state_dict()``.
        path: the file to write; its directory must exist.
        metadata: optional ``dict[str, str]`` stored in the file header.

    Raises:
        TypeError: a key that is not a ``str`` or a value that is not an array (both named).
        FileNotFoundError: the parent directory does not exist.

    Example:
        >>> import tempfile, os, jax.numpy as jnp
        >>> p = os.path.join(tempfile.mkdtemp(), "model.safetensors")
        >>> save({"w": jnp.ones((2, 2), jnp.bfloat16)}, p)
        >>> load(p)["w"].dtype
        dtype(bfloat16)
    """
    path = _check_path(path, "save")
    if hasattr(state_dict, "state_dict") and not isinstance(state_dict, Mapping):
        raise TypeError(
            f"save takes a flat dict of arrays, got a {type(state_dict).__name__}; objects are "
            "not pickled. Save a model's weights with save(model.state_dict(), path) and an "
            "optimizer with spx.serialization.save_optimizer(optimizer, path)"
        )
    if not isinstance(state_dict, Mapping):
        raise TypeError(
            f"save takes a flat dict[str, array] such as model.state_dict(), got "
            f"{type(state_dict).__name__}"
        )
    text = {"format": "pt", **check_metadata(metadata)}
    hosts = {check_key(k): to_host(k, v) for k, v in state_dict.items()}
    with AtomicWriter() as writer:
        write_file(hosts, writer.stage(path), text)


def _pick_device(device: Any, map_location: Any) -> Any:
    if map_location is None:
        return device
    if device is not None:
        raise ValueError(
            f"load got both device={device!r} and map_location={map_location!r}; they mean the "
            "same thing, pass one"
        )
    if not isinstance(map_location, str | jax.Device):
        raise TypeError(
            f"map_location must be a device string such as 'cpu' or a jax.Device, got "
            f"{type(map_location).__name__}; dict and callable map_locations are not supported"
        )
    return map_location


def load(
    path: str | os.PathLike[str],
    keys: Iterable[str] | None = None,
    device: Any = None,
    *,
    map_location: Any = None,
    weights_only: bool = True,
) -> dict[str, Tensor]:
    """Load arrays from a ``.safetensors`` file or a sharded checkpoint directory.

    Only the requested tensors are read; for a sharded checkpoint only the shards that hold
    them are opened. 64-bit tensors follow JAX's rules (32-bit unless ``jax_enable_x64``).

    Mirrors ``torch.load(path, map_location=..., weights_only=True)`` /
    ``safetensors.torch.load_file``.

    Args:
        path: a ``.safetensors`` file, a ``*.safetensors.index.json``, or a directory with
            ``model.safetensors.index.json`` (Hugging Face layout) or ``model.safetensors``.
        keys: names to read (all when ``None``), returned in this order.
        device: where to put the arrays (``"cpu"``, ``"cuda:0"``, a ``jax.Device``); default
            the calling rank's device, else JAX's default device.
        map_location: torch's name for ``device`` (a string or ``jax.Device``).
        weights_only: accepted for torch compatibility; safetensors only ever holds weights.

    Returns:
        ``dict[str, spx.Tensor]`` in file order (or ``keys`` order), as ``torch.load`` returns
        tensors.

    Raises:
        FileNotFoundError: nothing at ``path``.
        ValueError: the file is truncated or corrupt (named in the message).
        KeyError: a requested key is absent (the message lists some that exist).

    Example:
        >>> import tempfile, os, jax.numpy as jnp
        >>> p = os.path.join(tempfile.mkdtemp(), "m.safetensors")
        >>> save({"a": jnp.zeros(2), "b": jnp.ones(3)}, p)
        >>> load(p, keys=["b"])
        {'b': tensor([1., 1., 1.])}
    """
    del weights_only  # nothing but arrays can come out of a safetensors file
    path = _check_path(path, "load")
    if isinstance(keys, str):
        raise TypeError(f"keys must be a list of names, got the string {keys!r}; use [{keys!r}]")
    with open_checkpoint(path, _pick_device(device, map_location)) as ckpt:
        wanted = list(ckpt) if keys is None else list(keys)
        for key in wanted:
            if not isinstance(key, str):
                raise TypeError(f"keys must be strings, got {type(key).__name__} {key!r}")
        ckpt.check_keys(wanted)
        return {key: ckpt[key] for key in wanted}
