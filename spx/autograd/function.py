"""``spx.autograd.Function``: a custom operation with its own backward (torch's).

Subclass it with static ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` (or
``forward(*args)`` plus ``setup_context(ctx, inputs, output)``), then call ``MyFn.apply(...)``.

How it runs here:

* ``forward`` runs at once, under ``no_grad``, on the given Tensors: its operations are recorded
  like any others (nothing is traced twice, nothing is computed early).
* One more recorded operation links the differentiable outputs to the inputs that require grad.
  Its value is the outputs themselves; its vector-Jacobian product is the user's ``backward``
  (a ``jax.custom_vjp``), traced into the compiled backward program with the saved tensors and
  the gradients as Tensors. So ``loss.backward()``, ``spx.autograd.grad`` and ``spx.compile``
  run it as part of their one XLA program.
* Tensors kept on ``ctx`` (``ctx.x = x``, ``ctx.ys = [y, z]`` as well as
  ``save_for_backward``) enter that program as inputs. Other values (``ctx.alpha = 0.5``) are
  constants of it, as a Python number in a ``jax.jit``-ed function is, and so are the numbers
  and strings ``backward`` reads from its class, globals or closure: a changed value traces the
  backward again (one compile per value; inside ``spx.compile`` a number argument is traced, so
  it stays an input). Other objects ``backward`` reads (a config object's fields) are read when
  it is traced: keep changing values on ``ctx``.

Gradients that ``backward`` returns are checked as torch checks them (one per ``forward``
argument, None for non-tensors, a shape the input broadcasts to — summed back to the input's
shape — and cast to the input's dtype). Outputs given to ``ctx.mark_non_differentiable`` do not
require grad and receive zeros as their gradient. Gradients are always materialized (zeros for
outputs the loss does not use), whatever ``set_materialize_grads`` says. ``mark_dirty``
(in-place forwards) and forward-mode ``jvp`` are not supported and raise.

Example:
    >>> import spx
    >>> class ClampGrad(spx.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x, bound):
    ...         ctx.bound = bound
    ...         return x.clone()
    ...
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         return grad.clamp(-ctx.bound, ctx.bound), None
    >>> x = spx.tensor([1.0, 2.0], requires_grad=True)
    >>> (ClampGrad.apply(x, 0.5) * 10).sum().backward()
    >>> x.grad.tolist()
    [0.5, 0.5]
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx._tensor import graph, program
from spx._tensor.dispatch import apply as _record
from spx._tensor.tensor import Tensor

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """What ``forward``/``setup_context`` hand to ``backward`` (torch's ``ctx``)."""

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Keep tensors (or None) for ``backward``; read them back as ``ctx.saved_tensors``."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save variables, but argument {i} is of type "
                    f"{type(t).__name__}; keep other values as attributes (ctx.name = value)"
                )
        self.to_save = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """These outputs will not require grad; their gradient in ``backward`` is zeros."""
        self.non_differentiable = tuple(tensors)

    def set_materialize_grads(self, value: bool) -> None:
        """Accepted; spx always passes zeros for outputs the loss does not use."""
        self.materialize_grads = value

    def mark_dirty(self, *tensors: Tensor) -> None:
        raise NotImplementedError(
            "ctx.mark_dirty (a forward that modifies its inputs in place) is not supported by "
            "spx.autograd.Function; return a new tensor (x.clone() then modify it) instead"
        )

    def save_for_forward(self, *tensors: Tensor) -> None:
        raise NotImplementedError(
            "forward-mode AD (save_for_forward, jvp) is not supported by spx.autograd.Function"
        )


class _Ctx(FunctionCtx):
    """The ctx a backward sees: saved tensors and the attributes forward left."""

    saved_tensors: tuple
    needs_input_grad: tuple


class Function:
    """Base class of custom autograd operations (mirrors ``torch.autograd.Function``).

    Example: see the module docstring (:mod:`spx.autograd.function`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method: MyFunction.apply(...)"
        )

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> Any:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` on ``args``; results that require grad backpropagate through
        ``backward``."""
        separate = cls.setup_context is not Function.setup_context
        if separate:
            # torch binds keyword and default arguments to forward's positions first.
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        # One gradient per argument given: the positional ones, then the keyword ones (torch
        # counts them so; defaults not given take none unless setup_context binds them).
        inputs = (*args, *kwargs.values())
        ctx = _Ctx()
        grad_on = graph.STATE.grad_enabled
        ctx.needs_input_grad = tuple(
            grad_on and isinstance(a, Tensor) and a.requires_grad for a in inputs
        )
        previous = graph.set_grad_enabled_flag(False)
        try:
            if separate:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        finally:
            graph.set_grad_enabled_flag(previous)
        if not any(ctx.needs_input_grad):
            return output
        return _link(cls, ctx, inputs, output)


