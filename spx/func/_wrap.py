"""Crossing between spx Tensors and the arrays JAX's transforms trace, for ``spx.func``.

Each transform takes the user's Tensors apart into arrays, lets JAX trace a function of those
arrays, and inside it hands the user's function fresh Tensors holding the tracers; on the way
out the Tensors the function returned are taken apart again, and JAX's results come back as
Tensors. Tensors are read through their value (``_data``), never flattened as JAX pytrees: a
Tensor that requires grad would refuse (spx's guard against ``jnp`` calls silently dropping
gradients), and here the transform itself does the differentiating.

As in torch.func, the differentiated inputs require grad inside the function and it runs in
grad mode, so spx records their history: JAX does the differentiating, but the history is what
makes ``detach()`` inside the function stop the gradient (it cuts recorded history, and a
tensor without any is returned as an alias), and ``x.requires_grad`` reads as in torch.
``vmap`` keeps each input's ``requires_grad`` and the caller's grad mode.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx import _validate
from spx._tensor import graph
from spx._tensor.dispatch import apply
from spx._tensor.grad_mode import enable_grad
from spx._tensor.graph import LEAF, set_grad_enabled_flag
from spx._tensor.tensor import Tensor
from spx.func._pytree import TreeSpec, tree_flatten

Argnums = int | tuple[int, ...]


def is_array(x: Any) -> bool:
    """Whether ``x`` is a Tensor or an array (what a transform may trace)."""
    return isinstance(x, Tensor | jax.Array | np.ndarray)


def array_of(x: Any) -> jax.Array:
    """The array behind a Tensor (or array); a tracer under an enclosing transform."""
    if isinstance(x, Tensor):
        return x._data
    return jnp.asarray(x)


def tensor_of(x: Any) -> Any:
    """A Tensor around an array; anything else unchanged."""
    if isinstance(x, jax.Array):
        return Tensor._of(x)
    return x


def diff_arrays(tree: Any) -> tuple[list[jax.Array], TreeSpec]:
    """The arrays of a differentiated argument (torch's ``_create_differentiable``).

    Raises:
        ValueError: a leaf is not a Tensor, as torch.func raises.
        RuntimeError: a Tensor is not floating point or complex.
    """
    leaves, spec = tree_flatten(tree)
    arrays = []
    for x in leaves:
        if not is_array(x):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        a = array_of(x)
        if not jnp.issubdtype(a.dtype, jnp.inexact):
            raise RuntimeError(
                "only Tensors of floating point and complex dtype can require gradients "
                f"(got a Tensor of dtype {a.dtype} among the differentiated inputs; pass it as "
                "another argument, or cast it with .float())"
            )
        arrays.append(a)
    return arrays, spec


def _entered(x: Any) -> Any:
    """Identity: a differentiated input's value, recorded as an operation (see :func:`tensors`)."""
    return x


def enter(a: Any, requires_grad: bool) -> Any:
    """A traced array as the Tensor a transformed function sees.

    With ``requires_grad`` the Tensor carries recorded history (one identity operation on a
    leaf that requires grad): spx's ``detach()`` stops the gradient only of a tensor with
    history (a leaf's detached tensor is a plain alias), and inside a gradient transform
    ``x.detach()`` must stop JAX's gradient as it stops torch.func's.
    """
    if not isinstance(a, jax.Array):
        return a
    if not (requires_grad and jnp.issubdtype(a.dtype, jnp.inexact)):
        return Tensor._of(a)
    previous = set_grad_enabled_flag(True)
    try:
        leaf = Tensor._of(a, True)
        _ENTERED[id(leaf)] = weakref.ref(leaf, _forget(id(leaf)))
        return apply(_entered, (), (leaf,))
    finally:
        set_grad_enabled_flag(previous)


def tensors(spec: TreeSpec, arrays: Sequence[Any], requires_grad: bool = False) -> Any:
    """``spec`` rebuilt around ``arrays``, each as a Tensor (see :func:`enter`)."""
    return spec.unflatten([enter(a, requires_grad) for a in arrays])


def call(func: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any], mode: str) -> Any:
    """Run the user's function inside a differentiating transform (see the module doc).

    ``mode`` is "reverse" (grad, vjp, jacrev) or "forward" (jvp, jacfwd): it decides whether
    no_grad inside stops the transform's derivative (see :func:`spx._tensor.dispatch._cut`).
    """
    modes = graph.STATE.func_modes
    modes.append(mode)
    try:
        with enable_grad():
            out = func(*args, **kwargs)
    finally:
        modes.pop()
    note_captured(out)
    return out


class AuxBox:
    """Carries ``has_aux`` outputs out of a JAX trace: the arrays through JAX, the structure here.

    Like torch.func's, aux may hold only Tensors (in any tuple/list/dict structure).
    """

    __slots__ = ("spec",)

    def put(self, aux: Any) -> list[jax.Array]:
        """Keep ``aux``'s structure; return its arrays for JAX.

        Raises:
            RuntimeError: a leaf is not a Tensor (torch's message).
        """
        leaves, self.spec = tree_flatten(aux)
        if aux is None:
            return []  # no aux at all (has_aux=False)
        for x in leaves:
            if not is_array(x):
                raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
        return [array_of(x) for x in leaves]

    def get(self, arrays: Sequence[Any]) -> Any:
        """``aux`` rebuilt with ``arrays`` (JAX's results) as Tensors."""
        if self.spec.kind == "leaf" and not arrays:
            return None
        return tensors(self.spec, arrays)


