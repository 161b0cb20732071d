"""Lookup tables of learned vectors: ``Embedding`` and ``EmbeddingBag`` (mirror torch.nn's).

Both hold a ``weight`` table ``(num_embeddings, embedding_dim)`` initialized from ``N(0, 1)``
with the ``padding_idx`` row zeroed, under torch's state_dict key ``weight``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx import _validate
from spx._host import device_array
from spx._tensor.grad_mode import no_grad
from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn import init
from spx.nn.functional.embedding_bag import embedding_bag
from spx.nn.module import Module
from spx.nn.parameter import Parameter
from spx.ops.types import get_default_dtype

Array = jax.Array


def _table_shape(embeddings: Any) -> tuple[int, int]:
    """``(num_embeddings, embedding_dim)`` of a pretrained table (``from_pretrained``)."""
    shape = getattr(embeddings, "shape", None)
    if shape is None or len(shape) != 2:
        raise ValueError(
            "Embeddings parameter is expected to be 2-dimensional (num_embeddings, "
            f"embedding_dim), got shape {None if shape is None else tuple(shape)}"
        )
    return shape[0], shape[1]


class Embedding(Module):
    """Look up rows of ``weight`` by integer index (mirrors ``torch.nn.Embedding``).

    ``weight`` is ``(num_embeddings, embedding_dim)``, initialized from ``N(0, 1)`` with the
    ``padding_idx`` row (if any) zeroed, exactly as torch does. The padding row's output is its
    stored value and it never receives a gradient.

    Args:
        num_embeddings: size of the table (valid indices are ``0..num_embeddings-1``).
        embedding_dim: size of each vector.
        padding_idx: a row that gets no gradient; negative values count from the end.
        max_norm: rescale looked-up vectors whose ``norm_type``-norm exceeds it; those rows
            of ``weight`` are renormalised in place, as in torch.
        norm_type: the p of the norm for ``max_norm``.
        scale_grad_by_freq: divide each row's gradient by its count in the mini-batch.
        sparse: accepted for compatibility; gradients are always dense arrays.
        _weight: an initial ``(num_embeddings, embedding_dim)`` table (then no init is done).
        _freeze: with ``_weight``, make the table non-trainable.
        device: optional device spec for the table.
        dtype: table dtype (default float32).

    Shapes:
        integer input ``(*)`` -> output ``(*, embedding_dim)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> emb = nn.Embedding(10, 3, padding_idx=0)
        >>> emb(jnp.array([[0, 2, 9]])).shape
        spx.Size([1, 3, 3])
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Any = None,
        _freeze: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        num_embeddings = _validate.as_int(num_embeddings, "num_embeddings", "Embedding", minimum=0)
        embedding_dim = _validate.as_int(embedding_dim, "embedding_dim", "Embedding", minimum=0)
        padding_idx = _validate.as_optional_int(
            padding_idx, "padding_idx", "Embedding",
            minimum=-num_embeddings, maximum=num_embeddings - 1,
            hint=f"it must be within num_embeddings [-{num_embeddings}, {num_embeddings})",
        )  # fmt: skip
        if padding_idx is not None:
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        table = _table("Embedding", num_embeddings, embedding_dim, _weight, device, dtype)
        self.weight = Parameter(table, requires_grad=not _freeze)
        if _weight is None:
            self.reset_parameters()

    def reset_parameters(self) -> None:
        """Fill ``weight`` from ``N(0, 1)`` and zero the ``padding_idx`` row (torch's init)."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input: Tensor) -> Tensor:
        weight = self._required_parameter("weight")
        return F.embedding(
            input, weight, self.padding_idx, self.max_norm, self.norm_type,
            self.scale_grad_by_freq, self.sparse,
        )  # fmt: skip

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Any,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> Embedding:
        """An Embedding whose table is ``embeddings`` (mirrors ``Embedding.from_pretrained``).

        Args:
            embeddings: ``(num_embeddings, embedding_dim)`` array; used as is (its padding row
                is not zeroed, as in torch).
            freeze: make the table non-trainable (``weight.requires_grad = False``).
            padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse: as in the
                constructor.

        Example:
            >>> import spx
            >>> from spx import nn
            >>> emb = nn.Embedding.from_pretrained(spx.eye(3))
            >>> emb(spx.tensor([1])), emb.weight.requires_grad
            (tensor([[0., 1., 0.]]), False)
        """
        rows, cols = _table_shape(embeddings)
        return cls(
            rows, cols, padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq, sparse=sparse, _weight=embeddings,
            _freeze=freeze,
        )  # fmt: skip


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings (mirrors ``torch.nn.EmbeddingBag``).

    Computes the bag reductions without building the ``(B, L, embedding_dim)`` lookups; see
    :func:`spx.nn.functional.embedding_bag`. ``weight`` is initialized from ``N(0, 1)`` with
    the ``padding_idx`` row zeroed, as in torch. Indices equal to ``padding_idx`` are left out
    of their bag; an empty bag gives zeros.

    Args:
        num_embeddings: size of the table (valid indices are ``0..num_embeddings-1``).
        embedding_dim: size of each vector.
        max_norm: rescale looked-up vectors whose ``norm_type``-norm exceeds it; those rows of
            ``weight`` are renormalised in place, as in torch.
        norm_type: the p of the norm for ``max_norm``.
        scale_grad_by_freq: divide each row's gradient by its index's count in the mini-batch
            (``'sum'``/``'mean'`` only).
        mode: ``'sum'``, ``'mean'`` or ``'max'``.
        sparse: accepted for compatibility (not with ``'max'``); gradients are dense arrays.
        _weight: an initial ``(num_embeddings, embedding_dim)`` table (then no init is done).
        include_last_offset: ``offsets`` has one more entry, the end of the last bag (CSR).
        padding_idx: indices left out of every bag; negative values count from the end.
        device: optional device spec for the table.
        dtype: table dtype (default float32).

    Shapes:
        input ``(B, L)`` (offsets None) or 1-D ``(n,)`` with offsets ``(B,)`` (``(B + 1,)`` with
        ``include_last_offset``); optional per_sample_weights shaped like input (``'sum'``
        only). Output ``(B, embedding_dim)``.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> bag = nn.EmbeddingBag(10, 3, mode="sum")
        >>> bag(spx.tensor([1, 2, 4, 5, 4]), spx.tensor([0, 2])).shape
        spx.Size([2, 3])
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Any = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        num_embeddings = _validate.as_int(
            num_embeddings, "num_embeddings", "EmbeddingBag", minimum=0
        )
        embedding_dim = _validate.as_int(embedding_dim, "embedding_dim", "EmbeddingBag", minimum=0)
        padding_idx = _validate.as_optional_int(
            padding_idx, "padding_idx", "EmbeddingBag",
            minimum=-num_embeddings, maximum=num_embeddings - 1,
            hint=f"it must be within num_embeddings [-{num_embeddings}, {num_embeddings})",
        )  # fmt: skip
        if padding_idx is not None:
            padding_idx %= num_embeddings
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode has to be one of sum, mean or max, got {mode!r}")
        if mode == "max" and scale_grad_by_freq:
            raise ValueError(
                "EmbeddingBag: max mode does not support scaling the gradient by the frequency; "
                "pass scale_grad_by_freq=False or mode='sum'/'mean'"
            )
        if mode == "max" and sparse:
            raise ValueError(
                "EmbeddingBag: max mode does not support sparse weights; pass sparse=False"
            )
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.padding_idx = padding_idx
        table = _table("EmbeddingBag", num_embeddings, embedding_dim, _weight, device, dtype)
        self.weight = Parameter(table)
        if _weight is None:
            self.reset_parameters()
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self) -> None:
        """Fill ``weight`` from ``N(0, 1)`` and zero the ``padding_idx`` row (torch's init)."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(
        self, input: Tensor, offsets: Tensor | None = None, per_sample_weights: Tensor | None = None
    ) -> Tensor:
        weight = self._required_parameter("weight")
        return embedding_bag(
            input, weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
            self.mode, self.sparse, per_sample_weights, self.include_last_offset,
            self.padding_idx,
        )  # fmt: skip

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings!r}, {self.embedding_dim!r}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm!r}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type!r}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq!r}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx!r}"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Any,
        freeze: bool = True,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ) -> EmbeddingBag:
        """An EmbeddingBag whose table is ``embeddings`` (``EmbeddingBag.from_pretrained``).

        Args:
            embeddings: ``(num_embeddings, embedding_dim)`` array; used as is (its padding row
                is not zeroed, as in torch).
            freeze: make the table non-trainable (``weight.requires_grad = False``).
            max_norm, norm_type, scale_grad_by_freq, mode, sparse, include_last_offset,
                padding_idx: as in the constructor.

        Example:
            >>> import spx
            >>> from spx import nn
            >>> bag = nn.EmbeddingBag.from_pretrained(spx.eye(3), mode="sum")
            >>> bag(spx.tensor([[0, 2]])), bag.weight.requires_grad
            (tensor([[1., 0., 1.]]), False)
        """
        rows, cols = _table_shape(embeddings)
        bag = cls(
            rows, cols, max_norm=max_norm, norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse, _weight=embeddings,
            include_last_offset=include_last_offset, padding_idx=padding_idx,
        )  # fmt: skip
        bag.weight.requires_grad = not freeze
        return bag


def _table(cls: str, num: int, dim: int, _weight: Any, device: Any, dtype: Any) -> jax.Array:
    """The initial ``(num, dim)`` table: uninitialized (to be reset), or ``_weight`` checked."""
    if _weight is None:
        table = jnp.empty((num, dim), dtype=dtype or get_default_dtype())
        if device is not None:
            from spx._device import device as resolve_device

            table = jax.device_put(table, resolve_device(device))
        return table
    table = _weight._data if isinstance(_weight, Tensor) else _weight
    if not isinstance(table, jax.Array | np.ndarray):
        raise TypeError(
            f"{cls}: _weight must be an spx.Tensor, jax.Array or numpy.ndarray, "
            f"got {type(_weight).__name__}; wrap it with spx.tensor(...)"
        )
    if tuple(table.shape) != (num, dim):
        raise ValueError(
            f"{cls}: _weight has shape {tuple(table.shape)}, expected "
            f"({num}, {dim}) = (num_embeddings, embedding_dim)"
        )
    # numpy is copied (its memory is mutable); a jax array is used as is (immutable).
    return device_array(table, dtype=dtype)
