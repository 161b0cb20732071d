"""``spx.Tensor``: torch's tensor on JAX — a mutable object holding one (recorded) array.

What a Tensor is:

* Its value is ``(node, idx)`` in a :class:`~spx._tensor.graph.Storage`: either a computed
  ``jax.Array`` (a tracer under a JAX transformation) or a recorded operation that is computed
  when needed (:mod:`spx._tensor.program`). Reading ``shape``/``dtype`` never computes anything.
* **In place** (``add_``, ``x[i] = v``, ``copy_``, ...) records the new value and rebinds the
  storage: torch's observable semantics on immutable arrays. ``t.data`` and ``t.detach()`` share
  the storage, so an in-place write through either is seen by both.
* **Views** (``view``, ``transpose``, basic indexing, ``split``, ...) remember their base tensor
  and how they were derived from it. Writing into a view writes through to the base (and any
  other view of it sees the change), exactly as torch's shared storage does; a view whose base
  changed is derived again when it is next read.
* **Autograd**: a leaf that requires grad (a :class:`~spx.nn.Parameter`, or
  ``requires_grad_()``) enters each operation through a grad-leaf node; results of operations on
  tensors that require grad require grad; ``backward()`` accumulates into ``.grad``
  (:mod:`spx._tensor.autograd`).
* It is a JAX pytree with one leaf (its computed value), and converts wherever JAX or numpy
  expect an array (``__jax_array__``, ``__array__``).

Example:
    >>> import spx
    >>> x = spx.ones(2, 3)
    >>> x[0, 1] = 5.0
    >>> x.sum().item()
    10.0
"""

from __future__ import annotations

import functools
import math
import weakref
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax._src.core import trace_state_clean as _trace_state_clean

from spx._tensor import graph, numpy_names, program
from spx._tensor.dispatch import apply, new_storage
from spx._tensor.graph import LEAF, Node, Storage, value_node
from spx._tensor.methods.autograd import AutogradMethods
from spx._tensor.methods.convert import ConvertMethods, _imag, _real, _stop_gradient
from spx._tensor.methods.indexing import IndexingMethods
from spx._tensor.methods.inplace import InplaceMethods
from spx._tensor.methods.math import MathMethods
from spx._tensor.methods.reduction import ReductionMethods
from spx._tensor.methods.shape import ShapeMethods, _bitcast, _broadcast

OVERLAPPING_WRITE = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)
_LEAF_INPLACE = (
    "a leaf Variable that requires grad is being used in an in-place operation. Wrap the "
    "update in `with spx.no_grad():` (as optimizers and init functions do), or write to "
    "`t.data` instead of `t`."
)
_VIEW_OF_LEAF_INPLACE = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation. "
    "Wrap the update in `with spx.no_grad():`."
)


def _view_from(base: Any, *rest: Any) -> Any:
    """A view's value from its base: ``rest`` is the chain's dynamic inputs, then the chain."""
    chain = rest[-1]
    extras = rest[:-1]
    it = iter(extras)
    for fn, static, n_extra in chain:
        base = fn(base, *[next(it) for _ in range(n_extra)], *static)
    return base


# View steps that take part of each element, or join parts (real, imag, view_as_real,
# view_as_complex), each with ``join(whole, part) -> whole``: what writing the part does.
PART_VIEWS: dict[Any, Any] = {
    _real: lambda whole, part: lax.complex(part, jnp.imag(whole)).astype(whole.dtype),
    _imag: lambda whole, part: lax.complex(jnp.real(whole), part).astype(whole.dtype),
}


def _write_part(base: Any, new: Any, extras: tuple, chain: tuple, k: int) -> Any:
    """``_write_back`` through a view whose ``k``-th step is one of :data:`PART_VIEWS`
    (``c.real``, ``c[0].imag[1:]``, ``view_as_real(c)``): the part is written, joined into
    the value it was taken from, which goes back through the steps before."""
    fn = chain[k][0]
    n_before = sum(step[2] for step in chain[:k])
    before, after = chain[:k], chain[k + 1 :]
    whole = _view_from(base, *extras[:n_before], before)
    part = fn(whole)
    part = _write_back(part, new, *extras[n_before:], after) if after else new.astype(part.dtype)
    whole = PART_VIEWS[fn](whole, part)
    return _write_back(base, whole, *extras[:n_before], before) if before else whole


