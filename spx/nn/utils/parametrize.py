"""Parametrizations: a module's tensor computed from other tensors on every read (mirrors
``torch.nn.utils.parametrize``).

``register_parametrization(module, "weight", P())`` moves ``module.weight`` to
``module.parametrizations.weight.original`` (or ``original0``, ``original1``, ... when
``P.right_inverse`` returns several tensors) and makes ``module.weight`` read as
``P(original)``, so the state dict keys are torch's and torch checkpoints load as they are.

How it is built on spx's Module:

* Reading: ``module.weight`` is a *computed attribute*, an entry of the module's ``_computed``
  table that ``Module.__getattr__`` evaluates on every access (the mechanism
  ``nn.utils.weight_norm`` uses). The parametrization runs on the originals as they are then:
  eagerly, gradients flow to them through ``loss.backward()``; inside ``spx.compile`` they are
  the traced state, so the step differentiates and updates them.
* Writing: ``module.weight = X`` must call ``right_inverse``, which ``_computed`` cannot
  express: as in torch, the module's class is swapped for a subclass (``ParametrizedLinear``)
  whose ``__setattr__`` sends assignments to parametrized names there. torch puts a property
  on a fresh class per module; here the class holds no per-module state, so it is made once per
  base class and structurally equal parametrized models share compiled programs.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import copyreg
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from jax._src.core import trace_state_clean

from spx._tensor.grad_mode import no_grad
from spx._tensor.tensor import Tensor
from spx.nn import _structure
from spx.nn.module import Module
from spx.nn.modules.container import ModuleDict
from spx.nn.parameter import Parameter
from spx.nn.utils._parametrization_list import (
    ParametrizationList,
    _as_tensor,
    _register_parameter_or_buffer,
    _set,
)

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]

M = TypeVar("M", bound=Module)


# -- caching -----------------------------------------------------------------------------------
@dataclass
class _Cache:
    """The values computed inside the outermost :func:`cached` block.

    ``clean`` is whether that block was entered outside any JAX trace: a value computed in
    one trace (a compiled step) must not be served in another, or eagerly, so the cache is only
    used where tracing is as it was on entry.
    """

    clean: bool
    values: dict[tuple[int, str], tuple[Module, Tensor]] = field(default_factory=dict)


# Per context (each thread, hence each thread rank, has its own): no global cache to share.
_CACHE: contextvars.ContextVar[_Cache | None] = contextvars.ContextVar(
    "spx_parametrize_cache", default=None
)


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Compute each parametrized tensor once inside the block (mirrors torch's
    ``parametrize.cached``).

    The first read of ``module.weight`` runs the parametrization; later reads in the block
    return that tensor. The values are dropped when the outermost block exits. Useful when a
    forward reads a parametrized tensor several times (an RNN cell in a loop, tied weights);
    for spectral norm in training mode it also means one power iteration per block.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> from spx.nn.utils import parametrize as P
        >>> class Double(nn.Module):
        ...     def forward(self, X):
        ...         return 2 * X
        >>> m = P.register_parametrization(nn.Linear(2, 2), "weight", Double())
        >>> with P.cached():
        ...     m.weight is m.weight
        True
    """
    outer = _CACHE.get()
    token = _CACHE.set(outer if outer is not None else _Cache(trace_state_clean()))
    try:
        yield
    finally:
        _CACHE.reset(token)


@dataclass(frozen=True)
class _ParametrizedTensor:
    """The ``_computed`` entry of a parametrized tensor: ``module.<name>`` reads as
    ``module.parametrizations[name]()``.

    Compared by name, so two models parametrized alike have equal pytree structure.
    """

    name: str

    def __call__(self, module: Module) -> Tensor:
        plist = module._modules["parametrizations"][self.name]
        cache = _CACHE.get()
        if cache is None or cache.clean != trace_state_clean():
            return plist()
        key = (id(module), self.name)
        hit = cache.values.get(key)
        if hit is not None and hit[0] is module:
            return hit[1]
        value = plist()
        cache.values[key] = (module, value)
        return value


