"""Checking a loaded optimizer state against the parameters it is loaded for.

torch's ``Optimizer.load_state_dict`` trusts the state it is given: an ``exp_avg`` of another
shape is accepted, and the next ``step()`` silently broadcasts the parameter into that shape;
Adam's state loaded into ``SGD(momentum=0.9)`` is accepted, and SGD starts from no momentum.
Here every parameter's state is checked before anything is written — which entries the
optimizer needs, each entry's shape and dtype — and one error lists every problem, naming the
parameter by index (and by name when the optimizer was given ``model.named_parameters()``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx.nn.parameter import Parameter


@dataclass(frozen=True)
class StateSpec:
    """What one parameter's state must hold.

    Attributes:
        required: entries every stepped parameter has, with their shape and dtype.
        optional: other entries the optimizer keeps or tolerates (torch's names), each with
            its shape and dtype.
    """

    required: dict[str, jax.ShapeDtypeStruct]
    optional: dict[str, jax.ShapeDtypeStruct]


def step_spec() -> jax.ShapeDtypeStruct:
    """The ``step`` counter: a float32 scalar, as in torch."""
    return jax.ShapeDtypeStruct((), jnp.float32)


def like(param: Parameter) -> jax.ShapeDtypeStruct:
    """An entry shaped like the parameter (a moment, a momentum buffer)."""
    return jax.ShapeDtypeStruct(tuple(param.shape), param.dtype)


def describe(index: int, name: str | None) -> str:
    """``parameter 3 ('fc.bias')`` or ``parameter 3``."""
    return f"parameter {index} ({name!r})" if name else f"parameter {index}"


def _kind(dtype: Any) -> str:
    if jnp.issubdtype(dtype, jnp.complexfloating):
        return "complex"
    if jnp.issubdtype(dtype, jnp.floating):
        return "floating"
    if jnp.issubdtype(dtype, jnp.integer):
        return "integer"
    return str(dtype)


def _entry_problem(key: str, value: Any, spec: jax.ShapeDtypeStruct) -> str | None:
    if value is None:
        return None  # torch writes None for a buffer it has not created yet
    if isinstance(value, jax.Array) or hasattr(value, "_ref"):
        # An array or an spx.Tensor: shape and dtype without reading the values (a Tensor's
        # read would run pending value checks, whose errors are not this entry's problem).
        array = value
    else:
        try:
            array = np.asarray(value)
        except Exception:
            return f"entry {key!r} is a {type(value).__name__}, not an array"
    shape, dtype = tuple(array.shape), array.dtype
    if shape != tuple(spec.shape):
        return (
            f"entry {key!r} has shape {shape}, but the parameter's {key!r} must have shape "
            f"{tuple(spec.shape)}"
        )
    want = _kind(spec.dtype)
    # A step counter may be saved as an int (older torch) or a float; a floating state entry
    # may have another width (cast on load, as torch casts to the parameter's dtype).
    if _kind(dtype) != want and not (key == "step" and _kind(dtype) == "integer"):
        return f"entry {key!r} has dtype {dtype}, but a {want} array is needed"
    return None


def check_state(
    optimizer: Any,
    loaded: dict[Parameter, tuple[int, str | None, dict[str, Any]]],
    groups: dict[int, dict[str, Any]],
) -> None:
    """Raise one ``ValueError`` listing every loaded state entry that does not fit.

    Args:
        optimizer: the optimizer loading the state (its ``_state_spec`` says what fits).
        loaded: parameter -> ``(index in the state dict, name or None, state entries)``.
        groups: ``id(parameter)`` -> the param group it belongs to.

    Raises:
        ValueError: a missing or unexpected entry, or an entry of the wrong shape or dtype.
    """
    cls = type(optimizer).__name__
    problems: list[str] = []
    for param, (index, name, entries) in loaded.items():
        if getattr(param, "is_uninitialized", False):  # a plain tensor is never lazy
            continue  # a lazy parameter: its shape comes later
        spec = optimizer._state_spec(param, groups[id(param)])
        if spec is None:
            continue  # a subclass with its own step(): its state is its own business
        who = describe(index, name)
        if not isinstance(entries, dict):
            problems.append(f"{who}: the state is a {type(entries).__name__}, not a dict")
            continue
        missing = [k for k in spec.required if k not in entries]
        if missing:
            problems.append(
                f"{who}: the state lacks {', '.join(map(repr, missing))}, which {cls} keeps for "
                f"every parameter it has stepped (the state has {sorted(entries)})"
            )
        unknown = [k for k in entries if k not in spec.required and k not in spec.optional]
        if unknown:
            problems.append(
                f"{who}: the state has {', '.join(map(repr, unknown))}, which {cls} does not "
                f"keep (it keeps {sorted({*spec.required, *spec.optional})})"
            )
        for key, value in entries.items():
            entry_spec = spec.required[key] if key in spec.required else spec.optional.get(key)
            if entry_spec is None:
                continue
            problem = _entry_problem(key, value, entry_spec)
            if problem is not None:
                problems.append(
                    f"{who} of shape {tuple(param.shape)} and dtype {param.dtype}: {problem}"
                )
    if problems:
        raise ValueError(
            f"{cls}.load_state_dict: the state does not fit this optimizer's parameters:\n  "
            + "\n  ".join(problems)
            + "\nLoad a state dict saved by the same optimizer class with the same "
            "hyperparameters, for the same model with its parameters in the same order."
        )
