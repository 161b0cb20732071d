"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``.

Each mirrors its ``torch.nn`` namesake, including the keys it registers children under
(``"0"``, ``"1"``, ... for the list-like ones), so ``state_dict`` keys such as ``"0.weight"`` or
``"layers.1.bias"`` are torch's. They are Modules, hence pytrees, like any other.

Deliberate differences from torch 2.13:

* ``ModuleList.insert`` treats negative and too-large indices as ``list.insert`` does (torch
  raises KeyError for negative ones and leaves a gap for too-large ones).
* ``ParameterDict[missing]`` raises KeyError (torch: AttributeError).
* ``ParameterList``/``ParameterDict`` reprs print jax dtype names (``float32``) where torch
  prints ``torch.float32`` / ``torch.FloatTensor``.
* Every Module container method rejects non-Modules with TypeError (torch checks only some).
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain, islice
from typing import Any

import jax
import numpy as np

from spx import _validate
from spx._tensor.tensor import Tensor
from spx.nn import _structure
from spx.nn.module import Module
from spx.nn.parameter import Parameter


def _abs_index(idx: Any, size: int, owner: str) -> int:
    """``idx`` as a non-negative position, with torch's IndexError when out of range."""
    try:
        idx = operator.index(idx)
    except TypeError:
        raise TypeError(
            f"{owner} indices must be integers or slices, got {type(idx).__name__}"
        ) from None
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range for {owner} of length {size}")
    return idx % size


def _renumber(module: Module, items: list[Module] | None = None) -> None:
    # After a deletion or insertion the children get keys "0".."n-1" again, as torch does.
    items = list(module._modules.values()) if items is None else items
    module.__dict__["_modules"] = {str(i): m for i, m in enumerate(items)}
    _structure.bump()


def _require_module(owner: str, module: Any) -> None:
    if not isinstance(module, Module):
        raise TypeError(
            f"{owner} holds spx.nn.Module instances, got {type(module).__name__}; "
            "wrap functions in a Module subclass"
        )


def _pop(self: Any, key: Any) -> Any:
    """Remove the entry at ``key`` (an index, slice or dict key) and return it."""
    value = self[key]
    del self[key]
    return value


def _dir_without_indices(self: Module) -> list[str]:
    return [key for key in Module.__dir__(self) if not key.isdigit()]


def _list_repr(module: Module) -> str:
    """torch's ModuleList repr: runs of identical children print once as ``(0-2): 3 x ...``."""
    reprs = [repr(m) for m in module._modules.values()]
    if not reprs:
        return type(module).__name__ + "()"
    runs: list[list[Any]] = []
    for i, r in enumerate(reprs):
        if runs and runs[-1][2] == r:
            runs[-1][1] = i
        else:
            runs.append([i, i, r])
    lines = []
    for start, end, r in runs:
        head = f"({start})" if start == end else f"({start}-{end}): {end - start + 1} x"
        text = f"{head}: {r}" if start == end else f"{head} {r}"
        lines.append(text.replace("\n", "\n  "))
    return type(module).__name__ + "(\n  " + "\n  ".join(lines) + "\n)"


