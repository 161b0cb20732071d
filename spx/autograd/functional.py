"""Functional gradients over Modules: ``spx.backward(fn, model)``, ``spx.value_and_grad``.

torch's own form — ``loss.backward()`` on a Tensor — is the main path (:mod:`spx._tensor`).
These are the explicit, JAX-style alternatives; inside them JAX differentiates ``fn`` and
``jnp`` functions may be used freely. ``fn`` sees what a torch forward sees: grad mode is on
and the differentiated parameters carry history (as ``spx.func``'s inputs do), so
``detach()``, ``no_grad`` blocks and ``autograd.Function``'s own ``backward`` shape the
gradient exactly as they would shape ``loss.backward()``'s:

* :func:`backward` — ``spx.backward(fn, *args)`` evaluates ``fn(*args)`` (a scalar) and
  **accumulates** d loss / d p into ``p.grad`` of every trainable Parameter of every Module,
  Parameter or Optimizer among ``args``; it returns the loss as a Tensor.
* :func:`value_and_grad` / :func:`grad` — the gradient comes back shaped like the model (a
  Module whose trainable Parameters hold gradients, None elsewhere).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from spx import _transforms
from spx import random as spx_random
from spx._compile.binding import (
    Binding,
    _set_grad_value,
    flatten_args,
    is_stateful,
)
from spx._tensor import graph
from spx._tensor.autograd import run_hooks, run_post_accumulate_hooks, run_post_backward
from spx._tensor.grad_mode import no_grad as _no_grad_mode
from spx._tensor.graph import Storage, value_node
from spx._tensor.tensor import Tensor
from spx.func._wrap import call, enter
from spx.nn.module import Module
from spx.nn.parameter import Parameter

_NOT_SCALAR = (
    "{fn} must return a scalar loss (shape ()), got an array of shape {shape}. Reduce it first, "
    "e.g. return loss.mean(), or return (loss, aux) to carry other outputs."
)


def _split_loss(out: Any, fn_name: str) -> tuple[jax.Array, Any, bool]:
    has_aux = isinstance(out, tuple | list)
    loss = out[0] if has_aux else out
    loss = loss._data if isinstance(loss, Tensor) else jnp.asarray(loss)
    if loss.shape != ():
        raise ValueError(_NOT_SCALAR.format(fn=fn_name, shape=tuple(loss.shape)))
    if not jnp.issubdtype(loss.dtype, jnp.inexact):
        raise TypeError(f"{fn_name} returned a loss of dtype {loss.dtype}; a float is required")
    aux = (out[1] if len(out) == 2 else tuple(out[1:])) if has_aux else None
    return loss, aux, has_aux


def _trainable(p: Parameter) -> bool:
    return p.requires_grad and jnp.issubdtype(p.dtype, jnp.inexact)


def backward(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Evaluate ``fn(*args, **kwargs)`` and accumulate its gradient into ``p.grad``.

    Every trainable Parameter reachable from a Module, Parameter or Optimizer in ``args`` /
    ``kwargs`` receives ``p.grad += d loss / d p`` (``p.grad = ...`` when it was None), as
    ``loss.backward()`` does in torch. Buffers the forward assigns (BatchNorm statistics) and
    the RNG key advance as in an ordinary call. Works eagerly and inside ``spx.compile``.

    Args:
        fn: returns a scalar loss, or a tuple ``(loss, aux)``.
        *args: passed to ``fn``; the Modules among them are differentiated.
        **kwargs: passed to ``fn``.

    Returns:
        The loss (and ``aux`` as ``(loss, aux)`` when ``fn`` returned a tuple).

    Example:
        >>> import spx, jax.numpy as jnp
        >>> model = spx.nn.Linear(3, 1)
        >>> loss = spx.backward(lambda m: (m(jnp.ones((4, 3))) ** 2).mean(), model)
        >>> model.weight.grad.shape
        spx.Size([1, 3])
    """
    leaves, _ = flatten_args((args, kwargs))
    roots = [x for x in leaves if is_stateful(x)]
    if not roots:
        raise ValueError(
            "spx.backward found no Module, Parameter, Optimizer or tensor that requires grad "
            "among the arguments, so there is nothing to differentiate. Pass the model: "
            "spx.backward(lambda m: loss_fn(m(x), y), model)"
        )
    binding = Binding(roots)
    if binding.has_uninitialized():
        _materialize(binding, fn, args, kwargs)
        binding = Binding(roots)
    train = [p for p in binding.params if _trainable(p)]
    before = binding.read_state()
    fn_name = getattr(fn, "__name__", "fn")
    box: dict[str, Any] = {}

    def loss_of(datas: list[jax.Array]) -> tuple[jax.Array, Any]:
        # JAX differentiates here; spx's recorded history only decides what the user's
        # detach()/no_grad/autograd.Function cut (see the module doc).
        try:
            for p, d in zip(train, datas, strict=True):
                _hold_entered(p, d)
            marks = [_mark(p) for p in binding.params]
            with _transforms.binding(), _jax_takes_the_gradient():
                out = call(fn, args, kwargs, "reverse")
            with _no_grad_mode():
                loss, aux, box["has_aux"] = _split_loss(out, fn_name)
                after = binding.read_state()
                # Parameters fn wrote in place (Embedding's max_norm renormalises its
                # weight under no_grad): torch keeps the new values, so they leave too.
                written = [
                    None if _mark(p) == m else jax.lax.stop_gradient(p._data)
                    for p, m in zip(binding.params, marks, strict=True)
                ]
            return loss, (_arrays(aux), after[2], after[4], written)
        finally:
            binding.write_state(before)

    (loss, (aux, buffers, key, written)), grads = jax.value_and_grad(loss_of, has_aux=True)(
        [p._data for p in train]
    )
    for p, w in zip(binding.params, written, strict=True):
        if w is not None:
            p._data = w
    for (d, n), obj, b in zip(binding.buffer_slots, binding.buffer_objs, buffers, strict=True):
        if obj is not None and b is not None:
            obj._data = b
            d[n] = obj
        else:
            d[n] = None if b is None else Tensor._of(b)
    spx_random.set_key(key)
    for p, g in zip(train, grads, strict=True):
        hooks = p.__dict__.get("_grad_hooks")
        if hooks:  # p.register_hook(...): torch runs it before adding to .grad
            g = run_hooks(hooks, g)
        old = p._grad
        if old is None:
            _set_grad_value(p, g)
        else:  # torch adds in place (a .grad viewing a flat buffer writes into it)
            old._write_through(old._data + g)
    run_post_accumulate_hooks(train, create_graph=False)
    run_post_backward(train)  # e.g. DistributedDataParallel's gradient averaging
    loss = Tensor._of(loss)
    return (loss, _tensors(aux)) if box["has_aux"] else loss


