"""torch's reductions and scans (``spx.sum``, ``spx.max``, ``spx.std_mean``, ``spx.unique``, ...).

``dim`` is an int or a tuple of ints (negative counts from the end), ``keepdim`` keeps reduced
dimensions with size 1. With a ``dim``, ``max``/``min``/``median``/``kthvalue``/``mode``/
``cummax``/``cummin`` return ``(values, indices)`` pairs, as ``torch.return_types`` do.

Example:
    >>> import spx
    >>> x = spx.tensor([[1.0, 5.0], [3.0, 2.0]])
    >>> spx.max(x, dim=1).indices.tolist()
    [1, 0]
    >>> spx.sum(x, dim=0, keepdim=True).shape
    spx.Size([1, 2])
"""

from __future__ import annotations

from typing import Any

from spx._tensor import numpy_names
from spx._tensor.tensor import Tensor
from spx.ops._args import tensor_arg

__all__ = [
    "all", "amax", "amin", "aminmax", "any", "argmax", "argmin", "bincount", "corrcoef",
    "count_nonzero", "cov", "cummax", "cummin", "cumprod", "cumsum", "histc", "logcumsumexp",
    "logsumexp", "max", "mean", "median", "min", "mode", "nanmean", "nanmedian", "nanquantile",
    "nansum", "norm", "prod", "quantile", "std", "std_mean", "sum", "unique", "unique_consecutive",
    "var", "var_mean",
]  # fmt: skip


