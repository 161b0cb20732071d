"""Packed and padded batches of variable-length sequences (mirrors ``torch.nn.utils.rnn``).

A :class:`PackedSequence` holds a batch of sequences sorted by decreasing length, time-major and
without padding: ``data`` is step 0 of every sequence, then step 1 of every sequence still
running, and so on; ``batch_sizes[t]`` counts the sequences still running at step ``t``.
``spx.nn.RNN``, ``LSTM`` and ``GRU`` take one and return one, as torch's do.

How it maps onto JAX:

* **Lengths are host data.** Every shape here follows from the lengths, so they are read as
  Python ints, as torch reads its CPU ``lengths``: a list, a numpy array or an integer Tensor.
  A PackedSequence keeps its batch sizes on the host as well (``batch_sizes`` is also there as
  an integer Tensor, torch's field). Inside ``spx.compile`` pass lengths as a Python list (a
  traced Tensor has no values to read): the compiled step is traced once per distinct list. A
  PackedSequence passed *into* ``spx.compile`` or ``jax.jit`` carries its batch sizes as static
  data (one trace per distinct ``batch_sizes``); ``data`` and the indices are traced.
* **Each conversion is one gather** with an index computed on the host in numpy: packing,
  padding, unpacking. It is one recorded operation, so gradients flow back to the inputs as in
  torch. When no gradient is needed and the inputs are already computed (a DataLoader collate
  function calling :func:`pad_sequence`), the gather runs in numpy instead, so a batch of new
  lengths costs no XLA compile.

Differences from torch: the indices and lengths are int32 Tensors unless JAX's x64 mode is on
(torch: int64); sequences of equal length keep their input order when sorted (a stable sort;
torch's sort may order ties differently in batches of more than 16, which permutes those rows
of ``data`` but nothing else); lengths must be integers (torch truncates floats) and no longer
than the input (torch reads past the input); :func:`unpad_sequence` leaves its argument as it
is (torch transposes it in place when ``batch_first=False``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from spx._host import device_array
from spx._tensor import graph
from spx._tensor.recorded import recorded
from spx._tensor.tensor import Tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]

_TRACED = (
    "{fn}: {what} is traced (a Tensor inside spx.compile or another JAX transformation), but its "
    "values fix the shapes, so they must be known on the host, as torch needs lengths on the "
    "CPU. Pass them as a Python list of ints (e.g. lengths.tolist() outside the compiled "
    "function): spx.compile then traces the step once per distinct list."
)
_UNSORTED = (
    "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can "
    "pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this "
    "requirement if you do not need ONNX exportability."
)
_NOT_POSITIVE = (
    "Length of all samples has to be greater than 0, but found an element in 'lengths' that is "
    "<= 0 (lengths {lengths}); drop empty sequences from the batch before packing"
)


# --- Host-side helpers. --------------------------------------------------------------------


def _host_ints(values: Any, what: str, fn: str) -> np.ndarray:
    """``values`` (a list, numpy array, Tensor or jax array of integers) as 1-D int64 numpy."""
    if isinstance(values, Tensor):
        values = values._value()
    if isinstance(values, jax.core.Tracer):
        raise TypeError(_TRACED.format(fn=fn, what=what))
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"{fn}: {what} must be integers (a list, numpy array or Tensor), got "
            f"{values!r:.80}: {e}"
        ) from None
    if arr.ndim != 1:
        raise RuntimeError(
            f"{fn}: '{what}' argument should be a 1D integer tensor or list, but got "
            f"{arr.ndim}D (shape {list(arr.shape)}); pass one length per sequence"
        )
    if arr.size and (arr.dtype.kind not in "iuf" or not np.array_equal(arr, np.floor(arr))):
        raise TypeError(
            f"{fn}: {what} must be integers, got {arr.tolist()!r:.80} ({arr.dtype}); torch "
            "truncates other values, spx refuses them: pass whole numbers"
        )
    return arr.astype(np.int64)


def _index_tensor(values: np.ndarray) -> Tensor:
    """An integer Tensor of host ``values`` (int32 unless x64 is on, like every spx long)."""
    return Tensor._of(device_array(values))


def _as_tensor(x: Any, what: str, fn: str) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, jax.Array | np.ndarray):
        return Tensor._of(device_array(x))
    raise TypeError(f"{fn}: {what} must be a Tensor, got {type(x).__name__}")


def _sort(
    lengths: np.ndarray, batch: int, steps: int | None, enforce_sorted: bool, fn: str
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """torch's checks on ``lengths``; ``(order or None, sorted lengths, batch_sizes)``."""
    if lengths.shape[0] != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.shape[0]} "
            f"(batch_size={batch}); pass one length per sequence of the batch"
        )
    if batch == 0:
        raise RuntimeError(f"{fn}: Cannot pack empty tensors (the batch has no sequences).")
    if enforce_sorted:
        if np.any(np.diff(lengths) > 0):
            raise RuntimeError(_UNSORTED)
        order, sorted_lengths = None, lengths
    else:
        order = np.argsort(-lengths, kind="stable")
        sorted_lengths = lengths[order]
    if sorted_lengths[-1] <= 0:
        raise RuntimeError(_NOT_POSITIVE.format(lengths=lengths.tolist()))
    if steps is not None and sorted_lengths[0] > steps:
        i = int(np.argmax(lengths))
        raise RuntimeError(
            f"{fn}: lengths[{i}] = {lengths[i]} is longer than the input's {steps} time steps; "
            f"pad the input to at least {lengths[i]} steps or pass the true lengths"
        )
    steps_used = np.arange(sorted_lengths[0])
    batch_sizes = (steps_used[:, None] < sorted_lengths[None, :]).sum(1)
    return order, sorted_lengths, batch_sizes


