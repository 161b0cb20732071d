"""Collation: a list of samples becomes one batch.

``default_collate`` / ``default_convert`` mirror torch's and give Tensors; the DataLoader runs
their numpy halves, ``collate_numpy`` / ``convert_numpy``. Collation stays in numpy on
purpose: stacking is one C call that releases the GIL (so worker threads overlap), and the
DataLoader then moves each batch leaf to the device in a single transfer.

Dtypes. Arrays keep their dtype (the device transfer then applies JAX's rules: with x64 off,
the JAX default, int64 becomes int32 and float64 becomes float32). Python numbers become the
dtype JAX gives a Python scalar: ``int -> int32`` and ``float -> float32`` with x64 off,
``int64``/``float64`` with it on (torch always gives int64/float64). ``bool -> bool``.
"""

from __future__ import annotations

import collections.abc
import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spx._tensor.tensor import Tensor

_NUMERIC_KINDS = frozenset("biufc")


def is_numeric(dtype: np.dtype) -> bool:
    """Whether arrays of ``dtype`` batch and move to a device: numpy's numbers and bools, and
    ml_dtypes' (bfloat16, float8: numpy kind ``'V'``, as structured and raw void dtypes).

    Example:
        >>> import ml_dtypes
        >>> is_numeric(np.dtype(ml_dtypes.bfloat16)), is_numeric(np.dtype("U3"))
        (True, False)
    """
    return dtype.kind in _NUMERIC_KINDS or dtype.type.__module__.startswith("ml_dtypes")


_BAD_TYPE = (
    "default_collate: samples must contain numpy/jax arrays, numbers, strings, dicts, lists "
    "or tuples; found {}. Pass collate_fn= to the DataLoader to batch other types."
)


def _python_scalar_dtype(kind: type) -> np.dtype:
    # jax decides int/float widths from its x64 flag; read it lazily (importing jax is cheap,
    # but keep this module importable without touching the backend).
    import jax

    x64 = jax.config.jax_enable_x64
    if kind is float:
        return np.dtype(np.float64 if x64 else np.float32)
    return np.dtype(np.int64 if x64 else np.int32)


def _stack(arrays: Sequence[np.ndarray]) -> np.ndarray:
    first = arrays[0]
    if not is_numeric(first.dtype):
        raise TypeError(_BAD_TYPE.format(f"an array of dtype {first.dtype}"))
    for i, a in enumerate(arrays):
        if a.shape != first.shape:
            # torch raises RuntimeError ("stack expects each tensor to be equal size").
            raise RuntimeError(
                f"default_collate: sample 0 has shape {first.shape} but sample {i} has shape "
                f"{a.shape}; samples in a batch must have equal shapes (pad them, or pass a "
                "collate_fn that does)"
            )
    return np.stack(arrays)


def _is_array(x: Any) -> bool:
    # jax.Array, torch CPU tensors and other array-likes expose __array__; numpy scalars are
    # handled separately so that they batch to a 1-D array of their own dtype.
    return isinstance(x, np.ndarray) or (
        hasattr(x, "__array__") and hasattr(x, "shape") and not isinstance(x, np.generic)
    )


