"""One ``.safetensors`` file: :func:`write_file`, and :class:`SafetensorsFile` for lazy
per-tensor reads with clear errors.

Wraps ``safetensors.safe_open(path, framework="numpy")``, which reads only the header on open
and one tensor per ``get_tensor``. It adds what spx needs on top: errors that name the file and
say what is wrong with it, and float8 reads (the numpy framework of safetensors 0.8 looks
float8 dtypes up on ``numpy`` itself, where they do not exist; ``ml_dtypes`` has them).
"""

from __future__ import annotations

import json
import os
import struct
import zipfile
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import safetensors
import safetensors.numpy

# Header dtype codes the numpy framework cannot build, read as raw bytes instead.
_RAW_DTYPES = {
    "F8_E4M3": ml_dtypes.float8_e4m3fn,
    "F8_E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "F8_E5M2": ml_dtypes.float8_e5m2,
    "F8_E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
    "F8_E8M0": ml_dtypes.float8_e8m0fnu,
}

_CORRUPT = (
    "{path!r} is not a readable safetensors file: the file is truncated or corrupt ({detail}). "
    "If it was being written, wait for the writer to finish; otherwise restore it from a "
    "backup or re-save it."
)


_PICKLE = (
    "{path!r} is a PyTorch pickle ({kind}), not a safetensors file. spx.load({path!r}) reads "
    "torch.save zip files (tensors and plain containers, without running code from them); "
    "this reader needs safetensors, and spx never unpickles files: loading a pickle can run "
    "any code its author put in it. Convert it once, where torch is installed:\n"
    "    import torch, safetensors.torch\n"
    "    safetensors.torch.save_file(torch.load({path!r}), 'model.safetensors')\n"
    "(if it holds a dict of several things, e.g. {{'model': ..., 'optimizer': ...}}, save the "
    "state dict: torch.load(p)['model']; tensors that share memory need "
    "safetensors.torch.save_model(model, ...)). Then spx.load('model.safetensors')."
)


