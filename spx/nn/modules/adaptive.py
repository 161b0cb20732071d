"""``AdaptiveLogSoftmaxWithLoss``: the adaptive softmax (mirrors ``torch.nn`` of that name).

Grave et al.'s efficient softmax approximation (https://arxiv.org/abs/1609.04309): the
``cutoffs[0]`` most frequent classes (the shortlist) and one entry per cluster form the
``head``; the classes of cluster ``i`` get their own ``tail[i]`` projection, ``in_features ->
in_features // div_value ** (i + 1) -> cluster size``. A class's log-probability is its head
log-probability, plus, for a tail class, its log-probability within its cluster.

torch evaluates each cluster on the rows whose target falls in it (boolean indexing, whose
shape depends on the values). spx evaluates a cluster on every row and keeps each row's own
cluster with a mask: the same numbers (a row's result never mixes with another's) and the same
gradients (masked rows get zero), with static shapes, so the module also compiles under
``spx.compile``. When the targets are known on the host (eager calls), clusters without
targets are skipped, as torch skips them, so their parameters get no gradient either.

The parameter names are torch's (``head.weight``, ``head.bias``, ``tail.0.0.weight``,
``tail.0.1.weight``, ...): a torch ``state_dict`` loads as is.
"""

from __future__ import annotations

import itertools
import warnings
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import numpy as np

import spx
from spx import _validate
from spx._tensor.checks import known_value
from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn.module import Module
from spx.nn.modules.container import ModuleList, Sequential
from spx.nn.modules.linear import Linear

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])  # torch's name and fields
_UNKNOWN_TARGETS = (
    "AdaptiveLogSoftmaxWithLoss: the targets are not known while spx.compile traces the step, so "
    "every cluster is evaluated: a cluster with no target in a batch gets zero gradients, where "
    "torch's are None. With SGD without momentum or weight decay that is the same update; with "
    "Adam, momentum or weight decay those clusters' weights move where torch's do not. For "
    "torch's exact numbers, run this step without spx.compile."
)


def _check_cutoffs(cutoffs: list[Any], n_classes: int) -> None:
    if len(cutoffs) == 0:
        raise ValueError(
            "cutoffs should be a sequence of length larger than 0, got []; pass e.g. "
            f"cutoffs=[{max(n_classes // 4, 1)}] to split the classes into a head and one cluster"
        )
    if (
        cutoffs != sorted(cutoffs)
        or min(cutoffs) <= 0
        or max(cutoffs) > n_classes - 1
        or len(set(cutoffs)) != len(cutoffs)
        or any(int(c) != c for c in cutoffs)
    ):
        raise ValueError(
            "cutoffs should be a sequence of unique, positive integers sorted in an increasing "
            f"order, where each value is between 1 and n_classes-1 = {n_classes - 1}; got "
            f"{cutoffs}"
        )
    if not all(_validate.is_int(c) for c in cutoffs):
        # torch accepts whole floats here and fails later, building a Linear of float size.
        raise TypeError(f"cutoffs must be ints, got {cutoffs}; pass [int(c) for c in cutoffs]")


def _check_2d(input: Any, what: str) -> None:
    ndim = len(np.shape(input))
    if ndim == 2:
        return
    message = (
        f"AdaptiveLogSoftmaxWithLoss.{what}: expected a 2-D (N, in_features) input, got "
        f"shape {tuple(np.shape(input))}; use input.unsqueeze(0) for a single example"
    )
    # torch indexes dim 1 of the head's output: an IndexError for a 1-D input.
    raise IndexError(message) if ndim < 2 else RuntimeError(message)