def _packed_positions(sorted_lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(t, k)`` of each row of packed data: step ``t`` of the ``k``-th longest sequence."""
    valid = np.arange(sorted_lengths[0])[:, None] < sorted_lengths[None, :]
    return np.nonzero(valid)  # row-major: step by step, the longest sequences first


def _layout(batch_sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per sorted sequence its length, and per step the first row of that step in ``data``."""
    lengths = (batch_sizes[None, :] > np.arange(batch_sizes[0])[:, None]).sum(1)
    offsets = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]])
    return lengths, offsets


def _index_pair(order: np.ndarray | None) -> tuple[Tensor | None, Tensor | None]:
    if order is None:
        return None, None
    return _index_tensor(order), _index_tensor(np.argsort(order))


# --- The gather every conversion is. ---------------------------------------------------------


def _rows(xp: Any, arrays: Sequence[Any], index: Any, fill: Any, lead: int) -> Any:
    """``index`` into the rows of ``arrays`` (each with its first ``lead`` dims flattened,
    cast to the first one's dtype, concatenated); an index equal to the row count is ``fill``.

    ``xp`` is numpy or jax.numpy: the same code pads on the host and inside the program.
    """
    dtype = arrays[0].dtype
    parts = [a.reshape((math.prod(a.shape[:lead]), *a.shape[lead:])).astype(dtype) for a in arrays]
    pad = xp.full((1, *parts[0].shape[1:]), fill, dtype)
    return xp.concatenate([*parts, pad])[index]


def _rows_jax(index: jax.Array, fill: Any, lead: int, *arrays: jax.Array) -> jax.Array:
    return _rows(jnp, arrays, index, fill, lead)


_rows_recorded = recorded(_rows_jax)