def _write_back(base: Any, new: Any, *rest: Any) -> Any:
    """``base`` with the elements a view selects replaced by ``new`` (any dtype, any view).

    The view's derivation applied to the element positions of ``base`` tells which element of
    ``base`` each element of the view is; a scatter puts ``new`` there. Differentiable in both
    ``base`` and ``new``.
    """
    chain, extras = rest[-1], rest[:-1]
    for k, (fn, _, _) in enumerate(chain):
        if fn in PART_VIEWS:
            return _write_part(base, new, extras, chain, k)
    positions = jnp.arange(base.size, dtype=jnp.int32).reshape(base.shape)
    # A dtype view (same item size) moves no element: its positions are its base's, and its
    # values go back bit for bit (x.view(int32)[0] = 0 writes 0.0 into a float32 x).
    moves = tuple(step for step in chain if step[0] is not _bitcast)
    index = _view_from(positions, *extras, moves)
    values = new.reshape(-1)
    values = _bitcast(values, base.dtype) if len(moves) < len(chain) else values.astype(base.dtype)
    flat = base.reshape(-1).at[index.reshape(-1)].set(values)
    return flat.reshape(base.shape)


@jax.custom_jvp
def _kept_history(old: Any, new: Any) -> Any:
    """``new``'s value with ``old``'s derivative: a write autograd does not record."""
    return new


@_kept_history.defjvp
def _kept_history_jvp(primals: tuple, tangents: tuple) -> tuple:
    # The primal output is the kept node again, so higher orders see old's derivative too.
    return _kept_history(*primals), tangents[0]


def _unrecorded_write(old: tuple, new: tuple) -> tuple:
    """The storage reference after a write that torch's autograd does not see (under no_grad,
    through ``.data`` or a ``detach()``ed alias) into ``old``, a result with history: the
    written values, and gradients still flow into ``old``'s history as if it were unchanged,
    as torch keeps the tensor's ``grad_fn`` (the straight-through estimator's
    ``y.data = y.data.round()``)."""
    node = old[0]
    kept = Node(_kept_history, (), (old, new), (node.avals[old[1]],), None, True)
    return (kept, 0)


def _no_grad_stops_derivatives(old: Node) -> bool:
    """Whether a write under no_grad into ``old`` (a result with history) is unseen by the
    derivative being taken: always, except inside spx.func's forward-mode transforms (jvp,
    jacfwd), whose derivative follows it as torch's forward-mode AD does."""
    modes = graph.STATE.func_modes
    if not modes or "forward" not in modes:
        return True
    if "reverse" in modes and graph.depends_on_tracer(old):
        from spx._tensor.dispatch import _MIXED_MODES

        raise NotImplementedError(_MIXED_MODES.format(modes=" and ".join(modes)))
    return "reverse" in modes


def _detached_chain(chain: tuple) -> bool:
    return any(step[0] is _stop_gradient for step in chain)


class _View:
    """How a view derives from its base: ``chain`` of ``(fn, static, n_extra)`` steps applied
    to the base's value with ``extras`` (dynamic inputs such as slice starts); ``version`` is
    the base's storage version the view's value was derived from; ``overlaps``: whether two of
    its elements are one element of the base (None until asked, see :func:`overlaps`)."""

    __slots__ = ("base", "chain", "extras", "overlaps", "version")

    def __init__(self, base: Any, chain: tuple, extras: tuple, version: int) -> None:
        self.base = base
        self.chain = chain
        self.extras = extras
        self.version = version
        self.overlaps: bool | None = None


# View steps after which two elements of a view can be one element of its base (expand).
MAY_OVERLAP = {_broadcast}


