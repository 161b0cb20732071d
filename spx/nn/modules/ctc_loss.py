"""``CTCLoss``: the Connectionist Temporal Classification loss (mirrors ``torch.nn.CTCLoss``).

A thin module over :func:`spx.nn.functional.ctc_loss`; ``blank`` and ``reduction`` are
validated at construction (torch waits for the first call).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax

from spx import _validate
from spx.nn.functional.ctc_loss import ctc_loss
from spx.nn.modules.loss import _Loss


class CTCLoss(_Loss):
    """CTC loss between unsegmented sequences and their targets (``torch.nn.CTCLoss``).

    Sums the probability of every alignment of each target to its input frames; see
    :func:`spx.nn.functional.ctc_loss` for the algorithm and gradient.

    Args:
        blank: the blank class index.
        reduction: ``'none'`` (per-sample losses), ``'mean'`` (each loss divided by its target
            length clamped to >= 1, then averaged over the batch) or ``'sum'``.
        zero_infinity: replace infinite losses (inputs too short for their targets) and their
            gradients by 0.

    Shapes:
        log_probs ``(T, N, C)`` or ``(T, C)``; targets ``(N, S)`` padded or 1-D concatenated
        ``(sum(target_lengths),)``; input_lengths and target_lengths ``(N,)`` (Tensors, tuples
        or lists of ints). Output: a scalar, or ``(N,)`` (``()`` unbatched) with
        ``reduction='none'``.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> log_probs = spx.randn(8, 2, 5).log_softmax(2)
        >>> targets = spx.tensor([[1, 2, 2], [4, 3, 0]])
        >>> nn.CTCLoss()(log_probs, targets, (8, 7), (3, 2)).shape
        spx.Size([])
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction=reduction)
        self.blank = _validate.as_int(
            blank, "blank", "CTCLoss", minimum=0, hint="it is a class index of log_probs"
        )
        self.zero_infinity = zero_infinity

    def forward(
        self,
        log_probs: jax.Array,
        targets: jax.Array,
        input_lengths: jax.Array | Sequence[int],
        target_lengths: jax.Array | Sequence[int],
    ) -> jax.Array:
        return ctc_loss(
            log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
            self.zero_infinity,
        )  # fmt: skip
