"""``Parameter``: a named, trainable array with a ``.grad``, as in ``torch.nn.Parameter``.

A Parameter is a mutable holder around an immutable ``jax.Array``: optimizers, ``spx.backward``
and ``spx.compile`` replace ``.data`` and ``.grad`` with new arrays, so every module, optimizer and
schedule that refers to the Parameter object sees the update. It behaves like an array wherever
one is expected: ``x @ p``, ``p.T``, ``p[None]``, ``np.asarray(p)``, ``jnp.asarray(p)`` all work.
``jnp`` functions such as ``jnp.sin`` need an array, not an arbitrary object: pass ``p.data``
(or ``jnp.asarray(p)``) there.

It is also a JAX pytree node with one child (the data), so a Module containing Parameters can be
passed straight to ``jax.jit`` / ``jax.grad`` / ``jax.tree.map``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx._host import device_array

_UNINITIALIZED_MSG = (
    "{what} of an uninitialized (lazy) parameter of shape ? was read. Its shape is only known "
    "after the module's first forward call. Run one forward pass first, e.g.\n"
    "    model(example_input)\n"
    "or give the size up front: nn.Linear(in_features, out_features) instead of "
    "nn.LazyLinear(out_features)."
)


def _as_array(value: Any, what: str) -> jax.Array:
    if isinstance(value, Parameter):
        return value.data
    if isinstance(value, jax.Array):
        return value
    if isinstance(value, np.ndarray | np.generic):
        return device_array(value)  # a host copy: numpy memory is mutable
    raise TypeError(
        f"{what} must be a jax.Array or numpy.ndarray, got {type(value).__name__}: {value!r:.80}. "
        f"Wrap Python numbers or lists first, e.g. spx.tensor({value!r:.40})."
    )


class Parameter:
    """A trainable array registered by a Module (mirrors ``torch.nn.Parameter``).

    Args:
        data: the initial value, a ``jax.Array`` or ``numpy.ndarray`` of any shape.
        requires_grad: whether ``spx.backward`` / optimizers treat it as trainable.

    Attributes:
        data: the current value (``jax.Array``); assign a new array to replace it.
        grad: ``None`` or an array of ``data``'s shape accumulated by ``spx.backward``.
        requires_grad: trainable flag.

    Example:
        >>> import spx, jax.numpy as jnp
        >>> w = spx.nn.Parameter(jnp.ones((2, 3)))
        >>> (jnp.ones((4, 2)) @ w).shape
        (4, 3)
    """

    __slots__ = ("__weakref__", "_data", "_grad", "requires_grad")
    # Let jax.Array.__radd__ & co. defer to us, and numpy ufuncs treat us as array-like.
    __array_priority__ = 200

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            data = jnp.zeros((0,), jnp.float32)  # torch: Parameter() is an empty tensor
        self._data = _as_array(data, "Parameter data")
        self._grad: jax.Array | None = None
        self.requires_grad = bool(requires_grad)

    # -- value ------------------------------------------------------------------------------
    @property
    def data(self) -> jax.Array:
        return self._data

    @data.setter
    def data(self, value: Any) -> None:
        self._data = _as_array(value, "Parameter.data")

    @property
    def grad(self) -> jax.Array | None:
        """The accumulated gradient (``None`` until a backward writes one).

        Assigning checks the value as torch does: a gradient must be an array of the
        parameter's shape and dtype, so a wrong one fails here rather than reshaping the
        parameter at the next ``optimizer.step()``.
        """
        return self._grad

    @grad.setter
    def grad(self, value: Any) -> None:
        self._grad = None if value is None else _checked_grad(self, value)

    @property
    def is_uninitialized(self) -> bool:
        """True for a lazy parameter whose shape is not known yet."""
        return False

    def requires_grad_(self, requires_grad: bool = True) -> Parameter:
        self.requires_grad = bool(requires_grad)
        return self

    def detach(self) -> jax.Array:
        """The value with gradient flow stopped (``jax.lax.stop_gradient``)."""
        return jax.lax.stop_gradient(self.data)

    def numpy(self) -> np.ndarray:
        return np.asarray(self.data)

    def item(self) -> Any:
        return self.data.item()

    def numel(self) -> int:
        return int(np.prod(self.data.shape, dtype=np.int64))

    def size(self, dim: int | None = None) -> tuple[int, ...] | int:
        """torch's ``size()``: the shape, or one dimension of it."""
        return self.data.shape if dim is None else self.data.shape[dim]

    def dim(self) -> int:
        return self.data.ndim

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def dtype(self) -> Any:
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def T(self) -> jax.Array:
        return self.data.T

    @property
    def mT(self) -> jax.Array:
        return self.data.mT

    @property
    def device(self) -> jax.Device | None:
        devices = getattr(self.data, "devices", None)
        if devices is None:
            return None
        found = devices()
        return next(iter(found)) if len(found) == 1 else None

    def __getattr__(self, name: str) -> Any:
        # Array methods (reshape, sum, astype, ...) come from the data. __getattr__ only runs
        # for names the class does not define, so the slots above stay fast.
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.data, name)

    # -- array protocol ----------------------------------------------------------------------
    def __jax_array__(self) -> jax.Array:
        return self.data

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = np.asarray(self.data)
        return out if dtype is None else out.astype(dtype)

    def __len__(self) -> int:
        return len(self.data)

    def __iter__(self):
        return iter(self.data)

    def __getitem__(self, index: Any) -> jax.Array:
        return self.data[index]

    def __bool__(self) -> bool:
        return bool(self.data)

    def __float__(self) -> float:
        return float(self.data)

    def __int__(self) -> int:
        return int(self.data)

    def __index__(self) -> int:
        return self.data.__index__()

    def __repr__(self) -> str:
        return f"Parameter containing:\n{self.data!r}"

    def __neg__(self) -> jax.Array:
        return -self.data

    def __pos__(self) -> jax.Array:
        return self.data

    def __abs__(self) -> jax.Array:
        return abs(self.data)

    def __invert__(self) -> jax.Array:
        return ~self.data