@contextlib.contextmanager
def _jax_takes_the_gradient() -> Iterator[None]:
    """Mark the thread while the user's function runs here: a hook attached then would be
    skipped silently (JAX runs none), so attaching one raises (see ``graph.STATE``)."""
    state = graph.STATE
    state.jax_backward += 1
    try:
        yield
    finally:
        state.jax_backward -= 1


def _hold_entered(p: Tensor, value: jax.Array) -> None:
    """Make ``p`` hold ``value`` (a tracer JAX differentiates) with recorded history, as
    ``spx.func`` enters its inputs: ``p.detach()`` and ``no_grad`` then stop the gradient."""
    entered = enter(value, True)._s
    s = p._s
    s.node, s.idx = entered.node, entered.idx
    s.version += 1
    if s.node.values is None:
        graph.note_pending(s)


def _mark(p: Tensor) -> tuple[Any, ...]:
    """What identifies ``p``'s value: an in-place write or ``p.data = ...`` changes it."""
    s = p._s
    return (id(s), id(s.node), s.idx)


def _materialize(binding: Binding, fn: Callable, args: Any, kwargs: Any) -> None:
    """Run one forward to give lazy parameters their shapes; keep no other effect."""
    buffers = [(d[n], None if d[n] is None else d[n]._data) for d, n in binding.buffer_slots]
    with _no_grad_mode():
        fn(*args, **kwargs)
    for (d, n), (obj, value) in zip(binding.buffer_slots, buffers, strict=True):
        if obj is not None:
            obj._data = value
        d[n] = obj


def _arrays(tree: Any) -> Any:
    """Tensors in ``tree`` as their arrays (what a JAX transformation may return)."""
    return jax.tree.map(
        lambda x: x._data if isinstance(x, Tensor) else x,
        tree,
        is_leaf=lambda x: isinstance(x, Tensor),
    )


def _tensors(tree: Any) -> Any:
    """Arrays in ``tree`` as Tensors (what spx returns)."""
    return jax.tree.map(lambda x: Tensor._of(x) if isinstance(x, jax.Array) else x, tree)


