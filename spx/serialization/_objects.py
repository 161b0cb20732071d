"""Any ``torch.save``-able object as safetensors tensors plus a JSON description of it.

:func:`encode` walks the object: every tensor/array becomes a safetensors tensor (``t0``,
``t1``, ... — one per distinct object, so an array saved twice comes back as one object, as
with pickle's memo) and the structure becomes JSON with tagged nodes, ``{"$": tag, ...}``:

=============  ==============================================================================
``tensor``     ``{"$": "tensor", "name": "t0", "kind": K, "requires_grad": bool}``; ``K`` is
               ``tensor`` (spx.Tensor), ``parameter`` (nn.Parameter), ``jax`` (jax.Array),
               ``numpy`` (numpy.ndarray) or ``scalar`` (a numpy scalar such as ``np.float32``)
``dict``       ``{"$": "dict", "items": [[key, value], ...]}`` (keys are nodes too: int and tuple
               keys survive); ``odict`` is the same for ``collections.OrderedDict``
``tuple``      ``{"$": "tuple", "items": [...]}``; also ``set``, ``frozenset`` and ``size``
               (``spx.Size``); a plain JSON list is a ``list``
``float``      ``{"$": "float", "repr": "nan"}`` for non-finite floats (finite ones are JSON)
``complex``    ``{"$": "complex", "real": x, "imag": y}``
``bytes``      ``{"$": "bytes", "base64": "..."}``
``dtype``      ``{"$": "dtype", "name": "bfloat16"}``
``pickle``     ``{"$": "pickle", "name": "p0", "type": "module.Class"}``: any other object,
               pickled into the ``uint8`` tensor ``p0`` with its tensors referenced by name
=============  ==============================================================================

``None``, ``bool``, ``int``, ``str`` and finite ``float`` are themselves. :func:`decode` refuses
``pickle`` nodes unless ``weights_only=False``, because unpickling can run any code.
"""

from __future__ import annotations

import base64
import io
import math
import pickle
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from spx._tensor._dims import Size
from spx._tensor.tensor import Tensor
from spx.nn.parameter import Parameter
from spx.serialization._arrays import to_device, to_host

OBJECT_KEY = "spx.object"
VERSION = 1

_SEQUENCES: dict[type, str] = {tuple: "tuple", set: "set", frozenset: "frozenset", Size: "size"}
_FROM_TAG: dict[str, Callable[[list], Any]] = {
    "tuple": tuple,
    "set": set,
    "frozenset": frozenset,
    "size": Size,
}


def _where(path: str) -> str:
    return path or "the saved object"