def _computed(x: Any) -> Any:
    """``x``'s value if reading it costs no program run and loses no gradient, else None."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, Tensor):
        if x._view is not None or (x.requires_grad and graph.STATE.grad_enabled):
            return None
        values = x._s.node.values
        if values is None:
            return None  # pending: the gather joins the program that will compute it
        x = values[x._s.idx]
    if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
        return x
    return None


def _take_rows(arrays: Sequence[Any], index: np.ndarray, fill: Any, lead: int) -> Tensor:
    """:func:`_rows` as a Tensor: in numpy when nothing needs a gradient, else recorded."""
    values = [_computed(a) for a in arrays]
    if all(v is not None for v in values):
        # A new shape would cost an XLA compile (tens of ms); numpy costs microseconds.
        return Tensor._of(
            device_array(_rows(np, [np.asarray(v) for v in values], index, fill, lead))
        )
    return _rows_recorded(index, fill, lead, *arrays)


def _invert(permutation: jax.Array) -> jax.Array:
    n = permutation.shape[0]
    return jnp.zeros_like(permutation).at[permutation].set(jnp.arange(n, dtype=permutation.dtype))


_invert_recorded = recorded(_invert)


# --- PackedSequence. -------------------------------------------------------------------------


class _PackedSequenceFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceFields):
    """A packed batch of variable-length sequences (mirrors ``torch.nn.utils.rnn.PackedSequence``).

    Build one with :func:`pack_padded_sequence` or :func:`pack_sequence`; RNN modules take and
    return them. See https://pytorch.org/docs/stable/generated/torch.nn.utils.rnn.PackedSequence.html.

    Attributes:
        data: ``(sum(lengths), *)``: step 0 of every sequence (longest first), then step 1 of
            every sequence at least 2 long, and so on.
        batch_sizes: ``(max_length,)`` integer Tensor: how many sequences run at each step
            (the lengths of the sorted batch, transposed). Kept on the host too.
        sorted_indices: ``(B,)`` integer Tensor: the batch position of the ``k``-th longest
            sequence, or None when the batch was given sorted.
        unsorted_indices: ``(B,)``: the inverse permutation (None with ``sorted_indices``).

    Args:
        data, batch_sizes, sorted_indices, unsorted_indices: the fields, as torch's constructor
            takes them (``batch_sizes`` as a Tensor, list or numpy array; ``unsorted_indices``
            defaults to the inverse of ``sorted_indices``). ``PackedSequence((data,
            batch_sizes))`` also works, as in torch.

    Example:
        >>> import spx
        >>> from spx.nn.utils.rnn import pack_sequence
        >>> p = pack_sequence([spx.tensor([1, 2, 3]), spx.tensor([4, 5]), spx.tensor([6])])
        >>> p.data.tolist(), p.batch_sizes.tolist()
        ([1, 4, 6, 2, 5, 3], [3, 2, 1])
    """

    def __new__(
        cls,
        data: Any,
        batch_sizes: Any = None,
        sorted_indices: Any = None,
        unsorted_indices: Any = None,
    ) -> PackedSequence:
        fn = "PackedSequence"
        if batch_sizes is None:
            if not (isinstance(data, list | tuple) and len(data) == 2):
                raise TypeError(
                    f"{fn}: without batch_sizes, data must be the pair (data, batch_sizes), got "
                    f"{type(data).__name__}; build packed batches with pack_padded_sequence"
                )
            data, batch_sizes = data
        data = _as_tensor(data, "data", fn)
        sizes = _host_ints(batch_sizes, "batch_sizes", fn)
        if sizes.size == 0 or sizes.min() <= 0 or np.any(np.diff(sizes) > 0):
            raise ValueError(
                f"{fn}: batch_sizes must be positive and non-increasing, got {sizes.tolist()}; "
                "build packed batches with pack_padded_sequence or pack_sequence"
            )
        if data.ndim == 0 or data.shape[0] != sizes.sum():
            raise ValueError(
                f"{fn}: data has {data.shape[0] if data.ndim else 0} rows but batch_sizes "
                f"{sizes.tolist()} sum to {sizes.sum()}; data must hold one row per step of "
                "each sequence"
            )
        indices = []
        for name, idx in zip(
            ("sorted_indices", "unsorted_indices"), (sorted_indices, unsorted_indices), strict=True
        ):
            if idx is not None:
                if not isinstance(idx, Tensor):
                    idx = _index_tensor(_host_ints(idx, name, fn))
                if tuple(idx.shape) != (sizes[0],):
                    raise ValueError(
                        f"{fn}: {name} must have shape ({sizes[0]},), one index per sequence, "
                        f"got {list(idx.shape)}"
                    )
            indices.append(idx)
        sorted_t, unsorted_t = indices
        if unsorted_t is None:
            unsorted_t = invert_permutation(sorted_t)
        kept = batch_sizes if isinstance(batch_sizes, Tensor) else None
        return cls._build(data, sizes, sorted_t, unsorted_t, kept)

    @classmethod
    def _build(
        cls,
        data: Any,
        sizes: np.ndarray,
        sorted_indices: Any,
        unsorted_indices: Any,
        batch_sizes: Any = None,
    ) -> PackedSequence:
        """A PackedSequence of checked fields; ``sizes`` is the host copy of batch_sizes."""
        if batch_sizes is None:
            batch_sizes = _index_tensor(sizes)
        self = tuple.__new__(cls, (data, batch_sizes, sorted_indices, unsorted_indices))
        self._sizes = sizes
        return self

    def _batch_sizes_host(self) -> np.ndarray:
        """``batch_sizes`` as int64 numpy (kept from construction; read back once otherwise)."""
        sizes = self.__dict__.get("_sizes")
        if sizes is None:  # namedtuple's _make/_replace build without __new__
            sizes = self._sizes = _host_ints(self.batch_sizes, "batch_sizes", "PackedSequence")
        return sizes

    def _with_data(self, data: Tensor) -> PackedSequence:
        """torch's rule for ``to``: ``self`` if the data is unchanged, else the indices follow
        the data's device (never its dtype) and ``batch_sizes`` stays as it is."""
        if data is self.data:
            return self

        def move(t: Tensor | None) -> Tensor | None:
            return None if t is None else t.to(data.device)

        return self._build(
            data, self._batch_sizes_host(), move(self.sorted_indices),
            move(self.unsorted_indices), self.batch_sizes,
        )  # fmt: skip

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data.to(*args, **kwargs)`` (dtype and/or device), as ``Tensor.to``."""
        return self._with_data(self.data.to(*args, **kwargs))

    def cuda(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return self._with_data(self.data.cuda(*args, **kwargs))

    def cpu(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return self._with_data(self.data.cpu(*args, **kwargs))

    def pin_memory(self) -> PackedSequence:
        return self._with_data(self.data.pin_memory())

    def double(self) -> PackedSequence:
        return self._with_data(self.data.double())

    def float(self) -> PackedSequence:
        return self._with_data(self.data.float())

    def half(self) -> PackedSequence:
        return self._with_data(self.data.half())

    def long(self) -> PackedSequence:
        return self._with_data(self.data.long())

    def int(self) -> PackedSequence:
        return self._with_data(self.data.int())

    def short(self) -> PackedSequence:
        return self._with_data(self.data.short())

    def char(self) -> PackedSequence:
        return self._with_data(self.data.char())

    def byte(self) -> PackedSequence:
        return self._with_data(self.data.byte())

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` is on a GPU."""
        return self.data.is_cuda


