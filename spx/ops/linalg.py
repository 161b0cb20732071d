"""torch's products and distances (``spx.matmul``, ``spx.bmm``, ``spx.einsum``, ``spx.outer``,
``spx.cdist``, ...).

Shapes are checked before recording, with torch's messages (``mat1 and mat2 shapes cannot be
multiplied (2x3 and 4x5)``).

Example:
    >>> import spx
    >>> spx.einsum("bij,bjk->bik", spx.ones(2, 3, 4), spx.ones(2, 4, 5)).shape
    spx.Size([2, 3, 5])
"""

from __future__ import annotations

import operator
from typing import Any

import jax.numpy as jnp

from spx._tensor import numpy_names
from spx._tensor.dispatch import apply
from spx._tensor.methods.math import _abs
from spx._tensor.tensor import Tensor
from spx.ops._args import operand, tensor_arg

__all__ = [
    "addbmm", "addmm", "addmv", "addr", "adjoint", "baddbmm", "bmm", "cdist", "cholesky",
    "cosine_similarity", "cross", "det", "dist", "dot", "einsum", "ger", "inner", "inverse",
    "kron", "logdet", "matmul", "matrix_exp", "matrix_power", "mm", "mv", "outer",
    "pairwise_distance", "pdist", "pinverse", "qr", "slogdet", "svd", "tensordot", "vdot",
]  # fmt: skip


def matmul(input: Any, other: Any) -> Tensor:
    """Matrix product with broadcasting over batch dimensions (mirrors ``torch.matmul``).

    Example:
        >>> import spx
        >>> spx.matmul(spx.ones(5, 2, 3), spx.ones(3, 4)).shape
        spx.Size([5, 2, 4])
    """
    return tensor_arg(input, "matmul").matmul(tensor_arg(other, "matmul", "other"))


def mm(input: Any, mat2: Any) -> Tensor:
    """``(n, k) @ (k, m)`` of two matrices (mirrors ``torch.mm``)."""
    return tensor_arg(input, "mm").mm(tensor_arg(mat2, "mm", "mat2"))


def bmm(input: Any, mat2: Any) -> Tensor:
    """``(b, n, k) @ (b, k, m)`` (mirrors ``torch.bmm``)."""
    return tensor_arg(input, "bmm").bmm(tensor_arg(mat2, "bmm", "mat2"))


def mv(input: Any, vec: Any) -> Tensor:
    """``(n, m) @ (m,)`` (mirrors ``torch.mv``)."""
    return tensor_arg(input, "mv").mv(tensor_arg(vec, "mv", "vec"))


def dot(input: Any, other: Any) -> Tensor:
    """Inner product of two 1-D tensors (mirrors ``torch.dot``)."""
    return tensor_arg(input, "dot").dot(tensor_arg(other, "dot", "other"))


def vdot(input: Any, other: Any) -> Tensor:
    """Dot product of two 1-D tensors, conjugating ``input`` (mirrors ``torch.vdot``)."""
    return tensor_arg(input, "vdot").vdot(tensor_arg(other, "vdot", "other"))


def inner(input: Any, other: Any) -> Tensor:
    """Sum over the last dimensions of both (mirrors ``torch.inner``)."""
    return tensor_arg(input, "inner").inner(operand(other, "inner"))


def outer(input: Any, vec2: Any) -> Tensor:
    """``input[:, None] * vec2[None, :]`` of two 1-D tensors (mirrors ``torch.outer``)."""
    return tensor_arg(input, "outer").outer(tensor_arg(vec2, "outer", "vec2"))


ger = outer


def kron(input: Any, other: Any) -> Tensor:
    """Kronecker product (mirrors ``torch.kron``)."""
    return tensor_arg(input, "kron").kron(tensor_arg(other, "kron", "other"))


