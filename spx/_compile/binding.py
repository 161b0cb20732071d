"""The mutable state reachable from a function's arguments, as flat lists of arrays.

torch-shaped code mutates objects: ``optimizer.step()`` writes ``p.data``, ``spx.backward``
writes ``p.grad``, BatchNorm assigns new buffers, Dropout advances the RNG key. To run such code
inside a JAX transformation, spx *binds* the state: it reads every slot into a list, writes
tracers into the objects, runs the user's function, reads the slots again, and restores the
original values. :class:`Binding` is that walk and those reads and writes, shared by
``spx.backward`` (autograd) and ``spx.compile`` (the fused step).

Slots, in order: each Parameter's data, each Parameter's grad, each buffer, each optimizer
state entry, each numeric optimizer hyperparameter, and the rank's RNG key.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax

from spx import _context
from spx import random as spx_random
from spx._compile import packing
from spx._tensor.graph import Node, Storage
from spx._tensor.tensor import Tensor
from spx.nn.module import Module
from spx.nn.parameter import Parameter, UninitializedParameter

_OPTIMIZER: list[type] = []


def _optimizer_type() -> type:
    # Resolved on first use (spx.optim imports this module); every compiled call asks.
    if not _OPTIMIZER:
        from spx.optim.optimizer import Optimizer

        _OPTIMIZER.append(Optimizer)
    return _OPTIMIZER[0]


def _is_optimizer(x: Any) -> bool:
    return isinstance(x, _optimizer_type())


def is_stateful(x: Any) -> bool:
    """Objects a Binding walks into: Modules, Parameters, Optimizers and trainable leaves.

    A leaf Tensor that requires grad (``spx.zeros(3, requires_grad=True)``) is state like a
    Parameter: ``loss.backward()`` writes its ``.grad`` and an optimizer updates it in place,
    so a compiled step must bind the object itself, not a traced copy of its value.
    """
    return isinstance(x, Module | Parameter) or _is_optimizer(x) or _trainable_leaf(x)


def _trainable_leaf(x: Any) -> bool:
    # ``_rg`` is only ever set on leaves (requires_grad_() refuses non-leaves).
    return isinstance(x, Tensor) and x._rg


class Binding:
    """The flat state of a set of Modules, Parameters (leaf Tensors) and Optimizers.

    Args:
        roots: the stateful objects (as found among a function's arguments).

    Example:
        >>> import spx
        >>> b = Binding([spx.nn.Linear(2, 3)])
        >>> len(b.params), len(b.buffer_slots)
        (2, 0)
    """

    def __init__(self, roots: Iterable[Any]) -> None:
        params: list[Tensor] = []
        seen_params: set[int] = set()
        modules: list[Module] = []
        seen_modules: set[int] = set()
        optimizers: list[Any] = []

        def add_param(p: Tensor) -> None:
            if id(p) not in seen_params:
                seen_params.add(id(p))
                params.append(p)

        for root in roots:
            if isinstance(root, Module):
                for m in root.modules():
                    if id(m) not in seen_modules:
                        seen_modules.add(id(m))
                        modules.append(m)
                        for p in m._parameters.values():
                            if p is not None:
                                add_param(p)
            elif isinstance(root, Tensor):
                add_param(root)
            elif _is_optimizer(root) and all(o is not root for o in optimizers):
                optimizers.append(root)
                for p in root._all_params():
                    add_param(p)
        self.params = params
        self.modules = modules
        self.optimizers = optimizers
        self.buffer_slots: list[tuple[dict, str]] = [
            (m._buffers, name) for m in modules for name in m._buffers
        ]
        # The buffer objects: a step that assigns a new tensor to a buffer attribute gets its
        # value written into the original object (torch's in-place buffer updates keep it).
        self.buffer_objs: list[Tensor | None] = [d[n] for d, n in self.buffer_slots]
        self.opt_params: list[list[Tensor]] = [opt._all_params() for opt in optimizers]
        self.opt_ids = [[id(p) for p in own] for own in self.opt_params]
        self.opt_slots: list[tuple[Any, Tensor]] = [
            (opt, p) for opt, own in zip(optimizers, self.opt_params, strict=True) for p in own
        ]
        self.hparam_slots: list[tuple[dict, str]] = []
        for opt in optimizers:
            for group in opt.param_groups:
                _static, dynamic = opt._static_and_dynamic(group)
                self.hparam_slots.extend((group, k) for k in dynamic)
        self.param_classes = [type(p) for p in params]
        # Whether the last read_flat() found gradients a compiled step left packed.
        self.packed_read = False

    # -- reading and writing -----------------------------------------------------------------
    def read_state(self) -> list[Any]:
        """``[datas, grads, buffers, opt_states, key]`` — the mutable state, as it is now."""
        return [
            [p._data for p in self.params],
            [_grad_value(p) for p in self.params],
            [_buffer_value(d[n]) for d, n in self.buffer_slots],
            [o.state.get(p) for o, p in self.opt_slots],
            spx_random.get_key(),
        ]

    def write_state(self, state: list[Any]) -> None:
        """Write ``state`` (as :meth:`read_state` returns it) back into the objects as it is."""
        datas, grads, buffers, opt_states, key = state
        for p, d, g in zip(self.params, datas, grads, strict=True):
            p._data = d
            _set_grad_value(p, g)
        for (d, n), obj, b in zip(self.buffer_slots, self.buffer_objs, buffers, strict=True):
            d[n] = _with_value(obj, b)
        for (o, p), s in zip(self.opt_slots, opt_states, strict=True):
            if s is None:
                o.state.pop(p, None)
            else:
                o.state[p] = s
        _context.current().key = key

    def bind_state(self, state: list[Any]) -> None:
        """Write traced ``state`` into the objects for a trace of the user's code.

        Each optimizer state dict is bound as a fresh shallow copy: torch-style code updates
        ``self.state[p]`` *in place* (``state["momentum_buffer"] = buf``), and a dict shared
        with the trace's inputs would hide that update from the change detection
        (:func:`same_slot` compares by identity).
        """
        datas, grads, buffers, opt_states, key = state
        self.write_state([datas, grads, buffers, [_fresh(s) for s in opt_states], key])

    def read_flat(self) -> list[Any]:
        """The state slots as one flat list: datas, grads, buffers, optimizer states, key.

        This runs on every compiled call, so it reads computed values straight from the
        storages (``t._data`` would, with a property call per tensor) and an optimizer's state
        without hashing its Tensor keys when every parameter has state, in order.
        """
        params = self.params
        self.packed_read = False
        try:
            # ``t._data`` inlined (a view goes through it): (s := t._s).node.values[s.idx].
            datas = [(s := p._s).node.values[s.idx] if p._view is None else p._data for p in params]
        except TypeError:  # a value still pending (None values): compute it
            datas = [p._data for p in params]
        try:
            grads = [
                None
                if (g := p._grad) is None
                else (s := g._s).node.values[s.idx]
                if g._view is None
                else g._data
                for p in params
            ]
        except TypeError:
            # Pending: computed now, except gradients still packed by the last compiled step,
            # which only the programs that read them compute (see packing.py).
            grads = [
                None
                if (g := p._grad) is None
                else s  # the gradient's own Storage stands in for the array
                if g._view is None and packing.is_pending((s := g._s).node)
                else g._data
                for p in params
            ]
            self.packed_read = any(type(g) is Storage for g in grads)
        states = []
        for o, own, ids in zip(self.optimizers, self.opt_params, self.opt_ids, strict=True):
            state = o.state
            if list(map(id, state)) == ids:
                states.extend(state.values())
            else:
                states.extend([state.get(p) for p in own])
        return [
            *datas,
            *grads,
            *[_buffer_value(d[n]) for d, n in self.buffer_slots],
            *states,
            spx_random.get_key(),
        ]

    def unflatten(self, flat: list[Any]) -> list[Any]:
        """Regroup :meth:`read_flat`'s list as :meth:`read_state` returns it."""
        n_p, n_b = len(self.params), len(self.buffer_slots)
        n_o = len(self.opt_slots)
        return [
            flat[:n_p],
            flat[n_p : 2 * n_p],
            flat[2 * n_p : 2 * n_p + n_b],
            flat[2 * n_p + n_b : 2 * n_p + n_b + n_o],
            flat[-1],
        ]

    def writer(self, indices: tuple[int, ...], fresh_grads: frozenset[int] = frozenset()) -> Any:
        """A function writing ``values[k]`` into flat slot ``indices[k]`` (fast, per kind).

        The gradients of the parameters in ``fresh_grads`` (positions) get new tensor objects,
        the others keep theirs."""
        n_p, n_b = len(self.params), len(self.buffer_slots)
        n_o = len(self.opt_slots)
        datas, grads, buffers, opts, key_at = [], [], [], [], None
        for k, i in enumerate(indices):
            if i < n_p:
                datas.append((self.params[i], k))
            elif i < 2 * n_p:
                grads.append((self.params[i - n_p], k, i - n_p in fresh_grads))
            elif i < 2 * n_p + n_b:
                j = i - 2 * n_p
                buffers.append((*self.buffer_slots[j], self.buffer_objs[j], k))
            elif i < 2 * n_p + n_b + n_o:
                opts.append((*self.opt_slots[i - 2 * n_p - n_b], k))
            else:
                key_at = k

        def write(values: list[Any]) -> None:
            # Parameters, grads and buffers that keep their Tensor object get their new arrays
            # through one value node (see _write_arrays); the rest (first grads, lazy
            # parameters, cleared slots) one by one.
            targets, arrays = [], []
            for p, k in datas:
                v = values[k]
                if v is None:
                    p._data = v
                else:
                    targets.append(p)
                    arrays.append(v)
            for p, k, fresh in grads:
                v, g = values[k], None if fresh else p._grad
                if type(v) is Storage:  # a packed part (packing.unpack)
                    if g is None:
                        p._grad = packing.tensor(v)
                    else:
                        packing.hold(g._s, v)
                elif v is None:
                    p._grad = None
                elif g is None:
                    p._grad = Tensor._of(v)
                elif g._view is not None:
                    g._write_through(v)  # into the view's base too, as torch's in-place add
                else:
                    targets.append(g)
                    arrays.append(v)
            for d, n, obj, k in buffers:
                v = values[k]
                if v is None or obj is None:
                    d[n] = _with_value(obj, v)
                else:
                    targets.append(obj)
                    arrays.append(v)
                    d[n] = obj
            _write_arrays(targets, arrays)
            for o, p, k in opts:
                s = values[k]
                if s is None:
                    o.state.pop(p, None)
                else:
                    o.state[p] = s
            if key_at is not None:
                _context.current().key = values[key_at]

        return write

    def read_hparams(self) -> list[Any]:
        return [g[k] for g, k in self.hparam_slots]

    def write_hparams(self, values: list[Any]) -> None:
        for (g, k), v in zip(self.hparam_slots, values, strict=True):
            g[k] = v

    def restore_classes(self) -> None:
        """Undo lazy materialization done while tracing (the trace's values are discarded)."""
        for p, cls in zip(self.params, self.param_classes, strict=True):
            if p.__class__ is not cls:
                p.__class__ = cls

    def has_uninitialized(self) -> bool:
        return any(c is UninitializedParameter for c in self.param_classes)


def _write_arrays(tensors: list[Tensor], arrays: list[Any]) -> None:
    """``t._data = a`` for every pair, in place (aliases of each tensor see its new value).

    The same as the setter, with one multi-output value node for all the arrays instead of
    one node per tensor: node construction is most of the setter's cost, and a compiled step
    writes back every parameter and gradient on each call.
    """
    if not tensors:
        return
    node = Node(None, (), (), tuple([a.aval for a in arrays]), tuple(arrays), False)
    for i, t in enumerate(tensors):
        s = t._s
        s.node = node
        s.idx = i
        s.version += 1


def _grad_value(p: Tensor) -> Any:
    grad = p._grad
    return None if grad is None else grad._data


def _set_grad_value(p: Tensor, value: Any) -> None:
    """Set ``p.grad`` to the array ``value`` (None clears it); the grad tensor object stays."""
    if value is None:
        p._grad = None
    elif p._grad is None:
        p._grad = Tensor._of(value)
    else:
        p._grad._data = value


def _buffer_value(b: Tensor | None) -> Any:
    return None if b is None else b._data


def _with_value(obj: Tensor | None, value: Any) -> Tensor | None:
    """The buffer object holding ``value`` (the original object when there is one)."""
    if value is None:
        return None
    if obj is None:
        return Tensor._of(value)
    obj._data = value
    return obj


def _fresh(value: Any) -> Any:
    return dict(value) if type(value) is dict else value


def same_slot(before: Any, after: Any) -> bool:
    """Whether a state slot still holds what was bound: the same object, or for an optimizer
    state dict (bound as a copy, see :meth:`Binding.bind_state`) the same keys and the same
    objects under them."""
    if before is after:
        return True
    if type(before) is dict and type(after) is dict:
        return before.keys() == after.keys() and all(before[k] is after[k] for k in before)
    return False


def flatten_args(args: Any) -> tuple[list[Any], Any]:
    """Flatten a call's arguments, keeping Modules, Parameters and Optimizers as leaves."""
    return jax.tree_util.tree_flatten(args, is_leaf=is_stateful)