# -- the parametrized class --------------------------------------------------------------------
_CLASSES: dict[type, type] = {}


def _refuse_pickle(self: Module) -> Any:
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(): "
        "spx.save(model.state_dict(), path), then model.load_state_dict(spx.load(path)) on a "
        "model parametrized the same way."
    )


def _deepcopy(self: Module, memo: dict[int, Any]) -> Module:
    # Pickling is refused (``__getstate__``), but deepcopy must keep working: copy the
    # instance dict as the default protocol would.
    found = memo.get(id(self))
    if found is not None:
        return found
    replica = self.__class__.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__.update(copy.deepcopy(self.__dict__, memo))
    for slot in copyreg._slotnames(self.__class__):  # type: ignore[attr-defined]
        if hasattr(self, slot):
            setattr(replica, slot, copy.deepcopy(getattr(self, slot), memo))
    return replica


def _parametrized_class(cls: type) -> type:
    """``Parametrized<cls>``: ``cls`` whose assignments to parametrized names call
    ``right_inverse`` (made once per class)."""
    found = _CLASSES.get(cls)
    if found is not None:
        return found

    def __setattr__(self: Module, name: str, value: Any) -> None:
        plists = self.__dict__["_modules"].get("parametrizations")
        if isinstance(plists, ModuleDict) and name in plists._modules:
            if isinstance(value, Parameter):
                # torch's register_parameter refuses a name a property already holds.
                raise KeyError(
                    f"attribute '{name}' already exists: it is parametrized. Assign a plain "
                    f"tensor to set its value through right_inverse (module.{name} = "
                    f"tensor), or remove the parametrization first "
                    f"(parametrize.remove_parametrizations(module, {name!r}))"
                )
            plists[name].right_inverse(_as_tensor(value))
            return
        cls.__setattr__(self, name, value)

    def _prepare_state_dict(self: Module, state_dict: Any, prefix: str) -> None:
        cls._prepare_state_dict(self, state_dict, prefix)
        # Parametrizations that read older checkpoints (weight_norm reads the old API's
        # weight_g/weight_v) rename the host module's keys, as torch's load hooks do.
        for name, plist in self.__dict__["_modules"]["parametrizations"].items():
            for parametrization in plist:
                adapt = getattr(type(parametrization), "_adapt_host_state_dict", None)
                if adapt is not None:
                    adapt(parametrization, state_dict, prefix, name)

    namespace: dict[str, Any] = {
        "__setattr__": __setattr__,
        "__getstate__": _refuse_pickle,
        "_prepare_state_dict": _prepare_state_dict,
        "__module__": cls.__module__,
        "_spx_parametrized_base": cls,
    }
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _deepcopy
    made = type(f"Parametrized{cls.__name__}", (cls,), namespace)
    return _CLASSES.setdefault(cls, made)


def _computed_without(module: Module, name: str) -> tuple:
    return tuple(c for c in module.__dict__.get("_computed", ()) if c[0] != name)


