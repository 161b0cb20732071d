"""``spx.func.stack_module_state``: the parameters and buffers of M models, stacked for vmap.

Model ensembling runs M copies of one architecture as a single batched computation:
``vmap(lambda p, b, x: functional_call(base, (p, b), (x,)), in_dims=(0, 0, None))``. This
builds its ``p`` and ``b``: one dict each, keyed by torch's dotted names, each value the M
models' tensors stacked along a new first dimension.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax.numpy as jnp

from spx._tensor.tensor import Tensor
from spx.nn.module import Module


def stack_module_state(models: Sequence[Module]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """Stack the parameters and buffers of ``models`` (mirrors torch.func's).

    Args:
        models: M modules of one class, all in training or all in eval mode.

    Returns:
        ``(params, buffers)``: dicts from dotted name to a Tensor of shape ``(M, *shape)``.
        Stacked parameters are new leaves that require grad when the models' parameters do
        (an optimizer can train them); they share nothing with the models.

    Raises:
        RuntimeError: no models, mixed training modes, mixed classes, or a parameter that
            requires grad in some models only (torch's messages).

    Example:
        >>> import spx
        >>> params, buffers = spx.func.stack_module_state([spx.nn.Linear(3, 2) for _ in range(4)])
        >>> params["weight"].shape, params["weight"].requires_grad
        (spx.Size([4, 2, 3]), True)
    """
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    cls = type(models[0])
    if not all(type(m) is cls for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def _stacked_leaf(tensors: list[Tensor], name: str) -> Tensor:
    flags = {t.requires_grad for t in tensors}
    if len(flags) > 1:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    # Stacked from the values, not recorded: a new leaf with no history back to the models.
    return Tensor._of(jnp.stack([t._data for t in tensors]), requires_grad=flags.pop())
