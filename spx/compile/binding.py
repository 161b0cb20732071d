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
    """Objects a Binding walks into: Modules, Parameters and Optimizers."""
    return isinstance(x, Module | Parameter) or _is_optimizer(x)


class Binding:
    """The flat state of a set of Modules, Parameters and Optimizers.

    Args:
        roots: the stateful objects (as found among a function's arguments).

    Example:
        >>> import spx
        >>> b = Binding([spx.nn.Linear(2, 3)])
        >>> len(b.params), len(b.buffer_slots)
        (2, 0)
    """

    def __init__(self, roots: Iterable[Any]) -> None:
        params: list[Parameter] = []
        seen_params: set[int] = set()
        modules: list[Module] = []
        seen_modules: set[int] = set()
        optimizers: list[Any] = []

        def add_param(p: Parameter) -> None:
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
            elif isinstance(root, Parameter):
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
        self.opt_slots: list[tuple[Any, Parameter]] = [
            (opt, p) for opt in optimizers for p in opt._all_params()
        ]
        self.hparam_slots: list[tuple[dict, str]] = []
        for opt in optimizers:
            for group in opt.param_groups:
                _static, dynamic = opt._static_and_dynamic(group)
                self.hparam_slots.extend((group, k) for k in dynamic)
        self.param_classes = [type(p) for p in params]

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
        """The state slots as one flat list: datas, grads, buffers, optimizer states, key."""
        params = self.params
        return [
            *[p._data for p in params],
            *[_grad_value(p) for p in params],
            *[_buffer_value(d[n]) for d, n in self.buffer_slots],
            *[o.state.get(p) for o, p in self.opt_slots],
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

    def writer(self, indices: tuple[int, ...]) -> Any:
        """A function writing ``values[k]`` into flat slot ``indices[k]`` (fast, per kind)."""
        n_p, n_b = len(self.params), len(self.buffer_slots)
        n_o = len(self.opt_slots)
        datas, grads, buffers, opts, key_at = [], [], [], [], None
        for k, i in enumerate(indices):
            if i < n_p:
                datas.append((self.params[i], k))
            elif i < 2 * n_p:
                grads.append((self.params[i - n_p], k))
            elif i < 2 * n_p + n_b:
                j = i - 2 * n_p
                buffers.append((*self.buffer_slots[j], self.buffer_objs[j], k))
            elif i < 2 * n_p + n_b + n_o:
                opts.append((*self.opt_slots[i - 2 * n_p - n_b], k))
            else:
                key_at = k

        def write(values: list[Any]) -> None:
            for p, k in datas:
                p._data = values[k]
            for p, k in grads:
                _set_grad_value(p, values[k])
            for d, n, obj, k in buffers:
                d[n] = _with_value(obj, values[k])
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
