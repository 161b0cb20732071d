"""The compiled programs of one pipeline stage.

A stage runs six kinds of program, each one ``jax.jit`` executable on the stage's device:

* ``forward``   (F): runs the stage module (and, on the last stage, the loss) under
  ``jax.vjp`` and returns the outputs plus the vjp's residuals, which stay on the device until
  the matching backward;
* ``backward``  (B): cotangent of the outputs -> gradient of the inputs, and the weight
  gradients added into the stage's accumulators;
* ``backward_input`` (I) and ``backward_weight`` (W): the two halves of B, split at the jaxpr
  level (:mod:`.backward_split`) so that I + W do the work of B once;
* ``forward_backward`` (F then B of one microbatch, on the last stage): one program for the two
  when the schedule runs them back to back (1F1B's last stage does, every microbatch): no
  residuals leave the program and XLA fuses the loss's forward into its gradient. For the
  pipeline benchmark's last stage (2 residual MLP blocks of width 128, a 512-way head and
  cross-entropy, 128 tokens) 1.70 -> 1.56 ms per microbatch on the 2-core dev box;
* ``forward_eval``: the forward without residuals, for ``eval()`` and forward-only schedules.

Parameters are read live at every step and bound into the module only while tracing (the same
:class:`spx._compile.binding.Binding` as ``spx.compile``), so an optimizer step between two
schedule steps changes the next result. Buffers the forward assigns and the RNG key flow out of
each forward and are written back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from spx import random as spx_random
from spx._compile.binding import Binding, _buffer_value, _grad_value, _set_grad_value, _with_value
from spx._tensor.tensor import Tensor
from spx.distributed.pipelining.runtime.backward_split import BackwardSplit, split_backward
from spx.nn.module import Module


def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def to_arrays(tree: Any) -> Any:
    """``tree`` with every Tensor replaced by its array (the runtime moves plain arrays)."""
    return jax.tree_util.tree_map(
        lambda x: x._value() if isinstance(x, Tensor) else x, tree, is_leaf=_is_tensor
    )


def to_tensors(tree: Any) -> Any:
    """``tree`` with every array (or tracer) wrapped as a Tensor: what user code sees."""
    return jax.tree_util.tree_map(
        lambda x: Tensor._of(x) if isinstance(x, jax.Array) else x, tree, is_leaf=_is_tensor
    )


def _is_float(x: Any) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.inexact)


def _as_args(value: Any) -> tuple:
    """A stage's output becomes the next stage's positional arguments (torch's convention)."""
    return value if isinstance(value, tuple) else (value,)


def _differentiable_loss(loss: jax.Array) -> jax.Array:
    """The loss as the float32 scalar the backward's unit cotangent differentiates: a
    one-element loss of any float dtype (bfloat16 under a low-precision model, shape ``(1,)``)
    backpropagates as ``loss.backward()`` does; others raise torch's error."""
    if loss.size != 1 or not _is_float(loss):
        raise RuntimeError(
            "grad can be implicitly created only for scalar outputs: the pipeline's loss_fn "
            f"returned shape {tuple(loss.shape)} {loss.dtype}; reduce it to one number (e.g. "
            "return loss.mean())"
        )
    return loss.reshape(()).astype(jnp.float32)


def _add(acc: list[jax.Array] | None, grads: list[jax.Array]) -> list[jax.Array]:
    return list(grads) if acc is None else [a + g for a, g in zip(acc, grads, strict=True)]


def _finish_grads(grads: list[Any], acc: list[jax.Array], scale: Any) -> list[jax.Array]:
    out = []
    for g, a in zip(grads, acc, strict=True):
        a = a * jnp.asarray(scale, a.dtype)
        out.append(a if g is None else g + a)
    return out


class _Residuals:
    """What a forward keeps for its backward, minus the arrays the backward gets anyway.

    ``jax.vjp``'s residuals include the forward's own inputs (weights, stage inputs). A jitted
    program that returned those would copy them for every microbatch, so the forward returns
    only the *internal* residuals; the layout (the vjp's tree and where each leaf comes from)
    rides in the pytree aux data, and the backward programs re-insert the live inputs.
    """

    __slots__ = ("internal", "layout")

    def __init__(self, internal: list[Any], layout: tuple) -> None:
        self.internal = internal
        self.layout = layout  # (vjp treedef, ((source, index), ...), needs_inputs)

    def full(self, sources: tuple[list[Any], ...]) -> list[Any]:
        """The vjp's leaves: internal residuals plus the referenced inputs."""
        return [self.internal[i] if src < 0 else sources[src][i] for src, i in self.layout[1]]

    def vjp(self, sources: tuple[list[Any], ...]) -> Any:
        return self.layout[0].unflatten(self.full(sources))


jax.tree_util.register_pytree_node(
    _Residuals, lambda r: (r.internal, r.layout), lambda layout, xs: _Residuals(list(xs), layout)
)


def _split_residuals(vjp: Any, sources: tuple[list[Any], ...]) -> _Residuals:
    """Trace time: separate the vjp's leaves that are inputs (by tracer identity)."""
    leaves, tree = jax.tree_util.tree_flatten(vjp)
    where = {id(x): (src, i) for src, xs in enumerate(sources) for i, x in enumerate(xs)}
    internal, spec = [], []
    for leaf in leaves:
        hit = where.get(id(leaf))
        if hit is None:
            # A value can be a residual of several ops (tanh's output feeds the next matmul):
            # keep it once, or jit would return one copy per occurrence.
            hit = where[id(leaf)] = (-1, len(internal))
            internal.append(leaf)
        spec.append(hit)
    needs_inputs = any(src == _ARGS for src, _ in spec)
    return _Residuals(internal, (tree, tuple(spec), needs_inputs))


# Indices of the input lists a residual may refer to (the ``sources`` tuple).
_TRAIN, _FROZEN, _ARGS, _BUFFERS = 0, 1, 2, 3


@jax.tree_util.register_static
class _Static:
    """A non-array input leaf (``flag=True``, ``mode="causal"``), carried in the jit's static
    tree structure so the module sees the Python value, as in torch, not a traced array.
    Python floats stay traced, as in ``spx.compile`` (a new value does not recompile)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        # Compare the type too: jit must not reuse a program traced for ``1`` when given ``True``.
        return (
            isinstance(other, _Static)
            and type(other.value) is type(self.value)
            and other.value == self.value
        )

    def __hash__(self) -> int:
        return hash((type(self.value), self.value))


class _LossInputs(NamedTuple):
    """The last stage's loss inputs when ``step(loss_kwargs=...)`` is used."""

    target: Any
    loss_kwargs: dict[str, Any]


def _is_dynamic(x: Any) -> bool:
    # spx.compile's rule: arrays and Python floats are traced; bools, ints, strings... static.
    return isinstance(x, jax.Array | np.ndarray | np.generic | float | complex)


def _wrap_static(tree: Any) -> Any:
    return jax.tree_util.tree_map(lambda x: x if _is_dynamic(x) else _Static(x), tree)


def _loss_inputs(target: Any, loss_kwargs: dict[str, Any] | None) -> Any:
    if not loss_kwargs or target is None:
        return target
    return _LossInputs(target, _wrap_static(dict(loss_kwargs)))


def _unwrap_static(tree: Any) -> Any:
    return jax.tree_util.tree_map(
        lambda x: x.value if isinstance(x, _Static) else x,
        tree,
        is_leaf=lambda x: isinstance(x, _Static),
    )


class StagePrograms:
    """Builds and caches the programs of one stage module.

    Args:
        module: the stage's module (its parameters must live on ``device``).
        is_first: whether this is stage 0 (its inputs get no gradient).
        is_last: whether this is the last stage (it computes the loss).
        loss_fn: ``loss_fn(output, target) -> scalar`` on the last stage, or None.
        recompute: keep only the stage's inputs as residuals and recompute the forward in the
            backward (activation checkpointing, ``jax.checkpoint``).
    """

    def __init__(
        self,
        module: Module,
        is_first: bool,
        is_last: bool,
        loss_fn: Callable[[Any, Any], Any] | None,
        recompute: bool = False,
    ) -> None:
        self.module = module
        self.is_first = is_first
        self.is_last = is_last
        self.loss_fn = loss_fn
        self.recompute = recompute
        self.binding = Binding([module])
        self._rebuild()
        self._splits: dict[Any, BackwardSplit] = {}

    def _rebuild(self) -> None:
        params = self.binding.params
        self.train_index = [
            i for i, p in enumerate(params) if p.requires_grad and _is_float(p.data)
        ]
        train = set(self.train_index)
        self.frozen_index = [i for i in range(len(params)) if i not in train]
        self.train_params = [params[i] for i in self.train_index]
        self._forward = jax.jit(self._forward_impl, static_argnums=(6,))
        self._forward_eval = jax.jit(self._forward_eval_impl)
        self._backward = jax.jit(self._backward_impl, donate_argnums=(6,))
        self._forward_backward = jax.jit(
            self._forward_backward_impl, static_argnums=(6,), donate_argnums=(7,)
        )
        self._backward_input = jax.jit(self._backward_input_impl)
        self._backward_weight = jax.jit(self._backward_weight_impl, donate_argnums=(7,))
        self._zeros = jax.jit(lambda xs: [jnp.zeros_like(x) for x in xs])
        self._finish = jax.jit(_finish_grads)

    # -- state -------------------------------------------------------------------------------
    def read_params(self) -> tuple[list[jax.Array], list[jax.Array]]:
        """Start a step: read the live (trainable, frozen) parameter values.

        This object is the one owner of the values a step uses: every forward and backward of
        the step reads them from here, so an optimizer step between two schedule steps changes
        the next step and a step never mixes values from before and after an update.
        Returns them too (benchmarks and tests call the raw programs with them).
        """
        params = self.binding.params
        self._live = (
            [params[i]._data for i in self.train_index],
            [params[i]._data for i in self.frozen_index],
        )
        return self._live

    def read_buffers(self) -> list[jax.Array]:
        return [_buffer_value(d[n]) for d, n in self.binding.buffer_slots]

    def write_buffers(self, values: list[jax.Array]) -> None:
        # Into the original buffer objects (torch updates buffers in place).
        binding = self.binding
        for (d, n), obj, v in zip(binding.buffer_slots, binding.buffer_objs, values, strict=True):
            d[n] = _with_value(obj, v)

    def _bind_buffers(self, values: list[Any]) -> None:
        # While tracing: fresh Tensors over the tracers (the real objects keep their values).
        for (d, n), v in zip(self.binding.buffer_slots, values, strict=True):
            d[n] = None if v is None else Tensor._of(v)

    # -- the module as a pure function -------------------------------------------------------
    def _apply(self, train, frozen, buffers, key, args, kwargs):
        binding = self.binding
        before = binding.read_state()
        try:
            for p, v in zip(self.train_params, train, strict=True):
                p._data = v
            params = binding.params
            for i, v in zip(self.frozen_index, frozen, strict=True):
                params[i]._data = v
            self._bind_buffers(buffers)
            spx_random.set_key(key)
            # The module sees Tensors, as in torch; the runtime moves the plain arrays.
            args, kwargs = to_tensors(_unwrap_static((args, kwargs)))
            out = to_arrays(self.module(*args, **kwargs))
            return out, self.read_buffers(), spx_random.get_key()
        finally:
            binding.write_state(before)

    def _forward_impl(self, train, frozen, buffers, key, args, kwargs_and_target, diff_mask):
        kwargs, target = kwargs_and_target
        leaves, tree = jax.tree_util.tree_flatten(args)
        diff = [x for x, m in zip(leaves, diff_mask, strict=True) if m]

        def f(train, diff):
            it = iter(diff)
            call_args = tree.unflatten(
                [next(it) if m else x for x, m in zip(leaves, diff_mask, strict=True)]
            )
            out, new_buffers, new_key = self._apply(train, frozen, buffers, key, call_args, kwargs)
            if self.is_last and self.loss_fn is not None:
                loss = self._loss(out, target)
                return _differentiable_loss(loss), (loss, out, new_buffers, new_key)
            floats = [x for x in jax.tree_util.tree_leaves(out) if _is_float(x)]
            return floats, (None, out, new_buffers, new_key)

        if self.recompute:
            f = jax.checkpoint(f)
        _, vjp, (loss, out, new_buffers, new_key) = jax.vjp(f, train, diff, has_aux=True)
        res = _split_residuals(vjp, (train, frozen, leaves, buffers))
        return out, loss, res, new_buffers, new_key

    def _forward_backward_impl(
        self, train, frozen, buffers, key, args, kwargs_and_target, diff_mask, acc
    ):
        out, loss, res, new_buffers, new_key = self._forward_impl(
            train, frozen, buffers, key, args, kwargs_and_target, diff_mask
        )
        inputs = jax.tree_util.tree_leaves(args)
        g_inputs, acc = self._backward_impl(res, train, frozen, inputs, buffers, None, acc)
        return out, loss, new_buffers, new_key, g_inputs, acc

    def _forward_eval_impl(self, train, frozen, buffers, key, args, kwargs_and_target):
        kwargs, target = kwargs_and_target
        out, new_buffers, new_key = self._apply(train, frozen, buffers, key, args, kwargs)
        loss = None
        # eval() without a target is forward only (the schedule allows it): no loss then.
        if self.is_last and self.loss_fn is not None and target is not None:
            loss = self._loss(out, target)
        return out, loss, new_buffers, new_key

    def _loss(self, out, target):
        if isinstance(target, _LossInputs):  # torch's loss_fn(output, target, **loss_kwargs)
            kwargs = to_tensors(_unwrap_static(target.loss_kwargs))
            loss = self.loss_fn(to_tensors(out), to_tensors(target.target), **kwargs)
        else:
            loss = self.loss_fn(to_tensors(out), to_tensors(target))
        return jnp.asarray(to_arrays(loss))

    def _cotangent(self, grads_out: Any) -> Any:
        # The last stage differentiates its scalar loss; the others get their output
        # cotangents from the next stage (one per float output leaf).
        if self.is_last and self.loss_fn is not None:
            return jnp.ones((), jnp.float32) if grads_out is None else grads_out
        return list(grads_out)

    def _backward_impl(self, res, train, frozen, inputs, buffers, grads_out, acc):
        vjp = res.vjp((train, frozen, inputs, buffers))
        g_train, g_inputs = vjp(self._cotangent(grads_out))
        return g_inputs, _add(acc, g_train)

    def _split_for(self, res: _Residuals, full: list[Any], cot: list[Any]) -> BackwardSplit:
        # Built while tracing I (and found again while tracing W): no per-call Python work.
        key = (res.layout, tuple((x.shape, x.dtype) for x in (*full, *cot)))
        split = self._splits.get(key)
        if split is None:
            tree = res.layout[0]
            cot_tree = jax.tree_util.tree_structure(self._cotangent_template(cot))

            def backward(leaves, cot_leaves):
                g_train, g_inputs = tree.unflatten(leaves)(cot_tree.unflatten(cot_leaves))
                return [*g_train, *g_inputs]

            specs = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in full]
            cot_specs = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in cot]
            closed = jax.make_jaxpr(backward)(specs, cot_specs)
            split = self._splits[key] = split_backward(closed, len(self.train_index))
        return split

    def _cotangent_template(self, cot_leaves: list[Any]) -> Any:
        if self.is_last and self.loss_fn is not None:
            return cot_leaves[0]
        return list(cot_leaves)

    def _backward_input_impl(self, res, train, frozen, inputs, buffers, grads_out):
        full = res.full((train, frozen, inputs, buffers))
        cot = jax.tree_util.tree_leaves(self._cotangent(grads_out))
        g_inputs, bridge = self._split_for(res, full, cot).run_input(*full, *cot)
        return g_inputs, bridge

    def _backward_weight_impl(self, res, train, frozen, inputs, buffers, grads_out, bridge, acc):
        full = res.full((train, frozen, inputs, buffers))
        cot = jax.tree_util.tree_leaves(self._cotangent(grads_out))
        split = self._split_for(res, full, cot)
        everything = [*full, *cot]
        w_inputs = [everything[i] for i in split.weight_input_index]
        return _add(acc, split.run_weight(w_inputs, bridge))

    # -- public calls ------------------------------------------------------------------------
    def _forward_args(self, buffers, key, args, kwargs, target, loss_kwargs) -> tuple:
        # The arguments of _forward_impl and _forward_backward_impl, in their order.
        args, kwargs = _wrap_static((args, kwargs))
        target = _loss_inputs(target, loss_kwargs)
        leaves = jax.tree_util.tree_leaves(args)
        diff_mask = tuple(not self.is_first and _is_float(x) for x in leaves)
        train, frozen = self._live
        return train, frozen, buffers, key, args, (kwargs, target), diff_mask

    def forward(self, buffers, key, args, kwargs, target, loss_kwargs=None):
        """F with this step's parameters: -> (output, loss or None, vjp residuals, new
        buffers, new key)."""
        return self._forward(*self._forward_args(buffers, key, args, kwargs, target, loss_kwargs))

    def forward_backward(self, buffers, key, args, kwargs, target, loss_kwargs, acc):
        """F and B of one microbatch on the last stage, in one program: -> (output, loss, new
        buffers, new key, input grads, new accumulators). Needs a ``loss_fn``."""
        return self._forward_backward(
            *self._forward_args(buffers, key, args, kwargs, target, loss_kwargs), acc
        )

    def forward_eval(self, buffers, key, args, kwargs, target, loss_kwargs=None):
        """Forward with this step's parameters, no residuals: -> (output, loss or None, new
        buffers, new key)."""
        args, kwargs = _wrap_static((args, kwargs))
        target = _loss_inputs(target, loss_kwargs)
        train, frozen = self._live
        return self._forward_eval(train, frozen, buffers, key, args, (kwargs, target))

    def backward(self, saved, grads_out, acc):
        """B: -> (input grads (list, one per float input leaf), new accumulators).

        ``saved`` is ``(residuals, inputs, buffers)`` from the forward.
        """
        res, inputs, buffers = saved
        return self._backward(res, self._live[0], self._live[1], inputs, buffers, grads_out, acc)

    def backward_input(self, saved, grads_out):
        """I: -> (input grads, bridge values for :meth:`backward_weight`)."""
        res, inputs, buffers = saved
        return self._backward_input(res, self._live[0], self._live[1], inputs, buffers, grads_out)

    def backward_weight(self, saved, grads_out, bridge, acc):
        """W: -> new accumulators."""
        res, inputs, buffers = saved
        return self._backward_weight(
            res, self._live[0], self._live[1], inputs, buffers, grads_out, bridge, acc
        )

    def zero_accumulators(self) -> list[jax.Array]:
        """Zeros shaped like this step's trainable parameters, in one dispatch."""
        return self._zeros(self._live[0])

    def finish(self, params: list[Any], acc: list[jax.Array], scale: float | None) -> None:
        """``p.grad += scale * acc`` for every trainable parameter, in one dispatch."""
        new = self._finish([_grad_value(p) for p in params], acc, 1.0 if scale is None else scale)
        for p, g in zip(params, new, strict=True):
            _set_grad_value(p, g)

    # -- diagnostics -------------------------------------------------------------------------
    def cost(self, which: str, *args: Any) -> float:
        """XLA's flop estimate of the B, I or W program for the given arguments.

        The arguments are those of ``_backward_impl``, ``_backward_input_impl`` or
        ``_backward_weight_impl``; for tests and benchmarks.
        """
        fn = {
            "B": self._backward_impl,
            "I": self._backward_input_impl,
            "W": self._backward_weight_impl,
        }[which]
        analysis = jax.jit(fn).lower(*args).compile().cost_analysis()
        if isinstance(analysis, list):
            analysis = analysis[0]
        return float(analysis.get("flops", 0.0))
