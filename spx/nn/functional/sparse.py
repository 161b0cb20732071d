"""Index-based ops: ``embedding`` and ``one_hot``.

``embedding`` is a gather (``jnp.take``) whose gradient is a scatter-add into the table — never a
one-hot matmul. Its torch options are reproduced without mutating the table:

* ``padding_idx``: the output keeps the padding row's value (as torch) but no gradient reaches
  that row — implemented with a ``stop_gradient`` select on the *output*, which is O(batch) work
  instead of rewriting the O(vocab) table.
* ``max_norm``: looked-up rows with norm above ``max_norm`` are rescaled. A Tensor ``weight``
  (an Embedding's table) is renormalised in place first, as torch does, so the next step starts
  from the rescaled rows; this op, which sees a raw array, rescales the output only (the
  gradient, unscaled as torch's, is the same either way).
* ``scale_grad_by_freq``: the gradient of each row is divided by its count in the batch.
* ``sparse``: accepted and ignored (gradients are dense arrays).

**Out-of-range indices.** Eagerly (concrete indices) an index outside ``[0, num_embeddings)``
raises ``IndexError`` naming it, as torch does. Inside compiled code (``spx.compile``,
``jax.jit``) the indices have no values while the program is built and XLA has no exceptions, so
an out-of-range index reads a row of NaN instead — never a silently clamped, valid-looking row;
the NaN reaches the loss, where it shows. Check indices before the step
(``assert int(idx.max()) < num_embeddings``) if the data can hold bad ones.

See https://pytorch.org/docs/stable/generated/torch.nn.functional.embedding.html
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from spx.nn.functional._utils import is_concrete, required_array

Array = jax.Array


def embedding(
    input: Array,
    weight: Array,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Array:
    """Look up rows of ``weight`` (mirrors ``torch.nn.functional.embedding``).

    Args:
        input: integer indices of any shape ``(*)``, values in ``[0, num_embeddings)``.
        weight: ``(num_embeddings, embedding_dim)``.
        padding_idx: this row's output is its stored value but it receives no gradient;
            negative values count from the end (as torch).
        max_norm: rescale looked-up rows whose ``norm_type``-norm exceeds it (a Tensor
            ``weight`` in place, as torch; see the module docstring).
        norm_type: the p of the norm for ``max_norm``.
        scale_grad_by_freq: divide each row's gradient by its frequency in ``input``.
        sparse: ignored.

    Returns:
        ``(*, embedding_dim)``.

    Example:
        >>> F.embedding(jnp.array([[0, 2]]), jnp.eye(3), padding_idx=0).shape  # (1, 2, 3)
    """
    idx, w = (
        required_array(input, "input", "embedding"),
        required_array(weight, "weight", "embedding"),
    )
    if w.ndim != 2:
        raise RuntimeError(
            f"embedding: weight must be (num_embeddings, embedding_dim), got shape {w.shape}"
        )
    if not jnp.issubdtype(idx.dtype, jnp.integer):
        raise TypeError(
            f"embedding: indices must be an integer array, got dtype {idx.dtype}; "
            "cast with .astype(jnp.int32)"
        )
    num = w.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise ValueError(
                f"embedding: padding_idx {padding_idx} must be within num_embeddings "
                f"[-{num}, {num})"
            )
        padding_idx %= num
    if is_concrete(idx) and idx.size:
        _check_range(np.asarray(idx), num)
    # Traced indices cannot be checked: out-of-range ones read NaN rather than a clamped row.
    out = jnp.take(w, idx, axis=0, mode="fill", fill_value=jnp.nan)

    if max_norm is not None:
        norms = jnp.linalg.norm(out, ord=norm_type, axis=-1, keepdims=True)
        scale = jnp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        # torch renormalizes the table under no_grad and then looks up: the forward value is
        # scaled but the gradient reaching the table is not.
        # (out - stop_gradient(out)) is exactly 0 forward and passes the gradient through.
        out = jax.lax.stop_gradient(out * scale) + (out - jax.lax.stop_gradient(out))
    if scale_grad_by_freq:
        counts = jnp.zeros((num,), w.dtype).at[idx.reshape(-1)].add(1, mode="drop")
        inv = (1.0 / jnp.maximum(jnp.take(counts, idx, mode="clip"), 1.0))[..., None]
        # Forward value exactly unchanged, gradient times 1/count.
        frozen = jax.lax.stop_gradient(out)
        out = frozen + (out - frozen) * inv
    if padding_idx is not None:
        out = jnp.where((idx == padding_idx)[..., None], jax.lax.stop_gradient(out), out)
    return out


def _check_range(values: np.ndarray, num: int) -> None:
    """torch's IndexError for indices outside ``[0, num)``, naming the first bad one."""
    bad = (values < 0) | (values >= num)
    if bad.any():
        position = tuple(int(i) for i in np.argwhere(bad)[0])
        raise IndexError(
            f"embedding: index {int(values[position])} (at position {position} of the input of "
            f"shape {values.shape}) is out of range for num_embeddings={num}; valid indices are "
            f"0..{num - 1}. Check the data or the vocabulary size (nn.Embedding({num}, ...))."
        )


def check_one_hot_values(values: np.ndarray, num_classes: int) -> None:
    """torch's RuntimeError for class values outside ``[0, num_classes)``."""
    if not values.size:
        return
    if (values < 0).any():
        raise RuntimeError("one_hot: class values must be non-negative")
    if (values >= num_classes).any():
        raise RuntimeError(
            f"one_hot: class values must be smaller than num_classes ({num_classes})"
        )


def one_hot(tensor: Array, num_classes: int = -1) -> Array:
    """One-hot encode integer class indices (mirrors ``torch.nn.functional.one_hot``).

    Returns ``int32`` (torch returns int64; jax uses 32-bit ints unless
    ``jax.config.update("jax_enable_x64", True)``, in which case the result is still int32 —
    cast with ``.astype(jnp.int64)`` if needed).

    Args:
        tensor: integer indices of any shape ``(*)``, values in ``[0, num_classes)``.
        num_classes: number of classes; ``-1`` infers ``max(tensor) + 1``, which needs concrete
            values (pass it explicitly inside ``jit``).

    Returns:
        ``(*, num_classes)`` int32.

    Example:
        >>> F.one_hot(jnp.array([0, 2]), 3)  # [[1, 0, 0], [0, 0, 1]]
    """
    x = jnp.asarray(tensor)
    if not jnp.issubdtype(x.dtype, jnp.integer):
        raise TypeError(f"one_hot is only applicable to index (integer) arrays, got {x.dtype}")
    concrete = is_concrete(x)
    if num_classes == -1:
        if not concrete:
            raise ValueError(
                "one_hot: num_classes=-1 infers the class count from the values, which are not "
                "known inside jit/grad; pass num_classes explicitly"
            )
        num_classes = int(np.max(np.asarray(x))) + 1 if x.size else 0
    if num_classes < 0:
        raise ValueError(f"one_hot: num_classes must be -1 or non-negative, got {num_classes}")
    if concrete:
        # numpy, not jnp: inside a jit trace even ops on a concrete array become tracers.
        check_one_hot_values(np.asarray(x), num_classes)
    return (x[..., None] == jnp.arange(num_classes, dtype=x.dtype)).astype(jnp.int32)
