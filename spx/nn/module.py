"""``Module``: the torch-shaped base class of every layer and model.

A Module is a mutable Python object that registers Parameters, buffers and submodules in
assignment order, exactly as ``torch.nn.Module`` does, so names and ``state_dict`` keys match
torch's. Every subclass is also a JAX pytree: its leaves are the parameters' data and the
buffers; everything else (names, plain attributes, ``training``) is static structure that
compares by value, so ``jax.jit(f)(model)`` caches across structurally equal models.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax._src.core import trace_state_clean

from spx import _transforms
from spx._live import Registry
from spx._tensor.graph import STATE as _ENGINE
from spx._tensor.tensor import Tensor
from spx.nn import _hooks, _pytree, _structure
from spx.nn._state_overlay import StateDictOverlay
from spx.nn.parameter import Parameter, _as_array
from spx.utils.hooks import RemovableHandle


class _Keys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]


class _IncompatibleKeys(_Keys):
    """What ``load_state_dict`` returns (mirrors torch's named tuple, and its printout)."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"  # what print(load_state_dict(...)) shows
        return _Keys.__repr__(self)

    __str__ = __repr__


def _check_name(kind: str, name: Any) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
    if not name or "." in name:
        raise KeyError(f'{kind} name can\'t be empty or contain ".", got {name!r}')


# Every Module alive, per thread: spx.compile checks that a step it traced neither changed
# nor read as constants those it did not bind (:mod:`spx._compile.unbound`).
_LIVE = Registry()


def live_modules(other_threads: bool = False) -> list[Module]:
    """The Modules the calling thread (or, with ``other_threads``, every other thread) created
    that are alive now."""
    return _LIVE.others() if other_threads else _LIVE.mine()


class Module:
    """Base class for all neural network modules (mirrors ``torch.nn.Module``).

    Subclasses call ``super().__init__()`` first, assign Parameters and submodules as
    attributes, and define ``forward``. Call the module, not ``forward``.

    Example:
        >>> import spx, jax.numpy as jnp
        >>> from spx import nn
        >>> class MLP(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc1 = nn.Linear(4, 8)
        ...         self.fc2 = nn.Linear(8, 2)
        ...     def forward(self, x):
        ...         return self.fc2(nn.functional.relu(self.fc1(x)))
        >>> MLP()(jnp.ones((3, 4))).shape
        spx.Size([3, 2])
    """

    training: bool
    _parameters: dict[str, Parameter | None]
    _buffers: dict[str, Tensor | None]
    _modules: dict[str, Module | None]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _pytree.register(cls)

    def __new__(cls, *args: Any, **kwargs: Any) -> Module:
        # (Here, not in __init__: copy.deepcopy and pickle create objects through __new__.)
        obj = super().__new__(cls)
        _LIVE.add(obj)
        return obj

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() got unexpected arguments; Module.__init__ "
                "takes none (call super().__init__() without arguments)"
            )
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers"] = set()
        d["_modules"] = {}
        _structure.bump()

    # -- calling -----------------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if "_forward_hooks" in self.__dict__:  # present once a hook was registered
            return _hooks.call(self, self._call_forward, args, kwargs)
        if _ENGINE.binding or trace_state_clean():
            return self.forward(*args, **kwargs)
        # Under a plain jax.jit/grad: keep tracers out of the module's state (spx._transforms).
        return _transforms.foreign_call(self, args, kwargs)

    def _call_forward(self, *args: Any, **kwargs: Any) -> Any:
        if _ENGINE.binding or trace_state_clean():
            return self.forward(*args, **kwargs)
        return _transforms.foreign_call(self, args, kwargs)

    def register_forward_pre_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, args)`` before every ``forward`` (mirrors torch).

        The hook may return new positional arguments (a tuple, or one value that becomes a
        1-tuple). With ``with_kwargs=True`` it is called as ``hook(module, args, kwargs)`` and
        may return ``(args, kwargs)``. ``prepend=True`` runs it before the hooks already
        registered. Returns a handle whose ``remove()`` unregisters it.

        Example:
            >>> import spx
            >>> layer = spx.nn.Linear(3, 2)
            >>> handle = layer.register_forward_pre_hook(lambda m, args: args[0] * 0)
            >>> layer(spx.ones(1, 3)).equal(layer.bias.unsqueeze(0))
            True
            >>> handle.remove()
        """
        return _hooks.register(self, hook, pre=True, prepend=prepend, with_kwargs=with_kwargs)

    def register_forward_hook(
        self,
        hook: Callable[..., Any],
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after every ``forward`` (mirrors torch).

        A non-None return value replaces the output. With ``with_kwargs=True`` the hook is
        called as ``hook(module, args, kwargs, output)``; ``always_call=True`` runs it even
        when ``forward`` raises (then ``output`` is None); ``prepend=True`` runs it before the
        hooks already registered. Returns a handle whose ``remove()`` unregisters it.

        Example:
            >>> import spx
            >>> model = spx.nn.Sequential(spx.nn.Linear(3, 4), spx.nn.ReLU())
            >>> seen = {}
            >>> def keep(module, args, output):
            ...     seen["hidden"] = output.detach()
            >>> handle = model[0].register_forward_hook(keep)
            >>> _ = model(spx.ones(2, 3))
            >>> seen["hidden"].shape
            spx.Size([2, 4])
        """
        return _hooks.register(
            self, hook, pre=False, prepend=prepend, with_kwargs=with_kwargs,
            always_call=always_call,
        )  # fmt: skip

    def register_full_backward_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` when this module's input gradients
        are computed (mirrors torch).

        ``grad_input``/``grad_output`` are tuples with one entry per positional input/output
        (None for non-tensors and outputs no gradient reached; zeros for tensor inputs that do
        not require grad). A returned tuple replaces ``grad_input``: that is what flows on to
        the layers before. Hooks run in ``loss.backward()`` and ``autograd.grad``; inside
        ``spx.compile`` they run while the step is traced.

        Example:
            >>> import spx
            >>> layer = spx.nn.Linear(3, 2)
            >>> seen = []
            >>> h = layer.register_full_backward_hook(lambda m, gi, go: seen.append(go[0].shape))
            >>> layer(spx.ones(4, 3, requires_grad=True)).sum().backward()
            >>> seen
            [spx.Size([4, 2])]
            >>> h.remove()
        """
        return _hooks.register_backward(self, hook, pre=False, prepend=prepend)

    def register_full_backward_pre_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` when this module's output gradients are known
        (mirrors torch); a returned tuple replaces ``grad_output``.

        Example:
            >>> import spx
            >>> layer = spx.nn.Linear(3, 2)
            >>> h = layer.register_full_backward_pre_hook(lambda m, go: (go[0] * 0,))
            >>> x = spx.ones(4, 3, requires_grad=True)
            >>> layer(x).sum().backward()
            >>> x.grad.abs().sum().item()
            0.0
            >>> h.remove()
        """
        return _hooks.register_backward(self, hook, pre=True, prepend=prepend)

    # -- registration ------------------------------------------------------------------------
    def _require_init(self, what: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"cannot assign {what} before Module.__init__() call: call super().__init__() "
                f"first in {type(self).__name__}.__init__"
            )

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if params is not None and getattr(value, "_is_buffer", False) is True:
            # nn.Buffer(...): registered as a buffer, with its persistent flag (as torch).
            self.register_buffer(name, value, persistent=value.persistent)
        elif isinstance(value, Parameter):
            self._require_init("parameters")
            _check_name("parameter", name)
            self._forget(name, keep="_parameters")
            params[name] = value
            _structure.bump()
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign {type(value).__name__} as parameter '{name}' "
                    f"(spx.nn.Parameter or None expected); wrap it: "
                    f"self.{name} = nn.Parameter(value), or set self.{name}.data = value"
                )
            params[name] = None
            _structure.bump()
        elif isinstance(value, Module):
            self._require_init("module")
            self._forget(name, keep="_modules")
            d["_modules"][name] = value
            _structure.bump()
        elif params is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(
                    f"cannot assign {type(value).__name__} as child module '{name}' "
                    "(spx.nn.Module or None expected)"
                )
            d["_modules"][name] = None
            _structure.bump()
        elif params is not None and name in d["_buffers"]:
            buffers = d["_buffers"]
            if value is not None and not isinstance(value, Tensor | jax.Array | np.ndarray):
                raise TypeError(
                    f"cannot assign {type(value).__name__} as buffer '{name}' "
                    "(spx.Tensor, jax.Array, numpy.ndarray or None expected)"
                )
            _transforms.check_buffer(self, name, value)
            if (value is None) != (buffers[name] is None):
                _structure.bump()
            buffers[name] = _as_buffer(value)
        else:
            # Plain attributes may steer forward (flags, sizes): they are static structure.
            object.__setattr__(self, name, value)
            _structure.bump()

    def _forget(self, name: str, keep: str | None = None) -> None:
        # Re-registering a name in its own table (``keep``) must not move it: torch assigns
        # into the existing dict slot, so ``self.weight = Parameter(...)`` or ``seq[1] = m``
        # keeps state_dict and Sequential order.
        d = self.__dict__
        d.pop(name, None)
        for table in ("_parameters", "_buffers", "_modules"):
            if table != keep:
                d[table].pop(name, None)
        if keep != "_buffers":
            d["_non_persistent_buffers"].discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            found = d.get(table)
            if found is not None and name in found:
                return found[name]
        if name in _hooks.TABLES and "_parameters" in d:
            return _hooks.tables(self)[name]  # torch's modules always have them
        for attr, compute in d.get("_computed", ()):
            if attr == name:  # a reparametrized tensor, e.g. weight_norm's weight
                return compute(self)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if name in d.get(table, ()):
                del d[table][name]
                d["_non_persistent_buffers"].discard(name)
                _structure.bump()
                return
        object.__delattr__(self, name)
        _structure.bump()

    def __dir__(self) -> list[str]:
        extra = [*self._parameters, *self._buffers, *self._modules]
        return sorted(set(super().__dir__()) | set(extra))

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter under ``name`` (mirrors torch); ``None`` registers an empty slot."""
        self._require_init("parameters")
        _check_name("parameter", name)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign {type(param).__name__} as parameter '{name}' "
                "(spx.nn.Parameter or None expected)"
            )
        self._forget(name, keep="_parameters")
        self._parameters[name] = param
        _structure.bump()

    def register_buffer(self, name: str, tensor: Any, persistent: bool = True) -> None:
        """Add a buffer: state that is not trained but saved (unless ``persistent=False``).

        Args:
            name: attribute name.
            tensor: a ``jax.Array``/``numpy.ndarray`` or ``None``.
            persistent: whether the buffer is part of ``state_dict``.
        """
        self._require_init("buffers")
        _check_name("buffer", name)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            tensor = Tensor._of(_as_array(tensor, f"buffer '{name}'"))
        self._forget(name, keep="_buffers")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)
        _structure.bump()

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name`` (mirrors torch)."""
        self._require_init("module")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        _check_name("module", name)
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._forget(name, keep="_modules")
        self._modules[name] = module
        _structure.bump()

    register_module = add_module

    # -- traversal ---------------------------------------------------------------------------
    def named_modules(
        self, memo: set[int] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """Yield ``(name, module)`` for this module (name ``''``) and every descendant."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = f"{prefix}.{name}" if prefix else name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def _named_members(
        self, table: str, prefix: str, recurse: bool, remove_duplicate: bool
    ) -> Iterator[tuple[str, Any]]:
        seen: set[int] = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for mod_prefix, module in modules:
            for name, value in module.__dict__[table].items():
                if value is None:
                    continue
                if remove_duplicate:
                    if id(value) in seen:
                        continue
                    seen.add(id(value))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """Yield ``(dotted_name, Parameter)`` in registration order; shared ones once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` (``''`` is self)."""
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            child = mod._modules.get(item)
            if child is None:
                raise AttributeError(
                    f"{type(mod).__name__} has no submodule {item!r} (looking up {target!r})"
                )
            mod = child
        return mod

    def get_parameter(self, target: str) -> Parameter:
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        p = mod._parameters.get(name)
        if p is None:
            raise AttributeError(f"{type(mod).__name__} has no parameter {name!r} ({target!r})")
        return p

    def get_buffer(self, target: str) -> Tensor:
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if mod._buffers.get(name) is None:
            raise AttributeError(f"{type(mod).__name__} has no buffer {name!r} ({target!r})")
        return mod._buffers[name]

    # -- modes and bulk updates --------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode on this module and all descendants; returns self."""
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be boolean, got {mode!r}")
        for m in self.modules():
            m.__dict__["training"] = mode
        _structure.bump()
        return self

    def eval(self) -> Module:
        """Evaluation mode (``train(False)``); returns self."""
        return self.train(False)

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every submodule (children first, then self); returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset ``.grad`` of every parameter to None (or to zeros, in place)."""
        for p in self.parameters():
            if p._grad is not None:
                if set_to_none:
                    p._grad = None
                else:
                    p._grad.detach_().zero_()

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        _structure.bump()
        return self

    def _map_arrays(self, fn: Callable[[jax.Array], jax.Array]) -> Module:
        # torch's Module._apply: each parameter keeps its identity (optimizers hold it) and
        # gets a new value, as ``param.data = fn(param.data)`` does.
        for m in self.modules():
            for p in m._parameters.values():
                if p is not None and not p.is_uninitialized:
                    p.data = fn(p._data)
                    if p._grad is not None:
                        p._grad = Tensor._of(fn(p._grad._data))
            for b in m._buffers.values():
                if b is not None:
                    b.data = fn(b._data)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move and/or cast: ``to(dtype)``, ``to(device)``, ``to("cpu")``, ``to(device, dtype)``.

        Casting touches floating-point parameters and buffers only, as in torch.
        ``memory_format`` is accepted and changes nothing (XLA picks layouts: see
        :mod:`spx.constants`).
        """
        from spx._device import device as resolve_device
        from spx.constants import check_memory_format

        dtype = kwargs.pop("dtype", None)
        dev = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        check_memory_format(kwargs.pop("memory_format", None), "to()")
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, str | jax.Device):
                dev = a
            elif a is not None:
                dtype = a
        if dev is not None:
            target = resolve_device(dev)
            self._map_arrays(lambda x: jax.device_put(x, target))
        if dtype is not None:
            # float64 is float32 without jax_enable_x64 (converted here: no JAX warning).
            dt = jax.dtypes.canonicalize_dtype(jnp.dtype(dtype))
            if not jnp.issubdtype(dt, jnp.floating):
                raise TypeError(
                    f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dt}"
                )
            self._map_arrays(lambda x: x.astype(dt) if jnp.issubdtype(x.dtype, jnp.floating) else x)
        return self

    def float(self) -> Module:
        return self.to(jnp.float32)

    def double(self) -> Module:
        """Floating parameters and buffers to float64 (float32 without ``jax_enable_x64``, as
        ``Tensor.double()``)."""
        return self.to(jnp.float64)

    def half(self) -> Module:
        return self.to(jnp.float16)

    def bfloat16(self) -> Module:
        return self.to(jnp.bfloat16)

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> Module:
        return self.to(f"cuda:{device}" if device is not None else "cuda")

    def has_uninitialized_params(self) -> bool:
        return any(p.is_uninitialized for p in self.parameters())

    # -- state dict --------------------------------------------------------------------------
    def state_dict(
        self, *, destination: dict | None = None, prefix: str = "", keep_vars: bool = False
    ) -> OrderedDict[str, Any]:
        """Parameters then persistent buffers of each module, children as ``"name."``.

        As in torch, the values are detached tensors that share storage with the parameters
        and buffers: they show the current values after later (in-place or compiled) updates;
        ``keep_vars=True`` returns the Parameter objects themselves. A lazy parameter that has
        no value yet appears as its ``UninitializedParameter``.
        """
        out: OrderedDict[str, Any] = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars or p.is_uninitialized else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=out, prefix=f"{prefix}{name}.", keep_vars=keep_vars)
        return out

    def load_state_dict(
        self, state_dict: dict[str, Any], strict: bool = True, assign: bool = False
    ) -> _IncompatibleKeys:
        """Copy ``state_dict`` into this module's parameters and buffers (mirrors torch).

        Values may be ``jax.Array`` or ``numpy.ndarray`` (e.g. from ``safetensors``); they are
        cast to the current dtype (``assign=True`` keeps the checkpoint's dtype), and lazy
        parameters take the checkpoint's shape. Everything is checked before anything is
        written, so a failed load leaves the module unchanged. First every module may adapt
        the incoming entries (:meth:`_prepare_state_dict`, e.g. BatchNorm fills in the
        ``num_batches_tracked`` of old checkpoints, as torch does); ``state_dict`` itself is
        never modified.

        Args:
            state_dict: mapping of dotted names to arrays.
            strict: raise on missing or unexpected keys.
            assign: keep the checkpoint's dtype instead of casting to the current one.

        Returns:
            ``(missing_keys, unexpected_keys)``.

        Raises:
            RuntimeError: size mismatches (always), missing/unexpected keys (with ``strict``).
        """
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(
                f"Expected state_dict to be dict-like, got {type(state_dict).__name__}."
            )
        state_dict = StateDictOverlay(state_dict)
        # Every prefix a module is reachable under (a shared module's keys appear under each).
        for name, module in self.named_modules(remove_duplicate=False):
            module._prepare_state_dict(state_dict, f"{name}." if name else "")
        expected = self.state_dict(keep_vars=True)
        missing = [k for k in expected if k not in state_dict]
        unexpected = _unexpected_keys(self, list(state_dict.keys()), "")
        errors: list[str] = []
        writes: list[tuple[str, Any, jax.Array]] = []
        for key, current in expected.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            if isinstance(value, Tensor):
                value = value._data
            if not isinstance(value, jax.Array | np.ndarray | np.generic):
                errors.append(
                    f'While copying the parameter named "{key}", expected an array from '
                    f"checkpoint but received {type(value).__name__}"
                )
                continue
            lazy = isinstance(current, Parameter) and current.is_uninitialized
            cur_shape = None if lazy else tuple(current.shape)
            if cur_shape is not None and tuple(value.shape) != cur_shape:
                errors.append(
                    f"size mismatch for {key}: copying a param with shape "
                    f"{tuple(value.shape)} from checkpoint, the shape in current model is "
                    f"{cur_shape}."
                )
                continue
            dtype = None if (assign or lazy) else current.dtype
            array = _converted(value, dtype, None if lazy else current)
            if isinstance(value, jax.Array) and not assign:
                # torch copies (param.copy_(input)): another module's state_dict() value stays
                # its own. Shared, a compiled step that donates one module's array would
                # delete the other's (target.load_state_dict(net.state_dict()) in DQN).
                array = jnp.array(array, copy=True)
            writes.append((key, current, array))
        if strict:
            if unexpected:
                errors.insert(
                    0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected)
                )
            if missing:
                errors.insert(
                    0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing)
                )
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                + "\n\t".join(errors)
            )
        for _key, current, array in writes:
            # In place, as torch's ``param.copy_(input)``: the objects (and aliases taken by
            # an earlier state_dict()) stay, their values change.
            if isinstance(current, Parameter) and current.is_uninitialized:
                current.materialize(array)
            else:
                current._data = array
        return _IncompatibleKeys(missing, unexpected)

    def _required_parameter(self, name: str) -> Parameter:
        """The parameter ``name`` that ``forward`` cannot do without, or a clear error.

        torch allows ``m.weight = None``; the next forward then fails. This names what is
        missing and how to restore it, instead of an ``AttributeError`` on ``None``.

        Raises:
            TypeError: the parameter slot holds ``None``.
        """
        params = self._parameters
        if name not in params:
            # Not a parameter here: an attribute that replaced it, e.g. the weight that
            # nn.utils.weight_norm computes from weight_g and weight_v (torch reads self.weight).
            value = getattr(self, name, None)
            if value is not None:
                return value
        param = params.get(name)
        if param is None:
            cls = type(self).__name__
            raise TypeError(
                f"{cls}.{name} is None (it was set to None or registered empty), but "
                f"{cls}.forward needs it. Assign a Parameter first, e.g. "
                f"module.{name} = nn.Parameter(jnp.zeros(shape)), or build a new {cls}."
            )
        return param

    def _prepare_state_dict(self, state_dict: StateDictOverlay, prefix: str) -> None:
        """Adapt this module's entries (``prefix`` + name) before ``load_state_dict`` checks them.

        The per-module hook torch's ``_load_from_state_dict`` overrides provide: a layer whose
        state changed over versions adds, renames or drops entries of older checkpoints here.
        ``state_dict`` is a writable overlay; the caller's mapping is never modified. The
        default changes nothing.

        Args:
            state_dict: every entry being loaded (all modules'), writable.
            prefix: this module's key prefix, e.g. ``"encoder.norm."`` (``""`` at the root).
        """

    # -- repr --------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """Extra text inside ``Name(...)``; layers override it as torch's do."""
        return ""

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines.extend(extra.split("\n"))
        for name, m in self._modules.items():
            child = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {child}")
        main = type(self).__name__ + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                return main + lines[0] + ")"
            main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    # -- pytree ------------------------------------------------------------------------------