def _flatten(p: PackedSequence) -> tuple[tuple, tuple]:
    return (p.data, p.sorted_indices, p.unsorted_indices), tuple(p._batch_sizes_host().tolist())


def _unflatten(sizes: tuple, children: tuple) -> PackedSequence:
    data, sorted_indices, unsorted_indices = children
    return PackedSequence._build(
        data, np.asarray(sizes, np.int64), sorted_indices, unsorted_indices
    )


# Batch sizes fix every shape: static under jax.jit / spx.compile, like any shape.
jax.tree_util.register_pytree_node(PackedSequence, _flatten, _unflatten)


def invert_permutation(permutation: Any) -> Tensor | None:
    """The inverse of a permutation, or None for None (``torch.nn.utils.rnn.invert_permutation``).

    Args:
        permutation: ``(n,)`` integer Tensor holding a permutation of ``0..n-1``, or None.

    Example:
        >>> import spx
        >>> invert_permutation(spx.tensor([2, 0, 1])).tolist()
        [1, 2, 0]
    """
    if permutation is None:
        return None
    p = _as_tensor(permutation, "permutation", "invert_permutation")
    if p.ndim != 1:
        raise ValueError(f"invert_permutation: permutation must be 1-D, got shape {list(p.shape)}")
    return _invert_recorded(p)


