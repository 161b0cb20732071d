"""torch's ``_foreach_*`` functions: one operation over a list of tensors (``spx._foreach_mul_``).

torch fuses them into a few kernels per list; EMA helpers (timm's ``ModelEmaV3``), custom
optimizers and gradient utilities call them by name. Here each applies the Tensor method of the
same name to every tensor in turn: the recorded operations are fused into one program anyway
when the values are computed (or traced into a compiled step). The in-place forms (``..._``)
update the tensors and return None; the others return a tuple of new tensors, as torch's.

Arguments follow torch's: the second operand of a binary operation is a number, a list of
numbers (one per tensor), a 0-d tensor, or a list of tensors; ``add``/``sub`` take ``alpha=``;
``addcmul``/``addcdiv`` take ``value`` as a number, a list of numbers or a 1-D tensor of them.
Lists of different lengths raise torch's errors. ``pow`` also takes a number as the base and a
list of tensors as exponents (``spx._foreach_pow(2.0, ts)``: ``2.0 ** t`` for each), out of
place only, as torch.

Example:
    >>> import spx
    >>> ema, params = [spx.zeros(2), spx.zeros(3)], [spx.ones(2), spx.ones(3)]
    >>> spx._foreach_lerp_(ema, params, 0.1)
    >>> [t.tolist() for t in ema]
    [[0.10000000149011612, 0.10000000149011612], [0.10000000149011612, 0.10000000149011612, 0.10000000149011612]]
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spx._tensor.tensor import Tensor
from spx.ops._args import first_operand

_UNARY = [
    "abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor",
    "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt",
    "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
]  # fmt: skip
# name -> the Tensor method; the second operand may be a number/list/0-d tensor/tensor list.
_BINARY = {
    "add": "add", "sub": "sub", "mul": "mul", "div": "div", "maximum": "maximum",
    "minimum": "minimum", "clamp_min": "clamp_min", "clamp_max": "clamp_max", "pow": "pow",
}  # fmt: skip


def _tensors(xs: Any, name: str, what: str = "self") -> list[Tensor]:
    if isinstance(xs, Tensor) or not isinstance(xs, Sequence):
        raise TypeError(
            f"{name}(): argument '{what}' must be a list or tuple of Tensors, not "
            f"{type(xs).__name__}"
        )
    out = list(xs)
    if not out:
        raise RuntimeError(f"{name}(): Tensor list must have at least one tensor.")
    for x in out:
        if not isinstance(x, Tensor):
            raise TypeError(
                f"{name}(): argument '{what}' must hold Tensors, got {type(x).__name__}"
            )
    return out


def _same_length(name: str, *lists: list[Any]) -> None:
    n = len(lists[0])
    for other in lists[1:]:
        if len(other) != n:
            raise RuntimeError(
                f"{name}(): Tensor lists must have the same number of tensors, got {n} and "
                f"{len(other)}"
            )


def _operands(name: str, other: Any, n: int, what: str = "other") -> list[Any]:
    """The second operand for each of ``n`` tensors (torch's scalar / list / 0-d tensor)."""
    if isinstance(other, Tensor):
        if other.ndim != 0:
            raise RuntimeError(
                f"{name}(): scalar tensor expected to be 0 dim but it has {other.ndim} "
                f"dimensions and {other.numel()} elements."
            )
        return [other] * n
    if isinstance(other, Sequence) and not isinstance(other, str):
        values = list(other)
        if len(values) != n:
            if values and isinstance(values[0], Tensor):
                _same_length(name, [None] * n, values)
            raise RuntimeError(
                f"{name}(): Tensor list must have same number of elements as scalar list "
                f"(got {n} and {len(values)})."
            )
        return values
    return [other] * n


def _unary(op: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    def out_of_place(self: Sequence[Tensor]) -> tuple[Tensor, ...]:
        return tuple(getattr(t, op)() for t in _tensors(self, f"_foreach_{op}"))

    def in_place(self: Sequence[Tensor]) -> None:
        for t in _tensors(self, f"_foreach_{op}_"):
            getattr(t, op + "_")()

    out_of_place.__doc__ = f"``t.{op}()`` of each tensor, as a tuple (``torch._foreach_{op}``)."
    in_place.__doc__ = f"``t.{op}_()`` on each tensor, in place (``torch._foreach_{op}_``)."
    return out_of_place, in_place


def _binary(op: str, method: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    takes_alpha = op in ("add", "sub")

    def apply(name: str, self: Any, other: Any, alpha: Any, in_place: bool) -> Any:
        ts = _tensors(self, name)
        if takes_alpha and not isinstance(other, Sequence | Tensor) and alpha != 1:
            raise TypeError(f"{name}(): alpha= needs a list of Tensors as 'other', not a number")
        others = _operands(name, other, len(ts))
        kw = {"alpha": alpha} if takes_alpha and alpha != 1 else {}
        if not in_place:
            return tuple(getattr(t, method)(o, **kw) for t, o in zip(ts, others, strict=True))
        for t, o in zip(ts, others, strict=True):
            if hasattr(t, method + "_"):
                getattr(t, method + "_")(o, **kw)
            else:  # maximum/minimum: no in-place method on torch's Tensor either
                t._assign(getattr(t, method)(o, **kw))  # torch's same-kind cast and shape check
        return None

    def out_of_place(self: Any, other: Any, *, alpha: Any = 1) -> tuple[Tensor, ...]:
        return apply(f"_foreach_{op}", self, other, alpha, False)

    def in_place(self: Any, other: Any, *, alpha: Any = 1) -> None:
        return apply(f"_foreach_{op}_", self, other, alpha, True)

    operand = "a number, a list of them, a 0-d tensor or a list of tensors"
    out_of_place.__doc__ = (
        f"``t.{method}(other)`` for each tensor (``other``: {operand}), as a tuple "
        f"(``torch._foreach_{op}``)."
    )
    in_place.__doc__ = f"``_foreach_{op}`` in place (``torch._foreach_{op}_``); returns None."
    return out_of_place, in_place


def _pointwise(op: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``addcmul``/``addcdiv``: ``self + value * t1 (* or /) t2``."""

    def apply(name: str, self: Any, t1: Any, t2: Any, value: Any, in_place: bool) -> Any:
        ts = _tensors(self, name)
        a, b = _tensors(t1, name, "tensor1"), _tensors(t2, name, "tensor2")
        _same_length(name, ts, a, b)
        if isinstance(value, Tensor) and value.ndim == 1:
            value = value.tolist()  # torch's tensor of scalars: one per tensor
        values = _operands(name, value, len(ts), "scalars")
        fn = op + "_" if in_place else op
        out = [getattr(t, fn)(x, y, value=v) for t, x, y, v in zip(ts, a, b, values, strict=True)]
        return None if in_place else tuple(out)

    def out_of_place(self: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> tuple:
        return apply(f"_foreach_{op}", self, tensor1, tensor2, value, False)

    def in_place(self: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> None:
        return apply(f"_foreach_{op}_", self, tensor1, tensor2, value, True)

    out_of_place.__doc__ = (
        f"``t.{op}(t1, t2, value=v)`` for each tensor (``value``: a number, a list of them or a "
        f"1-D tensor of them), as a tuple (``torch._foreach_{op}``)."
    )
    in_place.__doc__ = f"``_foreach_{op}`` in place (``torch._foreach_{op}_``); returns None."
    return out_of_place, in_place


def _foreach_lerp(self: Any, tensors1: Any, weight: Any) -> tuple[Tensor, ...]:
    """``self + weight * (tensors1 - self)`` per tensor (weight: number, list or tensors)."""
    ts, ends = _tensors(self, "_foreach_lerp"), _tensors(tensors1, "_foreach_lerp", "tensors1")
    _same_length("_foreach_lerp", ts, ends)
    weights = _operands("_foreach_lerp", weight, len(ts), "weight")
    return tuple(t.lerp(e, w) for t, e, w in zip(ts, ends, weights, strict=True))


def _foreach_lerp_(self: Any, tensors1: Any, weight: Any) -> None:
    """:func:`_foreach_lerp` in place (``torch._foreach_lerp_``): the EMA update."""
    ts, ends = _tensors(self, "_foreach_lerp_"), _tensors(tensors1, "_foreach_lerp_", "tensors1")
    _same_length("_foreach_lerp_", ts, ends)
    for t, e, w in zip(ts, ends, _operands("_foreach_lerp_", weight, len(ts)), strict=True):
        t.lerp_(e, w)


_pow_of_tensors, _pow_of_tensors_ = _binary("pow", "pow")


def _scalar_base(x: Any) -> Any:
    """``x`` as a Python number where torch's ``_foreach_pow`` reads it as one, else None."""
    if isinstance(x, bool | int | float | complex):
        return x
    if isinstance(x, np.number | np.bool_):
        return x.item()  # a number, not a typed operand: np.float32(2) ** half_tensor is half
    if isinstance(x, Tensor) and x.ndim == 0 and not x.requires_grad:
        return x.item()  # as torch: a 0-d tensor taken as a Python number (a host sync)
    return None


def _check_scalar_pow(base: Any, t: Tensor) -> None:
    # torch has no pow kernel for these result types. spx's pow computes a complex64 result
    # for the second, and for the first refuses only a tensor exponent of at least one
    # dimension (it cannot tell a 0-d one from torch's special-cased Python bool).
    dtype = "Bool" if isinstance(base, bool) and t.dtype == np.bool_ else None
    if isinstance(base, complex) and t.dtype == np.float16:
        dtype = "ComplexHalf"
    if dtype is not None:
        raise NotImplementedError(f"\"pow\" not implemented for '{dtype}'")


def _foreach_pow(self: Any, exponent: Any) -> tuple[Tensor, ...]:
    """``self ** exponent`` for each tensor, as a tuple (``torch._foreach_pow``).

    Either ``self`` is a list of tensors and ``exponent`` a number, a list of numbers, a 0-d
    tensor or a list of tensors; or ``self`` is a number (or a 0-d tensor without grad, read
    as one) and ``exponent`` a list of tensors: ``self ** t`` for each, with torch's dtype
    promotion (an int base keeps an int tensor's dtype, a float base makes it the default float
    dtype). The second form has no in-place version, as in torch.

    Example:
        >>> import spx
        >>> [t.tolist() for t in spx._foreach_pow(2.0, [spx.tensor([0, 3]), spx.tensor([-1.0])])]
        [[1.0, 8.0], [0.5]]
    """
    base = _scalar_base(self)
    if base is None:
        return _pow_of_tensors(self, exponent)
    exponents = _tensors(exponent, "_foreach_pow", "exponent")
    for t in exponents:
        _check_scalar_pow(base, t)
    return tuple(first_operand(base, t, "_foreach_pow").pow(t) for t in exponents)


def _foreach_pow_(self: Any, exponent: Any) -> None:
    """``t.pow_(exponent)`` on each tensor of the list ``self``, in place
    (``torch._foreach_pow_``; ``exponent`` as in :func:`_foreach_pow`); returns None."""
    if isinstance(self, bool | int | float | complex | np.number | np.bool_):
        raise TypeError(
            f"_foreach_pow_(): argument 'self' must be a list or tuple of Tensors, not "
            f"{type(self).__name__}: a number base has no in-place form (torch has none); "
            "use results = spx._foreach_pow(base, exponents)"
        )
    return _pow_of_tensors_(self, exponent)


def _foreach_zero_(self: Any) -> None:
    """Zero every tensor in place (``torch._foreach_zero_``)."""
    for t in _tensors(self, "_foreach_zero_"):
        t.zero_()


def _foreach_copy_(self: Any, src: Any, non_blocking: bool = False) -> None:
    """``t.copy_(s)`` for each pair (``torch._foreach_copy_``)."""
    ts, srcs = _tensors(self, "_foreach_copy_"), _tensors(src, "_foreach_copy_", "src")
    _same_length("_foreach_copy_", ts, srcs)
    for t, s in zip(ts, srcs, strict=True):
        t.copy_(s)


def _foreach_clone(self: Any) -> tuple[Tensor, ...]:
    """A copy of each tensor, as a tuple (``torch._foreach_clone``)."""
    return tuple(t.clone() for t in _tensors(self, "_foreach_clone"))


def _foreach_norm(self: Any, ord: Any = 2, dtype: Any = None) -> tuple[Tensor, ...]:
    """Each tensor's vector ``ord``-norm (0-d tensors), as ``torch._foreach_norm``."""
    from spx.linalg import vector_norm

    return tuple(vector_norm(t, ord, dtype=dtype) for t in _tensors(self, "_foreach_norm"))


def _foreach_max(self: Any) -> tuple[Tensor, ...]:
    """Each tensor's largest element (0-d tensors)."""
    return tuple(t.max() for t in _tensors(self, "_foreach_max"))


def _foreach_mm(self: Any, mat2: Any) -> tuple[Tensor, ...]:
    """``a.mm(b)`` for each pair of matrices, as a tuple (``torch._foreach_mm``)."""
    ts, others = _tensors(self, "_foreach_mm"), _tensors(mat2, "_foreach_mm", "mat2")
    _same_length("_foreach_mm", ts, others)
    return tuple(t.mm(o) for t, o in zip(ts, others, strict=True))


__all__ = [
    "_foreach_clone", "_foreach_copy_", "_foreach_lerp", "_foreach_lerp_", "_foreach_max",
    "_foreach_mm", "_foreach_norm", "_foreach_pow", "_foreach_pow_", "_foreach_zero_",
]  # fmt: skip
for _op in _UNARY:
    globals()[f"_foreach_{_op}"], globals()[f"_foreach_{_op}_"] = _unary(_op)
    __all__ += [f"_foreach_{_op}", f"_foreach_{_op}_"]
for _op, _method in _BINARY.items():
    if _op == "pow":
        continue  # defined above: it also takes a scalar base
    globals()[f"_foreach_{_op}"], globals()[f"_foreach_{_op}_"] = _binary(_op, _method)
    __all__ += [f"_foreach_{_op}", f"_foreach_{_op}_"]
for _op in ("addcmul", "addcdiv"):
    globals()[f"_foreach_{_op}"], globals()[f"_foreach_{_op}_"] = _pointwise(_op)
    __all__ += [f"_foreach_{_op}", f"_foreach_{_op}_"]
for _name in __all__:
    globals()[_name].__name__ = globals()[_name].__qualname__ = _name
