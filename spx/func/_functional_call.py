"""``spx.func.functional_call``: run a Module with parameters and buffers given as a dict.

The module's own tensors are swapped out for the given ones for the duration of one call and
put back afterwards, also when the forward raises, so the same module object serves as a pure
function of ``(params, x)`` under :func:`spx.func.grad` and :func:`spx.func.vmap` (the given
tensors then hold JAX tracers). The swap writes the module's ``_parameters``/``_buffers``
tables directly: a given value need not be a ``Parameter`` (torch allows plain tensors, and a
gradient transform passes plain tensors), which attribute assignment would refuse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np

from spx._tensor.tensor import Tensor
from spx.nn import _structure
from spx.nn.module import Module

_MISSING = object()


def functional_call(
    module: Module,
    parameter_and_buffer_dicts: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """Call ``module`` with its parameters and buffers replaced (mirrors torch.func's).

    Args:
        module: the Module to call.
        parameter_and_buffer_dicts: ``{dotted name: Tensor}``, or a tuple/list of such dicts
            with distinct keys (e.g. ``(params, buffers)``). Names the module lacks are set
            for the call, as torch's are; names not given keep the module's own tensors.
        args: the positional arguments (a non-tuple is one argument).
        kwargs: the keyword arguments.
        tie_weights: tensors tied in the module (one tensor under two names) stay tied: a
            value given for one name is used for all of them. Giving different values for
            tied names raises.
        strict: require exactly the module's parameter and buffer names.

    Returns:
        What ``module(*args, **kwargs)`` returns.

    Raises:
        ValueError: a bad ``parameter_and_buffer_dicts`` or conflicting values for tied names.
        RuntimeError: ``strict`` and missing or unexpected names (torch's message).

    Example:
        >>> import spx
        >>> lin = spx.nn.Linear(2, 1)
        >>> params = {"weight": spx.ones(1, 2), "bias": spx.zeros(1)}
        >>> spx.func.functional_call(lin, params, (spx.ones(3, 2),)).tolist()
        [[2.0], [2.0], [2.0]]
    """
    if isinstance(parameter_and_buffer_dicts, Mapping):
        given = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence) and not isinstance(
        parameter_and_buffer_dicts, str
    ):
        if not all(isinstance(d, Mapping) for d in parameter_and_buffer_dicts):
            raise ValueError(
                "Expected all elements of parameter_and_buffer_dicts to be dictionaries"
            )
        counts: dict[str, int] = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(
                f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                "ambiguous"
            )
        given = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
            f"{type(parameter_and_buffer_dicts)}"
        )
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    values = _untie(module, given) if tie_weights else dict(given)
    if strict:
        _check_keys(module, values)
    swapped = {name: _as_tensor(name, v) for name, v in values.items()}
    originals: dict[str, Any] = {}
    try:
        for name, value in swapped.items():
            originals[name] = _swap(module, name, value)
        return module(*args, **kwargs)
    finally:
        current = {name: _swap(module, name, old) for name, old in reversed(originals.items())}
        # The forward may have replaced a buffer (``self.running_mean = ...``); torch hands the
        # new tensor out through the caller's dict, as in-place updates are seen there anyway.
        if isinstance(parameter_and_buffer_dicts, dict):
            for name in parameter_and_buffer_dicts:
                if name in current and current[name] is not swapped[name]:
                    parameter_and_buffer_dicts[name] = current[name]


def _as_tensor(name: str, value: Any) -> Any:
    if value is None or isinstance(value, Tensor):
        return value
    if isinstance(value, jax.Array | np.ndarray):
        return Tensor._of(jax.numpy.asarray(value))
    raise TypeError(
        f"functional_call: the value for '{name}' is a {type(value).__name__}, not a Tensor"
    )


def _named_tensors(module: Module) -> dict[str, Any]:
    """Every parameter and buffer under every name it is reachable by (tied ones repeated)."""
    out = dict(module.named_parameters(remove_duplicate=False))
    out.update(module.named_buffers(remove_duplicate=False))
    return out


def _untie(module: Module, given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` extended to every name of a tied tensor one of its names was given for."""
    names_of: dict[int, set[str]] = {}
    for name, t in _named_tensors(module).items():
        names_of.setdefault(id(t), set()).add(name)
    tied = {n: names for names in names_of.values() if len(names) > 1 for n in names}
    given_tied = [n for n in given if n in tied]
    for name in given_tied:
        names = tied[name]
        present = [n for n in names if n in given]
        if len(present) > 1 and len({id(given[n]) for n in present}) != 1:
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                "Consider using tie_weights=False"
            )
    out = dict(given)
    for name in given_tied:
        for other in tied[name]:
            out[other] = given[name]
    return out


def _check_keys(module: Module, values: Mapping[str, Any]) -> None:
    valid = set(_named_tensors(module))
    missing = sorted(valid - set(values))
    unexpected = sorted(set(values) - valid)
    errors = []
    if unexpected:
        errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if errors:
        raise RuntimeError(
            f"Error(s) in reparametrizing for {type(module).__name__}:\n\t" + "\n\t".join(errors)
        )


def _swap(module: Module, name: str, value: Any) -> Any:
    """Put ``value`` at dotted ``name`` (``_MISSING`` removes it); return what was there."""
    prefix, _, attr = name.rpartition(".")
    owner = module.get_submodule(prefix) if prefix else module
    d = owner.__dict__
    _structure.bump()  # other objects than the module's own: spx.compile re-walks its inputs
    for table in ("_parameters", "_buffers"):
        if attr in d[table]:
            old = d[table][attr]
            if value is _MISSING:
                del d[table][attr]
            else:
                d[table][attr] = value
            return old
    old = d.get(attr, _MISSING)
    if old is not _MISSING and old is not None and not isinstance(old, Tensor):
        raise TypeError(f"attribute `{attr}`: {old!r:.80} is not an instance of spx.Tensor")
    if value is _MISSING:
        d.pop(attr, None)
    else:
        d[attr] = value  # a name the module lacks: a plain attribute for the call, as torch's
    return old