class Encoder:
    """Collects the tensors (and pickles) of one object while describing it as JSON."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self._names: dict[int, str] = {}
        self._keep: list[Any] = []  # keeps ids unique while encoding

    def tensor_name(self, value: Any, path: str) -> str:
        name = self._names.get(id(value))
        if name is None:
            name = f"t{len(self._names)}"
            self.arrays[name] = to_host(_where(path), value)
            self._names[id(value)] = name
            self._keep.append(value)
        return name

    def encode(self, value: Any, path: str = "") -> Any:
        """JSON-able description of ``value`` (``path`` names it in errors, e.g. ``['model']``)."""
        kind = _tensor_kind(value)
        if kind is not None:
            requires_grad = isinstance(value, Tensor) and bool(value.requires_grad)
            name = self.tensor_name(value, path)
            return {"$": "tensor", "name": name, "kind": kind, "requires_grad": requires_grad}
        if value is None or type(value) in (bool, int, str):
            return value
        if type(value) is float:
            return value if math.isfinite(value) else {"$": "float", "repr": repr(value)}
        if type(value) is list:
            return [self.encode(v, f"{path}[{i}]") for i, v in enumerate(value)]
        if type(value) in _SEQUENCES:
            items = value if type(value) not in (set, frozenset) else _stable(value)
            return {
                "$": _SEQUENCES[type(value)],
                "items": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(items)],
            }
        if type(value) in (dict, OrderedDict):
            return {
                "$": "dict" if type(value) is dict else "odict",
                "items": [
                    [self.encode(k, f"{path}<key {k!r:.40}>"), self.encode(v, f"{path}[{k!r}]")]
                    for k, v in value.items()
                ],
            }
        if type(value) is complex:
            return {"$": "complex", "real": _float(value.real), "imag": _float(value.imag)}
        if type(value) is bytes:
            return {"$": "bytes", "base64": base64.b64encode(value).decode("ascii")}
        if _is_dtype(value):
            return {"$": "dtype", "name": np.dtype(value).name}
        return self._pickle(value, path)

    def _persistent_id(self, value: Any, path: str) -> tuple[str, str, bool] | None:
        # Tensors inside a pickled object go to safetensors like every other tensor.
        kind = _tensor_kind(value)
        if kind is None:
            return None
        requires_grad = isinstance(value, Tensor) and bool(value.requires_grad)
        return self.tensor_name(value, path), kind, requires_grad

    def _pickle(self, value: Any, path: str) -> dict[str, Any]:
        if type(value).__module__.startswith("torch"):
            raise TypeError(
                f"cannot save {_where(path)}: it is a {_describe(value)}; spx does not pickle "
                "torch objects. Convert torch tensors first, e.g. spx.from_numpy(t.numpy()), "
                "or torch state dicts with {k: v.numpy() for k, v in sd.items()}"
            )
        buffer = io.BytesIO()
        pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        pickler.persistent_id = lambda obj: self._persistent_id(obj, path)
        try:
            pickler.dump(value)
        except Exception as e:
            raise TypeError(
                f"cannot save {_where(path)}: {_describe(value)} is not a tensor, number, str, "
                f"bytes, None or container of those, and pickling it failed ({e}); save its "
                "state instead (e.g. obj.state_dict()) or make it picklable"
            ) from None
        name = f"p{sum(1 for k in self.arrays if k.startswith('p'))}"
        self.arrays[name] = np.frombuffer(buffer.getvalue(), dtype=np.uint8).copy()
        return {"$": "pickle", "name": name, "type": _describe(value)}


def _tensor_kind(value: Any) -> str | None:
    if isinstance(value, Parameter):
        return "parameter"
    if isinstance(value, Tensor):
        return "tensor"
    if isinstance(value, jax.Array):
        return "jax"
    if isinstance(value, np.ndarray):
        return "numpy" if type(value) is np.ndarray else None
    if isinstance(value, np.generic):
        return "scalar"
    return None


def _is_dtype(value: Any) -> bool:
    # spx.float32 (an np.dtype), np.float32 (a scalar type), jnp.bfloat16 (a scalar meta).
    if isinstance(value, np.dtype):
        return True
    if not isinstance(value, type):
        return False
    return issubclass(value, np.generic) or isinstance(getattr(value, "dtype", None), np.dtype)


def _stable(values: set | frozenset) -> list:
    try:
        return sorted(values)
    except TypeError:
        return list(values)


def _float(x: float) -> Any:
    return x if math.isfinite(x) else {"$": "float", "repr": repr(x)}


def _describe(value: Any) -> str:
    return f"{type(value).__module__}.{type(value).__qualname__}"


class Decoder:
    """Rebuilds an object from :class:`Encoder`'s JSON and a way to read its tensors."""

    def __init__(
        self,
        read: Callable[[str], np.ndarray],
        device: Any,
        weights_only: bool,
        source: str,
    ) -> None:
        self._read, self._device = read, device
        self._weights_only, self._source = weights_only, source
        self._tensors: dict[tuple[str, str, bool], Any] = {}

    def decode(self, node: Any, path: str = "") -> Any:
        if isinstance(node, list):
            return [self.decode(v, f"{path}[{i}]") for i, v in enumerate(node)]
        if not isinstance(node, dict):
            return node
        tag = node.get("$")
        if tag == "tensor":
            return self.tensor(node["name"], node["kind"], bool(node.get("requires_grad")))
        if tag in _FROM_TAG:
            items = node["items"]
            return _FROM_TAG[tag](self.decode(v, f"{path}[{i}]") for i, v in enumerate(items))
        if tag in ("dict", "odict"):
            out = {} if tag == "dict" else OrderedDict()
            for k, v in node["items"]:
                key = self.decode(k, path)
                out[key] = self.decode(v, f"{path}[{key!r}]")
            return out
        if tag == "float":
            return float(node["repr"])
        if tag == "complex":
            return complex(self.decode(node["real"]), self.decode(node["imag"]))
        if tag == "bytes":
            return base64.b64decode(node["base64"])
        if tag == "dtype":
            return _dtype(node["name"])
        if tag == "pickle":
            return self._unpickle(node, path)
        raise ValueError(
            f"{self._source}: unknown node {tag!r} at {_where(path)}; the file was written by a "
            "newer spx or is corrupt"
        )

    def tensor(self, name: str, kind: str, requires_grad: bool) -> Any:
        key = (name, kind, requires_grad)
        if key not in self._tensors:
            array = self._read(name)
            if kind == "numpy":
                out: Any = array
            elif kind == "scalar":
                out = array[()]
            elif kind == "jax":
                out = to_device(array, self._device)._data
            elif kind == "parameter":
                out = Parameter(to_device(array, self._device)._data, requires_grad=requires_grad)
            else:
                out = Tensor._of(to_device(array, self._device)._data, requires_grad)
            self._tensors[key] = out
        return self._tensors[key]

    def _unpickle(self, node: dict[str, Any], path: str) -> Any:
        if self._weights_only:
            raise pickle.UnpicklingError(
                f"Weights only load failed: {self._source} holds a pickled {node['type']} at "
                f"{_where(path)}, and unpickling runs code chosen by whoever wrote the file. "
                "If you trust its source, load it with spx.load(f, weights_only=False); "
                "otherwise save plain data instead (tensors, numbers, strings, lists, dicts, "
                "state_dict() of modules and optimizers)."
            )
        unpickler = pickle.Unpickler(io.BytesIO(self._read(node["name"]).tobytes()))
        unpickler.persistent_load = lambda pid: self.tensor(*pid)
        return unpickler.load()


def _dtype(name: str) -> np.dtype:
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes  # bfloat16, float8_*: not numpy names

        return np.dtype(getattr(ml_dtypes, name))