def addmm(input: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` (mirrors ``torch.addmm``)."""
    x = tensor_arg(input, "addmm")
    return x.addmm(tensor_arg(mat1, "addmm", "mat1"), tensor_arg(mat2, "addmm", "mat2"),
                   beta=beta, alpha=alpha)  # fmt: skip


def baddbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` (mirrors ``torch.baddbmm``)."""
    x = tensor_arg(input, "baddbmm")
    b1, b2 = tensor_arg(batch1, "baddbmm", "batch1"), tensor_arg(batch2, "baddbmm", "batch2")
    return x.baddbmm(b1, b2, beta=beta, alpha=alpha)


def _einsum(*args: Any) -> Any:
    *operands, equation = args
    return jnp.einsum(equation, *operands)


def _sublist_equation(args: tuple) -> tuple[str, tuple]:
    """torch's sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` as an equation and its
    operands (subscripts are ints in [0, 52) or ``...``)."""

    def letters(sub: Any) -> str:
        if not isinstance(sub, list | tuple):
            raise TypeError(
                f"einsum(): in the sublist form each operand is followed by a list of "
                f"subscripts, got {type(sub).__name__}"
            )
        out = []
        for v in sub:
            if v is Ellipsis:
                out.append("...")
                continue
            try:
                i = operator.index(v)  # Python or numpy ints
            except TypeError:
                i = -1
            if 0 <= i < 52 and not isinstance(v, bool):
                # torch's letters: 0-25 are A-Z, 26-51 a-z (an implicit output sorts by them).
                out.append("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"[i])
            else:
                raise ValueError(
                    f"einsum(): subscript in subscript list is not within the valid range "
                    f"[0, 52), got {v!r}"
                )
        return "".join(out)

    has_output = len(args) % 2 == 1  # an output sublist closes the call
    pairs = args[:-1] if has_output else args
    operands, subs = pairs[0::2], pairs[1::2]
    equation = ",".join(letters(sub) for sub in subs)
    if has_output:
        equation += "->" + letters(args[-1])
    return equation, tuple(operands)


def einsum(equation: Any, *operands: Any) -> Tensor:
    """Einstein summation (mirrors ``torch.einsum``): an equation and its operands (as
    arguments or one list), or torch's sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.

    Example:
        >>> import spx
        >>> spx.einsum("i,i->", spx.ones(3), spx.ones(3)).item()
        3.0
        >>> spx.einsum(spx.ones(2, 3), [0, 1], spx.ones(3, 4), [1, 2], [0, 2]).shape
        spx.Size([2, 4])
    """
    if not isinstance(equation, str):
        equation, operands = _sublist_equation((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])
    ts = tuple(tensor_arg(t, "einsum", f"operands[{i}]") for i, t in enumerate(operands))
    n_terms = len(equation.split("->")[0].split(","))
    if n_terms != len(ts):
        raise RuntimeError(
            "einsum(): more operands were provided than specified in the equation"
            if len(ts) > n_terms
            else "einsum(): fewer operands were provided than specified in the equation"
        )
    return apply(_einsum, (equation.replace(" ", ""),), ts)


def _tensordot(a: Any, b: Any, axes: Any) -> Any:
    return jnp.tensordot(a, b, axes)


def tensordot(a: Any, b: Any, dims: Any = 2) -> Tensor:
    """Contract ``dims`` dimensions: the last ``dims`` of ``a`` with the first of ``b``, or
    the given pairs of lists (mirrors ``torch.tensordot``)."""
    x, y = tensor_arg(a, "tensordot", "a"), tensor_arg(b, "tensordot", "b")
    if isinstance(dims, int):
        axes: Any = dims
    else:
        axes = (tuple(int(d) for d in dims[0]), tuple(int(d) for d in dims[1]))
    return apply(_tensordot, (axes,), (x, y))


def cross(input: Any, other: Any, dim: int | None = None) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (default: the first dimension of size 3)."""
    return tensor_arg(input, "cross").cross(tensor_arg(other, "cross", "other"), dim)


def _cdist(x1: Any, x2: Any, p: float) -> Any:
    return difference_norm(x1[..., :, None, :] - x2[..., None, :, :], p)


def difference_norm(diff: Any, p: float) -> Any:
    """The p-norm over the last dimension of differences ``(*, M)`` -> ``(*)``: torch's
    ``cdist``/``pdist``, whose gradient at a zero distance is zero (not NaN)."""
    a = _abs(diff)
    if p == 0:
        return jnp.sum(diff != 0, axis=-1).astype(diff.dtype)
    if p == 1:
        return jnp.sum(a, axis=-1)
    if p == float("inf"):
        return jnp.max(a, axis=-1)
    # A zero difference to a power below 1 has an infinite slope: 0 there, as torch's.
    powered = diff * diff if p == 2 else jnp.where(a == 0, 0, jnp.where(a == 0, 1, a) ** p)
    total = jnp.sum(powered, axis=-1)
    zero = total == 0  # torch's gradient of a zero distance is zero (not NaN)
    safe = jnp.where(zero, 1, total)
    return jnp.where(zero, 0, jnp.sqrt(safe) if p == 2 else safe ** (1.0 / p))


def cdist(x1: Any, x2: Any, p: float = 2.0, compute_mode: str | None = None) -> Tensor:
    """p-norm distances between the rows of ``x1`` ``(B, P, M)`` and ``x2`` ``(B, R, M)``:
    ``(B, P, R)`` (mirrors ``torch.cdist``; computed directly, never by the matmul expansion).

    Example:
        >>> import spx
        >>> spx.cdist(spx.zeros(1, 2), spx.tensor([[3.0, 4.0]])).item()
        5.0
    """
    a, b = tensor_arg(x1, "cdist", "x1"), tensor_arg(x2, "cdist", "x2")
    if a.ndim < 2 or b.ndim < 2:
        raise RuntimeError(
            f"cdist only supports at least 2D tensors, X1 got: {a.ndim}D, X2 got: {b.ndim}D"
        )
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {a.shape[-1]} X2: {b.shape[-1]}"
        )
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    return apply(_cdist, (float(p),), (a, b))