# --- Packing and padding. --------------------------------------------------------------------


def pack_padded_sequence(
    input: Any,
    lengths: Any,
    batch_first: bool = False,
    enforce_sorted: bool = True,
) -> PackedSequence:
    """Pack a padded batch of variable-length sequences (mirrors torch's).

    Args:
        input: ``(T, B, *)``, or ``(B, T, *)`` if ``batch_first``: padded sequences.
        lengths: ``(B,)`` lengths, each in ``1..T``: a list, numpy array or integer Tensor
            (read on the host; inside ``spx.compile`` a Python list).
        batch_first: whether ``input`` is ``(B, T, *)``.
        enforce_sorted: require ``lengths`` in decreasing order; if False the batch is sorted
            here and ``sorted_indices``/``unsorted_indices`` record the permutation.

    Returns:
        A :class:`PackedSequence` whose ``data`` is ``(sum(lengths), *)``; gradients flow back
        to ``input`` (zero at the padding).

    Example:
        >>> import spx
        >>> x = spx.tensor([[1, 2, 0], [3, 0, 0], [4, 5, 6]])
        >>> p = pack_padded_sequence(x, [2, 1, 3], batch_first=True, enforce_sorted=False)
        >>> p.data.tolist(), p.batch_sizes.tolist(), p.sorted_indices.tolist()
        ([4, 1, 3, 5, 2, 6], [3, 2, 1], [2, 0, 1])
    """
    fn = "pack_padded_sequence"
    x = _as_tensor(input, "input", fn)
    if x.ndim < 2:
        raise IndexError(
            f"{fn}: Dimension out of range: input must be (T, B, *) or, with batch_first=True, "
            f"(B, T, *), got shape {list(x.shape)}"
        )
    steps, batch = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
    lengths = _host_ints(lengths, "lengths", fn)
    order, sorted_lengths, batch_sizes = _sort(lengths, batch, steps, enforce_sorted, fn)
    t, k = _packed_positions(sorted_lengths)
    b = k if order is None else order[k]
    index = b * steps + t if batch_first else t * batch + b
    data = _take_rows([x], index, 0, lead=2)
    return PackedSequence._build(data, batch_sizes, *_index_pair(order))


def _padded_index(
    batch_sizes: np.ndarray, total_length: int, batch_first: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The gather index from packed rows to ``(T, B)`` (sorted order) and the sorted lengths."""
    lengths, offsets = _layout(batch_sizes)
    t = np.arange(total_length)[:, None]
    k = np.arange(batch_sizes[0])[None, :]
    valid = t < lengths[None, :]
    row = offsets[np.minimum(t, len(batch_sizes) - 1)] + k
    index = np.where(valid, row, int(batch_sizes.sum()))
    return (index.T if batch_first else index), lengths


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Pad a packed batch back to a dense one (the inverse of :func:`pack_padded_sequence`).

    Args:
        sequence: the :class:`PackedSequence` to pad.
        batch_first: return ``(B, T, *)`` instead of ``(T, B, *)``.
        padding_value: the value at padded positions.
        total_length: pad to this many steps (at least the longest length) instead of the
            longest length.

    Returns:
        ``(padded, lengths)``: ``(T, B, *)`` (``(B, T, *)`` if batch_first) in the batch order
        given to the packing function, and the ``(B,)`` integer lengths in that order.

    Example:
        >>> import spx
        >>> p = pack_sequence([spx.tensor([1, 2]), spx.tensor([3])])
        >>> padded, lengths = pad_packed_sequence(p, batch_first=True, padding_value=-1)
        >>> padded.tolist(), lengths.tolist()
        ([[1, 2], [3, -1]], [2, 1])
    """
    fn = "pad_packed_sequence"
    if not isinstance(sequence, PackedSequence):
        raise TypeError(
            f"{fn}: sequence must be a PackedSequence, got {type(sequence).__name__}; make one "
            "with pack_padded_sequence or pack_sequence"
        )
    sizes = sequence._batch_sizes_host()
    max_seq_length = len(sizes)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{max_seq_length}"
            )
        max_seq_length = int(total_length)
    index, lengths = _padded_index(sizes, max_seq_length, batch_first)
    padded = _take_rows([sequence.data], index, padding_value, lead=1)
    lengths_t = _index_tensor(lengths)
    unsorted = sequence.unsorted_indices
    if unsorted is not None:
        padded = padded.index_select(0 if batch_first else 1, unsorted)
        lengths_t = lengths_t.index_select(0, unsorted)
    return padded, lengths_t