def collate_numpy(batch: Sequence[Any]) -> Any:
    """Batch a list of samples in numpy: :func:`default_collate` before the transfer (the
    DataLoader's default, which moves each leaf to the device in one transfer).

    Samples are walked recursively: arrays are stacked on a new first axis, numbers become 1-D
    arrays, strings stay a list, dicts/namedtuples keep their type, lists are transposed (a
    tuple sample gives a *list* of batched fields, as in torch).

    Args:
        batch: the samples, a non-empty sequence of equal structure.

    Returns:
        The batch, with numpy arrays at the leaves; arrays of shape ``(B, *sample_shape)``.

    Example:
        >>> import numpy as np
        >>> b = collate_numpy([(np.zeros(3), 1), (np.ones(3), 2)])
        >>> b[0].shape, b[1].tolist()
        ((2, 3), [1, 2])
    """
    if len(batch) == 0:
        raise ValueError("default_collate: got an empty batch; a batch needs at least one sample")
    elem = batch[0]
    if isinstance(elem, Tensor) and any(x.requires_grad for x in batch):
        from spx.ops import stack

        return stack(list(batch))  # torch's stack: the batch stays in the graph
    if _is_array(elem):
        return _stack([np.asarray(x) for x in batch])
    if isinstance(elem, np.generic):
        if not is_numeric(elem.dtype):
            return batch
        return np.asarray(batch)
    # bool before int: bool is an int subclass but batches to a bool array.
    if isinstance(elem, bool):
        return np.asarray(batch, dtype=np.bool_)
    if isinstance(elem, int | float):
        try:
            return np.asarray(batch, dtype=_python_scalar_dtype(type(elem)))
        except OverflowError as e:
            raise OverflowError(
                f"default_collate: a Python int in {list(batch)[:8]}... does not fit "
                f"{_python_scalar_dtype(int)}; enable x64 (jax.config.update('jax_enable_x64', "
                "True)) or store the values in a numpy int64 array"
            ) from e
    if isinstance(elem, str | bytes):
        return batch  # as torch: the list given, or a field's tuple
    if isinstance(elem, collections.abc.Mapping):
        out = {key: collate_numpy([d[key] for d in batch]) for key in elem}
        return _rebuild_mapping(elem, out)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(collate_numpy(list(s)) for s in zip(*batch, strict=True)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        for i, sample in enumerate(batch):
            if len(sample) != size:
                raise RuntimeError(
                    f"default_collate: sample 0 has {size} fields but sample {i} has "
                    f"{len(sample)}; each element in list of batch should be of equal size"
                )
        # Each field is collated as the tuple zip makes (torch's: strings stay that tuple).
        fields = [collate_numpy(s) for s in zip(*batch, strict=True)]
        if isinstance(elem, tuple):
            return fields  # torch returns a list here, for backward compatibility
        return _rebuild_sequence(elem, fields)
    raise TypeError(_BAD_TYPE.format(type(elem).__name__))


def _rebuild_mapping(elem: collections.abc.Mapping, values: dict[Any, Any]) -> Any:
    # Keep the sample's mapping type (OrderedDict, custom dicts) when it can be rebuilt.
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(values)
            return clone
        return type(elem)(values)
    except TypeError:
        return values


def _rebuild_sequence(elem: Sequence[Any], fields: list[Any]) -> Any:
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, f in enumerate(fields):
                clone[i] = f
            return clone
        return type(elem)(fields)
    except TypeError:
        return fields


def convert_numpy(data: Any) -> Any:
    """Convert one unbatched sample's numpy scalars to 0-d arrays, recursively: what
    :func:`default_convert` does before the transfer (the DataLoader's ``batch_size=None``
    default).
    Python numbers and strings are left alone, as in torch.

    Args:
        data: one sample.

    Returns:
        The sample with numpy scalars turned into arrays.

    Example:
        >>> import numpy as np
        >>> convert_numpy({"x": np.float32(1.5)})["x"].shape
        ()
    """
    if isinstance(data, np.generic) and is_numeric(data.dtype):
        return np.asarray(data)
    if isinstance(data, np.ndarray | str | bytes) or _is_array(data):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: convert_numpy(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(convert_numpy(d) for d in data))
    if isinstance(data, tuple):
        return [convert_numpy(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        return _rebuild_sequence(data, [convert_numpy(d) for d in data])
    return data


CollateFn = Callable[[list[Any]], Any]


def default_collate(batch: Sequence[Any]) -> Any:
    """Batch a list of samples into Tensors (mirrors ``torch.utils.data.default_collate``).

    :func:`collate_numpy`'s batch with every numeric leaf an ``spx.Tensor`` on the default
    device, for a custom ``collate_fn`` that calls it and uses the result as tensors
    (``x, y = default_collate(batch); return x.float(), y``).

    Example:
        >>> import numpy as np
        >>> x, y = default_collate([(np.zeros(3, np.float32), 1), (np.ones(3, np.float32), 2)])
        >>> type(x).__name__, tuple(x.shape), y.tolist()
        ('Tensor', (2, 3), [1, 2])
    """
    from spx.data._transfer import to_jax  # (it imports this module)

    return to_jax(collate_numpy(batch), None)


def default_convert(data: Any) -> Any:
    """One unbatched sample with numpy arrays and scalars as Tensors, recursively (mirrors
    ``torch.utils.data.default_convert``); Python numbers and strings are left alone.

    Example:
        >>> import numpy as np
        >>> type(default_convert({"x": np.float32(1.5)})["x"]).__name__
        'Tensor'
    """
    from spx.data._transfer import to_jax

    return to_jax(convert_numpy(data), None)