class Sequential(Module):
    """Chains modules: the output of each is the input of the next (mirrors ``nn.Sequential``).

    Children are registered under ``"0"``, ``"1"``, ... or under the keys of an ``OrderedDict``.
    Slicing returns a new Sequential sharing the same children under their original keys, as
    torch does; deleting renumbers the rest.

    Args:
        *args: modules in call order, or a single ``OrderedDict[str, Module]``.

    Shapes:
        whatever the first module accepts -> whatever the last module returns.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> model(spx.ones(3, 4)).shape, list(model.state_dict())[:2]
        (spx.Size([3, 2]), ['0.weight', '0.bias'])
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        named = len(args) == 1 and isinstance(args[0], OrderedDict)
        for key, module in args[0].items() if named else enumerate(args):
            _require_module("Sequential", module)
            self.add_module(key if named else str(key), module)

    def _key_at(self, idx: int) -> str:
        pos = _abs_index(idx, len(self), "Sequential")
        return next(islice(iter(self._modules), pos, None))

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._key_at(idx)]

    def __setitem__(self, idx: int, module: Module) -> None:
        _require_module("Sequential", module)
        setattr(self, self._key_at(idx), module)

    def __delitem__(self, idx: int | slice) -> None:
        if isinstance(idx, slice):
            for key in list(self._modules)[idx]:
                delattr(self, key)
        else:
            delattr(self, self._key_at(idx))
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    @staticmethod
    def _check_addend(other: Any) -> None:
        if not isinstance(other, Sequential):
            raise ValueError(
                "add operator supports only objects of Sequential class, but "
                f"{type(other).__name__} is given."
            )

    def __add__(self, other: Sequential) -> Sequential:
        self._check_addend(other)
        return Sequential(*self, *other)

    def __iadd__(self, other: Sequential) -> Sequential:
        self._check_addend(other)
        return self.extend(list(other))

    def __mul__(self, other: int) -> Sequential:
        if not _validate.is_int(other):
            raise TypeError(
                f"unsupported operand type(s) for *: Sequential and {type(other).__name__}"
            )
        other = _validate.as_int(other, "factor", "Sequential.__mul__")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for Sequential")
        # Repeats share the same module objects (and so the same parameters), as in torch.
        return Sequential(*(list(self) * other))

    __rmul__ = __mul__

    def __imul__(self, other: int) -> Sequential:
        repeated = self * other
        return self.extend(list(repeated)[len(self) :])

    __dir__ = _dir_without_indices

    def append(self, module: Module) -> Sequential:
        """Add ``module`` at the end; returns self."""
        _require_module("Sequential", module)
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Insert ``module`` before position ``index`` (``-len <= index <= len``); returns self."""
        _require_module("Sequential", module)
        n = len(self._modules)
        index = operator.index(index)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index} (Sequential of length {n})")
        if index < 0:
            index += n
        items = list(self._modules.values())
        items.insert(index, module)
        _renumber(self, items)
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        """Append every module of ``sequential`` (any iterable of modules); returns self."""
        for layer in sequential:
            self.append(layer)
        return self

    pop = _pop

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of registered submodules (mirrors ``nn.ModuleList``); not callable itself.

    Children live under ``"0"``, ``"1"``, ...; slicing returns a new ModuleList of the same
    module objects renumbered from 0, exactly as torch does.

    Args:
        modules: optional iterable of modules to add.

    Example:
        >>> from spx import nn
        >>> layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        >>> len(layers), list(layers[1:].state_dict())[0]
        (3, '0.weight')
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])
        return self._modules[str(_abs_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx: int, module: Module) -> None:
        _require_module("ModuleList", module)
        setattr(self, str(_abs_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx: int | slice) -> None:
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, str(_abs_index(idx, len(self), "ModuleList")))
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList(chain(self, other))

    def __repr__(self) -> str:
        return _list_repr(self)

    __dir__ = _dir_without_indices

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before ``index``; negative and too-large indices act as in a list."""
        _require_module("ModuleList", module)
        items = list(self._modules.values())
        items.insert(operator.index(index), module)
        _renumber(self, items)

    def append(self, module: Module) -> ModuleList:
        """Add ``module`` at the end; returns self."""
        _require_module("ModuleList", module)
        self.add_module(str(len(self)), module)
        return self

    pop = _pop

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Append every module of the iterable ``modules``; returns self."""
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleList.extend should be called with an iterable, but got "
                + type(modules).__name__
            )
        for module in modules:
            self.append(module)
        return self


def _pairs(owner: str, items: Any, sort_plain_mappings: bool) -> Iterable[tuple[Any, Any]]:
    """Key/value pairs of a mapping or an iterable of pairs, validated as torch does."""
    if not isinstance(items, Iterable):
        raise TypeError(
            f"{owner}.update should be called with an iterable of key/value pairs, but got "
            + type(items).__name__
        )
    if isinstance(items, OrderedDict | ModuleDict | ParameterDict):
        return list(items.items())
    if isinstance(items, Mapping):
        # torch sorts plain mappings in ParameterDict.update (but not in ModuleDict.update).
        return sorted(items.items()) if sort_plain_mappings else list(items.items())
    pairs = []
    for j, pair in enumerate(items):
        if not isinstance(pair, Iterable):
            raise TypeError(
                f"{owner} update sequence element #{j} should be Iterable; is "
                + type(pair).__name__
            )
        pair = list(pair)
        if len(pair) != 2:
            raise ValueError(
                f"{owner} update sequence element #{j} has length {len(pair)}; 2 is required"
            )
        pairs.append((pair[0], pair[1]))
    return pairs


class ModuleDict(Module):
    """An ordered dict of registered submodules (mirrors ``nn.ModuleDict``).

    Args:
        modules: optional mapping ``str -> Module`` or iterable of ``(str, Module)`` pairs;
            insertion order is kept.

    Example:
        >>> from spx import nn
        >>> heads = nn.ModuleDict({"cls": nn.Linear(8, 3), "reg": nn.Linear(8, 1)})
        >>> list(heads), "cls" in heads
        (['cls', 'reg'], True)
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        _require_module("ModuleDict", module)
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]
        _structure.bump()

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove every entry."""
        self._modules.clear()
        _structure.bump()

    pop = _pop

    def keys(self) -> Any:
        return self._modules.keys()

    def items(self) -> Any:
        return self._modules.items()

    def values(self) -> Any:
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable) -> None:
        """Add or overwrite entries from a mapping or an iterable of ``(key, module)`` pairs."""
        for key, module in _pairs("ModuleDict", modules, sort_plain_mappings=False):
            self[key] = module


