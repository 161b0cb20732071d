"""Gradient clipping: ``clip_grad_norm_``, ``clip_grad_value_`` and their building blocks.

Mirrors ``torch.nn.utils.clip_grad``. The gradients (``param.grad``, Tensors) are scaled or
clamped in place under ``no_grad``, as torch does, so aliases of a ``.grad`` see the change. The
total norm is one recorded operation over all gradients and is returned as a Tensor; nothing is
read back to Python (``spx.compile`` traces the step, where ``float(norm)`` would fail). Like
torch, the scale ``min(1, max_norm / (norm + 1e-6))`` is always applied (a multiply by 1 costs
less than the device-to-host sync a branch would need).
"""

from __future__ import annotations

import math
import types
import warnings
from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx._tensor.grad_mode import no_grad
from spx._tensor.recorded import recorded
from spx._tensor.tensor import Tensor
from spx.ops.creation import zeros

__all__ = [
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "get_total_norm",
]

_NONFINITE_MSG = (
    "The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
    "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
    "anyway, set `error_if_nonfinite=False`"
)


def _as_list(parameters: Any, what: str) -> list[Any]:
    """``parameters`` as a list: one Tensor/array, or any iterable (generators included)."""
    if isinstance(parameters, Tensor | jax.Array | np.ndarray):
        return [parameters]
    if not isinstance(parameters, Iterable):
        raise TypeError(
            f"{what}: parameters must be a Parameter or an iterable of Parameters "
            f"(e.g. model.parameters()), got {type(parameters).__name__}"
        )
    is_generator = isinstance(parameters, types.GeneratorType)
    items = list(parameters)  # a generator can only be walked once; we walk twice
    if is_generator and not items:
        warnings.warn(
            "`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3
        )
    return items


def _norm_type(norm_type: Any) -> float:
    try:
        return float(norm_type)  # torch accepts 2, 2.0, "inf", math.inf
    except (TypeError, ValueError):
        raise ValueError(
            f"norm_type must be a number or 'inf', got {norm_type!r}; use e.g. 2.0, 1.0 or "
            "float('inf')"
        ) from None


def _vector_norm(x: jax.Array, p: float) -> jax.Array:
    """``torch.linalg.vector_norm(x, p)``: low-precision floats accumulate in float32."""
    dtype = x.dtype
    if not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"cannot take the norm of a {dtype} array; gradients must be floating")
    acc = x.astype(jnp.float32) if jnp.finfo(dtype).bits < 32 else x
    a = jnp.abs(acc)
    if p == math.inf:
        out = jnp.max(a, initial=0.0)
    elif p == -math.inf:
        out = jnp.min(a, initial=math.inf)
    elif p == 0:
        out = jnp.sum(a != 0).astype(acc.dtype)
    elif p == 1:
        out = jnp.sum(a)
    elif p == 2:
        out = jnp.sqrt(jnp.sum(acc * acc))
    else:
        out = jnp.sum(a**p) ** (1.0 / p)
    return out.astype(dtype)


@recorded
def _total_norm(*arrays: jax.Array, norm_type: float) -> jax.Array:
    """The norm of the per-array norms (torch stacks them, promoting mixed dtypes)."""
    norms = [_vector_norm(a, norm_type) for a in arrays]
    dtype = jnp.result_type(*norms)
    return _vector_norm(jnp.stack([n.astype(dtype) for n in norms]), norm_type)


@recorded
def _clip_coef(total_norm: jax.Array, max_norm: Any) -> jax.Array:
    # torch clamps instead of branching: a branch on a device value would need a host sync
    # (and is impossible under tracing); multiplying by exactly 1.0 leaves grads unchanged.
    return jnp.minimum(max_norm / (total_norm + 1e-6), 1.0)


def _raise_if_nonfinite(norm: np.ndarray, norm_type: float) -> None:
    if not np.isfinite(norm):
        raise RuntimeError(_NONFINITE_MSG.format(norm_type=norm_type))