def value_and_grad(
    fn: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """Like ``jax.value_and_grad``, over Modules (functional; no ``.grad`` is written).

    Each differentiated argument may be a Module (or any pytree containing Modules and
    Parameters); its gradient comes back with the same structure, trainable Parameters holding
    their gradients and everything else (buffers, frozen parameters) None. ``fn`` sees copies
    of the modules, so buffer assignments inside it do not reach the originals.

    Args:
        fn: function returning a scalar (or ``(scalar, aux)`` with ``has_aux``).
        argnums: which positional arguments to differentiate.
        has_aux: whether ``fn`` returns ``(loss, aux)``.

    Returns:
        A function returning ``(value, grads)`` (``((value, aux), grads)`` with ``has_aux``).

    Example:
        >>> import spx, jax.numpy as jnp
        >>> model = spx.nn.Linear(3, 1)
        >>> loss, g = spx.value_and_grad(lambda m, x: m(x).sum())(model, jnp.ones((2, 3)))
        >>> g.weight.data.shape
        spx.Size([1, 3])
    """
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise ValueError("value_and_grad: argnums must name at least one argument")

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        for n in nums:
            if not -len(args) <= n < len(args):
                raise ValueError(
                    f"value_and_grad: argnums={argnums!r} names argument {n}, but the function "
                    f"was called with {len(args)} positional argument(s)"
                )
        # Each differentiated Parameter object is one input, however often it appears (tied
        # weights): every appearance is rebuilt from the same copy, and every appearance of it
        # in the result holds the one, summed, gradient.
        splits = []
        for n in nums:
            leaves, treedef = jax.tree_util.tree_flatten(
                args[n], is_leaf=lambda x: isinstance(x, Tensor)
            )
            slots: list[int | None] = []
            unique: list[Any] = []
            seen: dict[int, int] = {}
            for x in leaves:
                if isinstance(x, Parameter) or (isinstance(x, Tensor) and _in_module(args[n])):
                    if not _trainable(x):
                        slots.append(None)
                    elif id(x) in seen:
                        slots.append(seen[id(x)])
                    else:
                        seen[id(x)] = len(unique)
                        slots.append(len(unique))
                        unique.append(x)
                elif _is_float_array(x) and not _in_module(args[n]):
                    slots.append(len(unique))
                    unique.append(x)
                else:
                    slots.append(None)
            splits.append((leaves, treedef, slots, unique))

        def rebuild(leaves, treedef, slots, unique, values):
            fresh = [_with_data(u, v, entered=True) for u, v in zip(unique, values, strict=True)]
            return treedef.unflatten(
                [x if k is None else fresh[k] for x, k in zip(leaves, slots, strict=True)]
            )

        def inner(diff: list[list[jax.Array]]) -> Any:
            new_args = list(args)
            for n, (leaves, treedef, slots, unique), values in zip(nums, splits, diff, strict=True):
                new_args[n] = rebuild(leaves, treedef, slots, unique, values)
            # JAX differentiates here (see the module doc for what fn sees).
            with _transforms.binding(), _jax_takes_the_gradient():
                out = call(fn, new_args, kwargs, "reverse")
            if has_aux:
                if not isinstance(out, tuple) or len(out) != 2:
                    raise ValueError("with has_aux=True the function must return (loss, aux)")
                loss, aux = out
            else:
                loss, aux = out, None
            loss = loss._data if isinstance(loss, Tensor) else jnp.asarray(loss)
            if loss.shape != ():
                raise ValueError(
                    _NOT_SCALAR.format(fn=getattr(fn, "__name__", "fn"), shape=loss.shape)
                )
            return loss, _arrays(aux)

        diff = [[_data(u) for u in unique] for _, _, _, unique in splits]
        (loss, aux), grads = jax.value_and_grad(inner, has_aux=True)(diff)
        trees = []
        for (_, treedef, slots, unique), g in zip(splits, grads, strict=True):
            fresh = [_with_data(u, v) for u, v in zip(unique, g, strict=True)]
            trees.append(treedef.unflatten([None if k is None else fresh[k] for k in slots]))
        out_grads = trees[0] if isinstance(argnums, int) else tuple(trees)
        loss = Tensor._of(loss)
        return ((loss, _tensors(aux)), out_grads) if has_aux else (loss, out_grads)

    return wrapped


def grad(
    fn: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """Like :func:`value_and_grad` but returns only the gradient (``(grads, aux)`` with aux).

    Example:
        >>> import spx, jax.numpy as jnp
        >>> g = spx.grad(lambda m: m(jnp.ones((2, 3))).sum())(spx.nn.Linear(3, 1))
        >>> g.bias.data.shape
        spx.Size([1])
    """
    vg = value_and_grad(fn, argnums, has_aux)

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapped


def _is_float_array(x: Any) -> bool:
    return isinstance(x, Tensor | jax.Array) and jnp.issubdtype(x.dtype, jnp.inexact)


def _in_module(tree: Any) -> bool:
    # Plain float arrays passed alongside a model (not inside one) are differentiated, as
    # jax.grad would; buffers inside a Module are state, not inputs, and are not.
    return isinstance(tree, Module)


def _data(x: Any) -> jax.Array:
    return x._data if isinstance(x, Tensor) else x


def _with_data(x: Any, value: Any, entered: bool = False) -> Any:
    """A new object like ``x`` (a Parameter stays a Parameter) holding ``value``; with
    ``entered``, a Tensor holds it as a differentiated input (:func:`_hold_entered`)."""
    if isinstance(x, Tensor):
        t = object.__new__(Parameter if isinstance(x, Parameter) else Tensor)
        t._init(Storage(value_node(value)), x._rg)
        if entered:
            _hold_entered(t, value)
        return t
    return value  # a raw jax array stays one (JAX differentiates it; no detach() to honour)
