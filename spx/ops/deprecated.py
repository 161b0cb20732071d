"""torch's deprecated top-level functions, kept so that old scripts port unchanged, each with
torch's deprecation warning: ``spx.range`` (an inclusive range) and ``spx.chain_matmul``
(``spx.linalg.multi_dot`` with the matrices as separate arguments).

Example:
    >>> import warnings, spx
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     spx.range(1, 4).tolist()
    [1.0, 2.0, 3.0, 4.0]
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from spx._tensor.tensor import Tensor
from spx.ops._args import tensor_arg
from spx.ops.creation import _default_float, _steps

__all__ = ["chain_matmul", "range"]

_RANGE_WARNING = (
    "torch.range is deprecated and will be removed in a future release because its behavior "
    "is inconsistent with Python's range builtin. Instead, use torch.arange, which produces "
    "values in [start, end)."
)
_CHAIN_MATMUL_WARNING = (
    "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
    "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than "
    "multiple parameters."
)


def range(
    start: Any,
    end: Any,
    step: Any = 1,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    **_: Any,
) -> Tensor:
    """``start, start + step, ...`` up to and including ``end`` (deprecated: warns).

    Args:
        start: the first value.
        end: the last value (included when reached).
        step: the spacing (non-zero; negative counts down).
        dtype: the result's dtype (default: the default float dtype, even for ints).
        device: the result's device.
        requires_grad: record operations on the result.

    Returns:
        ``(floor((end - start) / step) + 1,)``. Mirrors ``torch.range``.
    """
    warnings.warn(_RANGE_WARNING, UserWarning, stacklevel=2)
    start, end, step = (float(v) if isinstance(v, Tensor) else v for v in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError(
            f"upper bound and larger bound inconsistent with step sign (start={start}, "
            f"end={end}, step={step})"
        )
    n = math.floor((end - start) / step) + 1
    dtype = _default_float() if dtype is None else dtype
    return _steps(start, step, n, dtype, device, requires_grad)


def chain_matmul(*matrices: Any) -> Tensor:
    """The product of the 2-D ``matrices``, in the cheapest order (deprecated: warns).

    Args:
        *matrices: ``(a, b), (b, c), ...`` tensors; one matrix is returned as a copy.

    Returns:
        ``(a, z)``. Mirrors ``torch.chain_matmul``.
    """
    warnings.warn(_CHAIN_MATMUL_WARNING, UserWarning, stacklevel=2)
    from spx.linalg import multi_dot

    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    ts = [tensor_arg(m, "chain_matmul", f"matrices[{i}]") for i, m in enumerate(matrices)]
    for i, t in enumerate(ts):
        if t.ndim != 2:
            raise RuntimeError(
                f"Tensor dimension is {t.ndim}, expected 2 instead (matrices[{i}] has shape "
                f"{list(t.shape)})"
            )
    if len(ts) == 1:
        return ts[0].clone()
    return multi_dot(ts)