def get_total_norm(
    tensors: Any,
    norm_type: float | str = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """The norm of several tensors taken together (mirrors ``torch.nn.utils.get_total_norm``).

    As in torch, each tensor's norm is computed first and the total is the norm of those norms,
    which equals the norm of all elements concatenated into one vector.

    Args:
        tensors: a Tensor (or array), or an iterable of them (e.g. ``[p.grad for p in ps]``).
        norm_type: the p of the p-norm; ``float('inf')`` / ``'inf'`` for the max-abs norm.
        error_if_nonfinite: raise ``RuntimeError`` if the total norm is nan or inf. Under
            ``jax.jit``/``spx.compile`` the check runs on the host through
            ``jax.debug.callback`` (a sync point, so it is off by default) and surfaces as a
            ``jax.errors.JaxRuntimeError``, a ``RuntimeError`` subclass.
        foreach: accepted for torch compatibility; XLA fuses the per-array work anyway.

    Returns:
        A scalar Tensor (0.0 for no arrays), recorded: computed with the step that uses it.

    Shapes:
        tensors: any shapes -> a scalar.

    Example:
        >>> import spx
        >>> from spx.nn.utils import get_total_norm
        >>> get_total_norm([spx.tensor([3.0]), spx.tensor([4.0])]).item()
        5.0
    """
    del foreach
    arrays = _as_list(tensors, "get_total_norm")
    p = _norm_type(norm_type)
    if not arrays:
        return zeros(())
    total = _total_norm(*arrays, norm_type=p)
    if error_if_nonfinite:
        # torch checks on the host here (a sync); under a transformation the check becomes a
        # host callback inside the program.
        value = total._data
        if isinstance(value, jax.core.Tracer):
            jax.debug.callback(_raise_if_nonfinite, value, p)
        else:
            _raise_if_nonfinite(np.asarray(value), p)
    return total


def clip_grads_with_norm_(
    parameters: Any, max_norm: float, total_norm: Tensor, foreach: bool | None = None
) -> None:
    """Scale every ``p.grad`` by ``min(1, max_norm / (total_norm + 1e-6))``.

    Mirrors ``torch.nn.utils.clip_grads_with_norm_``: :func:`clip_grad_norm_` with the norm
    computed beforehand (e.g. after an all-reduce).

    Args:
        parameters: a Parameter or an iterable of Parameters; those whose ``grad`` is None are
            skipped.
        max_norm: the largest allowed total norm (a number, or a scalar tensor).
        total_norm: the total norm of the gradients, from :func:`get_total_norm`.
        foreach: accepted for torch compatibility; ignored.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> p = nn.Parameter(spx.zeros(2)); p.grad = spx.tensor([3.0, 4.0])
        >>> nn.utils.clip_grads_with_norm_([p], 1.0, spx.tensor(5.0))
        >>> [round(g, 3) for g in p.grad.tolist()]
        [0.6, 0.8]
    """
    del foreach
    params = [p for p in _as_list(parameters, "clip_grads_with_norm_") if _has_grad(p)]
    if not params:
        return
    clip_coef_clamped = _clip_coef(total_norm, max_norm)
    coef_as: dict[Any, Tensor] = {}
    with no_grad():
        for p in params:
            grad = p.grad
            # torch multiplies in place by the coefficient cast to the grad's dtype, so the
            # grad keeps its dtype (bf16 grads stay bf16) and aliases of it see the change.
            coef = coef_as.get(grad.dtype)
            if coef is None:
                coef = coef_as[grad.dtype] = clip_coef_clamped.to(grad.dtype)
            grad.mul_(coef)


def _has_grad(p: Any) -> bool:
    if not isinstance(p, Tensor):
        raise TypeError(
            f"expected spx.nn.Parameter objects (whose .grad is clipped), got "
            f"{type(p).__name__}; pass model.parameters()"
        )
    return p.grad is not None


def clip_grad_norm_(
    parameters: Any,
    max_norm: float,
    norm_type: float | str = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Clip the total gradient norm of ``parameters`` (mirrors ``torch.nn.utils.clip_grad_norm_``).

    The norm is taken over all gradients together, as if concatenated into one vector; each
    ``p.grad`` is then multiplied in place by ``min(1, max_norm / (total_norm + 1e-6))``. Works
    eagerly and inside ``jax.jit``/``spx.compile`` (no value is read back to Python).

    Args:
        parameters: a Parameter or an iterable/generator of Parameters (``model.parameters()``);
            parameters whose ``grad`` is None are skipped.
        max_norm: the largest allowed total norm.
        norm_type: the p of the p-norm; ``float('inf')`` / ``'inf'`` for the max-abs norm.
        error_if_nonfinite: raise ``RuntimeError`` if the total norm is nan or inf (see
            :func:`get_total_norm` for the compiled case).
        foreach: accepted for torch compatibility; ignored.

    Returns:
        The total norm of the gradients before clipping, a scalar Tensor.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> p = nn.Parameter(spx.zeros(2)); p.grad = spx.tensor([3.0, 4.0])
        >>> nn.utils.clip_grad_norm_([p], max_norm=1.0).item()
        5.0
        >>> [round(g, 3) for g in p.grad.tolist()]
        [0.6, 0.8]
    """
    params = _as_list(parameters, "clip_grad_norm_")
    grads = [p.grad for p in params if _has_grad(p)]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(
    parameters: Any,
    max_norm: float,
    norm_type: float | str = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Deprecated alias of :func:`clip_grad_norm_` (as in torch, with a ``FutureWarning``)."""
    warnings.warn(
        "`spx.nn.utils.clip_grad_norm` is now deprecated in favor of "
        "`spx.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Any, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient to ``[-clip_value, clip_value]`` (mirrors ``clip_grad_value_``).

    Args:
        parameters: a Parameter or an iterable/generator of Parameters; those whose ``grad`` is
            None are skipped.
        clip_value: the largest allowed absolute gradient value.
        foreach: accepted for torch compatibility; ignored.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> p = nn.Parameter(spx.zeros(3)); p.grad = spx.tensor([-2.0, 0.5, 3.0])
        >>> nn.utils.clip_grad_value_([p], 1.0)
        >>> p.grad.tolist()
        [-1.0, 0.5, 1.0]
    """
    del foreach
    clip_value = float(clip_value)
    with no_grad():
        for p in _as_list(parameters, "clip_grad_value_"):
            if _has_grad(p):
                # torch clamps in place; the grad keeps its dtype.
                p.grad.clamp_(-clip_value, clip_value)