def _as_parameter(value: Any) -> Any:
    # torch wraps plain tensors into Parameters; other objects are stored as plain attributes.
    if isinstance(value, Tensor | jax.Array | np.ndarray) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _entry_repr(key: Any, value: Any) -> str:
    if isinstance(value, Parameter):
        if value.is_uninitialized:
            return f"  ({key}): <UninitializedParameter>"
        size = "x".join(str(s) for s in value.shape)
        return f"  ({key}): Parameter containing: [{value.dtype} of size {size}]"
    return f"  ({key}): Object of type: {type(value).__name__}"


class ParameterList(Module):
    """A list of registered Parameters (mirrors ``nn.ParameterList``).

    Tensors and arrays (``jax.Array``/``numpy.ndarray``) given to the constructor, ``append``,
    ``extend`` or ``__setitem__`` are wrapped into Parameters, as torch wraps tensors; they are
    stored under ``"0"``, ``"1"``, ... so ``state_dict`` keys match torch's.

    Args:
        values: optional iterable of Parameters or arrays.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> params = nn.ParameterList([spx.zeros(2, 3), nn.Parameter(spx.ones(4))])
        >>> [p.shape for p in params], list(params.state_dict())
        ([spx.Size([2, 3]), spx.Size([4])], ['0', '1'])
    """

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            out = self.__class__()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, str(_abs_index(idx, len(self), "ParameterList")))

    def __setitem__(self, idx: int, param: Any) -> None:
        setattr(self, str(_abs_index(idx, len(self), "ParameterList")), _as_parameter(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter([self[i] for i in range(len(self))])

    def __iadd__(self, parameters: Iterable[Any]) -> ParameterList:
        return self.extend(parameters)

    __dir__ = _dir_without_indices

    def append(self, value: Any) -> ParameterList:
        """Add ``value`` (arrays become Parameters) at the end; returns self."""
        index = len(self)
        self._size = index + 1
        self[index] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Append every element of the iterable ``values``; returns self."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor | jax.Array | np.ndarray):
            raise TypeError(
                "ParameterList.extend should be called with an iterable, but got "
                + type(values).__name__
            )
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_entry_repr(k, p) for k, p in enumerate(self))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of registered Parameters (mirrors ``nn.ParameterDict``).

    Tensors and arrays are wrapped into Parameters. As in torch, ``update`` with an
    ``OrderedDict``, a ParameterDict or a sequence of pairs keeps their order, while a plain
    ``dict`` is added in sorted key order.

    Args:
        parameters: optional mapping ``str -> Parameter | array`` or iterable of pairs.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> pd = nn.ParameterDict({"scale": spx.ones(3), "shift": spx.zeros(3)})
        >>> list(pd.keys()), pd["scale"].shape
        (['scale', 'shift'], spx.Size([3]))
    """

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        # Key order as an immutable-by-convention dict that is replaced, never mutated: it is
        # pytree aux data, and a cached treedef must not change under jax's feet.
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _attr(key: Any) -> str:
        if not isinstance(key, str):
            raise TypeError(
                "Index given to ParameterDict cannot be used as a key as it is not a string "
                f"(type is '{type(key).__name__}'); use str keys"
            )
        return key

    def __getitem__(self, key: str) -> Any:
        attr = self._attr(key)
        if attr not in self._keys:
            raise KeyError(key)
        return getattr(self, attr)

    def __setitem__(self, key: str, value: Any) -> None:
        attr = self._attr(key)
        setattr(self, attr, _as_parameter(value))
        if key not in self._keys:
            self._keys = {**self._keys, key: None}

    def __delitem__(self, key: str) -> None:
        attr = self._attr(key)
        if attr not in self._keys:
            raise KeyError(key)
        self._keys = {k: None for k in self._keys if k != key}
        delattr(self, attr)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same Parameter objects."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for key in list(self._keys):
            del self[key]

    pop = _pop

    def popitem(self) -> tuple[str, Any]:
        """Remove and return the last inserted ``(key, parameter)`` pair."""
        if not self._keys:
            raise KeyError("popitem(): ParameterDict is empty")
        key = next(reversed(self._keys))
        return key, self.pop(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default  # noqa: SIM401 - this *is* get

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> ParameterDict:
        return ParameterDict((k, default) for k in keys)

    def keys(self) -> Any:
        return self._keys.keys()

    def items(self) -> Iterator[tuple[str, Any]]:
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterator[Any]:
        return (self[k] for k in self._keys)

    def update(self, parameters: Any) -> None:
        """Add or overwrite entries from a mapping or an iterable of ``(key, value)`` pairs."""
        for key, value in _pairs("ParameterDict", parameters, sort_plain_mappings=True):
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(_entry_repr(k, p) for k, p in self.items())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other: ParameterDict) -> ParameterDict:
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self
