"""Optimizer checkpoints: ``Optimizer.state_dict()`` in one safetensors file, no pickle.

Tensors and arrays (``exp_avg``, ``step``, a tensor ``lr`` ...) become tensors named by their
place in the state dict — ``state.3.exp_avg``, ``param_groups.0.lr`` — and everything else (the
``param_groups`` hyperparameters, non-array state) is JSON in the header's metadata under
``"spx.optimizer"``, with the arrays referenced by name. JSON has no tuples, no NaN and no
int keys, so those are tagged and restored: ``betas`` comes back a ``tuple``, state indices
``int``, ``eps=nan`` a float — ``load_optimizer(p)`` equals what ``save_optimizer`` was given,
arrays coming back as ``spx.Tensor`` (what ``Optimizer.state_dict()`` holds, as in torch).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

from spx import _validate
from spx._tensor.tensor import Tensor
from spx.serialization._arrays import check_metadata, resolve_device, to_device, to_host
from spx.serialization._atomic import AtomicWriter
from spx.serialization._file import SafetensorsFile, write_file

METADATA_KEY = "spx.optimizer"
_VERSION = 1
_TENSOR, _TUPLE, _FLOAT = "__tensor__", "__tuple__", "__float__"
_TAGS = (_TENSOR, _TUPLE, _FLOAT)


def _encode(value: Any, where: str, tensors: dict[str, np.ndarray]) -> Any:
    """JSON-able form of ``value``; arrays go to ``tensors`` under the name ``where``."""
    if isinstance(value, Tensor | jax.Array | np.ndarray | np.generic):
        if where in tensors:
            raise ValueError(
                f"two entries of the optimizer state dict both map to the tensor name {where!r}; "
                "rename one (names containing '.' can collide with nested entries)"
            )
        tensors[where] = to_host(where, value)
        return {_TENSOR: where}
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {_FLOAT: repr(value)}
    if isinstance(value, tuple):
        return {_TUPLE: [_encode(v, f"{where}.{i}", tensors) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(v, f"{where}.{i}", tensors) for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str) or k in _TAGS:
                raise TypeError(
                    f"cannot save optimizer entry {where!r}: its dict key {k!r} must be a str "
                    f"other than {', '.join(_TAGS)}"
                )
            out[k] = _encode(v, f"{where}.{k}", tensors)
        return out
    raise TypeError(
        f"cannot save optimizer entry {where!r}: {type(value).__name__} {value!r:.60} is not an "
        "array, number, str, bool, None, list, tuple or dict; convert it (hyperparameters "
        "must be plain values) or drop it from the param group"
    )


def _state_dict_of(obj: Any) -> Mapping[str, Any]:
    state_dict = obj if isinstance(obj, Mapping) else None
    if state_dict is None and callable(getattr(obj, "state_dict", None)):
        state_dict = obj.state_dict()
    if (
        not isinstance(state_dict, Mapping)
        or not isinstance(state_dict.get("state"), Mapping)
        or not isinstance(state_dict.get("param_groups"), list | tuple)
    ):
        raise TypeError(
            "save_optimizer takes an optimizer or its state_dict() — a dict with 'state' "
            f"(dict) and 'param_groups' (list) — got {type(obj).__name__}"
        )
    return state_dict


def save_optimizer(
    optimizer: Any,
    path: str | os.PathLike[str],
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Save an optimizer's state dict to one safetensors file, atomically.

    Args:
        optimizer: an ``spx.optim.Optimizer`` or its ``state_dict()`` (torch's layout:
            ``{'state': {index: {name: value}}, 'param_groups': [{..., 'params': [...]}]}``).
        path: the file to write; its directory must exist.
        metadata: optional extra ``dict[str, str]`` for the header.

    Raises:
        TypeError: an entry that is neither an array nor a plain value (named by its path,
            e.g. ``param_groups.0.schedule``).

    Example:
        >>> import tempfile, os, jax.numpy as jnp
        >>> sd = {"state": {0: {"momentum_buffer": jnp.zeros(2)}},
        ...       "param_groups": [{"lr": 0.1, "betas": (0.9, 0.99), "params": [0]}]}
        >>> p = os.path.join(tempfile.mkdtemp(), "optim.safetensors")
        >>> save_optimizer(sd, p)
        >>> load_optimizer(p)["param_groups"]
        [{'lr': 0.1, 'betas': (0.9, 0.99), 'params': [0]}]
    """
    state_dict = _state_dict_of(optimizer)
    text = check_metadata(metadata)
    if METADATA_KEY in text:
        raise ValueError(f"metadata key {METADATA_KEY!r} is reserved for the optimizer state")
    tensors: dict[str, np.ndarray] = {}
    state = {}
    for index, entry in state_dict["state"].items():
        index = _validate.as_int(
            index, "a state key", "save_optimizer",
            hint="optimizer state keys are int parameter indices, as state_dict() makes them",
        )  # fmt: skip
        state[str(index)] = _encode(entry, f"state.{index}", tensors)
    groups = [
        _encode(group, f"param_groups.{i}", tensors)
        for i, group in enumerate(state_dict["param_groups"])
    ]
    document = {"version": _VERSION, "state": state, "param_groups": groups}
    text[METADATA_KEY] = json.dumps(document, allow_nan=False, separators=(",", ":"))
    with AtomicWriter() as writer:
        write_file(tensors, writer.stage(path), text)


