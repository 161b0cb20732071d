"""Sharded checkpoints in Hugging Face's layout: ``model-0000K-of-0000N.safetensors`` files plus
``model.safetensors.index.json`` (``{"metadata": {"total_size": ...}, "weight_map": {name:
shard}}``), so ``transformers`` and spx read each other's directories.

A sharded save is all-or-nothing: every save has a random *save id*; its shards are named with
it (``model-00001-of-00003-1f2e3d4c.safetensors``) and carry it in their header metadata, and the
index, which names the id in its ``"metadata"``, is replaced last, atomically. A save that dies
at any point leaves the previous index pointing at the previous shards, untouched; the new
index only appears once all of its shards are on disk; shards that no index uses any more are
deleted after the new index is in place. A reader that finds a shard of another save than its
index says so, naming the shard. (``transformers`` reads shards by the index's ``weight_map``,
so the names work there too.)
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spx import _validate
from spx.serialization._arrays import check_key, check_metadata, to_host
from spx.serialization._atomic import AtomicWriter
from spx.serialization._file import write_file

INDEX_SUFFIX = ".safetensors.index.json"
# The metadata entry, in the index and in every shard header, naming the save they belong to.
SAVE_ID_KEY = "spx_save_id"
_UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}


def parse_size(size: int | str) -> int:
    """Bytes in ``size``: an int, or a string as Hugging Face writes it (``"5GB"``, ``"500MiB"``).

    ``KB/MB/GB`` are powers of 1000 and ``KiB/MiB/GiB`` powers of 1024, as in ``transformers``.

    Args:
        size: a positive int of bytes or a ``"<number><unit>"`` string.

    Returns:
        The size in bytes.

    Raises:
        ValueError: not a positive size, or an unknown unit.

    Example:
        >>> parse_size("2MB"), parse_size("1KiB"), parse_size(300)
        (2000000, 1024, 300)
    """
    if _validate.is_int(size):
        value = int(size)
    elif isinstance(size, str):
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", size)
        unit = match.group(2).upper() if match else ""
        if match is None or (unit and unit not in _UNITS):
            raise ValueError(
                f"max_shard_size={size!r} is not a size; use bytes as an int or a string like "
                f"'5GB', '500MB', '2GiB' (units: {', '.join(_UNITS)})"
            )
        value = int(float(match.group(1)) * _UNITS[unit or "B"])
    else:
        raise TypeError(f"max_shard_size must be an int or a str like '5GB', got {size!r}")
    if value <= 0:
        raise ValueError(f"max_shard_size must be positive, got {size!r}")
    return value


def shard_name(prefix: str, index: int, total: int, save_id: str | None = None) -> str:
    """``model-00001-of-00003-<save id>.safetensors`` (1-based ``index``).

    Hugging Face's pattern with the save id appended, so a new save never overwrites a shard
    the current index still uses.

    Example:
        >>> shard_name("model", 1, 3, "1f2e3d4c")
        'model-00001-of-00003-1f2e3d4c.safetensors'
    """
    tag = f"-{save_id}" if save_id else ""
    return f"{prefix}-{index:05d}-of-{total:05d}{tag}.safetensors"


def _split(sizes: list[tuple[str, int]], limit: int) -> list[list[str]]:
    # Fill shards in state-dict order; a tensor larger than the limit gets a shard of its own
    # rather than failing (as in Hugging Face). Unlike Hugging Face, the shard being filled is
    # closed first, so shards stay in state-dict order: consecutive layers — a pipeline
    # stage — live in consecutive shards and a stage opens few of them.
    shards: list[list[str]] = []
    current: list[str] = []
    used = 0
    for key, nbytes in sizes:
        if current and (nbytes > limit or used + nbytes > limit):
            shards.append(current)
            current, used = [], 0
        current.append(key)
        used += nbytes
    if current:
        shards.append(current)
    return shards or [[]]


def save_sharded(
    state_dict: Mapping[str, Any],
    directory: str | os.PathLike[str],
    max_shard_size: int | str = "5GB",
    metadata: Mapping[str, str] | None = None,
    prefix: str = "model",
) -> Path:
    """Save a flat state dict as Hugging Face-style shards plus an index.

    Writes ``{prefix}-0000K-of-0000N.safetensors`` and ``{prefix}.safetensors.index.json``
    into ``directory`` (created if needed), the shard names ending in this save's id. Every shard
    is written to a temp file and fsynced before any is moved into place, and the index is
    written last, atomically: readers see the previous checkpoint or this one, never a mix.
    Shards of earlier saves with the same prefix are deleted once the new index is in place.

    Args:
        state_dict: flat ``dict[str, array]`` (``spx.Tensor``, ``jax.Array``, numpy).
        directory: the checkpoint directory.
        max_shard_size: shard size limit, bytes or a string such as ``"5GB"``/``"500MiB"``; a
            single tensor larger than the limit gets its own shard.
        metadata: optional ``dict[str, str]`` stored in every shard header and in the index's
            ``"metadata"``.
        prefix: file name prefix (``"model"`` as in ``transformers``).

    Returns:
        The path of the index file.

    Raises:
        TypeError: a non-str key or non-array value (named in the message).
        ValueError: a bad ``max_shard_size`` or ``prefix``.

    Example:
        >>> import tempfile, jax.numpy as jnp
        >>> from spx.serialization import load
        >>> d = tempfile.mkdtemp()
        >>> sd = {"a": jnp.zeros(100), "b": jnp.ones(100)}
        >>> save_sharded(sd, d, max_shard_size=400).name
        'model.safetensors.index.json'
        >>> sorted(load(d)) == ["a", "b"]
        True
    """
    limit = parse_size(max_shard_size)
    if not isinstance(prefix, str) or not prefix or "/" in prefix or os.sep in prefix:
        raise ValueError(f"prefix must be a plain file name stem such as 'model', got {prefix!r}")
    text = check_metadata(metadata)
    if SAVE_ID_KEY in text:
        raise ValueError(
            f"metadata key {SAVE_ID_KEY!r} is reserved: save_sharded writes it to tie the shards "
            "to their index; rename that entry"
        )
    if not isinstance(state_dict, Mapping):
        raise TypeError(
            f"save_sharded expects a flat dict[str, array], got {type(state_dict).__name__}"
        )
    hosts = {check_key(k): to_host(k, v) for k, v in state_dict.items()}
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise NotADirectoryError(
            f"save_sharded needs a directory, but {str(root)!r} is a file; pick a directory "
            "name (use spx.serialization.save for a single file)"
        )
    root.mkdir(parents=True, exist_ok=True)

    groups = _split([(k, int(v.nbytes)) for k, v in hosts.items()], limit)
    save_id = secrets.token_hex(4)
    names = [shard_name(prefix, i + 1, len(groups), save_id) for i in range(len(groups))]
    shard_text = {"format": "pt", **text, SAVE_ID_KEY: save_id}
    with AtomicWriter() as writer:
        for name, keys in zip(names, groups, strict=True):
            tmp = writer.stage(root / name)
            write_file({k: hosts[k] for k in keys}, tmp, shard_text)

    index = {
        "metadata": {
            **text,
            SAVE_ID_KEY: save_id,
            "total_size": int(sum(int(v.nbytes) for v in hosts.values())),
        },
        "weight_map": {k: name for name, keys in zip(names, groups, strict=True) for k in keys},
    }
    index_path = root / f"{prefix}{INDEX_SUFFIX}"
    with AtomicWriter() as writer:
        writer.stage(index_path).write_text(json.dumps(index, indent=2, sort_keys=False) + "\n")

    # Shards of earlier saves (with or without a save id), now that no index uses them.
    stale = re.compile(rf"{re.escape(prefix)}-\d{{5}}-of-\d{{5}}(-[0-9a-f]{{8}})?\.safetensors")
    for old in root.iterdir():
        if stale.fullmatch(old.name) and old.name not in names:
            old.unlink(missing_ok=True)
    return index_path


def read_index(path: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """Parse and validate a ``*.safetensors.index.json``.

    Args:
        path: the index file.

    Returns:
        ``(weight_map, metadata)``: tensor name → shard file name, and the index metadata.

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: the index is not valid JSON or lacks a well-formed ``weight_map``.
    """
    if not path.is_file():
        raise FileNotFoundError(f"no such checkpoint index: {str(path)!r}")
    try:
        index = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(
            f"{str(path)!r} is not a valid checkpoint index: the file is truncated or corrupt "
            f"({e}); restore it or re-save the checkpoint"
        ) from None
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict):
        raise ValueError(
            f"{str(path)!r} is not a safetensors index: expected a JSON object with a "
            "'weight_map' of tensor name -> shard file, as written by save_sharded or "
            "transformers' save_pretrained"
        )
    for key, shard in weight_map.items():
        if not isinstance(shard, str) or Path(shard).name != shard or shard in ("", ".", ".."):
            raise ValueError(
                f"{str(path)!r}: weight_map[{key!r}] = {shard!r} is not a shard file name in the "
                "index's directory"
            )
    metadata = index.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ValueError(f"{str(path)!r}: 'metadata' must be a JSON object, got {metadata!r}")
    return dict(weight_map), dict(metadata)