# -- the public functions ----------------------------------------------------------------------
def register_parametrization(
    module: M, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> M:
    """Make ``module.<tensor_name>`` read as ``parametrization(original)`` (mirrors
    ``torch.nn.utils.parametrize.register_parametrization``).

    The first registration on a tensor moves it to
    ``module.parametrizations[tensor_name].original`` (the same Parameter object, so an
    optimizer built before keeps training it) after ``parametrization.right_inverse``, if it
    has one, turned it into the unconstrained value; a ``right_inverse`` returning several
    tensors stores ``original0``, ``original1``, ... (new Parameters: add them to the
    optimizer). Later registrations on the same tensor apply after the earlier ones.
    Reading ``module.<tensor_name>`` recomputes it from the originals (once per
    :func:`cached` block), so gradients reach the originals; assigning to it calls
    ``right_inverse``. The module's class becomes ``Parametrized<Class>``.

    Args:
        module: the module holding the tensor.
        tensor_name: the name of a parameter, a buffer, or an already parametrized tensor.
        parametrization: an ``nn.Module`` whose ``forward`` maps the original(s) to the
            tensor, optionally with ``right_inverse``. It takes the module's training mode.
        unsafe: allow the parametrization to change shape and dtype (skips the checks, and
            the forward/right_inverse calls they make).

    Returns:
        ``module``.

    Raises:
        ValueError: ``module`` has no parameter, buffer or parametrized tensor
            ``tensor_name``; the parametrization breaks the checks above (see
            :class:`ParametrizationList`).
        TypeError: ``parametrization`` is not an ``nn.Module``.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> from spx.nn.utils import parametrize as P
        >>> class Symmetric(nn.Module):
        ...     def forward(self, X):
        ...         return X.triu() + X.triu(1).mT
        ...     def right_inverse(self, A):
        ...         return A.triu()
        >>> m = P.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
        >>> bool(spx.allclose(m.weight, m.weight.T))
        True
        >>> list(m.state_dict())
        ['bias', 'parametrizations.weight.original']
    """
    if not isinstance(parametrization, Module):
        raise TypeError(
            f"a parametrization must be an nn.Module (its forward computes the tensor), got "
            f"{type(parametrization).__name__}; wrap a function f in a Module whose forward "
            "returns f(X)"
        )
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_appended(module, tensor_name, parametrization)
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe = plist.unsafe or unsafe  # once unsafe, the list stays unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        # Built first: its checks may fail, and the module must then be left unchanged.
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            module.__class__ = _parametrized_class(type(module))
            module.parametrizations = ModuleDict()
        module.__dict__["_computed"] = (
            *_computed_without(module, tensor_name),
            (tensor_name, _ParametrizedTensor(tensor_name)),
        )
        module.parametrizations[tensor_name] = plist
        _structure.bump()
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element "
            f"with name '{tensor_name}'"
        )
    return module