def dist(input: Any, other: Any, p: float = 2.0) -> Tensor:
    """The p-norm of ``input - other`` (mirrors ``torch.dist``)."""
    return tensor_arg(input, "dist").dist(operand(other, "dist"), p)


def addbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])`` (mirrors ``torch.addbmm``)."""
    x = tensor_arg(input, "addbmm")
    b1, b2 = tensor_arg(batch1, "addbmm", "batch1"), tensor_arg(batch2, "addbmm", "batch2")
    return x.addbmm(b1, b2, beta=beta, alpha=alpha)


def addmv(input: Any, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)`` (mirrors ``torch.addmv``)."""
    x = tensor_arg(input, "addmv")
    m, v = tensor_arg(mat, "addmv", "mat"), tensor_arg(vec, "addmv", "vec")
    return x.addmv(m, v, beta=beta, alpha=alpha)


def addr(input: Any, vec1: Any, vec2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)`` (mirrors ``torch.addr``)."""
    x = tensor_arg(input, "addr")
    v1, v2 = tensor_arg(vec1, "addr", "vec1"), tensor_arg(vec2, "addr", "vec2")
    return x.addr(v1, v2, beta=beta, alpha=alpha)


def adjoint(input: Any) -> Tensor:
    """The conjugate transpose of the last two dimensions (mirrors ``torch.adjoint``)."""
    return tensor_arg(input, "adjoint").adjoint()


def det(input: Any) -> Tensor:
    """Determinants of square matrices (batched; mirrors ``torch.det``)."""
    return tensor_arg(input, "det").det()


def inverse(input: Any) -> Tensor:
    """Inverses of square matrices (batched; mirrors ``torch.inverse``)."""
    return tensor_arg(input, "inverse").inverse()


def logdet(input: Any) -> Tensor:
    """``log(det)``: NaN for a negative determinant, -inf for a singular matrix."""
    return tensor_arg(input, "logdet").logdet()


def slogdet(input: Any) -> Any:
    """``(sign, logabsdet)`` of square matrices (mirrors ``torch.slogdet``)."""
    return tensor_arg(input, "slogdet").slogdet()


def matrix_power(input: Any, n: int) -> Tensor:
    """``input`` multiplied by itself ``n`` times (the inverse's for ``n < 0``)."""
    return tensor_arg(input, "matrix_power").matrix_power(n)


def matrix_exp(input: Any) -> Tensor:
    """The matrix exponential (mirrors ``torch.matrix_exp``)."""
    return tensor_arg(input, "matrix_exp").matrix_exp()


def pinverse(input: Any, rcond: float = 1e-15) -> Tensor:
    """The Moore-Penrose pseudo-inverse (mirrors ``torch.pinverse``)."""
    return tensor_arg(input, "pinverse").pinverse(rcond)


def svd(input: Any, some: bool = True, compute_uv: bool = True) -> Any:
    """``(U, S, V)`` (mirrors the older ``torch.svd``; see ``Tensor.svd``)."""
    return tensor_arg(input, "svd").svd(some, compute_uv)


def qr(input: Any, some: bool = True) -> Any:
    """``(Q, R)`` (mirrors the older ``torch.qr``; see ``Tensor.qr``)."""
    return tensor_arg(input, "qr").qr(some)


def cholesky(input: Any, upper: bool = False) -> Tensor:
    """The Cholesky factor (mirrors the older ``torch.cholesky``)."""
    return tensor_arg(input, "cholesky").cholesky(upper)


def cosine_similarity(x1: Any, x2: Any, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine similarity along ``dim`` (``torch.cosine_similarity``, as ``F.cosine_similarity``)."""
    from spx.nn import functional as F

    return F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(
    x1: Any, x2: Any, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """p-norm of ``x1 - x2 + eps`` along the last dimension (``torch.pairwise_distance``)."""
    from spx.nn import functional as F

    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input: Any, p: float = 2.0) -> Tensor:
    """p-norm distances between every two rows of ``input`` (``torch.pdist``, see
    ``spx.nn.functional.pdist``)."""
    from spx.nn import functional as F

    return F.pdist(input, p)


# numpy's axis=/keepdims= as torch accepts them (torch.sum(x, axis=0)).
numpy_names.accept(globals(), __all__)