def overlaps(view: _View) -> bool:
    """Whether two elements of ``view`` are one element of its base (``x.expand(4, 3)``).

    torch refuses most in-place writes into such a view (its strides make the elements one
    memory location); spx would scatter the written view into the base with duplicate
    positions, keeping an arbitrary one of them. Found once per view, from the positions of
    the base's elements, only for chains with an expanding step.
    """
    if view.overlaps is None:
        view.overlaps = any(fn in MAY_OVERLAP for fn, _, _ in view.chain) and _repeats(view)
    return view.overlaps


def _repeats(view: _View) -> bool:
    extras = []
    for e in view.extras:
        value = e._value() if isinstance(e, Tensor) else e
        if isinstance(value, jax.core.Tracer):
            return False  # a slice start computed inside spx.compile: not known while tracing
        extras.append(np.asarray(value))
    return _positions_repeat(tuple(view.base._aval.shape), view.chain, tuple(map(_key, extras)))


def _key(a: np.ndarray) -> tuple:
    return (a.shape, a.dtype.str, a.tobytes())


@functools.lru_cache(maxsize=256)
def _positions_repeat(shape: tuple, chain: tuple, extras: tuple) -> bool:
    """Whether the view ``chain`` of a base of ``shape`` lists a base position twice; computed
    with concrete values even while spx.compile traces (the answer depends on shapes and the
    chain only), once per chain."""
    values = [np.frombuffer(b, np.dtype(d)).reshape(s) for s, d, b in extras]
    with jax.ensure_compile_time_eval():
        positions = jnp.arange(math.prod(shape), dtype=jnp.int32).reshape(shape)
        try:
            index = np.asarray(_view_from(positions, *values, chain))
        except TypeError:
            return False  # a step positions cannot go through (view_as_complex): no expand there
    return np.unique(index).size < index.size