def sum(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Sum of all elements, or along ``dim`` (mirrors ``torch.sum``).

    Example:
        >>> import spx
        >>> spx.sum(spx.ones(2, 3), dim=1).tolist()
        [3.0, 3.0]
    """
    return tensor_arg(input, "sum").sum(dim, keepdim, dtype=dtype)


def nansum(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Sum treating NaN as zero (mirrors ``torch.nansum``)."""
    return tensor_arg(input, "nansum").nansum(dim, keepdim, dtype=dtype)


def mean(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean of a floating tensor (integers need ``dtype=``; mirrors ``torch.mean``)."""
    return tensor_arg(input, "mean").mean(dim, keepdim, dtype=dtype)


def nanmean(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean ignoring NaN (mirrors ``torch.nanmean``)."""
    return tensor_arg(input, "nanmean").nanmean(dim, keepdim, dtype=dtype)


def prod(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Product of all elements, or along ``dim`` (mirrors ``torch.prod``)."""
    return tensor_arg(input, "prod").prod(dim, keepdim, dtype=dtype)


def std(
    input: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction=None
) -> Tensor:
    """Standard deviation with ``correction`` (default 1, Bessel's) or torch's ``unbiased``."""
    return tensor_arg(input, "std").std(dim, unbiased, keepdim, correction=correction)


def var(
    input: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction=None
) -> Tensor:
    """Variance with ``correction`` (default 1, Bessel's) or torch's ``unbiased``."""
    return tensor_arg(input, "var").var(dim, unbiased, keepdim, correction=correction)


def std_mean(
    input: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction=None
) -> tuple[Tensor, Tensor]:
    """``(std, mean)`` over the same dimensions (mirrors ``torch.std_mean``).

    Example:
        >>> import spx
        >>> s, m = spx.std_mean(spx.tensor([1.0, 3.0]))
        >>> round(s.item(), 4), m.item()
        (1.4142, 2.0)
    """
    x = tensor_arg(input, "std_mean")
    if isinstance(dim, bool):  # torch's std_mean(input, unbiased) overload
        dim, unbiased = None, dim
    return x.std(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim)


def var_mean(
    input: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction=None
) -> tuple[Tensor, Tensor]:
    """``(var, mean)`` over the same dimensions (mirrors ``torch.var_mean``)."""
    x = tensor_arg(input, "var_mean")
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return x.var(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim)


def max(input: Any, dim: Any = None, keepdim: bool = False) -> Any:
    """Largest element; with ``dim``: ``(values, indices)``; with a tensor: elementwise max.

    Example:
        >>> import spx
        >>> values, indices = spx.max(spx.tensor([[1.0, 4.0], [3.0, 2.0]]), dim=0)
        >>> values.tolist(), indices.tolist()
        ([3.0, 4.0], [1, 0])
    """
    return tensor_arg(input, "max").max(dim, keepdim)


def min(input: Any, dim: Any = None, keepdim: bool = False) -> Any:
    """Smallest element; with ``dim``: ``(values, indices)``; with a tensor: elementwise min."""
    return tensor_arg(input, "min").min(dim, keepdim)


def amax(input: Any, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Largest values over ``dim`` (all dimensions by default; mirrors ``torch.amax``)."""
    return tensor_arg(input, "amax").amax(dim, keepdim)


def amin(input: Any, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Smallest values over ``dim`` (all dimensions by default; mirrors ``torch.amin``)."""
    return tensor_arg(input, "amin").amin(dim, keepdim)


def aminmax(input: Any, *, dim: int | None = None, keepdim: bool = False) -> Any:
    """``(min, max)`` (mirrors ``torch.aminmax``)."""
    return tensor_arg(input, "aminmax").aminmax(dim=dim, keepdim=keepdim)


def argmax(input: Any, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the largest element (of the flattened tensor without ``dim``; the first one on
    ties; mirrors ``torch.argmax``)."""
    return tensor_arg(input, "argmax").argmax(dim, keepdim)


def argmin(input: Any, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest element (mirrors ``torch.argmin``)."""
    return tensor_arg(input, "argmin").argmin(dim, keepdim)


def all(input: Any, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Whether every element is nonzero (as a bool tensor; mirrors ``torch.all``)."""
    return tensor_arg(input, "all").all(dim, keepdim)


def any(input: Any, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Whether some element is nonzero (as a bool tensor; mirrors ``torch.any``)."""
    return tensor_arg(input, "any").any(dim, keepdim)


def count_nonzero(input: Any, dim: Any = None) -> Tensor:
    """Number of nonzero elements, over everything or ``dim`` (mirrors ``torch.count_nonzero``)."""
    return tensor_arg(input, "count_nonzero").count_nonzero(dim)


def logsumexp(input: Any, dim: Any, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` along ``dim``, computed stably (mirrors ``torch.logsumexp``)."""
    return tensor_arg(input, "logsumexp").logsumexp(dim, keepdim)


def norm(
    input: Any, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None
) -> Tensor:
    """Vector or matrix norm: ``p`` a number, ``inf``, ``"fro"`` or ``"nuc"`` (mirrors
    ``torch.norm``; the gradient at an all-zero input is zero, as torch's)."""
    return tensor_arg(input, "norm").norm(p, dim, keepdim, dtype=dtype)


def median(input: Any, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median; with ``dim``: ``(values, indices)`` (mirrors ``torch.median``)."""
    return tensor_arg(input, "median").median(dim, keepdim)


def nanmedian(input: Any, dim: int | None = None, keepdim: bool = False) -> Any:
    """``median`` ignoring NaN (mirrors ``torch.nanmedian``)."""
    return tensor_arg(input, "nanmedian").nanmedian(dim, keepdim)


def mode(input: Any, dim: int = -1, keepdim: bool = False) -> Any:
    """Most frequent value along ``dim`` (the smallest on ties) and an index of it."""
    return tensor_arg(input, "mode").mode(dim, keepdim)


def quantile(
    input: Any, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation="linear"
) -> Tensor:
    """The ``q``-quantiles (``q`` a number or 1-D tensor in [0, 1]; mirrors ``torch.quantile``)."""
    x = tensor_arg(input, "quantile")
    return x.quantile(q, dim, keepdim, interpolation=interpolation)


def nanquantile(
    input: Any, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation="linear"
) -> Tensor:
    """``quantile`` ignoring NaN (mirrors ``torch.nanquantile``)."""
    x = tensor_arg(input, "nanquantile")
    return x.nanquantile(q, dim, keepdim, interpolation=interpolation)


def cumsum(input: Any, dim: int, *, dtype: Any = None) -> Tensor:
    """Running sum along ``dim`` (mirrors ``torch.cumsum``)."""
    return tensor_arg(input, "cumsum").cumsum(dim, dtype=dtype)


def cumprod(input: Any, dim: int, *, dtype: Any = None) -> Tensor:
    """Running product along ``dim`` (mirrors ``torch.cumprod``)."""
    return tensor_arg(input, "cumprod").cumprod(dim, dtype=dtype)


def cummax(input: Any, dim: int) -> Any:
    """Running maximum along ``dim`` and where it was reached (mirrors ``torch.cummax``)."""
    return tensor_arg(input, "cummax").cummax(dim)


def cummin(input: Any, dim: int) -> Any:
    """Running minimum along ``dim`` and where it was reached (mirrors ``torch.cummin``)."""
    return tensor_arg(input, "cummin").cummin(dim)


def logcumsumexp(input: Any, dim: int) -> Tensor:
    """Running ``log(sum(exp(x)))`` along ``dim`` (mirrors ``torch.logcumsumexp``)."""
    return tensor_arg(input, "logcumsumexp").logcumsumexp(dim)


def unique(
    input: Any,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
) -> Any:
    """The distinct values, sorted; optionally where each element went and how often each
    value occurs (mirrors ``torch.unique``).

    Computed eagerly: the number of distinct values decides the result's shape, so the
    input's value is needed now (a synchronization, as ``torch.unique`` on an accelerator).

    Example:
        >>> import spx
        >>> values, inverse = spx.unique(spx.tensor([3, 1, 3]), return_inverse=True)
        >>> values.tolist(), inverse.tolist()
        ([1, 3], [1, 0, 1])
    """
    return tensor_arg(input, "unique").unique(sorted, return_inverse, return_counts, dim)


def unique_consecutive(
    input: Any, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
) -> Any:
    """Collapse runs of equal consecutive values (mirrors ``torch.unique_consecutive``)."""
    x = tensor_arg(input, "unique_consecutive")
    return x.unique_consecutive(return_inverse, return_counts, dim)


def bincount(input: Any, weights: Any = None, minlength: int = 0) -> Tensor:
    """Occurrences of each value of a 1-D non-negative integer tensor (or sums of
    ``weights``); its length depends on the values, read now (mirrors ``torch.bincount``).

    Example:
        >>> import spx
        >>> spx.bincount(spx.tensor([0, 2, 2])).tolist()
        [1, 0, 2]
    """
    x = tensor_arg(input, "bincount")
    w = None if weights is None else tensor_arg(weights, "bincount", "weights")
    return x.bincount(w, minlength)


def histc(input: Any, bins: int = 100, min: Any = 0, max: Any = 0) -> Tensor:
    """Counts in ``bins`` equal bins over ``[min, max]`` (the data's range when both are 0)."""
    return tensor_arg(input, "histc").histc(bins, min, max)


def cov(input: Any, *, correction: int = 1, fweights: Any = None, aweights: Any = None):
    """Covariance of the rows (variables) over the columns (observations); mirrors torch."""
    x = tensor_arg(input, "cov")
    fw = None if fweights is None else tensor_arg(fweights, "cov", "fweights")
    aw = None if aweights is None else tensor_arg(aweights, "cov", "aweights")
    return x.cov(correction=correction, fweights=fw, aweights=aw)


def corrcoef(input: Any) -> Tensor:
    """Pearson correlation coefficients of the rows (mirrors ``torch.corrcoef``)."""
    return tensor_arg(input, "corrcoef").corrcoef()


# numpy's axis=/keepdims= as torch accepts them (torch.sum(x, axis=0)).
numpy_names.accept(globals(), __all__)