def normalize_argnums(argnums: Any, num_args: int) -> tuple[int, ...]:
    """``argnums`` as a tuple of non-negative positions, checked as torch.func checks it.

    Raises:
        RuntimeError: torch's messages for a bad type, an out-of-range, empty or repeated entry.
    """
    if not isinstance(argnums, tuple):
        if isinstance(argnums, list | dict | str | float | bool | np.bool_):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        argnums = _validate.as_int(argnums, "argnums", "spx.func", wrong_type=RuntimeError)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    if not nums:
        raise RuntimeError("argnums must be non-empty")
    out = []
    for n in nums:
        # Numpy integers are accepted, bools refused (spx._validate's rule for every int).
        n = _validate.as_int(n, "argnum", "spx.func", wrong_type=RuntimeError)
        if not -num_args <= n < num_args:
            raise RuntimeError(f"Got argnum={n}, but only {num_args} positional inputs")
        out.append(n % num_args)
    if len(set(out)) != len(out):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return tuple(out)


def check_has_aux(out: Any, api: str) -> tuple[Any, Any]:
    """Split ``(output, aux)``, raising torch's message when ``out`` is not such a pair."""
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(
            f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True"
        )
    return out


def name_of(func: Callable[..., Any]) -> str:
    """The function's name as torch.func's messages show it."""
    return getattr(func, "__name__", repr(func))


_NO_HISTORY = (
    "backward() reached a result of spx.func.{api}, whose inputs (or tensors its function "
    "closes over, such as a module's parameters) include tensors that require grad: "
    "spx.func's transforms run on JAX, and their results carry no spx autograd history back "
    "to those tensors, so they would get no gradient (torch.func's results have one). "
    "Differentiate through the transform with spx.func instead, e.g. "
    "spx.func.grad(lambda params: loss_fn(spx.func.vmap(f)(params, x)))(params), or pass "
    "detached inputs if no gradient is wanted."
)


# The leaves enter() made (id -> weak reference): the inputs the running transforms themselves
# differentiate. Any other leaf that requires grad and that a result depends on was given or
# captured from outside, and the transform's result would carry no history back to it.
_ENTERED: dict[int, Any] = {}
# One flag per running guarded transform: whether its function's output depended on such a leaf.
_CAPTURED: list[bool] = []


def _forget(key: int) -> Callable[[Any], None]:
    def drop(ref: Any) -> None:
        if _ENTERED.get(key) is ref:  # not a newer tensor that got the same id
            del _ENTERED[key]

    return drop


def _is_entered(t: Any) -> bool:
    ref = _ENTERED.get(id(t))
    return ref is not None and ref() is t


def depends_on_outside_leaves(tree: Any) -> bool:
    """Whether a Tensor in ``tree`` requires grad through a leaf no running transform entered:
    an argument or a closed-over tensor (a module's parameter) that requires grad, also inside
    ``spx.compile`` where such leaves hold traced values."""
    if not graph.STATE.grad_enabled:
        return False
    stack, seen = [], set()
    for t in tree_flatten(tree)[0]:
        if not isinstance(t, Tensor) or not t.requires_grad:
            continue
        node = t._cur().node
        if not node.requires_grad:  # a leaf itself
            if not _is_entered(t):
                return True
            continue
        stack.append(node)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.fn is LEAF:
            if not _is_entered(node.leaf):
                return True
            continue
        stack.extend(r[0] for r in node.inputs if type(r) is tuple and r[0].requires_grad)
    return False


class outside_history:
    """``with outside_history(inputs) as outside: ...``: ``bool(outside)`` after the block says
    whether ``inputs`` or the output of the function run inside depend on leaves from outside
    (see :func:`depends_on_outside_leaves` and :func:`note_captured`)."""

    def __init__(self, inputs: Any) -> None:
        self.value = depends_on_outside_leaves(inputs)

    def __enter__(self) -> outside_history:
        _CAPTURED.append(False)
        return self

    def __exit__(self, *exc: object) -> None:
        self.value = _CAPTURED.pop() or self.value

    def __bool__(self) -> bool:
        return self.value


def note_captured(out: Any) -> None:
    """Record, for the innermost guarded transform, whether the function's output ``out``
    depends on leaves from outside (see :func:`depends_on_outside_leaves`)."""
    if _CAPTURED and not _CAPTURED[-1] and depends_on_outside_leaves(out):
        _CAPTURED[-1] = True


def without_history(out: Any, api: str) -> Any:
    """``out``'s floating Tensors made to require grad, with a backward through them refused.

    torch.func's results are connected to inputs that require grad; spx's are not (JAX does
    the transform). Marked this way (as spx.compile marks a compiled forward's results), they
    read ``requires_grad=True`` as in torch, and a ``backward()`` that reaches them raises the
    fix instead of silently leaving those inputs without gradient.
    """
    from spx._compile.compiled import _no_gradient

    leaves, spec = tree_flatten(out)
    message = _NO_HISTORY.format(api=api)
    return spec.unflatten([_no_gradient(x, message) for x in leaves])


def guard_history(api: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator of a transformed function: :func:`without_history` on its results whenever its
    arguments, or what its function's output depends on, include leaves that require grad
    from outside the transform (:func:`depends_on_outside_leaves`)."""

    def decorate(wrapper: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(wrapper)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            with outside_history((args, kwargs)) as outside:
                out = wrapper(*args, **kwargs)
            return without_history(out, api) if outside else out

        return guarded

    return decorate