class Tensor(
    ShapeMethods,
    MathMethods,
    ReductionMethods,
    IndexingMethods,
    InplaceMethods,
    ConvertMethods,
    AutogradMethods,
):
    """A multi-dimensional array with torch's methods and autograd (mirrors ``torch.Tensor``).

    Create tensors with ``spx.tensor``, ``spx.zeros``, ``spx.randn``, ... ; ``spx.Tensor(data)``
    makes a float32 tensor as ``torch.Tensor(data)`` does.

    Example:
        >>> import spx
        >>> w = spx.randn(3, 2, requires_grad=True)
        >>> loss = (spx.ones(4, 3) @ w).pow(2).mean()
        >>> loss.backward()
        >>> w.grad.shape
        spx.Size([3, 2])
    """

    # Four slots are set per operation; rarer state lives elsewhere: a view's derivation in
    # ``_view`` (a _View or None), a leaf's grad-leaf node and hooks in ``__dict__``.
    __slots__ = ("__dict__", "__weakref__", "_grad", "_rg", "_s", "_view")
    # numpy defers its operators to ours (np_array + t calls t.__radd__).
    __array_priority__ = 1000

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # torch.Tensor(data) / torch.Tensor(2, 3): the legacy float32 constructor.
        from spx.ops.creation import _legacy_tensor

        value = _legacy_tensor(args, kwargs)
        self._init(new_storage(value_node(value), 0), False)

    def _init(self, storage: Storage, requires_grad: bool) -> None:
        self._s = storage
        self._view = None
        self._rg = requires_grad
        self._grad = None

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def _wrap(cls, node: Node, idx: int) -> Tensor:
        """A new (non-view) Tensor holding output ``idx`` of ``node``."""
        t = object.__new__(Tensor)
        s = t._s = Storage(node, idx)
        _PENDING_APPEND(_weakref(s))
        t._view = None
        t._rg = False
        t._grad = None
        return t

    @classmethod
    def _of(cls, array: Any, requires_grad: bool = False) -> Tensor:
        """A leaf Tensor over a computed ``jax.Array`` (or tracer)."""
        t = object.__new__(cls)
        t._init(Storage(value_node(array)), requires_grad)
        return t

    # -- the value ---------------------------------------------------------------------------
    def _cur(self) -> Storage:
        """This tensor's storage, re-derived from the base first if this is a stale view."""
        view = self._view
        if view is not None and view.base._s.version != view.version:
            self._refresh()
        return self._s

    def _refresh(self) -> None:
        view = self._view
        if any(step[0] is _stop_gradient for step in view.chain):
            # A view of a detached result (y.detach()[0]): re-derived without history.
            previous = graph.set_grad_enabled_flag(False)
            try:
                fresh = apply(_view_from, (view.chain,), (view.base, *view.extras))._s
            finally:
                graph.set_grad_enabled_flag(previous)
        else:
            fresh = apply(_view_from, (view.chain,), (view.base, *view.extras))._s
        s = self._s
        s.node, s.idx = fresh.node, fresh.idx
        if s.node.values is None:
            graph.note_pending(s)
        view.version = view.base._s.version

    def _ref(self, grad_on: bool) -> tuple[Node, int]:
        """The input reference of this tensor for a new operation."""
        view = self._view
        if view is not None and view.base._s.version != view.version:
            self._refresh()
        s = self._s
        if self._rg and grad_on and not s.node.requires_grad:
            ln = self.__dict__.get("_leafnode")
            if ln is None or ln.inputs[0][0] is not s.node or ln.inputs[0][1] != s.idx:
                ln = Node(LEAF, (), ((s.node, s.idx),), (s.node.avals[s.idx],), None, True)
                ln.leaf = self
                self.__dict__["_leafnode"] = ln
            return (ln, 0)
        return (s.node, s.idx)

    def _value(self) -> jax.Array:
        """The computed array (computes everything pending on this thread if needed)."""
        s = self._cur()
        values = s.node.values
        if values is None:
            program.run([s])
            values = s.node.values
        return values[s.idx]

    @property
    def _data(self) -> Any:
        """Internal: the raw array (computed if pending); spx's transforms bind through it."""
        if self._view is None:
            s = self._s
            values = s.node.values
            if values is not None:
                return values[s.idx]
        return self._value()

    @_data.setter
    def _data(self, array: Any) -> None:
        """Internal: replace the value in place with a computed array (aliases see it)."""
        s = self._s
        s.node, s.idx = value_node(array), 0
        s.version += 1

    def _write_through(self, array: Any) -> None:
        """Internal: ``_data = array``, and for a view its base too, as torch's in-place writes
        (``backward()`` adding into a ``.grad`` that views a flat gradient buffer).

        While spx binds state to a trace (spx.compile) the view alone is bound, not its base:
        only the view is written then, and the compiled step's writer writes through after the
        call."""
        if self._view is None or graph.STATE.binding:
            self._data = array
            return
        previous = graph.set_grad_enabled_flag(False)
        try:
            self._assign(Tensor._of(array))
        finally:
            graph.set_grad_enabled_flag(previous)

    @property
    def _aval(self) -> Any:
        s = self._cur()
        return s.node.avals[s.idx]

    # -- writing -----------------------------------------------------------------------------
    def _check_inplace(self) -> None:
        if not graph.STATE.binding and not _trace_state_clean():
            self._check_foreign_write()
        if not graph.STATE.grad_enabled:
            return
        if self._rg and self.is_leaf:
            raise RuntimeError(_LEAF_INPLACE)
        view = self._view
        if view is not None and view.base._rg and view.base.is_leaf:
            raise RuntimeError(_VIEW_OF_LEAF_INPLACE)

    def _check_foreign_write(self) -> None:
        """Refuse an in-place write into a concrete tensor under a plain JAX transform.

        The written value would be traced: stored into a tensor that outlives the trace (a
        module's buffer, a parameter closed over by ``jax.jit``) it leaks a tracer, and the
        update is lost. Tensors created inside the transformation hold tracers and are fine.
        """
        target = self if self._view is None else self._view.base
        values = target._s.node.values
        if values is not None and not isinstance(values[target._s.idx], jax.core.Tracer):
            from spx._transforms import inplace_error

            raise inplace_error(target)

    def _assign(self, new: Tensor, same_everywhere: bool = False) -> Tensor:
        """Make ``new``'s value this tensor's value (in place; through the base for a view).

        ``same_everywhere``: ``new`` is one value repeated (``fill_``, ``zero_``), which torch
        writes into an expanded view too; other writes into one raise torch's error.
        """
        self._check_inplace()
        if self._view is not None and not same_everywhere and overlaps(self._view):
            raise RuntimeError(OVERLAPPING_WRITE)
        aval = self._aval
        if new.shape != aval.shape:
            raise RuntimeError(
                f"output with shape {list(aval.shape)} doesn't match the broadcast shape "
                f"{list(new.shape)}"
            )
        if new.dtype != aval.dtype:
            new = new._cast_for_inplace(aval.dtype)
        view = self._view
        grad_off = not graph.STATE.grad_enabled
        if view is not None and id(self) not in graph.STATE.bound_views:
            base = view.base
            bs = base._cur()
            old = (bs.node, bs.idx)
            merged = apply(_write_back, (view.chain,), (base, new, *view.extras))
            ref = (merged._s.node, merged._s.idx)
            if bs.node.requires_grad and (
                _detached_chain(view.chain) or (grad_off and _no_grad_stops_derivatives(bs.node))
            ):
                ref = _unrecorded_write(old, ref)
            bs.node, bs.idx = ref
            bs.version += 1
            graph.note_pending(bs)
            view.version = bs.version
        s = self._s
        ref = (new._s.node, new._s.idx)
        if grad_off and s.node.requires_grad and _no_grad_stops_derivatives(s.node):
            ref = _unrecorded_write((s.node, s.idx), ref)
        s.node, s.idx = ref
        s.version += 1
        if s.node.values is None:
            graph.note_pending(s)
        return self

    def _assign_op(self, fn: Any, static: tuple, args: tuple) -> Tensor:
        return self._assign(apply(fn, static, args))

    def _make_view(self, out: Tensor, fn: Any, static: tuple, extras: tuple = ()) -> Tensor:
        """Mark ``out`` (just computed as ``fn(self, *extras, *static)``) a view of ``self``."""
        view = self._view
        step = ((fn, static, len(extras)),)
        if view is None:
            out._view = _View(self, step, extras, self._s.version)
        else:
            out._view = _View(
                view.base, view.chain + step, view.extras + extras, view.base._s.version
            )
        return out

    # -- properties --------------------------------------------------------------------------
    @property
    def is_leaf(self) -> bool:
        """True when the tensor has no autograd history (torch's leaf tensors)."""
        return not self._cur().node.requires_grad

    @property
    def requires_grad(self) -> bool:
        s = self._cur()
        if s.node.requires_grad:
            return jnp.issubdtype(s.node.avals[s.idx].dtype, jnp.inexact)
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    @property
    def data(self) -> Tensor:
        """A detached alias: same values, no autograd (writes through ``.data`` are seen here)."""
        return self.detach()

    @data.setter
    def data(self, value: Any) -> None:
        from spx.ops.creation import as_value

        array = as_value(value)
        s = self._cur()
        node = value_node(array)
        self._view = None
        if s.node.requires_grad and s.aval.shape == array.shape and s.aval.dtype == array.dtype:
            # torch keeps the tensor's history (grad_fn): new values, the old derivative.
            kept, idx = _unrecorded_write((s.node, s.idx), (node, 0))
            self._s = new_storage(kept, idx)
        else:
            self._s = Storage(node)

    def _alias(self) -> Tensor:
        t = object.__new__(Tensor)
        t._init(self._cur(), False)
        t._view = self._view  # an alias of a view is a view of the same base
        return t

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # JAX registers pytree nodes per exact class: every subclass (Parameter, a user's) is
        # registered too, or jax.jit(f)(model) would see opaque leaves. A subclass adapts the
        # conversion by overriding _tree_flatten/_tree_unflatten.
        super().__init_subclass__(**kwargs)
        jax.tree_util.register_pytree_node(cls, _flatten, _unflatten)

    _tree_flatten = staticmethod(lambda t: _flatten_value(t))
    _tree_unflatten = staticmethod(lambda aux, children: _unflatten_value(aux, children))

    def __deepcopy__(self, memo: dict) -> Tensor:
        # A copy of the buffer, not the same array: spx.compile donates the original's.
        out = object.__new__(type(self))
        out._init(Storage(value_node(jnp.array(self._data, copy=True))), self._rg)
        memo[id(self)] = out
        if self._grad is not None:
            out._grad = self._grad.__deepcopy__(memo)
        out.__dict__.update(
            {
                k: v
                for k, v in self.__dict__.items()
                if k not in ("_leafnode", "_grad_hooks", "_post_accumulate_grad_hooks")
            }
        )
        return out

    def __reduce_ex__(self, protocol: Any) -> Any:
        # For multiprocessing (spawned ranks): the value travels as a numpy array.
        return (_rebuild, (type(self), np.asarray(self._data), self._rg))

    def __repr__(self) -> str:
        from spx._tensor.printing import tensor_repr

        return tensor_repr(self)