def _checked_grad(param: Parameter, value: Any) -> jax.Array:
    """``value`` as a gradient of ``param``, or a clear error (torch refuses the same cases)."""
    if isinstance(value, Parameter):
        value = value.data
    if not isinstance(value, jax.Array | np.ndarray | np.generic):
        raise TypeError(
            f"assigned grad expected to be a jax.Array or numpy.ndarray, got "
            f"{type(value).__name__}: {value!r:.60}. Assign an array of the parameter's shape "
            f"{_shape_text(param)}, e.g. p.grad = jnp.zeros_like(p.data)."
        )
    if isinstance(value, np.ndarray | np.generic):
        value = device_array(value)
    data = param._data
    if data is None:  # a lazy parameter: nothing to compare against yet
        return value
    if value.shape != data.shape:
        raise RuntimeError(
            f"assigned grad has data of a different size: the grad has shape "
            f"{tuple(value.shape)}, the parameter {tuple(data.shape)}. A gradient must have its "
            "parameter's shape; reshape it (g.reshape(p.shape)) or assign it to the right "
            "parameter."
        )
    if value.dtype != data.dtype:
        raise RuntimeError(
            f"assigned grad has data of a different type: the grad is {value.dtype}, the "
            f"parameter {data.dtype} (shape {tuple(data.shape)}). Cast it first: "
            f"p.grad = g.astype(p.dtype)."
        )
    return value


def _shape_text(param: Parameter) -> str:
    return "?" if param._data is None else str(tuple(param._data.shape))


def _data_of(x: Any) -> Any:
    return x.data if isinstance(x, Parameter) else x


def _binary(name: str):
    def method(self: Parameter, other: Any) -> jax.Array:
        return getattr(self.data, name)(_data_of(other))

    method.__name__ = name
    return method


for _name in (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
    "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
    "__rpow__", "__matmul__", "__rmatmul__", "__and__", "__rand__", "__or__", "__ror__",
    "__xor__", "__rxor__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__",
):  # fmt: skip
    setattr(Parameter, _name, _binary(_name))
# __eq__ above returns an elementwise array as torch does; keep identity hashing (the C slot:
# optimizer state lookups hash Parameters on every compiled step).
Parameter.__hash__ = object.__hash__  # type: ignore[method-assign]


class UninitializedParameter(Parameter):
    """A lazy parameter whose shape is fixed by the module's first forward call.

    Mirrors ``torch.nn.UninitializedParameter``: :meth:`materialize` turns this very object into
    an ordinary :class:`Parameter`, so an optimizer built before the first call keeps working.

    Example:
        >>> import spx, jax.numpy as jnp
        >>> p = spx.nn.UninitializedParameter()
        >>> p.materialize(jnp.zeros((3,)))
        >>> p.shape
        (3,)
    """

    __slots__ = ()

    def __init__(self, requires_grad: bool = True, dtype: Any = jnp.float32) -> None:
        self._data = None  # type: ignore[assignment]
        self._grad = None
        self.requires_grad = bool(requires_grad)

    @property
    def data(self) -> jax.Array:
        raise RuntimeError(_UNINITIALIZED_MSG.format(what="The value"))

    @data.setter
    def data(self, value: Any) -> None:
        self.materialize(value)

    @property
    def is_uninitialized(self) -> bool:
        return True

    @property
    def shape(self) -> tuple[int, ...]:
        raise RuntimeError(_UNINITIALIZED_MSG.format(what="The shape"))

    def materialize(self, value: Any) -> None:
        """Give the parameter its first value; the object becomes a plain :class:`Parameter`."""
        array = _as_array(value, "UninitializedParameter.materialize value")
        self.__class__ = Parameter
        self._data = array
        from spx.nn import _structure

        _structure.bump()

    def __repr__(self) -> str:
        return "<UninitializedParameter>"


def _flatten(p: Parameter) -> tuple[tuple[Any], tuple[type, bool]]:
    return (p._data,), (type(p), p.requires_grad)


def _unflatten(aux: tuple[type, bool], children: tuple[Any]) -> Parameter:
    # No validation: jax passes placeholders (None, object()) through unflatten.
    cls, requires_grad = aux
    p = object.__new__(Parameter if cls is UninitializedParameter else cls)
    p._data = children[0]
    p._grad = None
    p.requires_grad = requires_grad
    return p


for _cls in (Parameter, UninitializedParameter):
    jax.tree_util.register_pytree_node(_cls, _flatten, _unflatten)
