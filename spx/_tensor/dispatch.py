"""Recording one operation: inputs to references, output shapes from a cache, a new Tensor.

Every Tensor method and spx function that computes goes through :func:`apply`::

    apply(fn, static, (x, w, 2.0))   # records fn(x_value, w_value, 2.0, *static)

``fn`` is a pure function over arrays defined once at module level (its identity is part of the
program cache key); ``static`` holds the hashable arguments that shape the computation (axes,
sizes). Tensors, ``jax.Array`` and numpy arrays are array inputs; Python numbers are passed as
weakly typed scalars (torch's "wrapped numbers": ``x * 2.5`` keeps ``x``'s float dtype), so a
value that changes every step (a learning rate, a loss scale) never recompiles.

Output shapes come from ``jax.eval_shape`` once per ``(fn, static, input shapes)`` and then
from a dict, so recording costs about a microsecond.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx._host import device_array
from spx._tensor import graph
from spx._tensor.graph import Node, Storage, note_pending, value_node

_AVALS: dict[tuple, tuple] = {}
_INEXACT: dict[tuple, bool] = {}  # output avals -> whether any is inexact (can carry grad)
_ONE_TUPLE: set[tuple] = set()  # (fn, static, in_avals) whose fn returns a 1-tuple
_SCALARS = (int, float, bool, complex)


def _spec(x: Any) -> Any:
    if isinstance(x, type):  # a Python scalar's type: eval_shape sees a weakly typed value
        return x(0)
    return jax.ShapeDtypeStruct(x.shape, x.dtype, weak_type=x.weak_type)


def infer(fn: Any, static: tuple, in_avals: tuple) -> tuple:
    """The output avals of ``fn(*inputs, *static)`` (a tuple even for one output)."""
    key = (fn, static, in_avals)
    out = _AVALS.get(key)
    if out is None:
        shapes = jax.eval_shape(lambda *xs: fn(*xs, *static), *[_spec(a) for a in in_avals])
        is_tuple = isinstance(shapes, tuple | list)
        leaves = shapes if is_tuple else (shapes,)
        out = tuple(jax.core.ShapedArray(s.shape, s.dtype, weak_type=s.weak_type) for s in leaves)
        if is_tuple and len(out) == 1:
            _ONE_TUPLE.add(key)
        _AVALS[key] = out
    return out


def ref_of(x: Any, grad_on: bool) -> Any:
    """The input reference of one argument: ``(node, idx)`` or a Python scalar."""
    ref = getattr(x, "_ref", None)
    if ref is not None:
        return ref(grad_on)
    if type(x) in _SCALARS:
        return x
    if isinstance(x, jax.Array):
        return (value_node(x), 0)
    if isinstance(x, np.ndarray | np.generic):
        return (value_node(device_array(x)), 0)
    if isinstance(x, _SCALARS):  # bool/int subclasses (IntEnum), numpy scalars handled above
        return type(x).__mro__[1](x) if type(x) is not bool else x
    raise TypeError(f"expected a Tensor, array or Python number, got {type(x).__name__}: {x!r:.80}")


def _aval_of(ref: Any) -> Any:
    if type(ref) is tuple:
        return ref[0].avals[ref[1]]
    return type(ref)


def stop_gradient(x: Any) -> Any:
    """Identity whose derivative is zero (``detach``; inputs of operations under no_grad)."""
    return jax.lax.stop_gradient(x)


_MIXED_MODES = (
    "an operation under no_grad read a tensor with autograd history inside {modes} spx.func "
    "transforms: torch lets forward-mode derivatives (jvp, jacfwd) through no_grad and stops "
    "reverse-mode ones (grad, vjp, jacrev), and one JAX trace cannot do both (hessian is "
    "jacfwd(jacrev(f))). Use x.detach() instead of no_grad to stop both, or move the no_grad "
    "computation out of the transformed function."
)


def _cut(refs: tuple) -> tuple:
    """``refs`` as the inputs of an operation recorded under no_grad inside spx.func.

    spx's own backward never enters such an operation (its result has no history), but a JAX
    transform tracing the whole function does: inside ``spx.func.grad``/``vjp``/``jacrev``
    inputs with history are read through :func:`stop_gradient`, so the result is a constant
    as in ``torch.func.grad``; inside ``jvp``/``jacfwd`` they are not (torch's forward-mode AD
    ignores no_grad).
    """
    modes = graph.STATE.func_modes
    if modes[-1] == "forward" and "reverse" not in modes:
        return refs
    out = []
    for ref in refs:
        if type(ref) is tuple and ref[0].requires_grad:
            if "forward" in modes and graph.depends_on_tracer(ref[0]):
                # (A tensor computed outside the transform is a constant to it either way.)
                raise NotImplementedError(_MIXED_MODES.format(modes=" and ".join(modes)))
            ref = (Node(stop_gradient, (), (ref,), (ref[0].avals[ref[1]],), None, False), 0)
        out.append(ref)
    return tuple(out)


_FIRST: dict[Any, Any] = {}


def _first_of(fn: Any) -> Any:
    """``fn`` returning a 1-tuple, as a function returning its one array (cached: the
    function's identity keys the program caches). A recorded operation with one output holds
    a bare array; ``unbind`` along a dimension of size 1 is such a tuple function."""
    single = _FIRST.get(fn)
    if single is None:

        def single(*args: Any) -> Any:
            return fn(*args)[0]

        _FIRST[fn] = single
    return single


def apply(fn: Any, static: tuple, args: tuple, n_out: int = 0) -> Any:
    """Record ``fn(*args, *static)``; return a Tensor (or a tuple of Tensors if ``n_out``).

    Args:
        fn: module-level pure function over arrays.
        static: hashable extra arguments.
        args: Tensors, arrays or Python numbers.
        n_out: 0 for a single output; else the function returns a tuple of that many arrays.
    """
    state = graph.STATE
    if state.autocast is not None:
        args = state.autocast.cast_args(fn, args)
    grad_on = state.grad_enabled
    refs = tuple([ref_of(a, grad_on) for a in args])
    if not grad_on and state.func_modes and fn is not stop_gradient:
        refs = _cut(refs)
    in_avals = tuple([_aval_of(r) for r in refs])
    avals = infer(fn, static, in_avals)
    requires_grad = False
    if grad_on:
        for r in refs:
            if type(r) is tuple and r[0].requires_grad:
                requires_grad = _INEXACT.get(avals)
                if requires_grad is None:
                    requires_grad = _INEXACT[avals] = any(
                        jnp.issubdtype(a.dtype, jnp.inexact) for a in avals
                    )
                break
    if n_out and len(avals) == 1 and (fn, static, in_avals) in _ONE_TUPLE:
        fn = _first_of(fn)
    node = Node(fn, static, refs, avals, None, requires_grad)
    wrap = _tensor_type()._wrap
    if not n_out:
        return wrap(node, 0)
    return tuple([wrap(node, i) for i in range(len(avals))])


def rebind(t: Any, fn: Any, static: tuple, args: tuple) -> Any:
    """In-place: ``t`` now holds ``fn(*args, *static)`` (through its view base if it is one)."""
    return t._assign_op(fn, static, args)


def new_storage(node: Node, idx: int) -> Storage:
    storage = Storage(node, idx)
    if node.values is None:
        note_pending(storage)
    return storage


_TENSOR: list[type] = []


def _tensor_type() -> type:
    if not _TENSOR:
        from spx._tensor.tensor import Tensor

        _TENSOR.append(Tensor)
    return _TENSOR[0]
