"""``open_checkpoint``: a read-only, lazily read view of a single-file or sharded checkpoint.

Opening reads headers only — one file's header, or just the JSON index of a sharded
checkpoint. Each ``ckpt[key]`` reads one tensor, opening its shard the first time one of its
tensors is asked for, so a pipeline rank that reads only its stage's names opens only the
shards that hold them.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from spx._tensor.tensor import Tensor
from spx.serialization._arrays import resolve_device, to_device
from spx.serialization._file import SafetensorsFile, few, pickle_kind
from spx.serialization._leftovers import remove_dead_temps
from spx.serialization.sharded import INDEX_SUFFIX, SAVE_ID_KEY, read_index


def _resolve(path: Path) -> tuple[str, Path]:
    """``("index", file)`` or ``("file", file)`` for a checkpoint given as a file or a directory."""
    if path.is_file():
        return ("index" if path.name.endswith(".json") else "file"), path
    if not path.exists():
        raise FileNotFoundError(f"no such checkpoint file or directory: {str(path)!r}")
    if not path.is_dir():
        raise ValueError(f"{str(path)!r} is neither a regular file nor a directory")
    preferred = path / f"model{INDEX_SUFFIX}"
    if preferred.is_file():
        return "index", preferred
    indexes = sorted(p for p in path.iterdir() if p.name.endswith(INDEX_SUFFIX))
    if len(indexes) == 1:
        return "index", indexes[0]
    single = path / "model.safetensors"
    if not indexes and single.is_file():
        return "file", single
    files = sorted(p for p in path.iterdir() if p.name.endswith(".safetensors"))
    if not indexes and len(files) == 1:
        return "file", files[0]
    found = [p.name for p in (indexes or files)]
    if found:
        raise ValueError(
            f"{str(path)!r} holds several checkpoints ({few(found)}); pass the one to load, "
            f"e.g. {str(path / found[0])!r}"
        )
    pickles = sorted(p.name for p in path.iterdir() if p.is_file() and pickle_kind(p))
    hint = (
        f"; it holds PyTorch pickles ({few(pickles)}): load one by its file name, e.g. "
        f"spx.load({str(path / pickles[0])!r}) (torch.save zip files are read without "
        "unpickling code), or convert it with "
        "safetensors.torch.save_file(torch.load(p), 'model.safetensors')"
        if pickles
        else ""
    )
    raise FileNotFoundError(
        f"no checkpoint in directory {str(path)!r}: expected model{INDEX_SUFFIX} (sharded) or "
        f"model.safetensors{hint}"
    )


class Checkpoint(Mapping[str, Tensor]):
    """A read-only mapping of tensor names to arrays, read from disk on access.

    Build it with :func:`open_checkpoint`. ``keys()``, ``len`` and ``in`` use headers only;
    ``ckpt[key]`` reads that one tensor and returns it as an ``spx.Tensor``; :meth:`numpy` returns
    the host copy. Close it (or use ``with``) to release the files.

    Attributes:
        path: the file or index the checkpoint was opened from.
        metadata: the file's text metadata, or for a sharded checkpoint the index's
            ``"metadata"`` object (``total_size`` and whatever the writer added).
        sharded: whether the checkpoint is an index plus shard files.
    """

    def __init__(self, path: str | os.PathLike[str], device: Any = None) -> None:
        kind, found = _resolve(Path(path))
        remove_dead_temps(found.parent)  # full-size leftovers of saves that were killed
        self.path = found
        self.sharded = kind == "index"
        self._device = resolve_device(device)
        self._open: dict[str, SafetensorsFile] = {}
        self._closed = False
        if self.sharded:
            self._weight_map, self.metadata = read_index(found)
        else:
            single = SafetensorsFile(found)
            self._open[found.name] = single
            self._weight_map = dict.fromkeys(single.keys(), found.name)
            self.metadata = single.metadata()

    # -- mapping -----------------------------------------------------------------------------
    def __getitem__(self, key: str) -> Tensor:
        return to_device(self.numpy(key), self._device)

    def __iter__(self) -> Iterator[str]:
        return iter(self._weight_map)

    def __len__(self) -> int:
        return len(self._weight_map)

    def __contains__(self, key: object) -> bool:
        # Mapping's default would read the tensor to answer.
        return key in self._weight_map

    # -- per-tensor access -------------------------------------------------------------------
    def numpy(self, key: str) -> np.ndarray:
        """Read one tensor into host memory, in its stored dtype.

        Args:
            key: the tensor name.

        Returns:
            A numpy array (bf16/float8 as ``ml_dtypes`` types).

        Raises:
            KeyError: ``key`` is not in the checkpoint (the message lists some that are).
            ValueError: its file is corrupt, or the index names a shard that lacks it.
        """
        return self._file_of(key).read(key)

    def shape(self, key: str) -> tuple[int, ...]:
        """The shape of ``key`` from its file header (reads no tensor data)."""
        return self._file_of(key).shape(key)

    def files(self) -> list[Path]:
        """Every file the checkpoint consists of (the index first when sharded)."""
        root = self.path.parent
        shards = [root / name for name in dict.fromkeys(self._weight_map.values())]
        return [self.path, *shards] if self.sharded else shards

    def check_keys(self, keys: list[str]) -> None:
        """Raise ``KeyError`` naming the first of ``keys`` that is absent, with hints."""
        for key in keys:
            if key not in self._weight_map:
                close = difflib.get_close_matches(str(key), list(self._weight_map), n=3)
                hint = f"; did you mean {few(close)}?" if close else ""
                raise KeyError(
                    f"no tensor {key!r} in checkpoint {str(self.path)!r}{hint} It has "
                    f"{few(self._weight_map)}"
                )

    def _file_of(self, key: str) -> SafetensorsFile:
        if self._closed:
            raise ValueError(
                f"checkpoint {str(self.path)!r} was closed; read tensors inside the "
                "`with open_checkpoint(...)` block or open it again"
            )
        self.check_keys([key])
        name = self._weight_map[key]
        handle = self._open.get(name)
        if handle is None:
            shard = self.path.parent / name
            if not shard.is_file():
                raise FileNotFoundError(
                    f"shard {str(shard)!r} (holding {key!r}) listed by index {str(self.path)!r} "
                    "does not exist; the checkpoint is incomplete"
                )
            handle = SafetensorsFile(shard)
            self._check_save_id(handle)
            self._open[name] = handle
        if key not in handle:
            raise ValueError(
                f"index {str(self.path)!r} says {key!r} is in {name!r}, but that shard does not "
                "contain it; the index and shards are out of sync (a partly overwritten "
                "checkpoint?) — re-save it"
            )
        return handle

    def _check_save_id(self, handle: SafetensorsFile) -> None:
        """A shard must belong to the save its index names (when the index names one)."""
        expected = self.metadata.get(SAVE_ID_KEY)
        if expected is None:
            return  # an index written by another tool (transformers): no ids to compare
        found = handle.metadata().get(SAVE_ID_KEY)
        if found != expected:
            handle.close()
            raise ValueError(
                f"shard {str(handle.path)!r} belongs to save {found or '(none)'}, but index "
                f"{str(self.path)!r} is save {expected}: the checkpoint mixes files of different "
                "saves (a shard copied or restored from another checkpoint?). Restore the "
                "shard of the same save, or re-save the checkpoint with save_sharded."
            )

    # -- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        """Release every open file; reading tensors afterwards raises ``ValueError``."""
        self._closed = True
        for handle in self._open.values():
            handle.close()
        self._open.clear()

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        kind = "sharded, " if self.sharded else ""
        return f"Checkpoint({str(self.path)!r}, {kind}{len(self)} tensors)"


def open_checkpoint(path: str | os.PathLike[str], device: Any = None) -> Checkpoint:
    """Open a checkpoint for lazy, read-only access by tensor name.

    Args:
        path: a ``.safetensors`` file, a ``*.safetensors.index.json``, or a directory holding
            ``model.safetensors.index.json`` (sharded) or ``model.safetensors``.
        device: where ``ckpt[key]`` puts arrays: a ``jax.Device`` or torch-style spec
            (``"cpu"``, ``"cuda:1"``); default: the calling rank's device, else JAX's default.

    Returns:
        A :class:`Checkpoint` mapping; use it with ``with`` to close the files after.

    Raises:
        FileNotFoundError: nothing at ``path`` (or a directory with no checkpoint).
        ValueError: a truncated or corrupt file or index.

    Example:
        >>> import tempfile, os, jax.numpy as jnp
        >>> from spx.serialization import save
        >>> p = os.path.join(tempfile.mkdtemp(), "m.safetensors")
        >>> save({"w": jnp.ones((2, 3)), "b": jnp.zeros(3)}, p)
        >>> with open_checkpoint(p) as ckpt:
        ...     sorted(ckpt), ckpt.shape("w"), ckpt["b"].tolist()
        (['b', 'w'], (2, 3), [0.0, 0.0, 0.0])
    """
    return Checkpoint(path, device)