def _flatten(t: Tensor) -> tuple[tuple[Any], tuple[type, bool]]:
    return type(t)._tree_flatten(t)


def _unflatten(aux: tuple[type, bool], children: tuple[Any]) -> Tensor:
    return aux[0]._tree_unflatten(aux, children)


def _flatten_value(t: Tensor) -> tuple[tuple[Any], tuple[type, bool]]:
    """A tensor as a pytree: one child (its computed value); aux ``(class, requires_grad)``.

    A jitted JAX function (``jnp.sin``, ``jnp.sum``, ``jax.nn.relu``) takes its arguments as
    pytrees: a Tensor that requires grad would enter as its bare value and the gradient along
    that path would be lost silently, so that raises as ``__jax_array__`` does. Flattening is
    fine under spx's own transforms, inside a foreign trace (the user differentiates with
    JAX), with grad mode off, and for a Module's own tensors (``jax.jit(f)(model)``).
    """
    state = graph.STATE
    if t._rg or t._cur().node.requires_grad:
        owned = state.owned
        if id(t) in owned:
            owned.discard(id(t))
        elif state.grad_enabled and not state.binding and _trace_state_clean():
            from spx._tensor.methods.convert import jnp_requires_grad_message

            raise RuntimeError(jnp_requires_grad_message(t._describe()))
    return (t._value(),), (type(t), t._rg)


