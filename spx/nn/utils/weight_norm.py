"""``weight_norm`` / ``remove_weight_norm``: the old weight-norm API (mirrors
``torch.nn.utils.weight_norm``).

``weight`` is replaced by two parameters, ``weight_g`` (its norm over every dim but ``dim``)
and ``weight_v`` (its direction), so the state dict has torch's keys (``weight_g``,
``weight_v``). ``module.weight`` is ``v * g / ||v||``, computed when read (by ``forward`` or
anyone else). torch stores it with a forward pre-hook instead: read between an optimizer step
and the next forward, torch's is the value before the step and spx's the value after it.
Computing it on reading keeps traced values out of the module under ``spx.compile``.
"""

from __future__ import annotations

from typing import Any, TypeVar

from spx._tensor.tensor import Tensor
from spx.nn import _structure
from spx.nn.parameter import Parameter

M = TypeVar("M")


def norm_except_dim(v: Tensor, pow: int = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of ``v`` over every dim but ``dim`` (``-1``: over the whole tensor),
    shaped to broadcast against ``v`` (mirrors ``torch.norm_except_dim``)."""
    if dim == -1:
        return (v.abs() ** pow).sum() ** (1.0 / pow)
    dim = dim % v.dim()
    others = tuple(d for d in range(v.dim()) if d != dim)
    if not others:
        return v.abs()
    return (v.abs() ** pow).sum(dim=others, keepdim=True) ** (1.0 / pow)


class WeightNorm:
    """The forward pre-hook that recomputes ``name`` from ``name_g`` and ``name_v``."""

    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim

    def compute_weight(self, module: Any) -> Tensor:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, 2, self.dim))


def weight_norm(module: M, name: str = "weight", dim: int | None = 0) -> M:
    """Reparametrize ``module.<name>`` as magnitude ``<name>_g`` times direction ``<name>_v``.

    Mirrors ``torch.nn.utils.weight_norm`` (deprecated in torch in favour of
    ``torch.nn.utils.parametrizations.weight_norm``, whose state dict keys differ).

    Args:
        module: the module holding the parameter.
        name: the parameter's name.
        dim: the dim the norm is *not* taken over (``0``: one norm per output row); ``None``
            (or ``-1``, as in torch) takes one norm of the whole tensor.

    Returns:
        ``module``, with ``<name>_g`` and ``<name>_v`` parameters (``<name>`` is computed).

    Raises:
        RuntimeError: weight norm is already registered on ``name``.
        AttributeError: ``module`` has no parameter ``name``.

    Example:
        >>> import spx
        >>> m = spx.nn.utils.weight_norm(spx.nn.Linear(3, 2))
        >>> list(m.state_dict())
        ['bias', 'weight_g', 'weight_v']
        >>> m.weight_g.shape
        spx.Size([2, 1])
    """
    for attr, compute in module.__dict__.get("_computed", ()):
        if attr == name and isinstance(getattr(compute, "__self__", None), WeightNorm):
            raise RuntimeError(
                f"Cannot register two weight_norm hooks on the same parameter {name}"
            )
    weight = module._parameters.get(name)
    if weight is None:
        raise AttributeError(
            f"{type(module).__name__} has no parameter {name!r} to apply weight_norm to; it has "
            f"{', '.join(module._parameters) or 'none'}"
        )
    fn = WeightNorm(name, -1 if dim is None else dim)
    del module._parameters[name]
    data = weight.detach()
    module.register_parameter(name + "_g", Parameter(norm_except_dim(data, 2, fn.dim)._data))
    module.register_parameter(name + "_v", Parameter(data._data))
    computed = module.__dict__.get("_computed", ())
    module.__dict__["_computed"] = (*computed, (name, fn.compute_weight))
    _structure.bump()
    return module


def remove_weight_norm(module: M, name: str = "weight") -> M:
    """Undo :func:`weight_norm`: ``name`` is a single parameter again (mirrors torch).

    Args:
        module: the module :func:`weight_norm` was applied to.
        name: the parameter's name.

    Returns:
        ``module``.

    Raises:
        ValueError: no weight norm on ``name``.
    """
    computed = module.__dict__.get("_computed", ())
    for attr, compute in computed:
        # Only weight norm's own entry: spectral_norm and parametrizations compute attributes too.
        if attr == name and isinstance(getattr(compute, "__self__", None), WeightNorm):
            weight = compute(module).detach()
            module.__dict__["_computed"] = tuple(c for c in computed if c[0] != name)
            del module._parameters[name + "_g"]
            del module._parameters[name + "_v"]
            setattr(module, name, Parameter(weight._data))
            _structure.bump()
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