def once_differentiable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a ``backward`` as not differentiable twice (torch's decorator; spx's backward is
    never differentiated again, so the function runs as it is)."""
    return fn


# -- the link between outputs and inputs -------------------------------------------------------


class _Spec:
    """Static description of one link (part of the program cache key): hashable by value."""

    __slots__ = ("cls", "ctx_static", "diff_in", "is_tensor", "key", "n_out", "saved", "shapes")

    def __init__(self, cls: type, is_tensor: tuple, diff_in: tuple, n_out: int, saved: tuple,
                 ctx_static: tuple, shapes: tuple) -> None:  # fmt: skip
        self.cls, self.is_tensor, self.diff_in, self.n_out = cls, is_tensor, diff_in, n_out
        self.saved, self.ctx_static, self.shapes = saved, ctx_static, shapes
        self.key = (cls, is_tensor, diff_in, n_out, saved, ctx_static, shapes)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Spec) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)


def _attributes(ctx: _Ctx, cls: type) -> tuple[tuple, list]:
    """ctx's attributes: ``(static layout, [tensor or array leaves])``.

    Each attribute is flattened as a pytree (a tuple of tensors, a dict of them): tensors and
    arrays (``ctx.x = x``, or a scalar spx.compile traces) travel into the backward as inputs
    of the program; the other leaves are constants of it, keyed with their type (0.0, -0.0,
    0 and False are different constants) and must hash.
    """
    skip = ("needs_input_grad", "to_save", "non_differentiable", "materialize_grads")
    layout, dynamic = [], []
    for name, value in sorted(vars(ctx).items()):
        if name in skip:
            continue
        leaves, tree = jax.tree_util.tree_flatten(value, is_leaf=_is_array)
        kinds = []
        for leaf in leaves:
            if _is_array(leaf):
                kinds.append(("array", isinstance(leaf, Tensor)))
                dynamic.append(leaf if not isinstance(leaf, np.ndarray) else jnp.asarray(leaf))
                continue
            try:
                hash(leaf)
            except TypeError:
                raise TypeError(
                    f"{cls.__name__}.forward kept ctx.{name} = {value!r:.60} "
                    f"({type(value).__name__}), which holds a {type(leaf).__name__} that is "
                    "not hashable: values on ctx other than tensors become constants of the "
                    "compiled backward. Keep a tuple instead of a list, or pass the value as a "
                    "tensor argument and save it"
                ) from None
            kinds.append(("const", _typed(leaf)))
        layout.append((name, tree, tuple(kinds)))
    return tuple(layout), dynamic


def _is_array(x: Any) -> bool:
    return isinstance(x, Tensor | jax.Array | np.ndarray)


def _typed(value: Any) -> tuple:
    """A constant as a cache key: its type, its value and, for floats, its sign (-0.0)."""
    if isinstance(value, float):
        return (float, value, math.copysign(1.0, value))
    return (type(value), value)


def _environment(cls: type) -> tuple:
    """What ``backward`` reads besides ctx that a compiled backward would bake in: the values
    of the class attributes and the globals and closure variables it names, when they are
    numbers, strings or tuples of them (a schedule kept on the class, a global scale).

    They join the cache key, so a changed value traces the backward again, as torch would
    simply run it with the new value. Other objects are read at tracing time only.
    """
    fn = cls.backward
    fn = getattr(fn, "__func__", fn)
    items = []
    for klass in cls.__mro__:
        if klass in (Function, object):
            continue
        for name, value in vars(klass).items():
            if _plain(value):
                items.append(("cls", klass.__qualname__, name, _typed_tree(value)))
    code = getattr(fn, "__code__", None)
    if code is not None:
        glb = getattr(fn, "__globals__", {})
        for name in code.co_names:
            if name in glb and _plain(glb[name]):
                items.append(("global", name, _typed_tree(glb[name])))
        for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=True):
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if _plain(value):
                items.append(("closure", name, _typed_tree(value)))
    return tuple(items)


def _plain(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    return isinstance(value, int | float | complex | str | bytes | type(None))


def _typed_tree(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_typed_tree(v) for v in value)
    return _typed(value)


def _link(cls: type, ctx: _Ctx, args: tuple, output: Any) -> Any:
    outputs = output if isinstance(output, tuple) else (output,)
    non_diff = {id(t) for t in getattr(ctx, "non_differentiable", ())}
    out_pos = tuple(
        i for i, o in enumerate(outputs) if isinstance(o, Tensor) and id(o) not in non_diff
    )
    floating = [i for i in out_pos if jnp.issubdtype(outputs[i].dtype, jnp.inexact)]
    if not floating:
        return output
    diff_in = tuple(i for i, need in enumerate(ctx.needs_input_grad) if need)
    saved = tuple(getattr(ctx, "to_save", ()))
    saved_layout = tuple(t is not None for t in saved)
    shapes = (
        tuple((tuple(args[i].shape), args[i].dtype) for i in diff_in),
        tuple(
            None if not isinstance(o, Tensor) else (tuple(o.shape), o.dtype, i in floating)
            for i, o in enumerate(outputs)
        ),
    )
    is_tensor = tuple(isinstance(a, Tensor) for a in args)
    ctx_layout, dynamic = _attributes(ctx, cls)
    spec = _Spec(cls, is_tensor, diff_in, len(floating), saved_layout,
                 (ctx_layout, _environment(cls)), shapes)  # fmt: skip
    arrays = (
        *(args[i] for i in diff_in),
        *(outputs[i] for i in floating),
        *(t for t in saved if t is not None),
        *dynamic,
    )
    linked = _record(_linked, (spec,), arrays, n_out=1)
    result = list(outputs)
    for i, t in zip(floating, linked, strict=True):
        result[i] = t
    return tuple(result) if isinstance(output, tuple) else result[0]


def _linked(*arrays_and_spec: Any) -> Any:
    *arrays, spec = arrays_and_spec
    out = _rule(spec)(*arrays)
    return out[0] if len(out) == 1 else out  # a recorded op with one output returns it bare


program.COARSE.add(_linked)  # a backward returning None for an input: torch leaves .grad None


@functools.lru_cache(maxsize=256)
def _rule(spec: _Spec) -> Callable[..., tuple]:
    n_in, n_out = len(spec.diff_in), spec.n_out

    @jax.custom_vjp
    def link(*arrays: Any) -> tuple:
        return tuple(arrays[n_in : n_in + n_out])

    def fwd(*arrays: Any) -> tuple:
        return link(*arrays), arrays

    def bwd(arrays: tuple, cotangents: tuple) -> tuple:
        grads = _call_backward(spec, arrays[n_in + n_out :], cotangents)
        return (*grads, *(None for _ in arrays[n_in:]))

    link.defvjp(fwd, bwd)
    return link


def _call_backward(spec: _Spec, saved_arrays: tuple, cotangents: tuple) -> list:
    """The user's backward, run on Tensors; its gradients checked and shaped as torch does."""
    cls = spec.cls
    name = f"{cls.__name__}Backward"
    ctx = _Ctx()
    layout, _ = spec.ctx_static
    it = iter(saved_arrays)
    ctx.saved_tensors = tuple(Tensor._of(next(it)) if keep else None for keep in spec.saved)
    for attr, tree, kinds in layout:
        leaves = []
        for kind, info in kinds:
            if kind == "array":
                value = next(it)
                leaves.append(Tensor._of(value) if info else value)
            else:
                leaves.append(info[1])
        setattr(ctx, attr, jax.tree_util.tree_unflatten(tree, leaves))
    n_args = len(spec.is_tensor)
    ctx.needs_input_grad = tuple(i in spec.diff_in for i in range(n_args))
    cots = iter(cotangents)
    grad_outputs = []
    for meta in spec.shapes[1]:
        if meta is None:  # a non-tensor output
            grad_outputs.append(None)
        elif meta[2]:
            # torch's convention for complex gradients is the conjugate of JAX's.
            grad_outputs.append(Tensor._of(_conj(next(cots))))
        else:  # non-differentiable (or integer) output: zeros, as torch materializes them
            grad_outputs.append(Tensor._of(jnp.zeros(meta[0], _float_like(meta[1]))))
    previous = graph.set_grad_enabled_flag(False)
    try:
        grads = cls.backward(ctx, *grad_outputs)
    finally:
        graph.set_grad_enabled_flag(previous)
    if not isinstance(grads, tuple):
        grads = (grads,)
    if len(grads) > n_args and all(g is None for g in grads[n_args:]):
        grads = grads[:n_args]  # torch allows trailing Nones
    if len(grads) != n_args:
        raise RuntimeError(
            f"function {name} returned an incorrect number of gradients (expected "
            f"{n_args}, got {len(grads)})"
        )
    wanted = dict(zip(spec.diff_in, spec.shapes[0], strict=True))
    out = []
    for i, g in enumerate(grads):
        if i not in wanted:
            # A tensor input that needs no grad may get one (dropped, as torch drops it).
            if g is not None and not spec.is_tensor[i]:
                raise RuntimeError(
                    f"function {name} returned a gradient different than None at position "
                    f"{i + 1}, but the corresponding forward input was not a Variable"
                )
            continue
        shape, dtype = wanted[i]
        if g is None:
            out.append(jnp.zeros(shape, dtype))
            continue
        value = g._data if isinstance(g, Tensor) else jnp.asarray(g)
        out.append(_conj(_shaped(value, shape, dtype, name, i)))
    return out


def _conj(x: Any) -> Any:
    return jnp.conj(x) if jnp.iscomplexobj(x) else x


def _float_like(dtype: Any) -> Any:
    return dtype if jnp.issubdtype(dtype, jnp.inexact) else jnp.float32


def _shaped(g: Any, shape: tuple, dtype: Any, name: str, index: int) -> Any:
    if tuple(g.shape) != shape:
        lead = g.ndim - len(shape)
        ok = lead >= 0 and all(s in (1, d) for s, d in zip(shape, g.shape[lead:], strict=True))
        if not ok:
            raise RuntimeError(
                f"Function {name} returned an invalid gradient at index {index} - got "
                f"{list(g.shape)} but expected shape compatible with {list(shape)}"
            )
        axes = tuple(range(lead)) + tuple(
            lead + k for k, s in enumerate(shape) if s == 1 and g.shape[lead + k] != 1
        )
        g = g.sum(axis=axes).reshape(shape)
    return g.astype(dtype)
