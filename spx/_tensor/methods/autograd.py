"""Autograd on :class:`spx.Tensor`: ``backward``, ``.grad``, ``requires_grad_``, hooks."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np

from spx import _user_code
from spx._tensor import graph
from spx._tensor.autograd import refuse_hooks_under_jax_backward


class GradFn:
    """What ``t.grad_fn`` returns for a tensor with autograd history (torch's Node, named).

    Example:
        >>> import spx
        >>> x = spx.ones(2, requires_grad=True)
        >>> (x * 2).grad_fn.name()
        'MulBackward0'
    """

    __slots__ = ("_node",)

    def __init__(self, node: Any) -> None:
        self._node = node

    def name(self) -> str:
        """torch's style: the operation in CamelCase, then ``Backward0`` (``MulBackward0``)."""
        fn = self._node.fn
        name = getattr(fn, "__name__", type(fn).__name__)
        if name == "_replay":  # an @recorded function: name the function it runs
            name = getattr(self._node.static[0], "__name__", name)
        camel = "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)
        return f"{camel}Backward0"

    def __repr__(self) -> str:
        return f"<{self.name()}>"


def _checked_grad(t: Any, value: Any) -> Any:
    """``value`` as a gradient Tensor of ``t``, or a clear error (torch refuses the same)."""
    import jax

    from spx._tensor.tensor import Tensor

    shape = "?" if getattr(t, "is_uninitialized", False) else str(tuple(t.shape))
    if not isinstance(value, Tensor | jax.Array | np.ndarray | np.generic):
        raise TypeError(
            f"assigned grad expected to be a Tensor or array, got {type(value).__name__}: "
            f"{value!r:.60}. Assign a tensor of the shape {shape}, e.g. "
            "p.grad = spx.zeros_like(p)."
        )
    if not isinstance(value, Tensor):
        from spx.ops.creation import as_value

        value = Tensor._of(as_value(value))
    if getattr(t, "is_uninitialized", False):  # a lazy parameter: nothing to compare yet
        return value
    if tuple(value.shape) != tuple(t.shape):
        raise RuntimeError(
            f"assigned grad has data of a different size: the grad has shape "
            f"{tuple(value.shape)}, the tensor {tuple(t.shape)}. A gradient must have its "
            "tensor's shape; reshape it (g.reshape(p.shape)) or assign it to the right tensor."
        )
    if np.dtype(value.dtype) != np.dtype(t.dtype):
        raise RuntimeError(
            f"assigned grad has data of a different type: the grad is {value.dtype}, the "
            f"tensor {t.dtype} (shape {tuple(t.shape)}). Cast it first: "
            "p.grad = g.to(p.dtype) (or g.astype(p.dtype) for a jax array)."
        )
    return value


class AutogradMethods:
    """``backward``, ``grad``, ``requires_grad_``, ``retain_grad``, ``register_hook``."""

    __slots__ = ()

    def backward(
        self,
        gradient: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> None:
        """Accumulate d self / d leaf into every leaf's ``.grad`` (mirrors torch).

        Args:
            gradient: d loss / d self for a non-scalar tensor (same shape as self).
            retain_graph: keep the graph so that a second backward through it works.
            create_graph: record the backward, so that ``.grad`` is differentiable again.
            inputs: accumulate only into these tensors.
        """
        from spx._tensor.autograd import backward

        backward(self, None if gradient is None else [gradient], retain_graph, create_graph, inputs)

    @property
    def grad(self) -> Any:
        if not self.is_leaf and not self.__dict__.get("_retains_grad"):
            _user_code.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you "
                "indeed want the .grad field to be populated for a non-leaf Tensor, use "
                ".retain_grad() on the non-leaf Tensor.",
                UserWarning,
            )
        return self._grad

    @grad.setter
    def grad(self, value: Any) -> None:
        """Assigning checks the value as torch does: a tensor or array of this tensor's shape
        and dtype, so a wrong one fails here rather than reshaping a parameter at the next
        ``optimizer.step()``."""
        self._grad = None if value is None else _checked_grad(self, value)

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def grad_fn(self) -> GradFn | None:
        node = self._cur().node
        return GradFn(node) if node.requires_grad else None

    def requires_grad_(self, requires_grad: bool = True) -> Any:
        if not isinstance(requires_grad, bool):
            raise TypeError(f"requires_grad_ expects a bool, got {requires_grad!r}")
        if not self.is_leaf:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to "
                    "use a computed variable in a subgraph that doesn't require differentiation "
                    "use var_no_grad = var.detach()."
                )
            return self
        if requires_grad and not jnp.issubdtype(self.dtype, jnp.inexact):
            raise RuntimeError(
                f"only Tensors of floating point and complex dtype can require gradients (this "
                f"one is {self.dtype}); convert first: t = t.float().requires_grad_()"
            )
        self._rg = requires_grad
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after ``backward()`` (mirrors torch).

        Each backward through the tensor accumulates into its ``.grad`` as into a leaf's;
        ``autograd.grad`` too, when the tensor lies between the outputs and the inputs. For a
        leaf it does nothing (leaves keep theirs). It applies to backward passes run by the
        thread that called it (spx's graphs are per thread).

        Example:
            >>> import spx
            >>> x = spx.ones(2, requires_grad=True)
            >>> y = x * 2
            >>> y.retain_grad()
            >>> (y * y).sum().backward()
            >>> y.grad.tolist()
            [4.0, 4.0]
        """
        if not self._rg:  # a parameter keeps its .grad anyway (a no-op, as on a leaf)
            refuse_hooks_under_jax_backward("retain_grad()")
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.is_leaf or self.__dict__.get("_retains_grad"):
            return
        self.__dict__["_retains_grad"] = True
        graph.STATE.retained[id(self)] = self

    @property
    def retains_grad(self) -> bool:
        """Whether this non-leaf tensor called ``retain_grad()`` (False for leaves)."""
        return bool(self.__dict__.get("_retains_grad")) and not self.is_leaf

    def register_hook(self, hook: Callable[[Any], Any]) -> Any:
        """Call ``hook(grad)`` each time the gradient with respect to this tensor is computed.

        As in torch: the hook may return a replacement gradient (or None to keep it). On a
        leaf it runs before the gradient is added to ``.grad``; on a result of operations the
        replacement is what flows on to the tensor's inputs. Several hooks run in the order
        they were registered. ``backward()`` and ``autograd.grad`` run them.

        A hook on a result belongs to the value the tensor holds when it is registered (an
        in-place write afterwards does not move it). Inside ``spx.compile`` hooks run while the
        step is traced, like the rest of its Python: they see traced gradients, and their side
        effects (printing, appending to a list) happen at tracing, not at every call.

        Example:
            >>> import spx
            >>> x = spx.ones(2, requires_grad=True)
            >>> y = x * 2
            >>> h = y.register_hook(lambda g: g * 10)
            >>> (y * 3).sum().backward()
            >>> x.grad.tolist()
            [60.0, 60.0]
            >>> h.remove()
        """
        refuse_hooks_under_jax_backward("Tensor.register_hook")
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if not callable(hook):
            raise TypeError(f"register_hook expects a callable, got {type(hook).__name__}")
        if self.is_leaf:
            hooks = self.__dict__.setdefault("_grad_hooks", [])
        else:
            s = self._cur()
            hooks, tensors = graph.STATE.hooked.setdefault(s.node, {}).setdefault(s.idx, ([], []))
            tensors.append(weakref.ref(self))
        hooks.append(hook)
        return _Handle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[[Any], Any]) -> Any:
        """Call ``hook(tensor)`` after each backward has accumulated into this leaf's ``.grad``.

        torch's optimizer-in-backward idiom (a per-parameter ``optimizer.step()`` in the hook).
        As in torch: only on leaves that require grad; the hook gets the tensor itself, may
        modify it and its ``.grad`` in place, and runs under ``no_grad`` (unless the backward
        has ``create_graph=True``). ``autograd.grad`` accumulates nothing and runs none. spx
        calls the hooks once the backward has given every leaf its gradient, in the order the
        leaves were reached.

        Example:
            >>> import spx
            >>> v = spx.zeros(3, requires_grad=True)
            >>> h = v.register_post_accumulate_grad_hook(lambda p: p.add_(p.grad, alpha=-0.01))
            >>> v.backward(spx.tensor([1.0, 2.0, 3.0]))
            >>> [round(x, 4) for x in v.tolist()]
            [-0.01, -0.02, -0.03]
            >>> h.remove()
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if not self.is_leaf:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        if not callable(hook):
            raise TypeError(
                f"register_post_accumulate_grad_hook expects a callable, got {type(hook).__name__}"
            )
        hooks = self.__dict__.setdefault("_post_accumulate_grad_hooks", [])
        hooks.append(hook)
        return _Handle(hooks, hook)


class _Handle:
    """``handle.remove()`` unregisters a hook (torch's RemovableHandle)."""

    def __init__(self, hooks: list, hook: Any) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)
