"""Conversions of :class:`spx.Tensor`: dtypes, devices, Python and numpy values, copies.

``to(...)`` follows torch's overloads (``to(dtype)``, ``to(device)``, ``to(device, dtype)``,
``to(other)``) and returns ``self`` when nothing changes. ``item()``, ``tolist()``, ``numpy()``,
``float(t)``, ``bool(t)``, printing and ``np.asarray(t)`` need the value: they compute what is
pending (one compiled program) — a synchronization point, as in torch on an accelerator.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx import _user_code
from spx._tensor import checks, graph
from spx._tensor.dispatch import apply, stop_gradient
from spx._tensor.methods._dtypes import canonical, cast
from spx.constants import check_memory_format

_NUMPY_REQUIRES_GRAD = (
    "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
)
_JNP_REQUIRES_GRAD = (
    "A JAX/numpy function was called on a Tensor that requires grad ({what}){call}: its result "
    "would not be part of the autograd graph, so loss.backward() would silently miss this "
    "path. {fix}, or t.detach() if no gradient should flow here."
)
# ``jnp.tanh(``, ``jax.nn.relu(``, ``np.exp(``, ``jax.lax.dot(`` on the user's line.
_FOREIGN_CALL = re.compile(r"\b(?:jnp|np|numpy|jax\.numpy|jax\.nn|jax\.lax|lax)\.(\w+)\s*\(")
# JAX frames that say nothing about the function the user called.
_PLUMBING = {"reraise_with_filtered_traceback", "cache_miss", "__call__", "<lambda>", "<genexpr>"}
_JAX_DIR = os.path.dirname(jax.__file__) + os.sep


def _spx_equivalent(name: str) -> str | None:
    """``spx.tanh(t)``, ``spx.nn.functional.relu(t)`` or ``t.sum()`` for a JAX/numpy name."""
    import spx
    from spx.nn import functional

    if callable(spx.__dict__.get(name)):
        return f"spx.{name}(t)"
    if callable(functional.__dict__.get(name)):
        return f"spx.nn.functional.{name}(t)"
    from spx._tensor.tensor import Tensor

    if callable(getattr(Tensor, name, None)):
        return f"t.{name}()"
    return None


def _called_jax_function(where: _user_code.Location | None) -> str | None:
    """The JAX function the user's line called: an operator of a jax array (the JAX frame right
    under the user's frame says so), else the one ``jnp.f(`` call on the line, else that frame's
    function (jitted functions run from C++ and leave no frame of their own)."""
    frame, below = sys._getframe(2), None
    while frame is not None and _user_code.is_library(frame.f_code.co_filename):
        name = frame.f_code.co_name
        if frame.f_code.co_filename.startswith(_JAX_DIR) and name not in _PLUMBING:
            below = name
        frame = frame.f_back
    if below is not None and below.startswith("_operator_"):
        return below
    calls = _FOREIGN_CALL.findall(where.line) if where is not None else []
    return calls[0] if len(calls) == 1 else below


def jnp_requires_grad_message(what: str) -> str:
    """The error for a Tensor that requires grad entering a JAX/numpy function: it names the
    user's line, the JAX function and, where spx has one, the function to use instead."""
    where = _user_code.from_stack(2)
    call = f" at {where.filename}:{where.lineno}: `{where.line}`" if where and where.line else ""
    fix = "Use the spx equivalent (a Tensor method, an spx function, spx.nn.functional)"
    name = _called_jax_function(where)
    if name is not None and name.startswith("_operator_"):
        op = name.removeprefix("_operator_")
        call += f" (the {op} operator of a jax array)"
        fix = "Make both operands spx Tensors (spx.as_tensor(array)), so the operator records it"
    elif name is not None:
        call += f" (in {name})"
        equivalent = _spx_equivalent(name)
        if equivalent is not None:
            fix = f"Use {equivalent} instead, which records the gradient"
    return _JNP_REQUIRES_GRAD.format(what=what, call=call, fix=fix)


def _is_dtype(obj: Any) -> bool:
    if isinstance(obj, str):
        return False
    try:
        np.dtype(obj)
    except TypeError:
        return False
    return not isinstance(obj, jax.Device)


def _device_of_value(value: Any) -> Any:
    devices = getattr(value, "devices", None)
    if devices is None:
        return None
    try:
        found = devices()
    except Exception:  # a tracer, or a deleted array
        return None
    return next(iter(found)) if len(found) == 1 else None


_stop_gradient = stop_gradient


def _real(x: Any) -> Any:
    return jnp.real(x)


def _imag(x: Any) -> Any:
    return jnp.imag(x)


def _without_history(t: Any) -> Any:
    """A new tensor over ``t``'s value, recorded with grad mode off: no autograd history."""
    previous = graph.set_grad_enabled_flag(False)
    try:
        return apply(_stop_gradient, (), (t,))
    finally:
        graph.set_grad_enabled_flag(previous)


