"""``Parameter``: a Tensor that a Module registers and optimizers train (``torch.nn.Parameter``).

A Parameter is a leaf :class:`spx.Tensor` with ``requires_grad=True``: operations on it record
autograd history, ``loss.backward()`` accumulates into its ``.grad``, optimizers update it in
place under ``no_grad``. Like every Tensor it is a JAX pytree with one leaf, so a Module holding
Parameters can be passed to ``jax.jit`` / ``jax.tree.map``.

:class:`UninitializedParameter` is a lazy parameter (``nn.LazyLinear``): its shape is known only
after the module's first forward call, when :meth:`~UninitializedParameter.materialize` turns
the very same object into an ordinary Parameter, so an optimizer built earlier keeps working.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from spx._tensor.graph import Node, Storage, value_node
from spx._tensor.tensor import Tensor
from spx._tensor.tensor import _flatten_value as _tensor_flatten
from spx._tensor.tensor import _unflatten_value as _tensor_unflatten

_UNINITIALIZED_MSG = (
    "{what} of an uninitialized (lazy) parameter of shape ? was read. Its shape is only known "
    "after the module's first forward call. Run one forward pass first, e.g.\n"
    "    model(example_input)\n"
    "or give the size up front: nn.Linear(in_features, out_features) instead of "
    "nn.LazyLinear(out_features)."
)


def _as_array(value: Any, what: str) -> jax.Array:
    """A jax array for a parameter's value (host data copied), with a clear error otherwise."""
    from spx.ops.creation import as_value

    if isinstance(value, Tensor | jax.Array) or hasattr(value, "__array__"):
        return as_value(value)
    raise TypeError(
        f"{what} must be a Tensor, jax.Array or numpy.ndarray, got {type(value).__name__}: "
        f"{value!r:.80}. Wrap Python numbers or lists first, e.g. spx.tensor({value!r:.40})."
    )


class Parameter(Tensor):
    """A trainable tensor registered by a Module (mirrors ``torch.nn.Parameter``).

    Args:
        data: the initial value (a Tensor, ``jax.Array`` or ``numpy.ndarray``); the Parameter
            holds the same value (a Tensor's current value, host data copied).
        requires_grad: whether autograd and optimizers treat it as trainable.

    Example:
        >>> import spx
        >>> w = spx.nn.Parameter(spx.ones(2, 3))
        >>> (spx.ones(4, 2) @ w).sum().backward()
        >>> w.grad.shape
        spx.Size([2, 3])
    """

    __slots__ = ()

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            data = jnp.zeros((0,), jnp.float32)  # torch: Parameter() is an empty tensor
        array = _as_array(data, "Parameter data")
        if requires_grad and not jnp.issubdtype(array.dtype, jnp.inexact):
            raise RuntimeError(
                f"Only Tensors of floating point and complex dtype can require gradients (got "
                f"{array.dtype}); pass requires_grad=False or a float value"
            )
        self._init(Storage(value_node(array)), bool(requires_grad))

    @property
    def is_uninitialized(self) -> bool:
        """True for a lazy parameter whose shape is not known yet."""
        return False

    @property
    def data(self) -> Tensor:
        """A detached alias: same storage, no autograd (torch's ``param.data``)."""
        return Tensor.data.fget(self)

    @data.setter
    def data(self, value: Any) -> None:
        # torch: "Variable data has to be a tensor"; say what to pass instead.
        Tensor.data.fset(self, _as_array(value, "Parameter.data"))


class UninitializedParameter(Parameter):
    """A lazy parameter whose shape is fixed by the module's first forward call.

    Mirrors ``torch.nn.UninitializedParameter``: :meth:`materialize` turns this very object into
    an ordinary :class:`Parameter`, so an optimizer built before the first call keeps working.

    Example:
        >>> import spx, jax.numpy as jnp
        >>> p = spx.nn.UninitializedParameter()
        >>> p.materialize(jnp.zeros((3,)))
        >>> p.shape
        spx.Size([3])
    """

    __slots__ = ()

    def __init__(self, requires_grad: bool = True, dtype: Any = jnp.float32) -> None:
        self._init(Storage(_NO_VALUE), bool(requires_grad))

    @property
    def is_uninitialized(self) -> bool:
        return True

    def _cur(self) -> Storage:
        if self._s.node is _NO_VALUE:
            raise RuntimeError(_UNINITIALIZED_MSG.format(what="The value"))
        return self._s

    def _ref(self, grad_on: bool) -> Any:
        self._cur()
        return Parameter._ref(self, grad_on)

    @property
    def _data(self) -> Any:
        node = self._s.node
        return None if node is _NO_VALUE else node.values[self._s.idx]

    @_data.setter
    def _data(self, array: Any) -> None:
        self._s = Storage(_NO_VALUE if array is None else value_node(array))

    @property
    def shape(self) -> Any:
        raise RuntimeError(_UNINITIALIZED_MSG.format(what="The shape"))

    @property
    def data(self) -> Tensor:
        return Tensor.data.fget(self)  # raises: no value yet

    @data.setter
    def data(self, value: Any) -> None:
        self.materialize(value)  # a value fixes the shape, as a first forward does

    def materialize(self, value: Any) -> None:
        """Give the parameter its first value; the object becomes a plain :class:`Parameter`."""
        array = _as_array(value, "UninitializedParameter.materialize value")
        self._s = Storage(value_node(array))
        self.__class__ = Parameter
        from spx.nn import _structure

        _structure.bump()

    def __repr__(self) -> str:
        return "<UninitializedParameter>"


# The storage node of a lazy parameter before its first forward (no shape, no value). Not an
# array: importing spx must not start the JAX backend.
_NO_VALUE = Node(None, (), (), (None,), (None,), False)


# A lazy parameter without a value has no child (as an empty subtree), like a None parameter
# slot. (Tensor registers every subclass as a pytree node with these hooks.)
def _flatten_param(p: Parameter) -> tuple[tuple[Any], tuple[type, bool]]:
    if type(p) is UninitializedParameter and p._s.node is _NO_VALUE:
        return (None,), (UninitializedParameter, p._rg)
    return _tensor_flatten(p)


def _unflatten_param(aux: tuple[type, bool], children: tuple[Any]) -> Parameter:
    cls, requires_grad = aux
    if cls is UninitializedParameter:
        if children[0] is None:
            return UninitializedParameter(requires_grad)
        aux = (Parameter, requires_grad)
    return _tensor_unflatten(aux, children)


Parameter._tree_flatten = staticmethod(_flatten_param)
Parameter._tree_unflatten = staticmethod(_unflatten_param)
