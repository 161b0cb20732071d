"""``save`` / ``load``: torch's checkpoint functions, on safetensors instead of pickle.

``spx.save(obj, f)`` takes what ``torch.save`` takes; ``spx.load(f)`` gives it back.

File formats (``load`` tells them apart by their first bytes, not by the file name):

* **A flat state dict** — a ``dict``/``OrderedDict`` of ``str`` to arrays, such as
  ``model.state_dict()`` — is written as a plain safetensors file, readable by any safetensors
  reader (``safetensors.torch.load_file`` included): an 8-byte little-endian header length,
  a JSON header, then the raw tensor bytes. Its header metadata holds ``"format": "pt"`` and
  ``"spx.order"`` (the dict's key order and type: ``load`` gives them back as torch's does,
  where the safetensors header is sorted).
* **Anything else** (``{'epoch': 3, 'model': ..., 'optimizer': opt.state_dict()}``, a bare
  tensor, a list ...) is one safetensors file too: its tensors are ``t0``, ``t1``, ... and the
  header metadata ``"spx.object"`` holds JSON describing the structure and pointing at them
  (see :mod:`spx.serialization._objects` for the node types). Python objects that are not
  tensors, numbers, strings, bytes, ``None`` or containers of those are pickled into ``uint8``
  tensors (``p0`` ...); ``load`` unpickles them only with ``weights_only=False``.
* **A torch.save file** (a zip archive with ``data.pkl`` and ``data/<n>``) is read without
  torch and without running code from it: tensors, parameters, numbers, strings and
  containers come back as spx objects (see :mod:`spx.serialization._torch_zip`).

Saving to a path is atomic (temp file, fsync, rename); file objects (``io.BytesIO``, an open
file) are written and read as they are.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np
import safetensors.numpy

from spx._tensor.tensor import Tensor
from spx.serialization._arrays import check_key, check_metadata, resolve_device, to_host
from spx.serialization._atomic import AtomicWriter
from spx.serialization._file import parse_bytes, write_file
from spx.serialization._objects import OBJECT_KEY, VERSION, Decoder, Encoder
from spx.serialization._torch_zip import is_torch_zip, read_torch_zip
from spx.serialization.checkpoint import open_checkpoint

_ARRAYS = (Tensor, jax.Array, np.ndarray, np.generic)
# Header metadata of a flat state dict: its key order and container type (JSON).
ORDER_KEY = "spx.order"

_LEGACY = (
    "{source} is a torch.save file in the legacy (pre-1.6, _use_new_zipfile_serialization=False) "
    "pickle format, which spx cannot read without running code from it. Re-save it where torch "
    "is installed: torch.save(torch.load(p), p) writes the zip format spx.load reads, or "
    "safetensors.torch.save_file(torch.load(p), 'model.safetensors') for a state dict."
)


def _is_file_object(f: Any, method: str) -> bool:
    return not isinstance(f, str | os.PathLike) and callable(getattr(f, method, None))


def _check_path(path: Any, what: str) -> str | os.PathLike[str]:
    if isinstance(path, str | os.PathLike):
        return path
    raise TypeError(
        f"{what} takes a file path (str or os.PathLike) or a binary file object with "
        f"{'write' if what == 'save' else 'read'}() such as io.BytesIO, got "
        f"{type(path).__name__}"
    )


def _is_state_dict(obj: Any) -> bool:
    """A flat ``dict[str, array]``: written as a plain safetensors file, as before."""
    return (
        type(obj) in (dict, OrderedDict)
        and all(isinstance(k, str) for k in obj)
        and all(isinstance(v, _ARRAYS) for v in obj.values())
    )


def save(
    obj: Any,
    f: str | os.PathLike[str] | Any,
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Save ``obj`` to a file (mirrors ``torch.save``), without pickling what need not be.

    A flat ``dict[str, array]`` such as ``model.state_dict()`` becomes a plain ``.safetensors``
    file (bf16/float8 dtypes kept exactly); anything else — a checkpoint dict with the epoch,
    model, optimizer state and loss, a bare tensor, nested lists/tuples/dicts — becomes a
    safetensors file with a JSON description of the structure (see the module docstring).
    Tensors keep their dtype, shape and ``requires_grad``; Parameters come back as Parameters.
    Other Python objects are pickled and need ``load(..., weights_only=False)``. Entries that
    share memory (tied weights) are stored as separate copies unless they are the same object.

    Saving to a path writes a temp file beside it, fsyncs and renames it over ``f``: on any
    failure the previous file is untouched.

    Args:
        obj: what to save.
        f: a file path (str or ``pathlib.Path``; its directory must exist) or a binary file
            object with ``write`` (``io.BytesIO``, ``open(p, "wb")``).
        metadata: optional ``dict[str, str]`` stored in the safetensors header.

    Raises:
        TypeError: a value that cannot be saved (named by where it sits, e.g.
            ``['model']['fc.weight']``), a non-str key in a flat state dict written by
            :func:`save_sharded`, or a bad ``f``.
        FileNotFoundError: the parent directory does not exist.

    Example:
        >>> import io, spx
        >>> model = spx.nn.Linear(2, 1)
        >>> opt = spx.optim.SGD(model.parameters(), lr=0.1)
        >>> buffer = io.BytesIO()
        >>> spx.save({"epoch": 3, "model": model.state_dict(), "optimizer": opt.state_dict()},
        ...          buffer)
        >>> _ = buffer.seek(0)
        >>> ckpt = spx.load(buffer)
        >>> ckpt["epoch"], sorted(ckpt["model"])
        (3, ['bias', 'weight'])
    """
    to_file = _is_file_object(f, "write")
    if not to_file:
        f = _check_path(f, "save")
    text = {"format": "pt", **check_metadata(metadata)}
    if _is_state_dict(obj):
        arrays = {check_key(k): to_host(k, v) for k, v in obj.items()}
        # safetensors orders its header by dtype and name: the order of the dict (a
        # state_dict's is the module's) and its type are kept beside it.
        kind = "odict" if type(obj) is OrderedDict else "dict"
        text[ORDER_KEY] = json.dumps({"type": kind, "keys": list(arrays)}, separators=(",", ":"))
    else:
        if OBJECT_KEY in text:
            raise ValueError(f"metadata key {OBJECT_KEY!r} is reserved for the saved structure")
        encoder = Encoder()
        root = encoder.encode(obj)
        arrays = encoder.arrays
        document = {"version": VERSION, "root": root}
        text[OBJECT_KEY] = json.dumps(document, allow_nan=False, separators=(",", ":"))
    if to_file:
        f.write(safetensors.numpy.save(arrays, metadata=text))
        return
    with AtomicWriter() as writer:
        write_file(arrays, writer.stage(f), text)


