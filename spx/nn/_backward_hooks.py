"""Module backward hooks: torch's ``register_full_backward_hook`` and ``..._pre_hook``.

As torch's ``torch.utils.hooks.BackwardHook``: a call of a module that has such hooks passes
the module's tensor inputs and its outputs through an identity operation each. The gradients
reaching the output identity are the gradients with respect to the module's outputs: the
pre-hooks see them (``hook(module, grad_output)``) and may replace them. The gradients reaching
the input identity are those with respect to the module's inputs: the full hooks see them with
the outputs' (``hook(module, grad_input, grad_output)``) and may replace them, which is what
flows on to the layers before. The backward runs these hooks between its passes
(``spx._tensor.autograd``), so they work for ``loss.backward()`` and ``autograd.grad``,
eagerly and inside ``spx.compile`` (where, like forward hooks, they run while tracing).

torch's conventions are kept: a tensor input that does not require grad gets zeros in
``grad_input``, a non-tensor input None; an output that does not require grad, or that no
gradient reached, gets None in ``grad_output``; when no input requires grad the full hooks run
with ``grad_input`` all None as soon as ``grad_output`` is known (with torch's warning).
"""

from __future__ import annotations

import warnings
from typing import Any

import jax.numpy as jnp

from spx._tensor import graph
from spx._tensor.autograd import add_node_hook
from spx._tensor.dispatch import apply
from spx._tensor.tensor import Tensor

_NO_INPUT_GRAD = (
    "Full backward hook is firing when gradients are computed with respect to module outputs "
    "since no inputs require gradients. See "
    "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
    "#torch.nn.Module.register_full_backward_hook for more details."
)


def _identity(*xs: Any) -> Any:
    return xs[0] if len(xs) == 1 else tuple(xs)


def _pass_through(tensors: list[Tensor]) -> tuple:
    """The tensors through one recorded identity operation (a node the hooks attach to)."""
    if len(tensors) == 1:  # a one-output operation returns its array, not a tuple
        return (apply(_identity, (), (tensors[0],)),)
    return apply(_identity, (), tuple(tensors), n_out=len(tensors))


def _as_tensor(g: Any) -> Tensor | None:
    return None if g is None else Tensor._of(g)


class BackwardHook:
    """One module call's backward hooks (made by ``Module.__call__`` when it has any)."""

    def __init__(self, module: Any, hooks: list, pre_hooks: list) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs: tuple | None = None
        self.n_inputs = 0
        self.input_tensors: list[int] | None = None  # positions of tensor inputs
        self.input_avals: dict[int, Any] = {}
        self.wrapped_inputs: list[int] = []  # positions passed through (those requiring grad)
        self.n_outputs = 0
        self.wrapped_outputs: list[int] = []

    # -- forward -----------------------------------------------------------------------------
    def setup_input(self, args: tuple) -> tuple:
        """``args`` with the tensors that require grad passed through the input identity."""
        self.n_inputs = len(args)
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        wrapped = [i for i in positions if args[i].requires_grad]
        if not wrapped or not graph.grad_enabled():
            return args
        self.input_tensors = positions
        self.input_avals = {i: args[i]._cur().aval for i in positions}
        self.wrapped_inputs = wrapped
        outs = _pass_through([args[i] for i in wrapped])
        add_node_hook(outs[0], self._input_hook)
        new = list(args)
        for i, t in zip(wrapped, outs, strict=True):
            new[i] = t
        return tuple(new)

    def setup_output(self, result: Any) -> Any:
        """``result`` (a tensor or a tuple) with its tensors that require grad passed through
        the output identity."""
        is_tuple = isinstance(result, tuple)
        items = result if is_tuple else (result,)
        wrapped = [i for i, a in enumerate(items) if isinstance(a, Tensor) and a.requires_grad]
        if not wrapped or not graph.grad_enabled():
            return result
        self.n_outputs = len(items)
        self.wrapped_outputs = wrapped
        outs = _pass_through([items[i] for i in wrapped])
        add_node_hook(outs[0], self._output_hook)
        new = list(items)
        for i, t in zip(wrapped, outs, strict=True):
            new[i] = t
        return tuple(new) if is_tuple else new[0]

    # -- backward ----------------------------------------------------------------------------
    def _output_hook(self, grads: list) -> list:
        grad_outputs = [None] * self.n_outputs
        for i, g in zip(self.wrapped_outputs, grads, strict=True):
            grad_outputs[i] = _as_tensor(g)
        self.grad_outputs = tuple(grad_outputs)
        for hook in self.pre_hooks:
            out = hook(self.module, self.grad_outputs)
            if out is None:
                continue
            out = tuple(out) if isinstance(out, tuple | list) else (out,)
            if len(out) != len(self.grad_outputs):
                raise RuntimeError(
                    "Backward pre hook returned an invalid number of grad_output, got "
                    f"{len(out)}, but expected {len(self.grad_outputs)}"
                )
            self.grad_outputs = out
        flowing = [self.grad_outputs[i] for i in self.wrapped_outputs]
        if self.input_tensors is None:
            # No input requires grad: the full hooks run now, as torch's do.
            if self.hooks:
                warnings.warn(_NO_INPUT_GRAD, UserWarning, stacklevel=2)
            grad_inputs = (None,) * self.n_inputs
            for hook in self.hooks:
                res = hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (
                    isinstance(res, tuple) and all(el is None for el in res)
                ):
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires gradient should "
                        "always return None or None for all gradients."
                    )
            self.grad_outputs = None
        return flowing

    def _input_hook(self, grads: list) -> list | None:
        if self.grad_outputs is None:
            return None  # no gradient reached the outputs (torch calls no hook then)
        res: list[Any] = [None] * self.n_inputs
        for i in self.input_tensors or ():
            aval = self.input_avals[i]
            res[i] = Tensor._of(jnp.zeros(aval.shape, aval.dtype))
        for i, g in zip(self.wrapped_inputs, grads, strict=True):
            if g is not None:
                res[i] = Tensor._of(g)
        result = tuple(res)
        for hook in self.hooks:
            out = hook(self.module, result, self.grad_outputs)
            if out is None:
                continue
            out = tuple(out) if isinstance(out, tuple | list) else (out,)
            if len(out) != len(result):
                raise RuntimeError(
                    "Backward hook returned an invalid number of grad_input, got "
                    f"{len(out)}, but expected {len(result)}"
                )
            result = out
        self.grad_outputs = None
        return [result[i] for i in self.wrapped_inputs]
