"""torch's legacy tensor types: ``spx.FloatTensor``, ``spx.LongTensor``, ... and ``Tensor.type()``.

Old training scripts build tensors with ``torch.FloatTensor(2, 3)`` or
``torch.LongTensor(labels)``, test them with ``isinstance(x, torch.FloatTensor)`` or
``x.type() == "torch.LongTensor"`` and convert with ``x.type(torch.LongTensor)``. As in torch,
these types make no instances of their own and are not subclasses of :class:`spx.Tensor`:
calling one makes an ``spx.Tensor``, and ``isinstance(t, spx.FloatTensor)`` asks whether ``t``
has the type's dtype and device type (torch's ``tensortype`` metaclass asks the same).

The constructors are torch's: ``T(2, 3)`` / ``T(x.size())`` (a size; torch leaves the memory
uninitialized, spx fills it with zeros), ``T([1, 2])`` / ``T(np_array)`` (data converted to the
type: ``spx.LongTensor([1.7])`` truncates to ``[1]``), ``T()`` (empty, shape ``(0,)``), ``T(t)``
(a tensor of this very type: an alias sharing ``t``'s storage and autograd history), each with an
optional ``device=`` of the type's device type. They make CPU tensors, as torch's do;
``spx.cuda``'s types (:data:`CUDA_TYPES`) make tensors on ``spx.device("cuda")``.

Without ``jax_enable_x64`` spx holds 64-bit types in 32 bits (``spx.long`` data is int32,
``spx.float64`` float32; README "Differences from torch"), and these types follow that rule:

* ``spx.LongTensor.dtype is spx.int64`` (torch's dtype, as ``spx.long``), but
  ``spx.LongTensor([1]).dtype`` is int32, as ``spx.tensor([1])``'s; ``spx.DoubleTensor([1.0])``
  is float32.
* ``isinstance(t, T)`` holds when ``t.dtype`` is the dtype ``T(...)`` makes: an int32 tensor is
  a LongTensor and an IntTensor, a float32 one a FloatTensor and a DoubleTensor.
* ``t.type()`` names an int32 tensor ``"spx.LongTensor"``: int32 is what spx makes of torch's
  int64 (``spx.tensor([1])``, ``argmax``, ``.long()``), so ``labels.type() == "spx.LongTensor"``
  holds where torch's does (``spx.IntTensor([1]).type()`` says ``"spx.LongTensor"`` too, where
  torch says ``"torch.IntTensor"``). A float32 tensor is ``"spx.FloatTensor"``.

With x64 on, dtypes and answers are torch's. On a machine with a GPU, ``isinstance`` and
``type()`` need the tensor's device, which computes a pending tensor (as ``t.is_cuda`` does);
without one nothing is computed. A TPU counts as not CUDA (``"spx.FloatTensor"``).

Example:
    >>> import spx
    >>> labels = spx.LongTensor([3, 1])
    >>> isinstance(labels, spx.LongTensor), labels.type()
    (True, 'spx.LongTensor')
    >>> labels.type(spx.FloatTensor).tolist()
    [3.0, 1.0]
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx import _context
from spx._device import _accelerator_platform
from spx._tensor.methods._dtypes import canonical

__all__ = [
    "BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor",
    "HalfTensor", "IntTensor", "LongTensor", "ShortTensor", "set_default_tensor_type",
]  # fmt: skip

# torch's ScalarType names where the general rule (_scalar_name) does not give them.
_NAMES = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
    "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
    "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
}  # fmt: skip
_OTHER_DTYPES = (
    "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
    "float8_e5m2fnuz", "float8_e8m0fnu", "int4", "uint4", "int2", "uint2",
)  # fmt: skip
_FLOATS = ("float16", "bfloat16", "float32", "float64")

_CONSTRUCTOR_FORMS = (
    "ints for a size ({name}(2, 3)), one sequence of data ({name}([1, 2]) or a numpy array), "
    "or one tensor of this type"
)


def _scalar_name(dt: np.dtype) -> str:
    """torch's name of ``dt``'s scalar type: ``"Float"``, ``"UInt16"``, ``"Float8_e4m3fn"``."""
    name = dt.name
    if name in _NAMES:
        return _NAMES[name]
    if name.startswith("uint"):
        return "UInt" + name[4:]
    return name[0].upper() + name[1:]


def _dtypes_by_name() -> dict[str, np.dtype]:
    names = [*_NAMES, *(n for n in _OTHER_DTYPES if hasattr(jnp, n))]
    dtypes = [np.dtype(getattr(jnp, "bool_" if n == "bool" else n)) for n in names]
    return {_scalar_name(dt): dt for dt in dtypes}


_BY_SCALAR_NAME = _dtypes_by_name()


class _LegacyType(type):
    """The metaclass of ``spx.FloatTensor`` & co. (torch's ``torch.tensortype``): calling a type
    makes an ``spx.Tensor``; ``isinstance`` compares dtype and device type."""

    dtype: np.dtype
    is_cuda: bool

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return _construct(cls, args, kwargs)

    def __instancecheck__(cls, obj: Any) -> bool:
        from spx._tensor.tensor import Tensor

        return (
            isinstance(obj, Tensor)
            and obj.dtype == canonical(cls.dtype)
            and _on_cuda(obj) == cls.is_cuda
        )


_CLASS_DOC = """torch's legacy ``{module}.{name}``: tensors of dtype ``spx.{dtype}``{held}.

``{module}.{name}(2, 3)`` makes a tensor of that size (torch leaves it uninitialized; spx fills
it with zeros), ``{module}.{name}([1, 2])`` one of that data, ``{module}.{name}()`` an empty
one, ``{module}.{name}(t)`` an alias of a tensor of this type. ``isinstance(t, {module}.{name})``
holds for {where} tensors of dtype ``{canonical}``. See :mod:`spx._tensor.legacy_types`.

Example:
    >>> import spx
    >>> {module}.{name}(2, 3).shape
    spx.Size([2, 3])
"""


def _legacy_type(name: str, dtype: Any, cuda: bool = False) -> _LegacyType:
    module = "spx.cuda" if cuda else "spx"
    dt = np.dtype(dtype)
    held = canonical(dt)
    doc = _CLASS_DOC.format(
        module=module,
        name=name,
        dtype=dt.name,
        held=f" (held as {held.name} unless jax_enable_x64 is on)" if held != dt else "",
        where="CUDA" if cuda else "CPU",
        canonical=held.name,
    )
    namespace = {
        "__module__": module,
        "__qualname__": name,
        "__doc__": doc,
        "__slots__": (),
        "dtype": dt,
        "is_cuda": cuda,
        "is_sparse": False,
    }
    return _LegacyType(name, (), namespace)


FloatTensor = _legacy_type("FloatTensor", jnp.float32)
DoubleTensor = _legacy_type("DoubleTensor", jnp.float64)
HalfTensor = _legacy_type("HalfTensor", jnp.float16)
BFloat16Tensor = _legacy_type("BFloat16Tensor", jnp.bfloat16)
LongTensor = _legacy_type("LongTensor", jnp.int64)
IntTensor = _legacy_type("IntTensor", jnp.int32)
ShortTensor = _legacy_type("ShortTensor", jnp.int16)
CharTensor = _legacy_type("CharTensor", jnp.int8)
ByteTensor = _legacy_type("ByteTensor", jnp.uint8)
BoolTensor = _legacy_type("BoolTensor", jnp.bool_)

CPU_TYPES: dict[str, _LegacyType] = {
    t.__name__: t
    for t in (
        FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, LongTensor, IntTensor,
        ShortTensor, CharTensor, ByteTensor, BoolTensor,
    )
}  # fmt: skip
#: ``spx.cuda.FloatTensor`` & co., for ``spx.cuda`` to re-export.
CUDA_TYPES: dict[str, _LegacyType] = {
    name: _legacy_type(name, t.dtype, cuda=True) for name, t in CPU_TYPES.items()
}


def legacy_type_of(t: Any) -> _LegacyType:
    """The legacy type ``t`` is an instance of (``spx.FloatTensor`` for a float32 CPU tensor):
    ``t.new(...)`` calls it.

    Raises:
        TypeError: a dtype with no legacy type (complex, uint16, ...), naming the fix.
    """
    types = CUDA_TYPES if _on_cuda(t) else CPU_TYPES
    for cls in types.values():
        if canonical(cls.dtype) == t.dtype:
            return cls
    raise TypeError(
        f"new(): tensors of dtype {t.dtype} have no legacy constructor; use "
        "t.new_zeros(size), t.new_empty(size) or t.new_tensor(data)"
    )


def _type_name(cls: _LegacyType) -> str:
    return f"{cls.__module__}.{cls.__name__}"


# -- devices -----------------------------------------------------------------------------------
def _on_cuda(t: Any) -> bool:
    """Whether ``t`` lives on a GPU. Without one nothing is computed to answer."""
    if _accelerator_platform() != "gpu":
        return False
    dev = t.device  # computes a pending tensor, as t.is_cuda does
    if dev is None:  # traced: it lives where the program runs
        dev = _context.current().device or jax.devices()[0]
    return dev.platform == "gpu"


def _cpu_device() -> jax.Device:
    """``spx.device("cpu")`` (the rank's own device), or the first CPU device when that is not
    one: a rank whose device is a GPU."""
    from spx._device import device

    own = device("cpu")
    return own if own.platform == "cpu" else jax.local_devices(backend="cpu")[0]


def _device_type(device: Any, where: str) -> str:
    """torch's device type of a ``device=`` argument: ``"cpu"``, ``"cuda"``, ..."""
    if isinstance(device, jax.Device):
        return "cuda" if device.platform == "gpu" else device.platform
    if isinstance(device, str):
        kind = device.partition(":")[0].strip().lower()
        return "cuda" if kind == "gpu" else kind
    if isinstance(device, int) and not isinstance(device, bool):
        return "cuda"  # torch: an int is an index of the accelerator
    raise TypeError(
        f"{where}: device must be a str, a jax.Device or an int, got "
        f"{type(device).__name__} {device!r:.40}; e.g. device='cpu'"
    )


def _placement(cls: _LegacyType, device: Any, where: str) -> Any:
    """Where ``cls(...)`` puts its tensor: the checked ``device=``, else the type's device
    (None: the default device, when that is the type's)."""
    want = "cuda" if cls.is_cuda else "cpu"
    if device is None:
        if cls.is_cuda:
            return "cuda"
        return _cpu_device() if _accelerator_platform() == "gpu" else None
    kind = _device_type(device, where)
    if kind != want:
        raise RuntimeError(
            f"{where}: legacy constructor expects device type: {want} but device type: {kind} "
            f"was passed. Make the tensor with spx.zeros(size, device={device!r}) / "
            f"spx.tensor(data, device={device!r}), or move it: .to({device!r})"
        )
    return device


# -- construction ------------------------------------------------------------------------------
def _call_text(cls: _LegacyType, args: tuple, kwargs: dict) -> str:
    shown = [f"{a!r:.40}" for a in args] + [f"{k}={v!r:.40}" for k, v in kwargs.items()]
    return f"{_type_name(cls)}({', '.join(shown)})"


def _type_label(x: Any) -> str:
    kind = type(x)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


def _as_dim(a: Any, first: bool) -> int | None:
    """``a`` as one dimension of a size, or None. As torch: Python and numpy ints, 0-d integer
    numpy arrays; a bool only after the first dimension."""
    if isinstance(a, bool):
        return None if first else int(a)
    if isinstance(a, int | np.integer):
        return int(a)
    if isinstance(a, np.ndarray) and a.ndim == 0 and np.issubdtype(a.dtype, np.integer):
        return int(a)
    return None


def _bad_keyword(cls: _LegacyType, where: str, key: str, value: Any) -> TypeError:
    if key == "dtype":
        from spx.ops.types import _as_dtype

        dt = _as_dtype(value)
        typed = [n for n, t in CPU_TYPES.items() if dt is not None and t.dtype == dt]
        use = f"spx.{typed[0]}(...), " if typed else ""
        return TypeError(
            f"{where}: the legacy constructors take no dtype= (the type is the dtype). Use "
            f"{use}spx.zeros(size, dtype=...) or spx.tensor(data, dtype=...)"
        )
    if key == "requires_grad":
        return TypeError(
            f"{where}: the legacy constructors take no requires_grad=. Call .requires_grad_() "
            "on the result, or use spx.zeros(size, requires_grad=True) / "
            "spx.tensor(data, requires_grad=True)"
        )
    return TypeError(
        f"{where}: unexpected keyword argument {key!r}; the legacy constructors take "
        f"{_CONSTRUCTOR_FORMS.format(name=_type_name(cls))}, and device="
    )


def _construct(cls: _LegacyType, args: tuple, kwargs: dict) -> Any:
    """``cls(*args, **kwargs)`` with torch's legacy constructor's forms and errors."""
    from spx._tensor._dims import Size
    from spx._tensor.tensor import Tensor

    where = _call_text(cls, args, kwargs)
    kwargs = dict(kwargs)
    device = kwargs.pop("device", None)
    keyed = {k: kwargs.pop(k) for k in ("other", "data", "size") if k in kwargs}
    if kwargs:
        key = next(iter(kwargs))
        raise _bad_keyword(cls, where, key, kwargs[key])
    forms = _CONSTRUCTOR_FORMS.format(name=_type_name(cls))
    if keyed:
        if args or len(keyed) > 1:
            raise TypeError(f"{where}: invalid combination of arguments; expected {forms}")
        (form, value), = keyed.items()  # fmt: skip
        if form == "size" and not (
            isinstance(value, list | tuple) and all(_as_dim(a, False) is not None for a in value)
        ):
            raise TypeError(f"{where}: size= must be a tuple of ints, got {value!r:.40}")
        if form == "other" and not isinstance(value, Tensor):
            raise TypeError(f"{where}: other= must be a tensor, got {_type_label(value)}")
        args = (Size(value),) if form == "size" else (value,)
        if form == "data" and isinstance(value, Tensor | Size):
            return _from_data(cls, value, device, where)
    if not args:
        return _zeros(cls, (0,), device, where)
    first = args[0]
    if isinstance(first, Tensor):
        if len(args) > 1:
            raise TypeError(f"{where}: invalid combination of arguments; expected {forms}")
        return _alias(cls, first, device, where)
    if len(args) == 1 and isinstance(first, Size):
        args = tuple(first)
        if not args:
            return _zeros(cls, (), device, where)
    elif len(args) == 1 and _as_dim(first, True) is None:
        return _from_data(cls, first, device, where)
    if _as_dim(args[0], True) is None:
        raise TypeError(
            f"{where}: invalid combination of arguments ({', '.join(map(_type_label, args))}); "
            f"expected {forms}"
        )
    size = []
    for i, a in enumerate(args):
        dim = _as_dim(a, i == 0 and not isinstance(first, Size))
        if dim is None:
            raise TypeError(
                f"{where}: size[{i}] must be an int, got {_type_label(a)} {a!r:.40}. Pass ints "
                f"for a size ({_type_name(cls)}(2, 3)) or one list for data "
                f"({_type_name(cls)}([2, 3.5]))"
            )
        size.append(dim)
    return _zeros(cls, tuple(size), device, where)


def _zeros(cls: _LegacyType, size: tuple[int, ...], device: Any, where: str) -> Any:
    from spx.ops.creation import zeros

    negative = [d for d in size if d < 0]
    if negative:
        raise RuntimeError(
            f"{where}: Trying to create tensor with negative dimension {negative[0]}: "
            f"{list(size)}; every dimension of a size must be >= 0"
        )
    placed = _placement(cls, device, where)
    return zeros(size, dtype=canonical(cls.dtype), device=placed)


def _from_data(cls: _LegacyType, data: Any, device: Any, where: str) -> Any:
    from spx.ops.creation import _finish, _numeric

    if isinstance(data, str | bytes | bytearray):
        raise TypeError(
            f"{where}: new(): invalid data type {type(data).__name__!r}; pass numbers, "
            "(nested) lists of numbers or a numpy array"
        )
    if isinstance(data, Mapping) or not (hasattr(data, "__getitem__") and hasattr(data, "__len__")):
        raise TypeError(
            f"{where}: new(): data must be a sequence (got {_type_label(data)}); pass a list or "
            f"numpy array of data ({_type_name(cls)}([1, 2])) or ints for a size "
            f"({_type_name(cls)}(2, 3))"
        )
    placed = _placement(cls, device, where)
    dtype = canonical(cls.dtype)
    try:
        value = _numeric(data, dtype, _type_name(cls).removeprefix("spx."))
    except OverflowError as e:
        narrowed = (
            f" ({_type_name(cls)} holds {dtype.name} unless jax_enable_x64 is on)"
            if dtype != cls.dtype
            else ""
        )
        raise RuntimeError(
            f"{where}: value cannot be converted to type {dtype.name} without overflow ({e})"
            f"{narrowed}; pass values in {dtype.name}'s range, or use a wider type"
        ) from None
    return _finish(value, placed, False)


def _alias(cls: _LegacyType, other: Any, device: Any, where: str) -> Any:
    if device is not None:
        raise RuntimeError(
            f"{where}: Legacy tensor constructor of the form {_type_name(cls)}(tensor, "
            "device=device) is not supported. Use spx.tensor(...) or spx.as_tensor(...) "
            "instead."
        )
    if not isinstance(other, cls):
        raise TypeError(
            f"{where}: expected a tensor of type {_type_name(cls)} (dtype "
            f"{canonical(cls.dtype).name}), got one of type {tensor_type_name(other)} (dtype "
            f"{other.dtype.name}). Convert it: t.type({_type_name(cls)}), or copy it: "
            f"spx.tensor(t, dtype=spx.{cls.dtype.name})"
        )
    # torch returns other.alias(): the same storage, differentiable. A view of the whole tensor.
    return other.view(other.shape)


# -- Tensor.type ---------------------------------------------------------------------------------
def tensor_type_name(t: Any) -> str:
    """``t.type()``: ``"spx.FloatTensor"``, ``"spx.cuda.LongTensor"``, ... (torch's names)."""
    dt = np.dtype(t.dtype)
    # int32 is what spx holds torch's int64 in while x64 is off.
    name = "Long" if dt == np.int32 and canonical(np.int64) == dt else _scalar_name(dt)
    return f"spx.{'cuda.' if _on_cuda(t) else ''}{name}Tensor"


_TYPE_NAMES = (
    "a type name ('spx.LongTensor', 'spx.cuda.FloatTensor', 'spx.Tensor'), a legacy type "
    "(spx.LongTensor) or a dtype (spx.int64)"
)


def _target(target: Any) -> tuple[np.dtype, bool | None]:
    """What ``t.type(target)`` converts to: a dtype, and whether on CUDA (None: where ``t`` is)."""
    from spx._tensor.tensor import Tensor
    from spx.ops.types import _as_dtype, get_default_dtype

    if isinstance(target, _LegacyType):
        return target.dtype, target.is_cuda
    if target is Tensor:
        return get_default_dtype(), False  # torch: the default tensor type
    if isinstance(target, str):
        for prefix, cuda in (("spx.cuda.", True), ("spx.", False)):
            if target.startswith(prefix):
                rest = target[len(prefix) :]
                if rest == "Tensor" and not cuda:
                    return get_default_dtype(), False
                dt = _BY_SCALAR_NAME.get(rest.removesuffix("Tensor"))
                if rest.endswith("Tensor") and dt is not None:
                    return dt, cuda
        hint = f"expected {_TYPE_NAMES}"
        if target.startswith("torch."):
            hint = f"did you mean {'spx.' + target.removeprefix('torch.')!r}? spx's types are spx.*"
        raise ValueError(f"invalid type: {target!r}; {hint}")
    dt = _as_dtype(target)
    if dt is not None:
        return dt, None
    if isinstance(target, type):
        raise ValueError(f"invalid type: {target.__name__!r}; expected {_TYPE_NAMES}")
    raise TypeError(
        f"dtype must be a type, str, or dtype object, got {_type_label(target)} "
        f"{target!r:.40}; pass {_TYPE_NAMES}"
    )


def tensor_type(t: Any, dtype: Any, non_blocking: bool, kwargs: dict) -> Any:
    """``t.type(dtype, non_blocking, **kwargs)`` (see ``Tensor.type``)."""
    kwargs = dict(kwargs)
    kwargs.pop("memory_format", None)  # accepted, as by .to(): spx has no memory formats
    if "async" in kwargs:
        kwargs.pop("async")
        warnings.warn(
            "Tensor.type(..., async=...) is deprecated: use non_blocking= instead",
            UserWarning,
            stacklevel=3,
        )
    if kwargs:
        raise TypeError(f"type() got an unexpected keyword argument {next(iter(kwargs))!r}")
    if dtype is None:
        return tensor_type_name(t)
    dt, cuda = _target(dtype)
    out = t.to(dt)  # t itself when nothing changes
    if cuda is not None and _on_cuda(out) != cuda:
        out = out.to("cuda" if cuda else _cpu_device())
    return out


# -- the default tensor type -------------------------------------------------------------------
_DEPRECATED = (
    "spx.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
    "spx.set_default_dtype() instead (spx has no set_default_device: new tensors go to JAX's "
    "default device)."
)


def _import_dotted_name(name: str) -> Any:
    """``name`` looked up as torch's ``_import_dotted_name`` does (``spx.cuda``'s types too)."""
    if name.startswith("spx.cuda.") and name.removeprefix("spx.cuda.") in CUDA_TYPES:
        return CUDA_TYPES[name.removeprefix("spx.cuda.")]
    module, *attrs = name.split(".")
    obj = importlib.import_module(module)
    for attr in attrs:
        if not hasattr(obj, attr):
            raise AttributeError(
                f"module {getattr(obj, '__name__', module)!r} has no attribute {attr!r} (in "
                f"{name!r}); expected a floating type's name such as 'spx.DoubleTensor'"
            )
        obj = getattr(obj, attr)
    return obj


def set_default_tensor_type(t: Any, /) -> None:
    """Make ``t``'s dtype the default float dtype (mirrors ``torch.set_default_tensor_type``,
    deprecated in torch since 2.1: warns as torch does; use :func:`spx.set_default_dtype`).

    Only the dtype is set: torch also makes ``t``'s device type the default (CPU for
    ``spx.FloatTensor``), but spx has no default-device setting; new tensors go to JAX's default
    device as always. torch warns once per process; spx warns through ``warnings`` (once per
    calling line under Python's default filter).

    Args:
        t: a floating legacy type (``spx.FloatTensor``, ``spx.DoubleTensor``,
            ``spx.HalfTensor``, ``spx.BFloat16Tensor``) or its name (``"spx.DoubleTensor"``).

    Raises:
        TypeError: ``t`` is not a floating legacy type (torch's error).
        AttributeError: a name that names nothing (torch's error).
        ValueError: ``spx.DoubleTensor`` while ``jax_enable_x64`` is off (as
            ``spx.set_default_dtype(spx.float64)``; the message names the fix).

    Example:
        >>> import spx, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     spx.set_default_tensor_type(spx.HalfTensor)
        >>> spx.tensor([1.5]).dtype
        dtype('float16')
        >>> spx.set_default_dtype(spx.float32)
    """
    from spx.ops.types import set_default_dtype

    warnings.warn(_DEPRECATED, UserWarning, stacklevel=2)
    given = t
    if isinstance(t, str):
        t = _import_dotted_name(t)
    if not isinstance(t, _LegacyType):
        raise TypeError(
            "invalid type object: only floating-point types are supported as the default type "
            f"(got {given!r:.60}); pass spx.FloatTensor, spx.DoubleTensor, spx.HalfTensor or "
            "spx.BFloat16Tensor, or set a dtype with spx.set_default_dtype(...)"
        )
    if t.dtype.name not in _FLOATS:
        raise TypeError(
            "only floating-point types are supported as the default type (got "
            f"{_type_name(t)}); pass spx.FloatTensor, spx.DoubleTensor, spx.HalfTensor or "
            "spx.BFloat16Tensor"
        )
    set_default_dtype(t.dtype)
