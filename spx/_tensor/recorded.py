"""``@recorded``: make a function over JAX arrays one recorded Tensor operation.

``spx.nn.functional`` is written in ``jax.numpy`` over arrays (readable, one XLA-friendly
implementation per op). Decorated with :func:`recorded`, a call with Tensors records a single
node whose replay runs that implementation, and returns Tensors; autograd differentiates it
with JAX inside the compiled program. Arguments that are arrays (Tensors, ``jax.Array``,
numpy) are inputs; everything else is static (part of the program key; lists become tuples).

Validation that needs only shapes runs when the op is first recorded for a given signature
(shapes are inferred with ``jax.eval_shape``); validation of *values* (index ranges) must run
before recording, in the caller.

Example:
    >>> import jax.numpy as jnp, spx
    >>> @recorded
    ... def scale(x, factor=2.0):
    ...     return x * factor
    >>> scale(spx.ones(3)).tolist()
    [2.0, 2.0, 2.0]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx._tensor import graph, program
from spx._tensor.dispatch import _aval_of, _spec, ref_of
from spx._tensor.graph import Node

_DYN = object()  # marks an array argument in a call's layout


def _is_array(x: Any) -> bool:
    return hasattr(x, "_ref") or isinstance(x, jax.Array | np.ndarray)


_PLAIN = frozenset([int, float, str, bool, type(None)])


def _static(x: Any) -> Any:
    """A hashable stand-in for a static argument (lists and dicts become tuples)."""
    if type(x) in _PLAIN:
        return x
    if isinstance(x, list | tuple):
        return tuple(_static(v) for v in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _static(v)) for k, v in x.items()))
    if isinstance(x, np.dtype | type):
        return x
    hash(x)  # unhashable static arguments are a programming error: fail loudly here
    return x


def _call(fn: Callable, layout: tuple, kw_names: tuple, values: Any) -> Any:
    """``fn`` called with the array ``values`` put back where the layout marks them."""
    it = iter(values)
    n_pos = len(layout) - len(kw_names)
    args = [next(it) if a is _DYN else a for a in layout[:n_pos]]
    kwargs = {
        k: (next(it) if a is _DYN else a) for k, a in zip(kw_names, layout[n_pos:], strict=True)
    }
    return fn(*args, **kwargs)


def _replay(*values: Any) -> Any:
    """The recorded function: ``values`` are the array inputs then ``(fn, layout, kw_names)``.

    Returns the result's leaves: one array, or a tuple when there are several (the program's
    convention for a node's outputs).
    """
    fn, layout, kw_names = values[-3:]
    leaves = jax.tree_util.tree_leaves(_call(fn, layout, kw_names, values[:-3]))
    return leaves[0] if len(leaves) == 1 else tuple(leaves)


def _signature(static: tuple, in_avals: tuple) -> tuple[tuple, Any, bool]:
    """``(output avals, result structure or None for one array, any output inexact)``.

    From ``jax.eval_shape`` once per signature, then from a dict.
    """
    key = (static, in_avals)
    found = _SIGNATURES.get(key)
    if found is None:
        specs = [_spec(a) for a in in_avals]
        out = jax.eval_shape(lambda *v: _call(*static, v), *specs)
        leaves, tree = jax.tree_util.tree_flatten(out)
        avals = tuple(jax.core.ShapedArray(x.shape, x.dtype, weak_type=x.weak_type) for x in leaves)
        single = isinstance(out, jax.ShapeDtypeStruct)
        # jnp's issubdtype: numpy's does not count bfloat16 (an ml_dtypes type) as inexact.
        inexact = any(jnp.issubdtype(a.dtype, jnp.inexact) for a in avals)
        found = _SIGNATURES[key] = (avals, None if single else tree, inexact)
    return found


_SIGNATURES: dict[Any, Any] = {}


def record_call(fn: Callable, args: tuple, kwargs: dict) -> Any:
    """Record ``fn(*args, **kwargs)`` as one node; returns Tensors shaped like fn's result."""
    from spx._tensor.tensor import Tensor

    state = graph.STATE
    if state.autocast is not None:
        args, kwargs = state.autocast.cast_call(fn, args, kwargs)
    grad_on = state.grad_enabled
    layout: list[Any] = []
    refs: list[Any] = []
    for a in args:
        if _is_array(a):
            layout.append(_DYN)
            refs.append(ref_of(a, grad_on))
        else:
            layout.append(_static(a))
    kw_names = tuple(kwargs)
    for k in kw_names:
        a = kwargs[k]
        if _is_array(a):
            layout.append(_DYN)
            refs.append(ref_of(a, grad_on))
        else:
            layout.append(_static(a))
    static = (fn, tuple(layout), kw_names)
    avals, tree, inexact = _signature(static, tuple([_aval_of(r) for r in refs]))
    requires_grad = False
    if grad_on and inexact:
        for r in refs:
            if type(r) is tuple and r[0].requires_grad:
                requires_grad = True
                break
    node = Node(_replay, static, tuple(refs), avals, None, requires_grad)
    if tree is None:
        return Tensor._wrap(node, 0)
    # Several outputs from one node, where torch's graph may connect an input to only some of
    # them (MultiheadAttention's out_proj feeds the output, not the weights): a backward
    # through the others must leave that input's .grad None, not zero.
    program.COARSE.add(fn)
    return jax.tree_util.tree_unflatten(tree, [Tensor._wrap(node, i) for i in range(len(avals))])


def recorded(fn: Callable) -> Callable:
    """Decorate a function over JAX arrays so that calls with Tensors record one operation.

    Called with no Tensor argument (plain arrays only) it still records, so the result is a
    Tensor either way: spx entry points always return Tensors.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return record_call(fn, args, kwargs)

    wrapper.__wrapped_jax__ = fn  # the array implementation, for code that works on arrays
    return wrapper