def _decode(value: Any, f: SafetensorsFile, device: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v, f, device) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((tag, inner),) = value.items()
        if tag == _TENSOR:
            if inner not in f:
                raise ValueError(
                    f"{str(f.path)!r}: the optimizer state refers to tensor {inner!r}, which the "
                    "file does not contain; the file is corrupt, re-save it"
                )
            return to_device(f.read(inner), device)
        if tag == _TUPLE:
            return tuple(_decode(v, f, device) for v in inner)
        if tag == _FLOAT:
            return float(inner)
    return {k: _decode(v, f, device) for k, v in value.items()}


def load_optimizer(path: str | os.PathLike[str], device: Any = None) -> dict[str, Any]:
    """Read an optimizer state dict written by :func:`save_optimizer`.

    Pass the result to ``optimizer.load_state_dict``.

    Args:
        path: the file.
        device: where the state arrays go (default: the calling rank's device, else JAX's
            default device).

    Returns:
        ``{'state': {int: {name: value}}, 'param_groups': [...]}``, arrays as ``spx.Tensor``.

    Raises:
        FileNotFoundError: nothing at ``path``.
        ValueError: a truncated/corrupt file, or a safetensors file with no optimizer state.

    Example:
        >>> import tempfile, os, jax.numpy as jnp
        >>> p = os.path.join(tempfile.mkdtemp(), "optim.safetensors")
        >>> save_optimizer({"state": {0: {"step": jnp.asarray(3.0)}}, "param_groups": []}, p)
        >>> load_optimizer(p)["state"][0]["step"]
        tensor(3.)
    """
    target = resolve_device(device)
    with SafetensorsFile(path) as f:
        text = f.metadata().get(METADATA_KEY)
        if text is None:
            raise ValueError(
                f"{str(f.path)!r} holds no optimizer state (no {METADATA_KEY!r} metadata); it "
                "was not written by save_optimizer. Read plain tensors with "
                "spx.serialization.load"
            )
        try:
            document = json.loads(text)
            version = document["version"]
            raw_state, raw_groups = document["state"], document["param_groups"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise ValueError(
                f"{str(f.path)!r}: the optimizer state in the header is corrupt ({e!r}); re-save it"
            ) from None
        if version > _VERSION:
            raise ValueError(
                f"{str(f.path)!r} was written by a newer spx (optimizer format {version}, this "
                f"version reads up to {_VERSION}); upgrade spx"
            )
        state = {int(k): _decode(v, f, target) for k, v in raw_state.items()}
        groups = [_decode(g, f, target) for g in raw_groups]
    return {"state": state, "param_groups": groups}
