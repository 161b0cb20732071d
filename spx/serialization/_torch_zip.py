"""Read files written by ``torch.save`` without torch and without running code from them.

``torch.save`` (since torch 1.6) writes a zip archive::

    archive/data.pkl      the object, pickled; each storage is a persistent id
                          ('storage', <torch.FloatStorage or torch.storage.UntypedStorage>,
                           key, location, numel)
    archive/data/<key>    the raw little-endian bytes of storage <key>
    archive/byteorder     "little" (absent in old files, which were little-endian too)

Tensors are rebuilt by ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
requires_grad, hooks)`` (``_v3`` adds the dtype for untyped storages), parameters by
``_rebuild_parameter``. :class:`TorchUnpickler` resolves only those functions, the storage
classes, torch dtypes, ``torch.Size``/``torch.device`` and ``collections.OrderedDict`` — to spx
or numpy equivalents; every other global is refused, like ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import collections
import pickle
import zipfile
from typing import Any

import ml_dtypes
import numpy as np

from spx._tensor._dims import Size
from spx._tensor.tensor import Tensor
from spx.nn.parameter import Parameter
from spx.serialization._arrays import to_device

# torch dtype name -> numpy dtype.
_DTYPES: dict[str, Any] = {
    "float32": np.float32, "float": np.float32, "float64": np.float64, "double": np.float64,
    "float16": np.float16, "half": np.float16, "bfloat16": ml_dtypes.bfloat16,
    "int64": np.int64, "long": np.int64, "int32": np.int32, "int": np.int32,
    "int16": np.int16, "short": np.int16, "int8": np.int8, "uint8": np.uint8,
    "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64, "bool": np.bool_,
    "complex64": np.complex64, "cfloat": np.complex64, "complex128": np.complex128,
    "cdouble": np.complex128, "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2, "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "float8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz, "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu,
}  # fmt: skip

# torch.<Name>Storage -> numpy dtype.
_STORAGES: dict[str, Any] = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "BFloat16Storage": ml_dtypes.bfloat16, "LongStorage": np.int64, "IntStorage": np.int32,
    "ShortStorage": np.int16, "CharStorage": np.int8, "ByteStorage": np.uint8,
    "BoolStorage": np.bool_, "ComplexFloatStorage": np.complex64,
    "ComplexDoubleStorage": np.complex128,
}  # fmt: skip


class _StorageType:
    """Stands for a torch storage class in the pickle; ``dtype`` None for UntypedStorage."""

    def __init__(self, name: str, dtype: Any) -> None:
        self.name, self.dtype = name, dtype


class _Storage:
    """One ``data/<key>`` entry, read once."""

    def __init__(self, raw: bytes, dtype: Any) -> None:
        self.raw, self.dtype = raw, dtype

    def view(self, dtype: Any) -> np.ndarray:
        dtype = np.dtype(dtype)
        if len(self.raw) % dtype.itemsize:
            raise pickle.UnpicklingError(
                f"storage of {len(self.raw)} bytes is not a whole number of {dtype.name} elements"
            )
        return np.frombuffer(self.raw, dtype=dtype)


class _Device(str):
    """``torch.device('cpu')`` read back as the string ``'cpu'``."""


class TorchUnpickler(pickle.Unpickler):
    """Unpickles ``data.pkl`` of a ``torch.save`` archive into spx Tensors, refusing code.

    Args:
        file: the pickle stream.
        storage: ``key -> bytes`` of the archive's ``data/<key>`` entries.
        device: where tensors go (``None``: default device).
        source: the file, for error messages.
    """

    def __init__(self, file: Any, storage: Any, device: Any, source: str) -> None:
        super().__init__(file)
        self._storage, self._device, self._source = storage, device, source
        self._loaded: dict[str, _Storage] = {}

    def find_class(self, module: str, name: str) -> Any:
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch._utils":
            if name == "_rebuild_tensor_v2":
                return self._rebuild_tensor_v2
            if name == "_rebuild_tensor_v3":
                return self._rebuild_tensor_v3
            if name == "_rebuild_parameter":
                return _rebuild_parameter
        if module == "torch":
            if name in _STORAGES:
                return _StorageType(name, _STORAGES[name])
            if name in _DTYPES:
                return np.dtype(_DTYPES[name])
            if name == "Size":
                return Size
            if name == "device":
                return _device
        if module == "torch.storage" and name == "UntypedStorage":
            return _StorageType(name, None)
        raise pickle.UnpicklingError(
            f"Weights only load failed: {self._source} (a torch.save file) refers to "
            f"{module}.{name}, which spx does not load: spx reads tensors, parameters, "
            "numbers, strings and containers (dict, OrderedDict, list, tuple) from torch files "
            "and never runs code from them. Where torch is installed, re-save the plain data, "
            "e.g. torch.save(obj.state_dict(), path), or convert it to safetensors."
        )

    def persistent_load(self, pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"{self._source}: unsupported persistent id {pid!r:.80}")
        _, kind, key, _location, _numel = pid
        if not isinstance(kind, _StorageType) or not isinstance(key, str):
            raise pickle.UnpicklingError(f"{self._source}: malformed storage reference {pid!r:.80}")
        if key not in self._loaded:
            self._loaded[key] = _Storage(self._storage(key), kind.dtype)
        return self._loaded[key]

    def _rebuild_tensor_v2(
        self, storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any, *_: Any
    ) -> Tensor:
        if not isinstance(storage, _Storage) or storage.dtype is None:
            raise pickle.UnpicklingError(f"{self._source}: a tensor without a typed storage")
        return self._tensor(storage, storage.dtype, offset, size, stride, requires_grad)

    def _rebuild_tensor_v3(
        self,
        storage: Any,
        offset: Any,
        size: Any,
        stride: Any,
        requires_grad: Any,
        hooks: Any,
        dtype: Any,
        *_: Any,
    ) -> Tensor:
        if not isinstance(storage, _Storage) or not isinstance(dtype, np.dtype):
            raise pickle.UnpicklingError(f"{self._source}: malformed tensor (v3)")
        return self._tensor(storage, dtype, offset, size, stride, requires_grad)

    def _tensor(
        self, storage: _Storage, dtype: Any, offset: Any, size: Any, stride: Any, rg: Any
    ) -> Tensor:
        flat = storage.view(dtype)
        size, stride = tuple(size), tuple(stride)
        ok = (
            isinstance(offset, int)
            and offset >= 0
            and len(size) == len(stride)
            and all(isinstance(n, int) and n >= 0 for n in size + stride)
        )
        if ok and all(size):
            last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
            ok = last < flat.size
        if not ok:  # as_strided would read outside the storage
            raise pickle.UnpicklingError(
                f"{self._source}: tensor of size {size}, stride {stride}, offset {offset} does not "
                f"fit its storage of {flat.size} elements; the file is corrupt"
            )
        if all(size):
            item = flat.itemsize
            view = np.lib.stride_tricks.as_strided(
                flat[offset:], shape=size, strides=[s * item for s in stride]
            )
            array = np.array(view, copy=True)
        else:
            array = np.zeros(size, dtype=flat.dtype)
        return Tensor._of(to_device(array, self._device)._data, bool(rg))


def _rebuild_parameter(data: Any, requires_grad: Any, _hooks: Any) -> Parameter:
    if not isinstance(data, Tensor):
        raise pickle.UnpicklingError("malformed parameter in a torch.save file")
    return Parameter(data._data, requires_grad=bool(requires_grad))


def _device(spec: Any, index: Any = None) -> str:
    return _Device(spec if index is None else f"{spec}:{index}")


def is_torch_zip(archive: zipfile.ZipFile) -> bool:
    """True when ``archive`` holds a ``<name>/data.pkl`` as torch.save writes."""
    return any(n.endswith("/data.pkl") or n == "data.pkl" for n in archive.namelist())


def read_torch_zip(archive: zipfile.ZipFile, device: Any, source: str) -> Any:
    """The object a ``torch.save`` zip holds, tensors as spx Tensors on ``device``.

    Args:
        archive: the open zip file.
        device: target device (``None``: the default one).
        source: the file name for error messages.

    Returns:
        What ``torch.load(f, weights_only=True)`` returns, with spx types.

    Raises:
        pickle.UnpicklingError: the pickle refers to something other than tensors and plain
            containers, or is malformed.
    """
    names = archive.namelist()
    pkl = next(n for n in names if n.endswith("/data.pkl") or n == "data.pkl")
    prefix = pkl[: -len("data.pkl")]
    if f"{prefix}byteorder" in names:
        order = archive.read(f"{prefix}byteorder").decode().strip()
        if order != "little":
            raise ValueError(f"{source}: {order}-endian torch files are not supported")

    def storage(key: str) -> bytes:
        entry = f"{prefix}data/{key}"
        if entry not in names:
            raise pickle.UnpicklingError(f"{source}: storage {entry!r} is missing; corrupt file")
        return archive.read(entry)

    with archive.open(pkl) as stream:
        return _plain(TorchUnpickler(stream, storage, device, source).load())


def _plain(value: Any) -> Any:
    # A stray storage (torch.save(t.untyped_storage())) is not something spx can return.
    if isinstance(value, _Storage | _StorageType):
        raise pickle.UnpicklingError("torch.save files holding bare storages are not supported")
    return value