def pickle_kind(path: Path) -> str | None:
    """What kind of pickle ``path`` is, or None: a ``torch.save`` zip, or a raw pickle.

    ``torch.save`` writes a zip archive holding ``<name>/data.pkl`` (since torch 1.6), or with
    ``_use_new_zipfile_serialization=False`` a bare pickle stream (protocol 2+ starts with
    ``0x80`` and the protocol number).
    """
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        return None
    if head[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(path) as archive:
                if any(n.endswith("data.pkl") for n in archive.namelist()):
                    return "a torch.save zip archive holding data.pkl"
        except (zipfile.BadZipFile, OSError):
            return None
        return None
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "a pickle stream, e.g. torch.save(..., _use_new_zipfile_serialization=False)"
    return None


def write_file(arrays: dict[str, np.ndarray], path: Path, metadata: dict[str, str]) -> None:
    """Write host arrays (already through ``_arrays.to_host``) to ``path`` as safetensors.

    Not atomic by itself: callers write to an :class:`~spx.serialization._atomic.AtomicWriter`
    temp path.

    Args:
        arrays: name -> contiguous little-endian numpy array.
        path: the file to (over)write.
        metadata: header text metadata.
    """
    # Aliased entries (tied weights) are fine here: the numpy writer copies bytes from each
    # array's pointer, so two names for one buffer become two copies on disk (torch's writer
    # refuses shared storage instead).
    safetensors.numpy.save_file(arrays, str(path), metadata=metadata or None)


def few(keys: list[str] | Any, limit: int = 8) -> str:
    """``'a', 'b', ... (N in total)`` for error messages."""
    keys = list(keys)
    shown = ", ".join(repr(k) for k in keys[:limit])
    return shown + (f", ... ({len(keys)} in total)" if len(keys) > limit else "")


class SafetensorsFile:
    """A lazily read safetensors file (the header is parsed on open, tensors on demand).

    Args:
        path: the ``.safetensors`` file.

    Raises:
        FileNotFoundError: no file at ``path``.
        IsADirectoryError: ``path`` is a directory.
        ValueError: the file is truncated, empty or not a safetensors file.

    Example:
        >>> import numpy as np, tempfile, os, safetensors.numpy
        >>> p = os.path.join(tempfile.mkdtemp(), "w.safetensors")
        >>> safetensors.numpy.save_file({"w": np.ones(2, np.float32)}, p)
        >>> with SafetensorsFile(p) as f:
        ...     f.read("w").tolist()
        [1.0, 1.0]
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise IsADirectoryError(
                f"{str(self.path)!r} is a directory, not a .safetensors file; pass the file, or "
                "the directory to spx.serialization.load/open_checkpoint for a sharded checkpoint"
            )
        if not self.path.exists():
            raise FileNotFoundError(f"no such checkpoint file: {str(self.path)!r}")
        # Our own descriptor on the same inode as safe_open's memory map, for the float8 reads:
        # if the checkpoint is atomically replaced while this object lives, both still see the
        # old file. Reopen if a replace slipped in between the two opens.
        for _ in range(3):
            self._raw = open(self.path, "rb")  # noqa: SIM115 - closed in close()
            try:
                # Looked up on the module at call time, so tests can count opens.
                self._handle: Any = safetensors.safe_open(str(self.path), framework="numpy")
            except safetensors.SafetensorError as e:
                self._raw.close()
                kind = pickle_kind(self.path)
                if kind is not None:
                    raise ValueError(_PICKLE.format(path=str(self.path), kind=kind)) from None
                raise ValueError(_CORRUPT.format(path=str(self.path), detail=e)) from None
            if os.fstat(self._raw.fileno()).st_ino == os.stat(self.path).st_ino:
                break
            self.close()
        self._keys = list(self._handle.keys())
        self._key_set = set(self._keys)
        self._header: dict[str, Any] | None = None

    # -- header ------------------------------------------------------------------------------
    def keys(self) -> list[str]:
        """Tensor names in the order safetensors lists them."""
        return list(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._key_set

    def metadata(self) -> dict[str, str]:
        """The header's free-text ``__metadata__`` (empty dict when there is none)."""
        self._check_open()
        return dict(self._handle.metadata() or {})

    def dtype_code(self, key: str) -> str:
        """The header's dtype code of ``key`` (``"F32"``, ``"BF16"``, ...)."""
        self._check(key)
        return self._handle.get_slice(key).get_dtype()

    def shape(self, key: str) -> tuple[int, ...]:
        """The shape of ``key`` from the header (no data is read)."""
        self._check(key)
        return tuple(self._handle.get_slice(key).get_shape())

    # -- data --------------------------------------------------------------------------------
    def read(self, key: str) -> np.ndarray:
        """Read one tensor into a host numpy array (the other tensors are not touched).

        Args:
            key: the tensor name.

        Returns:
            The tensor with its stored dtype (bf16/float8 as ``ml_dtypes`` types).

        Raises:
            KeyError: no tensor called ``key`` in this file.
            ValueError: the tensor's bytes cannot be read (corrupt file).
        """
        self._check(key)
        code = self.dtype_code(key)
        try:
            if code in _RAW_DTYPES:
                return self._read_raw(key, _RAW_DTYPES[code])
            return self._handle.get_tensor(key)
        except (safetensors.SafetensorError, OSError, ValueError) as e:
            raise ValueError(
                _CORRUPT.format(path=str(self.path), detail=f"reading {key!r}: {e}")
            ) from None

    def _read_raw(self, key: str, dtype: Any) -> np.ndarray:
        header = self._parsed_header()
        entry = header[key]
        start, end = entry["data_offsets"]
        self._raw.seek(8 + header["__header_size__"] + start)
        data = self._raw.read(end - start)
        if len(data) != end - start:
            raise ValueError(f"expected {end - start} bytes, found {len(data)}")
        return np.frombuffer(data, dtype=dtype).reshape(entry["shape"]).copy()

    def _parsed_header(self) -> dict[str, Any]:
        # safe_open has validated the header already; this only recovers data offsets.
        if self._header is None:
            self._raw.seek(0)
            (size,) = struct.unpack("<Q", self._raw.read(8))
            header = json.loads(self._raw.read(size))
            header["__header_size__"] = size
            self._header = header
        return self._header

    def _check_open(self) -> None:
        if self._handle is None:
            raise ValueError(f"{str(self.path)!r} was closed; open it again to read from it")

    def _check(self, key: str) -> None:
        self._check_open()
        if key not in self._key_set:
            raise KeyError(f"no tensor {key!r} in {str(self.path)!r}; it has {few(self._keys)}")

    # -- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        """Release the file (its memory map); further reads raise."""
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.__exit__(None, None, None)
        self._raw.close()

    def __enter__(self) -> SafetensorsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SafetensorsFile({str(self.path)!r}, {len(self._keys)} tensors)"


# Header dtype code -> numpy dtype, for files read from memory (file objects).
_CODES = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16,
    "U32": np.uint32, "I32": np.int32, "U64": np.uint64, "I64": np.int64, "F16": np.float16,
    "BF16": ml_dtypes.bfloat16, "F32": np.float32, "F64": np.float64, "C64": np.complex64,
    **_RAW_DTYPES,
}  # fmt: skip


def parse_bytes(data: bytes, source: str) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    """Parse a whole safetensors file held in memory.

    Args:
        data: the file's bytes.
        source: how to name it in errors.

    Returns:
        ``(metadata, tensors)``, tensors in header order.

    Raises:
        ValueError: the bytes are not a well-formed safetensors file.
    """
    try:
        (size,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8 : 8 + size])
        metadata = header.pop("__metadata__", None) or {}
        body = memoryview(data)[8 + size :]
        tensors = {}
        for key, entry in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
            start, end = entry["data_offsets"]
            dtype = np.dtype(_CODES[entry["dtype"]])
            shape = tuple(int(n) for n in entry["shape"])
            if not 0 <= start <= end <= len(body) or end - start != dtype.itemsize * int(
                np.prod(shape, dtype=np.int64)
            ):
                raise ValueError(f"tensor {key!r} has data offsets {start}..{end} out of range")
            tensors[key] = np.frombuffer(body[start:end], dtype=dtype).reshape(shape).copy()
    except (struct.error, json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as e:
        raise ValueError(_CORRUPT.format(path=source, detail=repr(e))) from None
    except ValueError as e:
        raise ValueError(_CORRUPT.format(path=source, detail=e)) from None
    return dict(metadata), tensors