def _pick_device(device: Any, map_location: Any) -> Any:
    if map_location is None:
        return device
    if device is not None:
        raise ValueError(
            f"load got both device={device!r} and map_location={map_location!r}; they mean the "
            "same thing, pass one"
        )
    if isinstance(map_location, Mapping):
        # torch's {'cuda:1': 'cuda:0'}: a remap of saved locations; spx files do not record
        # them, so a single target is used and several fall back to the default device.
        targets = {str(v) for v in map_location.values()}
        return targets.pop() if len(targets) == 1 else None
    if callable(map_location):
        # torch's lambda storage, loc: storage — keeps tensors where the caller says; spx has
        # no storages to hand it, so tensors go to the default device.
        return None
    if isinstance(map_location, jax.Device):
        return map_location
    if isinstance(map_location, str) or type(map_location).__name__ == "device":
        return str(map_location)  # a torch.device prints as its spec
    raise TypeError(
        f"map_location must be a device string such as 'cpu', a jax.Device, a dict or a "
        f"callable, got {type(map_location).__name__}"
    )


def _looks_like_device(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    kind, _, index = value.partition(":")
    return kind in ("cpu", "cuda", "gpu") and (not index or index.isdigit())


def _is_legacy_pickle(head: bytes) -> bool:
    # A pickle stream starts with PROTO (0x80) and its protocol number. A safetensors file can
    # start with 0x80 too (its 8-byte header length), but its 9th byte opens the JSON header.
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5 and head[8:9] != b"{"


def _magic(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(9)
    except (IsADirectoryError, PermissionError, FileNotFoundError):
        return b""


def load(
    f: str | os.PathLike[str] | Any,
    keys: Iterable[str] | None = None,
    device: Any = None,
    *,
    map_location: Any = None,
    weights_only: bool | None = None,
    mmap: bool | None = None,
) -> Any:
    """Load what :func:`save` or ``torch.save`` wrote (mirrors ``torch.load``).

    A flat safetensors file (a state dict, from spx or ``safetensors.torch.save_file``) or a
    sharded checkpoint directory gives ``dict[str, spx.Tensor]``, reading only the tensors
    asked for. A file written by ``save(obj, ...)`` for any other ``obj`` gives ``obj`` back
    with the same container types, tensors as ``spx.Tensor`` (Parameters as Parameters,
    ``requires_grad`` kept, numpy arrays as numpy arrays). A ``torch.save`` zip file gives its
    object with spx tensors, read without torch and without running code from it. The format
    is recognized by the file's first bytes. 64-bit tensors follow JAX's rules (32-bit unless
    ``jax_enable_x64``).

    Args:
        f: a ``.safetensors``/``.pt`` file, a ``*.safetensors.index.json``, a directory with
            ``model.safetensors.index.json`` or ``model.safetensors``, or a binary file object
            with ``read`` (``io.BytesIO``).
        keys: for a flat state dict only: names to read (all when ``None``), returned in this
            order. (A device string here is taken as ``map_location``, as in
            ``torch.load(f, "cpu")``.)
        device: where to put the tensors (``"cpu"``, ``"cuda:0"``, a ``jax.Device``); default
            the calling rank's device, else JAX's default device.
        map_location: torch's name for ``device``: a string, ``torch.device`` or
            ``jax.Device``; a dict with one target device uses it, a callable or a dict with
            several targets uses the default device.
        weights_only: ``True`` (the default, as in torch 2.6+) refuses pickled Python objects
            saved by :func:`save`; ``False`` unpickles them — only for files you trust, since
            unpickling can run any code. torch.save files are always read weights-only.
        mmap: accepted for torch compatibility and ignored.

    Returns:
        The saved object.

    Raises:
        FileNotFoundError: nothing at ``f``.
        ValueError: the file is truncated or corrupt (named in the message), or a legacy
            (non-zip) torch pickle.
        KeyError: a requested key is absent (the message lists some that exist).
        pickle.UnpicklingError: ``weights_only`` and the file holds a pickled object (named
            with where it sits), or a torch file refers to a class spx does not read.

    Example:
        >>> import tempfile, os, jax.numpy as jnp
        >>> p = os.path.join(tempfile.mkdtemp(), "m.safetensors")
        >>> save({"a": jnp.zeros(2), "b": jnp.ones(3)}, p)
        >>> load(p, keys=["b"])
        {'b': tensor([1., 1., 1.])}
    """
    del mmap
    if map_location is None and _looks_like_device(keys):
        keys, map_location = None, keys
    if isinstance(keys, str):
        raise TypeError(f"keys must be a list of names, got the string {keys!r}; use [{keys!r}]")
    if weights_only is None:
        weights_only = True
    target = _pick_device(device, map_location)
    if _is_file_object(f, "read"):
        return _load_bytes(f.read(), keys, target, bool(weights_only), _source(f))
    path = Path(_check_path(f, "load"))
    source = repr(str(path))
    head = _magic(path)
    if head[:4] == b"PK\x03\x04":
        with zipfile.ZipFile(path) as archive:
            return _load_zip(archive, keys, target, source)
    if _is_legacy_pickle(head):
        raise ValueError(_LEGACY.format(source=source))
    with open_checkpoint(path, target) as ckpt:
        text = ckpt.metadata.get(OBJECT_KEY) if not ckpt.sharded else None
        if text is not None:
            _no_keys(keys, source)
            decoder = Decoder(ckpt.numpy, resolve_device(target), bool(weights_only), source)
            return decoder.decode(_document(text, source))
        wanted = list(ckpt) if keys is None else list(keys)
        for key in wanted:
            if not isinstance(key, str):
                raise TypeError(f"keys must be strings, got {type(key).__name__} {key!r}")
        ckpt.check_keys(wanted)
        order = None if ckpt.sharded or keys is not None else ckpt.metadata.get(ORDER_KEY)
        return _in_saved_order({key: ckpt[key] for key in wanted}, order, source)


def _source(f: Any) -> str:
    name = getattr(f, "name", None)
    return repr(name) if isinstance(name, str) else f"the {type(f).__name__} given to load"


def _no_keys(keys: Any, source: str) -> None:
    if keys is not None:
        raise TypeError(
            f"keys selects tensors of a flat state dict, but {source} holds a saved object; "
            "load it whole and index it, e.g. spx.load(f)['model']"
        )


def _header_json(text: str, fields: tuple[str, ...], what: str, source: str) -> list[Any]:
    """``fields`` of the JSON object ``text`` from a file's header, else a ValueError naming
    ``what`` is corrupt in ``source``."""
    try:
        document = json.loads(text)
        return [document[field] for field in fields]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise ValueError(f"{source}: {what} in the header is corrupt ({e!r}); re-save it") from None


def _document(text: str, source: str) -> Any:
    version, root = _header_json(text, ("version", "root"), "the saved structure", source)
    if version > VERSION:
        raise ValueError(
            f"{source} was written by a newer spx (object format {version}, this version reads "
            f"up to {VERSION}); upgrade spx"
        )
    return root


def _load_zip(archive: zipfile.ZipFile, keys: Any, device: Any, source: str) -> Any:
    if not is_torch_zip(archive):
        raise ValueError(f"{source} is a zip archive but not a torch.save file (no data.pkl in it)")
    _no_keys(keys, source)
    return read_torch_zip(archive, resolve_device(device), source)


def _load_bytes(data: bytes, keys: Any, device: Any, weights_only: bool, source: str) -> Any:
    if not isinstance(data, bytes | bytearray):
        raise TypeError(f"load: {source} must be opened in binary mode ('rb'), got text")
    if data[:4] == b"PK\x03\x04":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return _load_zip(archive, keys, device, source)
    if _is_legacy_pickle(data[:9]):
        raise ValueError(_LEGACY.format(source=source))
    metadata, arrays = parse_bytes(bytes(data), source)
    target = resolve_device(device)
    text = metadata.get(OBJECT_KEY)
    if text is not None:
        _no_keys(keys, source)

        def read(name: str) -> np.ndarray:
            if name not in arrays:
                raise ValueError(f"{source}: the structure refers to missing tensor {name!r}")
            return arrays[name]

        return Decoder(read, target, weights_only, source).decode(_document(text, source))
    wanted = list(arrays) if keys is None else list(keys)
    missing = [k for k in wanted if k not in arrays]
    if missing:
        raise KeyError(f"no tensor {missing[0]!r} in {source}; it has {sorted(arrays)[:8]}")
    from spx.serialization._arrays import to_device

    loaded = {k: to_device(arrays[k], target) for k in wanted}
    return _in_saved_order(loaded, None if keys is not None else metadata.get(ORDER_KEY), source)


def _in_saved_order(loaded: dict[str, Any], order: str | None, source: str) -> dict[str, Any]:
    """A flat state dict in the order, and of the type, it was saved with (``order``: the
    header's :data:`ORDER_KEY` entry, None for files other writers made)."""
    if order is None:
        return loaded
    keys, kind = _header_json(order, ("keys", "type"), "the saved key order", source)
    if sorted(keys) != sorted(loaded):
        return loaded  # tensors added or removed by another tool: the file's own order
    return (OrderedDict if kind == "odict" else dict)((k, loaded[k]) for k in keys)