class AdaptiveLogSoftmaxWithLoss(Module):
    """Efficient softmax approximation for many, Zipf-distributed classes (mirrors torch).

    Classes must be sorted by frequency: ``0`` the most frequent. With ``cutoffs=[10, 100]``
    and ``n_classes=1000``, classes ``0..9`` are in the head, ``10..99`` in the first cluster
    and ``100..999`` in the second.

    Args:
        in_features: number of input features.
        n_classes: number of classes.
        cutoffs: increasing, unique ints in ``[1, n_classes - 1]``: where clusters begin.
        div_value: cluster ``i`` (from 1) projects to ``in_features // div_value ** i``
            features.
        head_bias: give the head a bias.
        device, dtype: for the parameters, as :class:`~spx.nn.Linear`'s.

    Shapes:
        ``forward(input, target)``: input ``(N, in_features)`` and target ``(N,)``, or
        unbatched ``(in_features,)`` and ``()``; targets are ints in ``[0, n_classes - 1]``.
        Returns ``_ASMoutput(output, loss)``: ``output`` ``(N,)`` (``()`` unbatched) holds each
        target's log-probability, ``loss`` is the scalar ``(-output).mean()``.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> asm = nn.AdaptiveLogSoftmaxWithLoss(16, 100, cutoffs=[10, 50])
        >>> out = asm(spx.randn(8, 16), spx.randint(0, 100, (8,)))
        >>> out.output.shape, out.loss.shape
        (spx.Size([8]), spx.Size([]))
        >>> asm.log_prob(spx.randn(8, 16)).shape
        spx.Size([8, 100])
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs: Sequence[int],
        div_value: float = 4.0,
        head_bias: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        _check_cutoffs(cutoffs, n_classes)
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = [*cutoffs, n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        factory = {"device": device, "dtype": dtype}
        self.head = Linear(self.in_features, self.head_size, bias=self.head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(self.in_features // (self.div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(
                    Linear(self.in_features, hsz, bias=False, **factory),
                    Linear(hsz, osz, bias=False, **factory),
                )
            )

    def reset_parameters(self) -> None:
        """Re-draw every parameter as ``__init__`` does."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def _check_forward(self, input: Any, target: Any) -> np.ndarray | None:
        """torch's shape checks, then the target values' range when they are known."""
        in_shape, t_shape = tuple(np.shape(input)), tuple(np.shape(target))
        if len(t_shape) == 1:
            if len(in_shape) == 0 or in_shape[0] != t_shape[0]:
                raise RuntimeError(
                    "Input and target should have the same size in the batch dimension, got "
                    f"input {in_shape} and target {t_shape}"
                )
            if len(in_shape) != 2:
                raise RuntimeError(
                    f"1D target tensor expects 2D input tensors, but found inputs with size "
                    f"{in_shape}"
                )
        elif len(t_shape) == 0:
            if len(in_shape) != 1:
                raise RuntimeError(
                    f"0D target tensor expects 1D input tensors, but found inputs with size "
                    f"{in_shape}; pass a (N,) target for an (N, in_features) input"
                )
        else:
            raise RuntimeError(
                f"0D or 1D target tensor expected, multi-target not supported (got target "
                f"shape {t_shape})"
            )
        dtype = getattr(target, "dtype", None)
        if dtype is None or not np.issubdtype(np.dtype(dtype), np.integer):
            raise RuntimeError(
                f"AdaptiveLogSoftmaxWithLoss: target must hold integer class indices, got dtype "
                f"{dtype}; convert it, e.g. target.long()"
            )
        if isinstance(target, Tensor):
            target._value()  # torch reads the targets here too; a traced one stays unknown
        values = known_value(target)
        if values is not None and values.size:
            low, high = int(values.min()), int(values.max())
            if low < 0 or high > self.n_classes - 1:
                raise RuntimeError(
                    f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                    f"[{low}, {high}] were found; targets are class indices below "
                    f"n_classes={self.n_classes}"
                )
        return values

    def forward(self, input: Tensor, target: Tensor) -> _ASMoutput:
        """Each target's log-probability and the mean negative log-likelihood.

        Args:
            input: ``(N, in_features)`` or ``(in_features,)``.
            target: ``(N,)`` or ``()`` integer classes in ``[0, n_classes - 1]``.

        Returns:
            ``_ASMoutput(output, loss)``: ``output`` ``(N,)`` or ``()``, ``loss`` a scalar.
            Inside ``spx.compile`` targets cannot be range-checked: an out-of-range one gives
            a NaN output (and loss).
        """
        values = self._check_forward(input, target)
        if values is None and spx.is_grad_enabled() and self.training:
            warnings.warn(_UNKNOWN_TARGETS, stacklevel=2)
        x, t = spx.as_tensor(input), spx.as_tensor(target)
        batched = t.ndim > 0
        if not batched:
            x, t = x.unsqueeze(0), t.unsqueeze(0)
        head_logprob = F.log_softmax(self.head(x), dim=1)
        # Each row's head entry: its class in the shortlist, else its cluster's entry.
        cluster = sum((t >= c).long() for c in self.cutoffs[:-1])
        gather_inds = spx.where(cluster == 0, t, self.shortlist_size + cluster - 1)
        valid = (t >= 0) & (t < self.n_classes)
        gather_inds = spx.where(valid, gather_inds, 0)
        output = head_logprob.gather(1, gather_inds.unsqueeze(1)).squeeze(1)
        bounds = [0, *self.cutoffs]
        for i in range(1, len(bounds) - 1):
            low, high = bounds[i], bounds[i + 1]
            if values is not None and not ((values >= low) & (values < high)).any():
                continue  # no target in this cluster: torch does not evaluate it either
            in_cluster = (t >= low) & (t < high)
            # Rows of other clusters see zeros: their results are masked out below, and a
            # cluster's overflowing logits on such a row would turn the zero gradient into NaN.
            xc = spx.where(in_cluster.unsqueeze(1), x, 0.0)
            cluster_logprob = F.log_softmax(self.tail[i - 1](xc), dim=1)
            relative = (t - low).clamp(0, high - low - 1)
            local = cluster_logprob.gather(1, relative.unsqueeze(1)).squeeze(1)
            output = output + spx.where(in_cluster, local, 0.0)
        output = spx.where(valid, output, float("nan"))
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        """Log-probabilities of all ``n_classes`` from the input and the head's output."""
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, : self.shortlist_size]]
        for i, _ in enumerate(itertools.pairwise(self.cutoffs)):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return spx.cat(parts, dim=1)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of every class (mirrors torch's ``log_prob``).

        Args:
            input: ``(N, in_features)``.

        Returns:
            ``(N, n_classes)``.

        Example:
            >>> import spx
            >>> from spx import nn
            >>> asm = nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10])
            >>> bool(asm.log_prob(spx.randn(3, 8)).exp().sum(1).allclose(spx.ones(3)))
            True
        """
        _check_2d(input, "log_prob")
        x = spx.as_tensor(input)
        return self._get_full_log_prob(x, self.head(x))

    def predict(self, input: Tensor) -> Tensor:
        """The most probable class of each row, ``log_prob(input).argmax(1)`` (mirrors torch).

        As torch, a row whose head prefers a shortlist class takes it without evaluating the
        clusters' probabilities; here every row's full distribution is computed and selected
        by a mask, which keeps shapes static (no host synchronization).

        Args:
            input: ``(N, in_features)``.

        Returns:
            ``(N,)`` class indices (int32, as spx's ``argmax``; torch's are int64).

        Example:
            >>> import spx
            >>> from spx import nn
            >>> asm = nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10])
            >>> asm.predict(spx.randn(3, 8)).shape
            spx.Size([3])
        """
        _check_2d(input, "predict")
        x = spx.as_tensor(input)
        head_output = self.head(x)
        output = head_output.argmax(dim=1)
        full = self._get_full_log_prob(x, head_output).argmax(dim=1)
        return spx.where(output >= self.shortlist_size, full, output)