class ConvertMethods:
    """dtype/device conversion, Python/numpy values, copies."""

    __slots__ = ()

    # -- dtype and device --------------------------------------------------------------------
    @property
    def dtype(self) -> Any:
        return self._aval.dtype

    @property
    def device(self) -> jax.Device | None:
        """The device holding the value (computed if pending), or None under a transform."""
        return _device_of_value(self._value())

    @property
    def is_cuda(self) -> bool:
        dev = self.device
        return dev is not None and dev.platform == "gpu"

    @property
    def is_cpu(self) -> bool:
        dev = self.device
        return dev is None or dev.platform == "cpu"

    def get_device(self) -> int:
        dev = self.device
        return -1 if dev is None or dev.platform == "cpu" else dev.id

    def is_floating_point(self) -> bool:
        return bool(jnp.issubdtype(self.dtype, jnp.floating))

    def is_complex(self) -> bool:
        return bool(jnp.issubdtype(self.dtype, jnp.complexfloating))

    def is_signed(self) -> bool:
        return bool(jnp.issubdtype(self.dtype, jnp.signedinteger) or self.is_floating_point())

    # spx has no lazy conjugate/negative bits (torch's views of complex tensors): never set.
    def is_conj(self) -> bool:
        return False

    def is_neg(self) -> bool:
        return False

    def resolve_conj(self) -> Any:
        return self

    def resolve_neg(self) -> Any:
        return self

    @property
    def real(self) -> Any:
        """The real part of a complex tensor, a view as torch's (writes reach the complex
        tensor, its changes reach the part); the tensor itself if it is real."""
        if not self.is_complex():
            return self
        return self._make_view(apply(_real, (), (self,)), _real, ())

    @real.setter
    def real(self, value: Any) -> None:
        self.real.copy_(value)

    @property
    def imag(self) -> Any:
        """The imaginary part of a complex tensor, a view as :attr:`real` (torch's error for
        a real one)."""
        if not self.is_complex():
            raise RuntimeError(
                f"imag is not implemented for tensors with non-complex dtypes ({self.dtype}); "
                "a real tensor's imaginary part is spx.zeros_like(x)"
            )
        return self._make_view(apply(_imag, (), (self,)), _imag, ())

    @imag.setter
    def imag(self, value: Any) -> None:
        self.imag.copy_(value)

    def element_size(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self.itemsize

    def to(self, *args: Any, **kwargs: Any) -> Any:
        """Cast and/or move: ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(t)``."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        check_memory_format(kwargs.pop("memory_format", None), "to()")
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if hasattr(a, "_ref"):
                dtype, device = a.dtype, a.device
            elif isinstance(a, str | jax.Device):
                device = a
            elif a is not None and _is_dtype(a):
                dtype = a
            elif a is not None and not isinstance(a, bool):
                raise TypeError(
                    f"to() received an invalid combination of arguments: {a!r} is neither a "
                    "dtype, a device nor a tensor"
                )
        out = self
        if dtype is not None and canonical(dtype) != out.dtype:
            out = apply(cast, (canonical(dtype),), (out,))
        if device is not None:
            out = out._moved(device)
        if copy and out is self:
            out = self.clone()
        return out

    def _moved(self, device: Any) -> Any:
        from spx._device import device as resolve_device

        target = resolve_device(device)
        value = self._value()
        current = _device_of_value(value)
        if current is None or current == target:
            return self
        if self.requires_grad and graph.STATE.grad_enabled:
            raise NotImplementedError(
                f"moving a tensor that requires grad from {current} to {target} would cut the "
                "autograd graph; move the model and data before computing, or move "
                "t.detach()"
            )
        from spx._tensor.tensor import Tensor

        return Tensor._of(jax.device_put(value, target), requires_grad=self._rg)

    def cpu(self, memory_format: Any = None) -> Any:
        return self.to("cpu")

    def cuda(self, device: Any = None, non_blocking: bool = False, memory_format=None) -> Any:
        return self.to("cuda" if device is None else f"cuda:{int(getattr(device, 'id', device))}")

    def type(self, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        """With no ``dtype``, this tensor's legacy type name; else ``self`` converted (mirrors
        ``torch.Tensor.type``).

        ``t.type()`` is torch's string with ``spx``: ``"spx.FloatTensor"``, on a GPU
        ``"spx.cuda.FloatTensor"``; an int32 tensor is ``"spx.LongTensor"`` unless
        ``jax_enable_x64`` is on (int32 is what spx holds torch's int64 in; see
        :mod:`spx._tensor.legacy_types`).

        Args:
            dtype: a type name (``"spx.LongTensor"``, ``"spx.cuda.FloatTensor"``,
                ``"spx.Tensor"`` for the default type), a legacy type (``spx.LongTensor``) or a
                dtype (``spx.int64``). A type also sets the device type (a CUDA type moves the
                tensor to ``"cuda"``); a dtype keeps the device.
            non_blocking: accepted, as torch's (transfers are JAX's to schedule).
            **kwargs: ``memory_format`` (accepted; spx has no memory formats).

        Returns:
            The name (a str), or the converted tensor: ``self`` when it already has that type.

        Raises:
            ValueError: a name or class that is no tensor type (torch's error).
            TypeError: ``dtype`` is neither a type, a str nor a dtype (torch's error).

        Example:
            >>> import spx
            >>> x = spx.tensor([1.5, 2.5])
            >>> x.type(), x.type("spx.LongTensor").tolist(), x.type(spx.FloatTensor) is x
            ('spx.FloatTensor', [1, 2], True)
        """
        from spx._tensor import legacy_types

        return legacy_types.tensor_type(self, dtype, non_blocking, kwargs)

    def type_as(self, other: Any) -> Any:
        return self.to(other.dtype)

    def float(self, memory_format: Any = None) -> Any:
        return self.to(jnp.float32)

    def double(self, memory_format: Any = None) -> Any:
        return self.to(jnp.float64)

    def cfloat(self, memory_format: Any = None) -> Any:
        """``self`` as complex64 (a real tensor gets zero imaginary parts; mirrors torch).

        Example:
            >>> import spx
            >>> spx.tensor([1.0, -2.0]).cfloat().tolist()
            [(1+0j), (-2+0j)]
        """
        return self.to(jnp.complex64)

    def cdouble(self, memory_format: Any = None) -> Any:
        """``self`` as complex128, which JAX computes as complex64 unless ``jax_enable_x64``
        is on: the same narrowing as ``double()`` (float64 -> float32), for the same reason.

        torch has ``chalf()`` (complex32) too; JAX has no complex type narrower than
        complex64, so spx has no ``chalf()``: use ``cfloat()``.

        Example:
            >>> import spx
            >>> spx.tensor([1.0]).cdouble().dtype == spx.complex64  # x64 off
            True
        """
        return self.to(jnp.complex128)

    def half(self, memory_format: Any = None) -> Any:
        return self.to(jnp.float16)

    def bfloat16(self, memory_format: Any = None) -> Any:
        return self.to(jnp.bfloat16)

    def long(self, memory_format: Any = None) -> Any:
        return self.to(jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)

    def int(self, memory_format: Any = None) -> Any:
        return self.to(jnp.int32)

    def short(self, memory_format: Any = None) -> Any:
        return self.to(jnp.int16)

    def char(self, memory_format: Any = None) -> Any:
        return self.to(jnp.int8)

    def byte(self, memory_format: Any = None) -> Any:
        return self.to(jnp.uint8)

    def bool(self, memory_format: Any = None) -> Any:
        return self.to(jnp.bool_)

    def pin_memory(self, device: Any = None) -> Any:
        return self

    def share_memory_(self) -> Any:
        return self

    # -- copies ------------------------------------------------------------------------------
    def clone(self, *, memory_format: Any = None) -> Any:
        """A copy with its own storage (differentiable: gradients flow back to ``self``)."""
        check_memory_format(memory_format, "clone()")
        return apply(jnp.copy, (), (self,))

    def detach(self) -> Any:
        """The same values without autograd history (``requires_grad=False``).

        In-place writes through either tensor are seen by both, as in torch: a leaf's
        detached tensor is an alias (same storage); a result of an operation with history
        gets a view of it whose derivation stops the gradient (the shared storage would carry
        the history).
        """
        if not self._cur().node.requires_grad:
            return self._alias()
        return self._make_view(_without_history(self), _stop_gradient, ())

    def detach_(self) -> Any:
        """Cut this tensor from its history in place (it becomes a leaf)."""
        s = self._cur()
        if s.node.requires_grad:
            cut = _without_history(self)._s
            s.node, s.idx = cut.node, cut.idx
            if s.node.values is None:
                graph.note_pending(s)
        self._rg = False
        return self

    # -- Python and numpy values -------------------------------------------------------------
    def _value_for_host(self, what: str) -> Any:
        value = self._value()
        # Values go to the host here: the checks of values computed earlier run first (torch
        # reports a failed check by the next synchronization at the latest).
        checks.run_ready(block=True)
        if isinstance(value, jax.core.Tracer):
            raise jax.errors.ConcretizationTypeError(
                value,
                f"Tensor.{what}() needs a concrete value, but this tensor is traced (inside "
                f"spx.compile or another JAX transformation). Return it from the compiled "
                f"function and call .{what}() outside, or use spx.where / Tensor.masked_fill "
                "instead of Python control flow on tensor values.",
            )
        return value

    def item(self) -> Any:
        value = self._value_for_host("item")
        if value.size != 1:
            raise RuntimeError(f"a Tensor with {value.size} elements cannot be converted to Scalar")
        return np.asarray(value).reshape(()).item()

    def tolist(self) -> Any:
        return np.asarray(self._value_for_host("tolist")).tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The values as a numpy array: a read-only snapshot at the call (torch's shares the
        tensor's memory; a later in-place write into this tensor does not reach it here)."""
        if self.requires_grad and not force:
            raise RuntimeError(_NUMPY_REQUIRES_GRAD)
        return np.asarray(self._value_for_host("numpy"))

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if self.requires_grad:
            raise RuntimeError(_NUMPY_REQUIRES_GRAD)
        out = np.asarray(self._value_for_host("__array__"))
        return out if dtype is None else out.astype(dtype)

    def __jax_array__(self) -> jax.Array:
        if self.requires_grad and graph.STATE.grad_enabled:
            value = self._value()
            # A tracer is fine where JAX does the differentiating: a foreign transform (no
            # binding), spx.func, spx.backward / spx.value_and_grad (func_modes). Inside
            # spx.compile's loss.backward() it is spx's history, which jnp would bypass.
            state = graph.STATE
            if not (isinstance(value, jax.core.Tracer) and (state.func_modes or not state.binding)):
                raise RuntimeError(jnp_requires_grad_message(self._describe()))
            return value
        return self._value()

    def _describe(self) -> str:
        return f"shape {list(self.shape)}, dtype {self.dtype}"

    def __bool__(self) -> bool:
        value = self._value()
        checks.run_ready(block=True)  # Python branches on the value: as a host read
        if isinstance(value, jax.core.Tracer):
            # Python control flow on a traced value: JAX's own error, which spx.compile's
            # diagnostics turn into one at the user's line with the fix.
            raise jax.errors.TracerBoolConversionError(value)
        if value.size != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with more than one value is ambiguous (shape "
                f"{list(value.shape)}); use .any() or .all()"
            )
        return bool(value.reshape(()))

    def is_nonzero(self) -> bool:
        """Whether a one-element tensor is nonzero (raises for any other number of elements)."""
        n = self.numel()
        if n != 1:
            raise RuntimeError(
                "Boolean value of Tensor with no values is ambiguous"
                if n == 0
                else "Boolean value of Tensor with more than one value is ambiguous"
            )
        return bool(self)

    def __float__(self) -> float:
        return float(_one_element(self, "__float__"))

    def __int__(self) -> int:
        return int(_one_element(self, "__int__"))

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        if not jnp.issubdtype(self.dtype, jnp.integer) or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:
            return format(self.item(), spec)
        return format(repr(self), spec)

    # -- new tensors like this one -----------------------------------------------------------
    def new_tensor(self, data: Any, dtype: Any = None, device=None, requires_grad=False) -> Any:
        from spx.ops.creation import tensor

        return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_zeros(self, *size: Any, dtype: Any = None, device=None, requires_grad=False) -> Any:
        from spx.ops.creation import zeros

        return zeros(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_ones(self, *size: Any, dtype: Any = None, device=None, requires_grad=False) -> Any:
        from spx.ops.creation import ones

        return ones(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new(self, *args: Any, **kwargs: Any) -> Any:
        """torch's legacy ``t.new(...)``: a tensor of ``t``'s dtype and device made as the
        legacy constructors make one: sizes (zeros here; torch leaves them uninitialized), one
        sequence of data, nothing (an empty tensor) or a tensor of ``t``'s type.

        Example:
            >>> import spx
            >>> x = spx.ones(2)
            >>> x.new(2, 3).shape, x.new([1, 2]).tolist(), x.new().shape
            (spx.Size([2, 3]), [1.0, 2.0], spx.Size([0]))
        """
        from spx._tensor.legacy_types import legacy_type_of

        return legacy_type_of(self)(*args, **kwargs)

    def new_full(self, size: Any, fill_value: Any, *, dtype=None, device=None, requires_grad=False):
        from spx.ops.creation import full

        return full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_empty(self, *size: Any, dtype: Any = None, device=None, requires_grad=False) -> Any:
        return self.new_zeros(*size, dtype=dtype, requires_grad=requires_grad)


def _one_element(t: Any, what: str) -> Any:
    """``t``'s one value as a Python number; torch's error for several elements (``item()``
    raises a RuntimeError there, ``int(t)``/``float(t)`` a ValueError)."""
    value = t._value_for_host(what)
    if value.size != 1:
        raise ValueError("only one element tensors can be converted to Python scalars")
    return np.asarray(value).reshape(()).item()