def _sequence_list(sequences: Any, fn: str) -> tuple[list[Any], np.ndarray]:
    """The sequences as a list (a Tensor is split along dim 0, as torch iterates it), checked
    for torch's conditions, and their lengths."""
    if isinstance(sequences, Tensor):
        seqs = list(sequences.unbind(0))
    elif isinstance(sequences, Iterable):  # lists, tuples, generators, numpy and jax arrays
        seqs = list(sequences)
    else:
        raise RuntimeError(
            f"{fn}: Expected iterable for input sequences, but got arg of type: {type(sequences)}"
        )
    if not seqs:
        raise RuntimeError(f"{fn}: received an empty list of sequences")
    for i, s in enumerate(seqs):
        if not hasattr(s, "shape") or not hasattr(s, "dtype"):
            raise TypeError(f"{fn}: sequence {i} must be a Tensor, got {type(s).__name__}")
        if len(s.shape) == 0:
            raise RuntimeError(
                f"{fn}: sequence {i} is 0-D; each sequence must be (L, *) with L its length"
            )
        if tuple(s.shape[1:]) != tuple(seqs[0].shape[1:]):
            raise RuntimeError(
                f"{fn}: The trailing sizes of sequence {i} ({list(s.shape[1:])}) must match "
                f"those of sequence 0 ({list(seqs[0].shape[1:])}); every sequence is (L, *) "
                "with the same *"
            )
    return seqs, np.array([int(s.shape[0]) for s in seqs], np.int64)