def _check_appended(module: Module, tensor_name: str, parametrization: Module) -> None:
    """torch's checks that a parametrization appended to ``tensor_name`` maps its space
    (shape and dtype of the current tensor) to itself, both ways."""
    Y = getattr(module, tensor_name)
    X = parametrization(Y)
    if not isinstance(X, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(X).__name__}.")
    if X.dtype != Y.dtype:
        raise ValueError(
            "Registering a parametrization may not change the dtype of the tensor, unless the "
            "`unsafe` flag is enabled.\n"
            f"module.{tensor_name}.dtype: {Y.dtype}\n"
            f"parametrization(module.{tensor_name}).dtype: {X.dtype}"
        )
    if tuple(X.shape) != tuple(Y.shape):
        raise ValueError(
            "Registering a parametrization may not change the shape of the tensor, unless the "
            "`unsafe` flag is enabled.\n"
            f"module.{tensor_name}.shape: {tuple(Y.shape)}\n"
            f"parametrization(module.{tensor_name}).shape: {tuple(X.shape)}"
        )
    if not hasattr(parametrization, "right_inverse"):
        return  # assumed to be the identity
    try:
        Z = parametrization.right_inverse(X)
    except NotImplementedError:
        return
    if not isinstance(Z, Tensor):
        raise ValueError(
            f"parametrization.right_inverse must return a tensor. Got: {type(Z).__name__}"
        )
    if Z.dtype != Y.dtype:
        raise ValueError(
            "The tensor returned by parametrization.right_inverse must have the same dtype as "
            f"module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
            f"module.{tensor_name}.dtype: {Y.dtype}\n"
            f"returned dtype: {Z.dtype}"
        )
    if tuple(Z.shape) != tuple(Y.shape):
        raise ValueError(
            "The tensor returned by parametrization.right_inverse must have the same shape as "
            f"module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
            f"module.{tensor_name}.shape: {tuple(Y.shape)}\n"
            f"returned shape: {tuple(Z.shape)}"
        )


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization on ``tensor_name`` (on anything when
    ``None``) (mirrors ``torch.nn.utils.parametrize.is_parametrized``).

    Example:
        >>> from spx import nn
        >>> from spx.nn.utils import parametrize as P
        >>> m = nn.utils.parametrizations.weight_norm(nn.Linear(2, 2))
        >>> P.is_parametrized(m), P.is_parametrized(m, "bias")
        (True, False)
    """
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: M, tensor_name: str, leave_parametrized: bool = True) -> M:
    """Undo the parametrizations of ``tensor_name`` (mirrors torch's
    ``parametrize.remove_parametrizations``).

    With ``leave_parametrized=True`` the tensor keeps its current parametrized value;
    otherwise it gets the unparametrized ``original`` back (possible only with one original).
    A single original keeps its identity (an optimizer holding it goes on). When nothing is
    parametrized any more the module gets its own class back.

    Args:
        module: the parametrized module.
        tensor_name: the parametrized tensor.
        leave_parametrized: keep the parametrized value rather than the original.

    Returns:
        ``module``.

    Raises:
        ValueError: ``tensor_name`` is not parametrized, or ``leave_parametrized=False`` with
            several originals.

    Example:
        >>> from spx import nn
        >>> from spx.nn.utils import parametrize as P
        >>> m = nn.utils.parametrizations.orthogonal(nn.Linear(3, 3))
        >>> m = P.remove_parametrizations(m, "weight")
        >>> type(m).__name__, list(m.state_dict())
        ('Linear', ['bias', 'weight'])
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                _set(original, getattr(module, tensor_name))
    elif leave_parametrized:
        # Not under no_grad: whether the value requires grad decides Parameter or buffer.
        t = getattr(module, tensor_name)
        original = Parameter(t.detach()) if t.requires_grad else t
    else:
        raise ValueError(
            "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
            "parametrized in terms of a sequence of tensors."
        )
    module.__dict__["_computed"] = _computed_without(module, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type_before_parametrizations(module)
    _structure.bump()
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before it was parametrized (its class if it is not) (mirrors torch).

    Example:
        >>> from spx import nn
        >>> m = nn.utils.parametrizations.weight_norm(nn.Linear(2, 2))
        >>> type(m).__name__, nn.utils.parametrize.type_before_parametrizations(m).__name__
        ('ParametrizedLinear', 'Linear')
    """
    return type(module).__dict__.get("_spx_parametrized_base", type(module))


def transfer_parametrizations_and_params(
    from_module: Module, to_module: M, tensor_name: str | None = None
) -> M:
    """Register ``from_module``'s parametrizations (the same parametrization modules) and its
    originals on ``to_module`` (mirrors torch's ``transfer_parametrizations_and_params``).

    A tensor ``to_module`` lacks is created first. Nothing happens when ``from_module`` is
    not parametrized.

    Args:
        from_module: the parametrized module.
        to_module: the module to parametrize alike.
        tensor_name: one tensor to transfer; ``None`` transfers all.

    Returns:
        ``to_module``.

    Example:
        >>> from spx import nn
        >>> from spx.nn.utils import parametrize as P
        >>> a = nn.utils.parametrizations.weight_norm(nn.Linear(2, 2))
        >>> b = P.transfer_parametrizations_and_params(a, nn.Linear(2, 2))
        >>> b.parametrizations.weight.original0 is a.parametrizations.weight.original0
        True
    """
    if not is_parametrized(from_module):
        return to_module
    plists = from_module.parametrizations
    for name in list(plists) if tensor_name is None else [tensor_name]:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        for parametrization in plists[name]:
            register_parametrization(to_module, name, parametrization)
        source, target = plists[name], to_module.parametrizations[name]
        # The originals themselves are shared, as torch shares them.
        if hasattr(source, "original"):
            target.original = source.original
        else:
            for i in range(source.ntensors):
                setattr(target, f"original{i}", getattr(source, f"original{i}"))
    return to_module