def _unexpected_keys(module: Module, keys: list[str], prefix: str) -> list[str]:
    """Keys no parameter/buffer claims, in the order torch's recursive load reports them.

    torch checks each module's own keys (in checkpoint order) before recursing into its
    children, so e.g. ``["a.x", "junk"]`` reports ``"junk"`` before ``"a.x"``.
    """
    d = module.__dict__
    local = {n for n, p in d["_parameters"].items() if p is not None}
    local |= {
        n
        for n, b in d["_buffers"].items()
        if b is not None and n not in d["_non_persistent_buffers"]
    }
    found = []
    for key in keys:
        if not key.startswith(prefix):
            continue
        head, dot, _ = key[len(prefix) :].partition(".")
        if (dot and head not in d["_modules"]) or (not dot and head not in local):
            found.append(key)
    for name, child in d["_modules"].items():
        if child is not None:
            sub = f"{prefix}{name}."
            found += _unexpected_keys(child, [k for k in keys if k.startswith(sub)], sub)
    return found


def _as_buffer(value: Any) -> Tensor | None:
    """A buffer value as a Tensor (numpy memory is mutable: host-copied)."""
    if value is None or isinstance(value, Tensor):
        return value
    return Tensor._of(_as_array(value, "buffer"))


def _converted(value: Any, dtype: Any, like: Any) -> jax.Array:
    # A checkpoint's numpy array (e.g. torch's ``t.numpy()``) can be written afterwards.
    array = _as_array(value, "state_dict value")
    if dtype is not None:
        array = array.astype(dtype)
    old = None if like is None else like._data
    devices = getattr(old, "devices", None)
    if devices is not None:
        found = devices()
        if len(found) == 1:
            array = jax.device_put(array, next(iter(found)))
    return array


_pytree.register(Module)