def pad_sequence(
    sequences: Any,
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack variable-length sequences into one padded Tensor (mirrors torch's).

    One gather: differentiable (each sequence gets its slice of the gradient); without autograd
    history (a DataLoader collate function) it runs in numpy, so new lengths cost no compile.

    Args:
        sequences: Tensors ``(L_i, *)`` with equal ``*`` (a Tensor is split along dim 0). The
            result has the first one's dtype.
        batch_first: return ``(B, T, *)`` instead of ``(T, B, *)``, ``T = max(L_i)``.
        padding_value: the value at padded positions.
        padding_side: ``"right"`` (pad after each sequence) or ``"left"`` (before).

    Returns:
        ``(T, B, *)``, or ``(B, T, *)`` if ``batch_first``.

    Example:
        >>> import spx
        >>> pad_sequence([spx.ones(3, 2), spx.ones(1, 2)], batch_first=True).shape
        spx.Size([2, 3, 2])
    """
    fn = "pad_sequence"
    if padding_side not in ("left", "right"):
        raise RuntimeError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    seqs, lengths = _sequence_list(sequences, fn)
    total = int(lengths.max())
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    t = np.arange(total)[:, None]
    src = t - (total - lengths[None, :]) if padding_side == "left" else t
    valid = (src >= 0) & (src < lengths[None, :])
    index = np.where(valid, offsets[None, :] + src, int(lengths.sum()))
    return _take_rows(seqs, index.T if batch_first else index, padding_value, lead=1)


def unpad_sequence(padded_sequences: Any, lengths: Any, batch_first: bool = False) -> list[Tensor]:
    """Split a padded batch into its sequences (the inverse of :func:`pad_sequence`).

    Args:
        padded_sequences: ``(T, B, *)``, or ``(B, T, *)`` if ``batch_first``.
        lengths: ``(B,)`` lengths (list, numpy array or integer Tensor; read on the host).
        batch_first: whether the batch is ``(B, T, *)``.

    Returns:
        A list of ``B`` Tensors ``(L_i, *)`` (copies; gradients flow back to the batch).

    Example:
        >>> import spx
        >>> [s.shape[0] for s in unpad_sequence(spx.zeros(4, 2, 3), [4, 1])]
        [4, 1]
    """
    fn = "unpad_sequence"
    x = _as_tensor(padded_sequences, "padded_sequences", fn)
    if x.ndim < 2:
        raise IndexError(f"{fn}: padded_sequences must be (T, B, *), got {list(x.shape)}")
    steps, batch = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
    lengths = _host_ints(lengths, "lengths", fn)
    if lengths.shape[0] != batch:
        raise ValueError(
            f"{fn}: got {lengths.shape[0]} lengths for a batch of {batch} sequences; pass one "
            "length per sequence"
        )
    if lengths.size and (lengths.min() < 0 or lengths.max() > steps):
        raise ValueError(f"{fn}: lengths {lengths.tolist()} must be in 0..{steps}")
    out = []
    for b, n in enumerate(lengths.tolist()):
        t = np.arange(n)
        out.append(_take_rows([x], b * steps + t if batch_first else t * batch + b, 0, lead=2))
    return out


def pack_sequence(sequences: Any, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of variable-length sequences (``pad_sequence`` + ``pack_padded_sequence``
    in one gather).

    Args:
        sequences: Tensors ``(L_i, *)`` with equal ``*``.
        enforce_sorted: require decreasing lengths; if False they are sorted here.

    Returns:
        A :class:`PackedSequence`; gradients flow back to each sequence.

    Example:
        >>> import spx
        >>> p = pack_sequence([spx.tensor([1, 2]), spx.tensor([3, 4, 5])], enforce_sorted=False)
        >>> p.data.tolist(), p.unsorted_indices.tolist()
        ([3, 1, 4, 2, 5], [1, 0])
    """
    seqs, lengths = _sequence_list(sequences, "pack_sequence")
    order, sorted_lengths, batch_sizes = _sort(
        lengths, len(seqs), None, enforce_sorted, "pack_sequence"
    )
    t, k = _packed_positions(sorted_lengths)
    b = k if order is None else order[k]
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    data = _take_rows(seqs, offsets[b] + t, 0, lead=1)
    return PackedSequence._build(data, batch_sizes, *_index_pair(order))


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """Split a packed batch into its sequences, in the order given to the packing function.

    Args:
        packed_sequences: a :class:`PackedSequence` (its ``unsorted_indices`` are read on the
            host).

    Returns:
        A list of Tensors ``(L_i, *)``; gradients flow back to ``packed_sequences.data``.

    Example:
        >>> import spx
        >>> p = pack_sequence([spx.tensor([1]), spx.tensor([2, 3])], enforce_sorted=False)
        >>> [s.tolist() for s in unpack_sequence(p)]
        [[1], [2, 3]]
    """
    fn = "unpack_sequence"
    if not isinstance(packed_sequences, PackedSequence):
        raise TypeError(f"{fn}: expected a PackedSequence, got {type(packed_sequences).__name__}")
    lengths, offsets = _layout(packed_sequences._batch_sizes_host())
    unsorted = packed_sequences.unsorted_indices
    position = (
        np.arange(len(lengths))
        if unsorted is None
        else _host_ints(unsorted, "unsorted_indices", fn)
    )
    data = packed_sequences.data
    return [_take_rows([data], offsets[: lengths[k]] + k, 0, lead=1) for k in position]


# --- For the RNN modules: the sorted batch, padded, and back. ---------------------------------


def _padded_sorted(sequence: PackedSequence) -> tuple[Tensor, np.ndarray]:
    """``data`` as a zero-padded ``(T, B, *)`` batch in sorted order, and the sorted lengths."""
    sizes = sequence._batch_sizes_host()
    index, lengths = _padded_index(sizes, len(sizes), False)
    return _take_rows([sequence.data], index, 0, lead=1), lengths


def _packed_from_sorted(padded: Any, lengths: np.ndarray) -> Tensor:
    """The rows of a ``(T, B, *)`` sorted batch that a packed ``data`` holds."""
    t, k = _packed_positions(lengths)
    return _take_rows([padded], t * padded.shape[1] + k, 0, lead=2)