def _unflatten_value(aux: tuple[type, bool], children: tuple[Any]) -> Tensor:
    # No validation: jax passes placeholders (None, object()) through unflatten.
    cls, requires_grad = aux
    t = object.__new__(cls)
    child = children[0]
    aval = getattr(child, "aval", None)
    node = Node(None, (), (), (aval,), (child,), False)
    t._init(Storage(node), requires_grad)
    return t


jax.tree_util.register_pytree_node(Tensor, _flatten, _unflatten)
# Identity hashing in C (torch's too): optimizer state lookups hash tensors on every step, and
# __eq__ (elementwise) would otherwise disable hashing.
Tensor.__hash__ = object.__hash__  # type: ignore[method-assign]
_weakref = weakref.ref


def _PENDING_APPEND(ref: Any) -> None:
    graph.STATE.pending.append(ref)


def _rebuild(cls: type, value: np.ndarray, requires_grad: bool) -> Tensor:
    t = object.__new__(cls)
    t._init(Storage(value_node(jnp.asarray(value))), requires_grad)
    return t


def is_tensor(obj: Any) -> bool:
    """Whether ``obj`` is an ``spx.Tensor`` (mirrors ``torch.is_tensor``)."""
    return isinstance(obj, Tensor)


# Shown as spx.Tensor (as torch shows torch.Tensor), not the private module path.
Tensor.__module__ = "spx"
numpy_names.accept_methods(Tensor)
