"""torch's ``out=`` keyword for spx's top-level functions (``spx.add(a, b, out=c)``).

Every function of :mod:`spx.ops` that returns tensors takes ``out=``, as torch's do: the result
is written into ``out`` in place (aliases of ``out`` and views of it see it) and ``out`` is
returned; functions with several results (``spx.max(x, 0)``, ``spx.sort``) take a tuple of
tensors. torch's rules hold:

* the result's dtype must cast to ``out``'s without changing kind (a float result into an
  integer ``out`` raises, as torch's "result type Float can't be cast to the desired output
  type Long");
* an ``out`` of another shape is resized to the result's, with torch's deprecation warning
  when it held elements (not for an empty ``out``); a view cannot be resized;
* ``out=`` records no autograd history: with grad mode on, a result that requires grad raises
  torch's "functions with out=... arguments don't support automatic differentiation".

Before, the creation functions (``spx.zeros``, ``spx.arange``, ``spx.randn``, ...) accepted and
silently ignored ``out=``; the others raised TypeError. Those functions take torch's memory
arguments, which mean nothing on JAX (``layout``, ``pin_memory``, ``memory_format``), through
``**kwargs``; any other keyword there (a misspelt ``dtpye=``) now raises TypeError, as in torch,
instead of being ignored.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

from spx import _user_code
from spx._tensor import graph
from spx._tensor.methods._dtypes import canonical
from spx._tensor.tensor import Tensor

_NO_AUTOGRAD = (
    "{name}(): functions with out=... arguments don't support automatic differentiation, but "
    "one of the arguments requires grad. Call it without out= (result = spx.{name}(...)), or "
    "under spx.no_grad() if no gradient is wanted."
)


def _write(name: str, result: Any, out: Any, creates: bool = False) -> Any:
    if isinstance(result, Tensor):
        if not isinstance(out, Tensor):
            raise TypeError(f"{name}(): argument 'out' must be a Tensor, not {type(out).__name__}")
        _write_one(name, result, out, warn_resize=not creates)
        return out
    if isinstance(result, tuple) and result and all(isinstance(r, Tensor) for r in result):
        if not isinstance(out, tuple | list) or len(out) != len(result):
            got = f"{len(out)} entries" if isinstance(out, tuple | list) else type(out).__name__
            raise TypeError(
                f"{name}(): argument 'out' must be a tuple of {len(result)} Tensors (one per "
                f"result), got {got}"
            )
        for r, o in zip(result, out, strict=True):
            if not isinstance(o, Tensor):
                raise TypeError(
                    f"{name}(): argument 'out' must hold Tensors, got {type(o).__name__}"
                )
            _write_one(name, r, o)
        return type(result)(*out) if hasattr(result, "_fields") else tuple(out)
    raise TypeError(f"{name}() got an unexpected keyword argument 'out'")


def _write_one(name: str, result: Tensor, out: Tensor, warn_resize: bool = True) -> None:
    if result.requires_grad and graph.STATE.grad_enabled:
        raise RuntimeError(_NO_AUTOGRAD.format(name=name))
    if tuple(result.shape) != tuple(out.shape):
        if out._view is not None:
            raise RuntimeError(
                f"{name}(): out= is a view of shape {list(out.shape)} and cannot be resized to "
                f"the result's {list(result.shape)}; pass an out of that shape"
            )
        if out.numel() and warn_resize:  # torch's creation functions resize silently
            _user_code.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(result.shape)}. This behavior is deprecated, and in a future release "
                "it will not resize outputs unless they have zero elements. You can explicitly "
                "reuse an out tensor t by resizing it, inplace, to zero elements with "
                "t.resize_(0).",
                UserWarning,
            )
        # A resize: out takes a new value of the result's shape (cast to its dtype first).
        out.data = out.new_zeros(tuple(result.shape))
    out._assign(result)  # casts as torch (same kind only), writing through to a view's base


# torch's memory-layout keywords: accepted and ignored by the functions taking **kwargs.
_IGNORED = frozenset({"layout", "pin_memory", "memory_format"})


def _named_keywords(fn: Callable[..., Any]) -> frozenset[str] | None:
    """The keywords ``fn`` takes by name plus torch's ignored ones, if it has ``**kwargs``."""
    params = inspect.signature(fn).parameters.values()
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return _IGNORED | {
        p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


def _refuse_unknown(name: str, named: frozenset[str], kwargs: dict[str, Any]) -> None:
    unknown = sorted(set(kwargs) - named)
    raise TypeError(
        f"{name}() got an unexpected keyword argument {unknown[0]!r}; it takes "
        f"{', '.join(sorted(named - _IGNORED))} (and torch's {', '.join(sorted(_IGNORED))}, "
        "which spx ignores)"
    )


def accepts_out(fn: Callable[..., Any], dtype_from_out: bool = False) -> Callable[..., Any]:
    """``fn`` with torch's ``out=`` keyword (see the module docstring).

    With ``dtype_from_out`` (the creation functions: ``spx.zeros(2, out=t)``), a call without
    ``dtype=`` makes its result in ``out``'s dtype, as torch's do.

    Example:
        >>> import spx
        >>> from spx.ops import math
        >>> add = accepts_out(math.add)
        >>> c = spx.zeros(2)
        >>> add(spx.ones(2), 2, out=c) is c, c.tolist()
        (True, [3.0, 3.0])
    """

    named = _named_keywords(fn)

    @functools.wraps(fn)
    def with_out(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        if named is not None and not named.issuperset(kwargs):
            _refuse_unknown(fn.__name__, named, kwargs)
        if out is None:
            return fn(*args, **kwargs)
        if dtype_from_out and isinstance(out, Tensor):
            dtype = kwargs.get("dtype")
            if dtype is None:
                kwargs["dtype"] = out.dtype
            elif canonical(dtype) != out.dtype:
                raise RuntimeError(
                    f"{fn.__name__}(): dtype {canonical(dtype)} does not match dtype of out "
                    f"parameter ({out.dtype}); leave dtype= out, or pass an out of that dtype"
                )
        return _write(fn.__name__, fn(*args, **kwargs), out, dtype_from_out)

    return with_out


def add_out(namespace: dict[str, Any], names: list[str], creating: set[str]) -> None:
    """Give every function among ``names`` in ``namespace`` the ``out=`` keyword, in place;
    those in ``creating`` that take ``dtype=`` default it to ``out``'s."""
    for name in names:
        fn = namespace.get(name)
        if not inspect.isfunction(fn):
            continue
        params = inspect.signature(fn).parameters
        if "out" in params:
            continue
        wrapped = namespace[name] = accepts_out(fn, name in creating and "dtype" in params)
        # The defining module holds it too: pickle finds functions by module and name.
        module = sys.modules.get(fn.__module__)
        if module is not None and getattr(module, fn.__name__, None) is fn:
            setattr(module, fn.__name__, wrapped)
